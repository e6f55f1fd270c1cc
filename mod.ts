/**
 * noema: run AI-agent episodes and record each one as plain JSON artifacts
 * (`events.jsonl`, `learn.jsonl`, `state.json`, `summary.json`,
 * `manifest.json`) that any tool can read.
 *
 * This module is the public API: the artifact schemas (valibot, with types
 * inferred from them), the episode store, the read operations and
 * validation.
 *
 * @example
 * ```ts
 * import { listEpisodes, readSummary, validate } from "noema";
 * for (const e of listEpisodes({ limit: 5 })) {
 *   console.log(e.episode_id, e.status, validate(e.episode_dir).valid);
 * }
 * ```
 *
 * @module
 */
export { CONTRACT_VERSIONS, NOEMA_VERSION } from "./src/version.ts";
export { type ErrorLocation, EXIT, type ExitCode, NoemaError } from "./src/errors.ts";

// Schemas and their inferred types.
export * from "./src/schema/common.ts";
export * from "./src/schema/plan.ts";
export * from "./src/schema/payloads.ts";
export * from "./src/schema/event.ts";
export * from "./src/schema/state.ts";
export * from "./src/schema/summary.ts";
export * from "./src/schema/manifest.ts";
export * from "./src/schema/learn_record.ts";
export { type SchemaProblem, toProblems } from "./src/schema/problems.ts";
export { isSchemaName, SCHEMA_NAMES, type SchemaEntry, type SchemaName, SCHEMAS } from "./src/schema/registry.ts";

// Episode store.
export { assertEpisodeId, episodeIdProblem, newEpisodeId } from "./src/store/ids.ts";
export {
  ARTIFACTS,
  episodeDirFor,
  type EpisodeLocation,
  episodesDir,
  locateEpisode,
  resolveRoot,
  type RootOptions,
} from "./src/store/layout.ts";
export { DIR_MODE, FILE_MODE, writeFileAtomic, writeJsonAtomic } from "./src/store/atomic.ts";
export {
  JsonlAppender,
  type JsonlEntry,
  type JsonlProblemKind,
  LineTooLongError,
  type RawLine,
  readJsonl,
  readLines,
  type ReadLinesOptions,
} from "./src/store/jsonl.ts";
export { canonicalHash, canonicalJson, type FileDigest, sha256, sha256File } from "./src/store/hash.ts";
export { readJsonFile } from "./src/store/json_file.ts";

// Read operations.
export {
  type EpisodePaths,
  episodePaths,
  readEvents,
  type ReadEventsOptions,
  readPlan,
  readState,
  readSummary,
} from "./src/read/episode.ts";
export { type EpisodeEntry, listEpisodes, type ListOptions } from "./src/read/list.ts";
export { type PlanEventLike, PlanProjector, reconstructPlan } from "./src/read/plan.ts";

// Validation.
export { type RuleId, RULES } from "./src/validate/rules.ts";
export {
  validate,
  validateEpisodeDir,
  validateFile,
  type ValidateOptions,
  type ValidationProblem,
  type ValidationReport,
} from "./src/validate/validate.ts";

// Plugin API (what policy and adapter files import from "noema").
export * from "./src/plugins/api.ts";
export { deepFreeze, type DeepReadonly } from "./src/plugins/freeze.ts";
export {
  pickEnv,
  processActResult,
  type ProcessResult,
  runProcess,
  type RunProcessOptions,
} from "./src/plugins/process.ts";
export {
  loadAdapter,
  type LoadedAdapter,
  type LoadedPlanner,
  type LoadedPolicy,
  loadPlannerFile,
  loadPolicyFile,
  registerPluginApi,
  toLoadedPolicy,
  verdictProblem,
} from "./src/plugins/loader.ts";
export { BUILTIN_ADAPTERS } from "./src/plugins/builtin.ts";

// Runtime.
export { run, type RunOptions, type RunResult } from "./src/runtime/run.ts";
export * from "./src/runtime/settings.ts";
export { didYouMean, parseJsonc, parseJsoncFile, readSettingsFile } from "./src/runtime/jsonc.ts";
export {
  minimalPlanner,
  type Planner,
  type PlanResult,
  runPlanner,
  stepLabel,
  taskFilePlanner,
} from "./src/runtime/planner.ts";
export { applyPatch, consultPolicy, type ConsultSettings, type DirectionOutcome } from "./src/runtime/direction.ts";
export { decide, type GovernanceResult } from "./src/runtime/governance.ts";
export {
  learn,
  type LearnSettings,
  type PolicyEvidence,
  type PolicySnapshot,
  policySnapshotPath,
  readPolicySnapshot,
} from "./src/runtime/learning.ts";
export { type EmitOptions, Recorder, type WrittenEvent } from "./src/runtime/recorder.ts";
export { MASK, mergeRedaction, type RedactionReport, Redactor, TOKEN_PATTERNS } from "./src/runtime/redact.ts";
export { buildSummary, newCounters, type RunCounters, type SummaryInput } from "./src/runtime/summary_builder.ts";
export { fileKind, listArtifactFiles, writeManifest } from "./src/store/manifest.ts";
export { isTaskFileArg, PROJECT_CONFIG, type ResolvedRun, resolveRunSettings } from "./src/runtime/load_settings.ts";

// Verification: workspace snapshots, diff, assertions, outcome.
export * from "./src/verify/mod.ts";
export { type Engine, type EngineSettings } from "./src/runtime/engine.ts";
export { rebuildRun, type RebuiltRun } from "./src/runtime/rebuild.ts";
export {
  approvalPath,
  type ApprovalRecord,
  type Checkpoint,
  checkpointPath,
  consumeApproval,
  type PendingApproval,
  readApproval,
  readCheckpoint,
  writeApproval,
  writeCheckpoint,
} from "./src/runtime/checkpoint.ts";
export {
  approve,
  type DecideOptions,
  pendingCheckpoint,
  type PendingRun,
  reject,
  resume,
  type ResumeOptions,
} from "./src/runtime/resume.ts";
export { acquireLock, type EpisodeLock, LOCK_FILE, type LockInfo } from "./src/store/lock.ts";
