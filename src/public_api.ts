/**
 * The list of everything the public entry point (`mod.ts`) exports. It lives
 * in `src/` so that the plugin loader can serve it to plugin files as the
 * bare `noema` module under Bun without any file in `src/` importing
 * `mod.ts`.
 *
 * @module
 */
export { CONTRACT_VERSIONS, NOEMA_VERSION } from "./version.ts";
export { type ErrorLocation, EXIT, type ExitCode, NoemaError } from "./errors.ts";

// Schemas and their inferred types.
export * from "./schema/common.ts";
export * from "./schema/plan.ts";
export * from "./schema/payloads.ts";
export * from "./schema/event.ts";
export * from "./schema/state.ts";
export * from "./schema/summary.ts";
export * from "./schema/manifest.ts";
export * from "./schema/learn_record.ts";
export { type SchemaProblem, toProblems } from "./schema/problems.ts";
export { isSchemaName, SCHEMA_NAMES, type SchemaEntry, type SchemaName, SCHEMAS } from "./schema/registry.ts";

// Episode store.
export { assertEpisodeId, episodeIdProblem, newEpisodeId } from "./store/ids.ts";
export {
  ARTIFACTS,
  episodeDirFor,
  type EpisodeLocation,
  episodesDir,
  locateEpisode,
  resolveRoot,
  type RootOptions,
} from "./store/layout.ts";
export { DIR_MODE, FILE_MODE, writeFileAtomic, writeJsonAtomic } from "./store/atomic.ts";
export {
  JsonlAppender,
  type JsonlEntry,
  type JsonlProblemKind,
  LineTooLongError,
  type RawLine,
  readJsonl,
  readLines,
  type ReadLinesOptions,
} from "./store/jsonl.ts";
export { canonicalHash, canonicalJson, type FileDigest, sha256, sha256File } from "./store/hash.ts";
export { readJsonFile } from "./store/json_file.ts";
export {
  manifestKeyFromEnv,
  type ManifestSignature,
  manifestSigningInput,
  type ManifestSigningKey,
  type ManifestVerifyKey,
  type SignatureCheck,
  type SigningKey,
  signingKeyFromEnv,
  signManifest,
  verifyManifestSignature,
} from "./store/signing.ts";
export {
  DEFAULT_KEY_FILE,
  ed25519KeyFromEnv,
  ed25519KeyId,
  type Ed25519PrivateKey,
  type Ed25519PublicKey,
  type GeneratedKeys,
  generateKeyFiles,
  readPrivateKeyFile,
  readPublicKeyFile,
  SIGNING_KEY_FILE_ENV,
} from "./store/ed25519_key.ts";
export { type DsseCheck, type DsseEnvelope, dssePae, type DsseSignature, signDsse, verifyDsse } from "./store/dsse.ts";
export {
  type AttestationCheck,
  type AttestedDecision,
  attestEpisode,
  EPISODE_PREDICATE_TYPE,
  type EpisodePredicate,
  type EpisodeStatement,
  episodeStatement,
  IN_TOTO_PAYLOAD_TYPE,
  IN_TOTO_STATEMENT_TYPE,
  type StatementSubject,
  subjectMismatches,
  verifyAttestation,
} from "./store/attestation.ts";
export { type IntegrityReport, verifyArtifacts, type VerifyArtifactsOptions } from "./store/integrity.ts";

// Read operations.
export {
  type EpisodePaths,
  episodePaths,
  readEvents,
  type ReadEventsOptions,
  readPlan,
  readState,
  readSummary,
} from "./read/episode.ts";
export { type EpisodeEntry, listEpisodes, type ListOptions } from "./read/list.ts";
export { type PlanEventLike, PlanProjector, reconstructPlan } from "./read/plan.ts";

// Validation.
export { type RuleId, RULES } from "./validate/rules.ts";
export { type Profile, PROFILE_RULES, type ProfileRuleId, PROFILES } from "./validate/profile.ts";
export {
  validate,
  validateEpisodeDir,
  validateFile,
  type ValidateOptions,
  type ValidationProblem,
  type ValidationReport,
  type ValidationWarning,
} from "./validate/validate.ts";

// Plugin API (what policy and adapter files import from "noema").
export * from "./plugins/api.ts";
export { deepFreeze, type DeepReadonly } from "./plugins/freeze.ts";
export {
  childEnv,
  pickEnv,
  processActResult,
  type ProcessResult,
  runProcess,
  type RunProcessOptions,
  type SpawnedChild,
  stdinKind,
} from "./plugins/process.ts";
export {
  type AdapterLoader,
  type AdapterRegistry,
  importPluginFile,
  type LoadedAdapter,
  type LoadedPlanner,
  type LoadedPolicy,
  loadPlannerFile,
  loadPolicyFile,
  registerPluginApi,
  toLoadedPolicy,
  verdictProblem,
} from "./plugins/loader.ts";
export { pluginLoadTimeoutMs } from "./plugins/loader.ts";
export {
  ReviewedResult as ReviewedResultSchema,
  ReviewVerdict as ReviewVerdictSchema,
  reviewVerdictProblem,
} from "./plugins/review.ts";
export { cutString, type PlainJson, type PlainJsonOptions, PLUGIN_LIMITS, toPlainJson } from "./plugins/plain_json.ts";
export { describeThrown, type ThrownDescription, throwSite } from "./plugins/thrown.ts";
export {
  captureOutput,
  neutralize,
  OutputBudget,
  PLUGIN_OUTPUT_LIMIT,
  redirectOutput,
} from "./plugins/plugin_output.ts";
export {
  ActResultSchema,
  ADAPTER_GUARD_DEFAULTS,
  adapterDisplayName,
  type AdapterGuardOptions,
  adapterGuardOptions,
  callAdapter,
  checkAdapterResult,
  guardAdapter,
} from "./runtime/adapter_result.ts";
export { policyMemoryMb } from "./runtime/policy_host.ts";

// Runtime, and the composition root that dispatches a `using` name to a driver or an adapter.
export type { RunOptions, RunResult } from "./runtime/run.ts";
export { BUILTIN_ADAPTERS, BUILTIN_DRIVERS, builtinDriver, loadAdapter, resume, run } from "./drivers.ts";
export type { Driver } from "./agents/driver.ts";
// The episode core; its ProposedAction, Decision and RecordedResult have the same shapes as the governor's below.
export { type AttachOptions, type CoreEnd, type CoreOptions, EpisodeCore } from "./runtime/core/episode_core.ts";
export { displayCommand, shellQuote } from "./runtime/core/command.ts";
export * from "./runtime/settings.ts";
export { didYouMean, parseJsonc, parseJsoncFile, readSettingsFile } from "./runtime/jsonc.ts";
export {
  type CheckedPlan,
  minimalPlanner,
  type Planner,
  type PlanResult,
  runPlanner,
  stepLabel,
  taskFilePlanner,
} from "./runtime/planner.ts";
export { applyPatch, consultPolicy, type ConsultSettings, type DirectionOutcome } from "./runtime/direction.ts";
export {
  combineReviews,
  consultReview,
  maskPatterns,
  type ResultReview,
  type ReviewOutcome,
} from "./runtime/review.ts";
export { type RecordedReview, type ReviewDelivery } from "./runtime/review_record.ts";
export { approvalAsked, decide, type GovernanceResult } from "./runtime/governance.ts";
export {
  learn,
  type LearnSettings,
  type PolicyEvidence,
  type PolicySnapshot,
  policySnapshotPath,
  readPolicySnapshot,
} from "./runtime/learning.ts";
export { type EmitOptions, Recorder, type WrittenEvent } from "./runtime/recorder.ts";
export {
  activeRedactor,
  declareSecrets,
  envSecretNames,
  isNoemaSecret,
  MASK,
  mergeRedaction,
  NOEMA_OWN_SECRETS,
  type RedactionReport,
  Redactor,
  TOKEN_PATTERNS,
} from "./runtime/redact.ts";
export {
  ArtifactSink,
  INDENT_MAX_CHARS,
  recordedSecretNames,
  type SharedOption,
  type WriteJsonOptions,
} from "./runtime/artifact_sink.ts";
export { buildSummary, newCounters, type RunCounters, type SummaryInput } from "./runtime/summary_builder.ts";
export { type CostEstimate, DEFAULT_PRICES, estimateCost, priceOf, PriceTable } from "./runtime/cost/prices.ts";
export { addUsage, usageMetrics } from "./runtime/cost/metrics.ts";
export { fileKind, listArtifactFiles, writeManifest } from "./store/manifest.ts";
export { isTaskFileArg, PROJECT_CONFIG, type ResolvedRun, resolveRunSettings } from "./runtime/load_settings.ts";

// Verification: workspace snapshots, diff, assertions, outcome.
export * from "./verify/mod.ts";
export { type Engine, type EngineSettings } from "./runtime/engine.ts";
export { type InterruptedAction, rebuildRun, type RebuiltRun } from "./runtime/rebuild.ts";
export {
  type ProcessIdentity,
  processIdentity,
  type StopReport,
  stopSurvivors,
  survivors,
} from "./runtime/process_group.ts";
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
} from "./runtime/checkpoint.ts";
export {
  approve,
  type DecideOptions,
  pendingCheckpoint,
  type PendingRun,
  reject,
  type ResumeOptions,
} from "./runtime/resume.ts";
export {
  acquireLock,
  type AcquireLockOptions,
  type EpisodeLock,
  LOCK_FILE,
  type LockInfo,
  type LockStatus,
  lockStatus,
} from "./store/lock.ts";

// The LLM agent: governed AI SDK tool loops.
export { govern, type Governance, type GovernOptions } from "./llm/govern.ts";
export type { Governor } from "./llm/governor.ts";
export { type GovernedStep, PolicyGovernor, type PolicyGovernorOptions } from "./llm/policy_governor.ts";
export { type GovernedHooks, governedHooks, type GovernedHooksOptions, type PendingToolApproval } from "./llm/hooks.ts";
export { approvalMessages, type LoopOptions, type LoopResult, runAgentLoop } from "./llm/loop.ts";
export { type LlmAgentOptions, type LlmAgentResult, runLlmAgent } from "./llm/agent.ts";
export { type LlmConfig, LlmConfigSchema, modelFlag, OLLAMA_BASE_URL, parseLlmConfig } from "./llm/config.ts";
export { apiKeyEnv, createLlmModel, requireApiKey } from "./llm/provider.ts";
export { expandTurns, MODEL_LOG, modelRecorder, type ModelTurn, type UsageTotals } from "./llm/model_log.ts";
export { firstDifference, readModelLog, ReplayDivergence, replayModel } from "./llm/replay_model.ts";
export { classifyModelError, type ModelFailure } from "./llm/model_errors.ts";
export { type AiSdkToolsOptions, commandOf, toAiSdkTools, withHints } from "./llm/ai_tools.ts";
export { confinePath, WorkspaceEscapeError } from "./llm/workspace.ts";
export { clip, fromValibot, type LlmTool, type ToolContext, ToolError } from "./llm/tools/tool.ts";
export { fileTools } from "./llm/tools/files.ts";
export { searchTool } from "./llm/tools/search.ts";
export { DEFAULT_SHELL_ENV, shellTool, type ShellToolOptions } from "./llm/tools/shell.ts";
export { BUILTIN_TOOLS, resolveTools } from "./llm/tools/registry.ts";
export { connectMcpServers, type McpConnection, type McpServerConfig } from "./llm/mcp.ts";
export { applyLlmFlags, type LlmRunFlags } from "./llm/run_flags.ts";
export {
  driveLlmEpisode,
  type DriveOptions,
  type DriveResult,
  type EpisodeHandle,
  resumeLlmEpisode,
} from "./llm/episode_driver.ts";
export { CONVERSATION_FILE, readConversation, type SavedConversation } from "./llm/conversation.ts";
