/**
 * Preparing an episode: resolving its settings from the options and loading
 * everything that can fail (adapter, policies, planner, assertions) before
 * anything is written. `run()` and `EpisodeCore.open()` share it.
 *
 * @module
 */
import { statSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { checkShellPlan } from "./shell_plan.ts";
import { EXIT, NoemaError } from "../../errors.ts";
import type { AdapterInstance, AdapterPlugin } from "../../plugins/api.ts";
import { describeThrown } from "../../plugins/thrown.ts";
import { adapterDisplayName, adapterGuardOptions, guardAdapter } from "../adapter_result.ts";
import {
  loadAdapterFrom,
  type LoadedAdapter,
  type LoadedPlanner,
  type LoadedPolicy,
  loadPlannerFile,
  loadPolicyFile,
  toLoadedPolicy,
} from "../../plugins/loader.ts";
import type { Mode } from "../../schema/summary.ts";
import { newEpisodeId } from "../../store/ids.ts";
import { episodeDirFor, resolveRoot } from "../../store/layout.ts";
import { limits, refuseOversize } from "../../store/limits.ts";
import { type AssertionSpec, loadAssertionPlugins, parseAssertions } from "../../verify/assertions.ts";
import { snapshotPolicy } from "../../verify/snapshot.ts";
import type { EngineSettings } from "../engine.ts";
import { readPolicySnapshot } from "../learning.ts";
import { type CheckedPlan, minimalPlanner, type Planner, runPlanner, taskFilePlanner } from "../planner.ts";
import { Redactor } from "../redact.ts";
import { type GovernanceMode, type LearnMode, MAX_POLICY_TIMEOUT_MS } from "../settings.ts";
import type { RunOptions, RunSettingsRecord } from "./options.ts";
import { lexists } from "../../store/nofollow.ts";
import { manifestKeyFromEnv } from "../../store/signing.ts";
import { adapterEnvOf, RULES_POLICY_ID, rulesPolicy } from "../rules/policy.ts";

/** An episode ready to be created: its settings, loaded plugins and plan. */
export interface PreparedEpisode {
  task: string;
  options: RunOptions;
  settings: EngineSettings;
  /** The settings as recorded in the `start` event. */
  record: RunSettingsRecord;
  adapter: AdapterInstance;
  plan: CheckedPlan;
  assertions: AssertionSpec[];
  snapshotRules: ReturnType<typeof snapshotPolicy>;
  baseDir: string;
  redactor: Redactor;
}

/**
 * The stand-in adapter of an episode driven from outside (an agent's hooks):
 * actions are executed by the agent and recorded with `EpisodeCore.record`,
 * so this adapter is never asked to act.
 *
 * @example
 * ```ts
 * import { externalAdapter } from "./prepare.ts";
 * externalAdapter("claude-code").label; // "claude-code"
 * ```
 */
export function externalAdapter(label: string): LoadedAdapter {
  const plugin: AdapterPlugin = {
    name: label,
    kind: "tool",
    create: () => ({
      act: () => ({
        status: "error",
        error: { type: "ExternalActions", message: `${label} executes its own actions; record them instead` },
      }),
    }),
  };
  return { plugin, label, path: null, sha256: null };
}

/** The planner of an episode driven from outside: the plan starts empty and grows by one act step per call. */
function externalPlanner(label: string): Planner {
  return {
    name: `agent:${label}`,
    plan: () => ({
      source: `agent:${label}`,
      steps: [],
      rationale: `The plan grows as ${label} works: one act step per tool call.`,
    }),
  };
}

/**
 * The goal type of a task, from its words: `sql`, `code`, `files` or `general`.
 *
 * @example
 * ```ts
 * import { goalType } from "./prepare.ts";
 * goalType("fix the failing test"); // "code"
 * ```
 */
export function goalType(task: string): string {
  if (/\b(select|insert|update|delete|drop|alter)\b.+\b(from|table|into|where)\b/i.test(task)) return "sql";
  if (/\b(test|bug|fix|refactor|compile|build)\b/i.test(task)) return "code";
  if (/\b(file|files|directory|folder)\b/i.test(task)) return "files";
  return "general";
}

/** Loads the policies (the rule sets first, then files or inline); one id loaded twice is a usage error. */
async function loadPolicies(options: RunOptions, baseDir: string): Promise<LoadedPolicy[]> {
  const specs = options.policies;
  // The adapter's `env` reaches its programs: the rules read a shell call with it (GIT_EDITOR=… names a command).
  const rules = rulesPolicy(options.rules, baseDir, adapterEnvOf(options.adapter));
  const out: LoadedPolicy[] = rules ? [rules] : [];
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
 * Resolves an episode's settings and loads its plugins. Throws a usage error
 * (exit 2) for bad options; writes nothing. `external` names the agent of an
 * episode driven from outside (no adapter acts, the plan starts empty).
 *
 * @example
 * ```ts
 * import { prepareEpisode } from "./prepare.ts";
 * const prepared = await prepareEpisode("List the files", { using: "shell" });
 * prepared.settings.episodeId; // "ep_…"
 * ```
 */
export async function prepareEpisode(
  task: string,
  options: RunOptions,
  external: string | null = null,
): Promise<PreparedEpisode> {
  checkTask(task);
  manifestKeyFromEnv(); // a bad NOEMA_SIGNING_KEY_FILE is refused now, naming it, not when sealing
  const timeout = options.policy_timeout_ms;
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout >= 1 && timeout <= MAX_POLICY_TIMEOUT_MS)) {
    throw new NoemaError("usage", `policy_timeout_ms must be an integer from 1 to ${MAX_POLICY_TIMEOUT_MS}`, {
      field: "policy_timeout_ms",
      exitCode: EXIT.USAGE,
    });
  }
  const { root, episodeId, dir } = newEpisodeTarget(options);
  const workspace = options.workspace !== undefined ? checkedWorkspace(options.workspace) : null;
  const baseDir = options.base_dir ?? process.cwd();
  const { assertions, snapshotRules } = await loadVerification(options, baseDir);
  const redactor = new Redactor({ secrets: options.secrets ?? [] });
  refuseUnmaskable(redactor);
  if (options.episode_id !== undefined) refuseSecretId(episodeId, redactor);
  const loadedAdapter = await chooseAdapter(options, external);
  const policies = (options.mode ?? "meta") === "meta" ? await loadPolicies(options, baseDir) : [];
  const loadedPlanner = await choosePlanner(options, external);
  let plan;
  try {
    plan = runPlanner(loadedPlanner.planner, { task, steps: options.steps });
  } catch (e) {
    throw new NoemaError("bad_plan", (e as Error).message, { exitCode: EXIT.USAGE });
  }
  // The built-in shell adapter (not a plugin of that name): a step with nothing to run is known now.
  if (options.using === "shell" && loadedAdapter.path === null) checkShellPlan(plan.steps, options.args ?? []);
  const settings = engineSettings(options, {
    episodeId,
    dir,
    root,
    task,
    redactor,
    workspace,
    loadedAdapter,
    policies,
    loadedPlanner,
  });
  const adapter = await createAdapter(loadedAdapter, {
    config: { base_dir: baseDir, ...(options.adapter ?? {}) },
    args: options.args ?? [],
    workspace,
    dir,
    secrets: options.secrets ?? [],
  });
  const record = settingsRecord(settings, options, assertions, baseDir, redactor);
  return { task, options, settings, record, adapter, plan, assertions, snapshotRules, baseDir, redactor };
}

/**
 * A secret named explicitly whose value occurs inside a word the artifacts
 * are made of cannot be masked without corrupting them: a usage error naming
 * it, before anything is written (one detected by its name alone is just not
 * treated as a secret).
 */
function refuseUnmaskable(redactor: Redactor): void {
  const u = redactor.unmaskable[0];
  if (u === undefined) return;
  throw new NoemaError(
    "usage",
    `${u.name}: its value occurs in "${u.word}", a word of the artifacts' own structure, so masking it would ` +
      `corrupt them; leave ${u.name} out of the secrets`,
    { field: "secrets", exitCode: EXIT.USAGE },
  );
}

/**
 * An id the redactor would mask (a token shape such as `ghp_…`, a secret's value) is a usage error: the id names the
 * episode's directory, which masking cannot reach (the token would be on disk, and `episode.id` would no longer match
 * the directory).
 */
function refuseSecretId(episodeId: string, redactor: Redactor): void {
  if (redactor.redactString(episodeId) === episodeId) return;
  throw new NoemaError(
    "invalid_id",
    "invalid episode id: it looks like a secret (a token's shape, or a secret's value), which noema never writes; " +
      "choose another --episode-id",
    { field: "episode_id", exitCode: EXIT.USAGE },
  );
}

/**
 * The workspace as an absolute path; one that is not an existing directory is a usage error naming it
 * (the adapter would otherwise fail to spawn with a bare ENOENT, after the episode was written).
 */
function checkedWorkspace(given: string): string {
  const workspace = resolve(given);
  let why: string | null = null;
  try {
    if (!statSync(workspace).isDirectory()) why = "is not a directory";
  } catch (e) {
    why = (e as NodeJS.ErrnoException).code === "ENOENT" ? "no such directory (create it first)" : String(e);
  }
  if (why !== null) {
    throw new NoemaError("bad_workspace", `workspace ${given}: ${why}`, { exitCode: EXIT.USAGE });
  }
  return workspace;
}

/**
 * A task is a non-empty, well-formed string within noema's task limit (the `start` event and `state.json` carry it whole);
 * anything else is a usage error (exit 2), before anything is written.
 *
 * @example
 * ```ts
 * import { checkTask } from "./prepare.ts";
 * checkTask("fix the test"); // fine
 * ```
 */
export function checkTask(task: unknown): asserts task is string {
  if (typeof task !== "string" || task.trim() === "") {
    throw new NoemaError("usage", "the task must be a non-empty string", { exitCode: EXIT.USAGE });
  }
  refuseOversize("the task", task, limits().taskBytes, 'see README "Limits"');
  if (!task.isWellFormed()) {
    throw new NoemaError("usage", "the task holds a lone surrogate (half of a UTF-16 pair), which is not text", {
      field: "task",
      exitCode: EXIT.USAGE,
    });
  }
}

/** The root, id and directory of the new episode; a taken id is a usage error. */
function newEpisodeTarget(options: RunOptions): { root: string; episodeId: string; dir: string } {
  const root = resolveRoot(options);
  const episodeId = options.episode_id ?? newEpisodeId();
  const dir = episodeDirFor(episodeId, root);
  // lstat, not exists: a dangling symlink at the episode's path counts as taken (it is never written through).
  if (lexists(dir)) {
    throw new NoemaError("exists", `episode ${episodeId} already exists in ${join(root, "episodes")}`, {
      exitCode: EXIT.USAGE,
    });
  }
  return { root, episodeId, dir };
}

/** The `--verify` assertions (with their plugins loaded) and the snapshot rules (`--verify-ignore`); bad ones are usage errors. */
async function loadVerification(
  options: RunOptions,
  baseDir: string,
): Promise<{ assertions: AssertionSpec[]; snapshotRules: ReturnType<typeof snapshotPolicy> }> {
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
  return { assertions, snapshotRules };
}

/** The adapter: the external stand-in, an inline plugin, or one loaded by name or path (`minimal` by default). */
async function chooseAdapter(options: RunOptions, external: string | null): Promise<LoadedAdapter> {
  return external !== null
    ? externalAdapter(external)
    : typeof options.using === "object"
    ? { plugin: options.using, label: options.using.name, path: null, sha256: null }
    : await loadAdapterFrom(options.using ?? "minimal", options.adapters);
}

/** The planner: the external agent's, the task file's steps, a planner file, an inline planner, or the minimal one. */
async function choosePlanner(options: RunOptions, external: string | null): Promise<LoadedPlanner> {
  return external !== null
    ? { planner: externalPlanner(external), path: null, sha256: null }
    : options.steps
    ? { planner: taskFilePlanner, path: null, sha256: null }
    : typeof options.planner === "string"
    ? await loadPlannerFile(options.planner)
    : { planner: options.planner ?? minimalPlanner, path: null, sha256: null };
}

/** The engine's settings: the options with their defaults, and what was resolved and loaded. */
function engineSettings(
  options: RunOptions,
  resolved: {
    episodeId: string;
    dir: string;
    root: string;
    task: string;
    redactor: Redactor;
    workspace: string | null;
    loadedAdapter: LoadedAdapter;
    policies: LoadedPolicy[];
    loadedPlanner: LoadedPlanner;
  },
): EngineSettings {
  const { episodeId, dir, root, task, redactor, workspace, loadedAdapter, policies, loadedPlanner } = resolved;
  const mode: Mode = options.mode ?? "meta";
  const governance: GovernanceMode = options.governance ?? "enforce";
  const learnMode: LearnMode = options.learn_mode ?? "record";
  return {
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
    notices: options.notices,
  };
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

/** What the `start` event records of the settings (secret values masked; plugins by path and sha256). */
function settingsRecord(
  settings: EngineSettings,
  options: RunOptions,
  assertions: readonly AssertionSpec[],
  baseDir: string,
  redactor: Redactor,
): RunSettingsRecord {
  const { loadedAdapter, policies, mode, governance, learnMode, workspace } = settings;
  return {
    using: loadedAdapter.label,
    adapter_path: loadedAdapter.path,
    adapter_sha256: loadedAdapter.sha256,
    adapter: redactor.redact(options.adapter ?? {}).value,
    args: redactor.redact([...(options.args ?? [])]).value,
    policies: policies.map((p) => ({ id: p.id, path: p.path, sha256: p.sha256 })),
    ...(options.rules?.length && policies.some((p) => p.id === RULES_POLICY_ID) ? { rules: [...options.rules] } : {}),
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
}
