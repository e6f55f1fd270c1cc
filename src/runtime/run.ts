/**
 * `run()`: executes one episode and writes its artifacts.
 *
 * Event order: `start` → `observe` → `interpret` → `plan` → per step
 * (`direction`… → `action_candidate` → `governance` → `act`) → `verify` →
 * `reflect` → `learn` → `terminate` → `insight` (meta mode). `state.json` is
 * persisted after planning, at step boundaries (throttled so that persisting
 * costs a bounded share of the run) and at the end, each time followed by a
 * `run.state_projection` event. Then `summary.json`, then `manifest.json`.
 *
 * @module
 */
import { lstatSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import type { AdapterInstance, AdapterPlugin, PolicyObject } from "../plugins/api.ts";
import { describeThrown } from "../plugins/thrown.ts";
import {
  loadAdapter,
  type LoadedAdapter,
  type LoadedPlanner,
  type LoadedPolicy,
  loadPlannerFile,
  loadPolicyFile,
  toLoadedPolicy,
} from "../plugins/loader.ts";
import type { PlanStep } from "../schema/plan.ts";
import type { IntuitionMode, State } from "../schema/state.ts";
import type { Mode } from "../schema/summary.ts";
import { DIR_MODE, FILE_MODE, fsyncDir } from "../store/atomic.ts";
import { newEpisodeId } from "../store/ids.ts";
import { ARTIFACTS, episodeDirFor, resolveRoot, type RootOptions } from "../store/layout.ts";
import { acquireLock } from "../store/lock.ts";
import { sweepStaleStaging } from "../store/staging.ts";
import { BUILTIN_DRIVERS } from "../plugins/builtin.ts";
import { CONTRACT_VERSIONS, NOEMA_VERSION } from "../version.ts";
import { loadAssertionPlugins, parseAssertions } from "../verify/assertions.ts";
import { startVerification } from "../verify/outcome.ts";
import { snapshotPolicy } from "../verify/snapshot.ts";
import { adapterDisplayName, adapterGuardOptions, guardAdapter } from "./adapter_result.ts";
import { Engine, type EngineSettings, type RunResult } from "./engine.ts";
import { readPolicySnapshot } from "./learning.ts";
import { minimalPlanner, type Planner, runPlanner, taskFilePlanner } from "./planner.ts";
import { Recorder } from "./recorder.ts";
import { ArtifactSink } from "./artifact_sink.ts";
import { type RedactionReport, Redactor } from "./redact.ts";
import type { FailurePolicy, GovernanceMode, LearnMode, StepSpec } from "./settings.ts";
import { newCounters } from "./summary_builder.ts";

export type { RunResult } from "./engine.ts";

/** Options of {@link run}: the same settings as the CLI flags and task files. */
export interface RunOptions extends RootOptions {
  /** Adapter: built-in name, `.ts` path, or an adapter object. @default {"minimal"} */
  using?: string | AdapterPlugin;
  /** Adapter configuration. */
  adapter?: Record<string, unknown>;
  /** Arguments for the adapter (what follows `--` on the command line). */
  args?: readonly string[];
  /** Policies: `.ts` paths, policy objects, or policy classes. */
  policies?: readonly (string | PolicyObject | (new () => unknown))[];
  /** The plan; without it the planner plans (by default the minimal planner: detect → act → verify). */
  steps?: readonly StepSpec[];
  /** A planner plugin: a `.ts` path or a planner object. Ignored when `steps` are given. */
  planner?: string | Planner;
  /** @default {"meta"} */
  mode?: Mode;
  /** @default {"interventive"} */
  intuition_mode?: IntuitionMode;
  /** @default {"enforce"} */
  governance?: GovernanceMode;
  /** @default {"fail_closed" under enforce, else "fail_open"} */
  failure_policy?: FailurePolicy;
  /** Verdicts below this confidence are recorded but not applied. @default {0.5} */
  direction_min_confidence?: number;
  /** Longest time a policy's `advise` may take. @default {5000} */
  policy_timeout_ms?: number;
  /** @default {"record"} */
  learn_mode?: LearnMode;
  /** @default {3} */
  learn_min_successes?: number;
  /** @default {0.7} */
  learn_min_confidence?: number;
  /** @default {0} */
  seed?: number;
  /** User metadata. */
  tags?: Record<string, string | number | boolean>;
  /** The workspace the adapter works in. @default {none} */
  workspace?: string;
  /** Names of environment variables whose values are masked in every artifact. */
  secrets?: readonly string[];
  /**
   * Verification assertions, checked against the workspace after the last
   * action (`file_exists`, `file_contains`, `only_modified`, …; see the README).
   */
  verify?: readonly unknown[];
  /** Where `verify` came from, for error messages (e.g. the task file). @default {"verify"} */
  verify_source?: string;
  /** The field holding `verify` in that source, for error messages (e.g. `verify`). @default {""} */
  verify_field?: string;
  /** More path segment names the workspace snapshots ignore (besides .git, node_modules, .noema). */
  verify_ignore?: readonly string[];
  /** Use this episode id instead of a new `ep_<ULID>`. */
  episode_id?: string;
  /** Directory that relative paths in `adapter` config are resolved against. @default {cwd} */
  base_dir?: string;
  /** Pause for approval, instead of ending the run, when an enforced veto blocks an action. @default {false} */
  pause_on_veto?: boolean;
  /** Aborting ends the run as `aborted`, with all its artifacts. */
  signal?: AbortSignal;
  /** Called after each event is written (for progress displays). */
  onEvent?: (event: { phase: string; payload: Record<string, unknown> }) => void;
  /** Called while a workspace snapshot is captured (big workspaces take a while). */
  onSnapshotProgress?: (snapshot: "pre" | "post", files: number) => void;
}

function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

function goalType(task: string): string {
  if (/\b(select|insert|update|delete|drop|alter)\b.+\b(from|table|into|where)\b/i.test(task)) return "sql";
  if (/\b(test|bug|fix|refactor|compile|build)\b/i.test(task)) return "code";
  if (/\b(file|files|directory|folder)\b/i.test(task)) return "files";
  return "general";
}

async function loadPolicies(specs: RunOptions["policies"]): Promise<LoadedPolicy[]> {
  const out: LoadedPolicy[] = [];
  for (const [i, spec] of (specs ?? []).entries()) {
    out.push(typeof spec === "string" ? await loadPolicyFile(spec) : toLoadedPolicy(spec, `policies[${i}]`));
  }
  const seen = new Set<string>();
  for (const p of out) {
    if (seen.has(p.id)) {
      throw new NoemaError("duplicate_policy", `policy ${p.id} is loaded twice (${p.path ?? "inline"})`, {
        exitCode: EXIT.USAGE,
      });
    }
    seen.add(p.id);
  }
  return out;
}

/**
 * What a run records about its settings in the `start` event, so `resume`
 * can continue it with the same adapter, policies and options (secret values
 * masked; plugins by path and sha256).
 */
export interface RunSettingsRecord {
  using: string;
  adapter_path: string | null;
  adapter_sha256: string | null;
  adapter: Record<string, unknown>;
  args: readonly string[];
  policies: { id: string; path: string | null; sha256: string | null }[];
  planner: { name: string; path: string | null; sha256: string | null };
  mode: Mode;
  intuition_mode: IntuitionMode;
  governance: GovernanceMode;
  failure_policy: FailurePolicy;
  direction_min_confidence: number;
  policy_timeout_ms: number;
  learn_mode: LearnMode;
  learn_min_successes: number;
  learn_min_confidence: number;
  pause_on_veto: boolean;
  seed: number;
  tags: Record<string, string | number | boolean>;
  workspace: string | null;
  base_dir: string;
  secrets: readonly string[];
  verify: readonly unknown[];
  verify_ignore: readonly string[];
}

/**
 * Runs one episode toward a task and writes its artifacts under
 * `<root>/episodes/<episode_id>/`. Bad options and plugins that cannot be
 * loaded are errors before anything is written; once the episode has
 * started, every failure (adapter, policy, interruption) ends it with complete
 * terminal artifacts. A step that needs approval pauses the run: the result
 * has `status: "pending"`, exit code 4 and the checkpoint id.
 *
 * @example
 * ```ts
 * import { run } from "noema";
 * const r = await run("List the files", { using: "shell", steps: [{ kind: "act", description: "ls", inputs: { command: "ls" } }] });
 * console.log(r.episode_id, r.status, r.outcome);
 * ```
 */
export async function run(task: string, options: RunOptions = {}): Promise<RunResult> {
  // An external agent (e.g. claude-code) drives its own episode through hooks.
  const driver = typeof options.using === "string" ? BUILTIN_DRIVERS[options.using] : undefined;
  if (driver) return await driver.run(task, options);
  // ---- Resolve settings and load everything that can fail, before writing anything.
  if (typeof task !== "string" || task.trim() === "") {
    throw new NoemaError("usage", "the task must be a non-empty string", { exitCode: EXIT.USAGE });
  }
  const mode: Mode = options.mode ?? "meta";
  const governance: GovernanceMode = options.governance ?? "enforce";
  const root = resolveRoot(options);
  const episodeId = options.episode_id ?? newEpisodeId();
  const dir = episodeDirFor(episodeId, root);
  // lstat, not exists: a dangling symlink at the episode's path counts as taken (it is never written through).
  if (lexists(dir)) {
    throw new NoemaError("exists", `episode ${episodeId} already exists in ${join(root, "episodes")}`, {
      exitCode: EXIT.USAGE,
    });
  }
  const workspace = options.workspace !== undefined ? resolve(options.workspace) : null;
  const baseDir = options.base_dir ?? process.cwd();
  const assertions = options.verify === undefined || options.verify.length === 0
    ? []
    : parseAssertions(options.verify, options.verify_source ?? "verify", { baseDir, field: options.verify_field });
  let snapshotRules;
  try {
    snapshotRules = snapshotPolicy({ extra: options.verify_ignore ?? [] });
  } catch (e) {
    throw new NoemaError("usage", `--verify-ignore: ${(e as Error).message}`, { exitCode: EXIT.USAGE });
  }
  await loadAssertionPlugins(assertions, baseDir);
  const redactor = new Redactor({ secrets: options.secrets ?? [] });
  const loadedAdapter: LoadedAdapter = typeof options.using === "object"
    ? { plugin: options.using, label: options.using.name, path: null, sha256: null }
    : await loadAdapter(options.using ?? "minimal");
  const policies = mode === "meta" ? await loadPolicies(options.policies) : [];
  const loadedPlanner: LoadedPlanner = options.steps
    ? { planner: taskFilePlanner, path: null, sha256: null }
    : typeof options.planner === "string"
    ? await loadPlannerFile(options.planner)
    : { planner: options.planner ?? minimalPlanner, path: null, sha256: null };
  let plan;
  try {
    plan = runPlanner(loadedPlanner.planner, { task, steps: options.steps });
  } catch (e) {
    throw new NoemaError("bad_plan", (e as Error).message, { exitCode: EXIT.USAGE });
  }
  const learnMode: LearnMode = options.learn_mode ?? "record";
  const settings: EngineSettings = {
    episodeId,
    dir,
    root,
    task,
    redactedTask: redactor.redactString(task),
    mode,
    intuitionMode: options.intuition_mode ?? "interventive",
    governance,
    failurePolicy: options.failure_policy ?? (governance === "enforce" ? "fail_closed" : "fail_open"),
    threshold: options.direction_min_confidence ?? 0.5,
    timeoutMs: options.policy_timeout_ms ?? 5000,
    learnMode,
    learnMinSuccesses: options.learn_min_successes ?? 3,
    learnMinConfidence: options.learn_min_confidence ?? 0.7,
    pauseOnVeto: options.pause_on_veto ?? false,
    seed: options.seed ?? 0,
    // Tags are masked once here: summary.json shows them as the engine holds them.
    tags: redactor.redact({ ...(options.tags ?? {}) }).value,
    workspace,
    loadedAdapter,
    args: options.args ?? [],
    policies,
    thresholds: learnedThresholds(root, policies, learnMode),
    planner: { name: loadedPlanner.planner.name, path: loadedPlanner.path, sha256: loadedPlanner.sha256 },
    signal: options.signal,
    onEvent: options.onEvent,
  };
  const adapter = await createAdapter(loadedAdapter, {
    config: { base_dir: baseDir, ...(options.adapter ?? {}) },
    args: options.args ?? [],
    workspace,
    dir,
    secrets: options.secrets ?? [],
  });
  const record: RunSettingsRecord = {
    using: loadedAdapter.label,
    adapter_path: loadedAdapter.path,
    adapter_sha256: loadedAdapter.sha256,
    adapter: redactor.redact(options.adapter ?? {}).value,
    args: redactor.redact([...(options.args ?? [])]).value,
    policies: policies.map((p) => ({ id: p.id, path: p.path, sha256: p.sha256 })),
    planner: settings.planner,
    mode,
    intuition_mode: settings.intuitionMode,
    governance,
    failure_policy: settings.failurePolicy,
    direction_min_confidence: settings.threshold,
    policy_timeout_ms: settings.timeoutMs,
    learn_mode: learnMode,
    learn_min_successes: settings.learnMinSuccesses,
    learn_min_confidence: settings.learnMinConfidence,
    pause_on_veto: settings.pauseOnVeto,
    seed: settings.seed,
    tags: settings.tags,
    workspace,
    base_dir: baseDir,
    secrets: options.secrets ?? [],
    verify: redactor.redact(assertions).value,
    verify_ignore: options.verify_ignore ?? [],
  };

  // ---- Create the episode: its first artifacts (learn.jsonl, the start … plan events, state.json) are
  // written in a hidden directory that is then renamed into place, so an episode directory that exists
  // always has a start event and a state.json, even if the process is killed at any moment.
  mkdirSync(join(root, "episodes"), { recursive: true, mode: DIR_MODE });
  const staging = join(root, "episodes", `.tmp-${episodeId}-${process.pid}`);
  sweepStaleStaging(join(root, "episodes")); // staging dirs that killed runs left behind
  try {
    mkdirSync(staging, { mode: DIR_MODE });
  } catch (e) {
    await adapter.close?.();
    throw new NoemaError("exists", `cannot create ${staging}: ${(e as Error).message}`, { exitCode: EXIT.ERROR });
  }
  const lock = acquireLock(staging, "run");
  writeFileSync(join(staging, ARTIFACTS.learn), "", { mode: FILE_MODE, flag: "wx" });
  // Every artifact byte goes through the sink, which masks secrets.
  const rec = new Recorder(staging, episodeId, undefined, new ArtifactSink(staging, redactor));
  const learnLog = rec.sink.jsonl(ARTIFACTS.learn);
  try {
    const emit = (phase: string, payload: Record<string, unknown>, opts?: Parameters<Recorder["emit"]>[2]) => {
      const e = rec.emit(phase, payload, opts);
      options.onEvent?.(e);
      return e;
    };
    const s = settings;
    const start = emit("start", {
      task: s.redactedTask,
      episode_id: episodeId,
      mode,
      intuition_mode: s.intuitionMode,
      governance,
      failure_policy: s.failurePolicy,
      using: loadedAdapter.label,
      seed: s.seed,
      tags: s.tags,
      workspace,
      policies: policies.map((p) => p.id),
      noema_version: NOEMA_VERSION,
      contract: CONTRACT_VERSIONS,
      settings: record,
    }, { caused_by: null });
    const startedAt = start.timestamp;
    const observe = emit("observe", {
      snapshot: {
        task: s.redactedTask,
        seed: s.seed,
        tags: s.tags,
        using: loadedAdapter.label,
        workspace,
        state_path: ARTIFACTS.state,
      },
    }, { caused_by: null });
    const type = goalType(task);
    const hints: string[] = [];
    if (task.length > 320) hints.push("Consider chunking the task input before execution.");
    emit("interpret", { goal_type: type, task_chars: task.length, hints, step_count: plan.steps.length }, {
      faculty: "intuition",
      caused_by: observe.id,
    });

    // ---- Plan.
    const stepRedaction = new Map<string, RedactionReport>();
    // Step texts and inputs are masked once, here: the plan event, state.json and every later event see masked values.
    const steps: PlanStep[] = plan.steps.map((step) => {
      const masked: PlanStep = { ...step, description: redactor.redactString(step.description) };
      if (step.rationale !== undefined) masked.rationale = redactor.redactString(step.rationale);
      if (!step.inputs) return masked;
      const { value, report } = redactor.redact(step.inputs, "payload.input");
      stepRedaction.set(step.id, report);
      return { ...masked, inputs: value };
    });
    const planStarted = rec.now();
    const planEvent = emit("plan", Engine.planPayload(plan.source, steps, plan.rationale), {
      metrics: { started_at: planStarted, completed_at: rec.now(), duration_ms: 0 },
    });
    const counters = newCounters();
    counters.plan++;
    counters.planning_ms = Date.parse(planEvent.timestamp) - Date.parse(startedAt);
    const facts: { key: string; value: unknown; timestamp?: string; provenance?: string }[] = [];
    const actions: NonNullable<NonNullable<State["outcomes"]>["actions"]> = [];
    const state: State = {
      version: CONTRACT_VERSIONS.state,
      state_schema_version: CONTRACT_VERSIONS.state_schema,
      episode: {
        id: episodeId,
        seed: s.seed,
        tags: s.tags,
        using: loadedAdapter.label,
        started_at: startedAt,
        intuition_mode: s.intuitionMode,
      },
      goal: { task: s.redactedTask, type },
      beliefs: [{
        statement: `The task is of type ${type}.`,
        confidence: 0.5,
        provenance: "interpret",
        timestamp: startedAt,
      }],
      plan: { steps, source: plan.source, updated_at: planEvent.timestamp, rationale: plan.rationale },
      memory: { facts },
      outcomes: {
        status: "pending",
        actions,
        metrics: { task_score: 0, steps_completed: 0, steps_total: steps.length, duration_ms: 0 },
        artifacts: [],
        error: null,
      },
      links: { events: ARTIFACTS.events, learn: ARTIFACTS.learn },
    };
    const engine = new Engine({
      settings,
      progress: {
        state,
        steps,
        planSource: plan.source,
        actions,
        facts,
        counters,
        evidence: new Map(),
        lastDiff: [],
        lastDirectivePolicy: null,
        lastStepEventId: planEvent.id,
        startedAt,
        waitingMs: 0,
        stepRedaction,
        inputs: new Map(plan.steps.map((step) => [step.id, step.inputs ?? {}])),
      },
      recorder: rec,
      learnLog,
      adapter,
      redactor,
      verifying: null,
    });
    engine.persist();
    rec.sync();
    try {
      renameSync(staging, dir);
    } catch (e) {
      rmSync(staging, { recursive: true, force: true });
      throw new NoemaError("exists", `cannot create ${dir}: ${(e as Error).message}`, { exitCode: EXIT.ERROR });
    }
    fsyncDir(join(root, "episodes"));
    rec.moveTo(dir);
    lock.moveTo(dir);
    engine.verifying = await startVerification({
      workspace,
      specs: assertions,
      policy: snapshotRules,
      episodeDir: dir,
      baseDir,
      redact: rec.sink.mask,
      onProgress: options.onSnapshotProgress,
    });
    const executed = await engine.execute(0);
    return executed === "done" ? await engine.finish() : executed;
  } finally {
    rec.close();
    learnLog.close();
    lock.release();
    await adapter.close?.();
  }
}

/** Learned `direction_min_confidence` per policy, from the policies' snapshots. */
export function learnedThresholds(
  root: string,
  policies: readonly LoadedPolicy[],
  learnMode: LearnMode,
): Map<string, number> {
  const thresholds = new Map<string, number>();
  if (learnMode === "off") return thresholds;
  for (const p of policies) {
    const tuned = readPolicySnapshot(root, p.id).tuning.direction_min_confidence;
    if (typeof tuned === "number") thresholds.set(p.id, tuned);
  }
  return thresholds;
}

/** Creates an adapter instance; a failure is a usage error naming the adapter. */
export async function createAdapter(
  loaded: LoadedAdapter,
  context: {
    config: Record<string, unknown>;
    args: readonly string[];
    workspace: string | null;
    dir: string;
    secrets: readonly string[];
  },
): Promise<AdapterInstance> {
  // The instance is guarded (adapter_result.ts): act never throws or hangs and returns a checked result.
  const guard = adapterGuardOptions(adapterDisplayName(loaded.path, loaded.label), context.config, loaded.path);
  let instance: unknown;
  try {
    instance = await loaded.plugin.create({
      config: context.config,
      args: context.args,
      workspace: context.workspace,
      episode_dir: context.dir,
      secrets: context.secrets,
    });
  } catch (e) {
    if (e instanceof NoemaError) throw e;
    throw new NoemaError("bad_adapter", `adapter ${loaded.label}: ${describeThrown(e).message}`, {
      exitCode: EXIT.USAGE,
    });
  }
  return guardAdapter(instance, guard);
}
