/**
 * The settings of an episode, as given (`RunOptions`, what `run()` and
 * `EpisodeCore.open()` take) and as recorded in the `start` event
 * (`RunSettingsRecord`, what `resume` and `EpisodeCore.attach` continue with).
 *
 * @module
 */
import type { AdapterPlugin, PolicyObject } from "../../plugins/api.ts";
import type { AdapterRegistry } from "../../plugins/loader.ts";
import type { IntuitionMode } from "../../schema/state.ts";
import type { Mode } from "../../schema/summary.ts";
import type { RootOptions } from "../../store/layout.ts";
import type { Planner } from "../planner.ts";
import type { PriceTable } from "../cost/prices.ts";
import type { FailurePolicy, GovernanceMode, LearnMode, StepSpec } from "../settings.ts";
import { join } from "node:path";
import type { EngineSettings } from "../engine.ts";
import { learnedThresholds } from "./prepare.ts";
import type { RuleLayer } from "../rules/schema.ts";

/** Options of {@link run}: the same settings as the CLI flags and task files. */
/** A queue of notices for the record, filled by whoever composes the run (see `RunOptions.notices`). */
export interface RuntimeNotices {
  /** Removes and returns the notices waiting, each written as a `runtime` event of that `event_type`. */
  take(): { event_type: string; payload: Record<string, unknown> }[];
  /** Awaited before the run's `terminate` event: what is about to be known is then in the record. */
  settle?(): Promise<unknown>;
}

export interface RunOptions extends RootOptions {
  /** Adapter: built-in name, `.ts` path, or an adapter object. @default {"minimal"} */
  using?: string | AdapterPlugin;
  /**
   * The adapters a `using` name may select, each loaded on first use. The
   * runtime knows none itself: the public `run` passes `BUILTIN_ADAPTERS`.
   * @default {BUILTIN_ADAPTERS through the public run; none in the runtime's own}
   */
  adapters?: AdapterRegistry;
  /** Adapter configuration. */
  adapter?: Record<string, unknown>;
  /** Arguments for the adapter (what follows `--` on the command line). */
  args?: readonly string[];
  /** Policies: `.ts` paths, policy objects, or policy classes. */
  policies?: readonly (string | PolicyObject | (new () => unknown))[];
  /**
   * Rule sets in Claude Code's permission-rule syntax (the user's, noema.jsonc's, a task file's, `--rules` files),
   * lowest first: they become the built-in `Rules@1.0` policy, consulted before the others (see docs/rules.md).
   */
  rules?: readonly RuleLayer[];
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
  /** Model prices (USD per million tokens) over the built-in table, for `metrics.cost` (`noema.jsonc` `prices`). */
  prices?: PriceTable;
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
  /**
   * Things that happened beside the run and belong in its record (e.g. the
   * shared store became unreachable): taken after each event and written as
   * `runtime` events. @default {none}
   */
  notices?: RuntimeNotices;
  /** Called while a workspace snapshot is captured (big workspaces take a while). */
  onSnapshotProgress?: (snapshot: "pre" | "post", files: number) => void;
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
  /** The rule sets of the `Rules@1.0` policy, when the run has any (a resumed run is governed by the same). */
  rules?: RuleLayer[];
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
 * The engine settings a recorded episode continues with (`resume`, `attach`):
 * every setting from its {@link RunSettingsRecord}, plus what the caller
 * supplies (the task, the loaded plugins, callbacks). Learned thresholds are
 * read for the policies given.
 *
 * @example
 * ```ts
 * import { settingsFromRecord } from "./options.ts";
 * // const settings = settingsFromRecord(rec, { episodeId, dir, task, redactedTask, loadedAdapter, policies, planner: rec.planner });
 * ```
 */
export function settingsFromRecord(
  rec: RunSettingsRecord,
  given: Pick<
    EngineSettings,
    | "episodeId"
    | "dir"
    | "task"
    | "redactedTask"
    | "loadedAdapter"
    | "policies"
    | "planner"
    | "signal"
    | "onEvent"
    | "notices"
  >,
): EngineSettings {
  const root = join(given.dir, "..", "..");
  return {
    ...given,
    root,
    mode: rec.mode,
    intuitionMode: rec.intuition_mode,
    governance: rec.governance,
    failurePolicy: rec.failure_policy,
    threshold: rec.direction_min_confidence,
    timeoutMs: rec.policy_timeout_ms,
    learnMode: rec.learn_mode,
    learnMinSuccesses: rec.learn_min_successes,
    learnMinConfidence: rec.learn_min_confidence,
    pauseOnVeto: rec.pause_on_veto,
    seed: rec.seed,
    tags: rec.tags,
    workspace: rec.workspace,
    args: rec.args,
    thresholds: learnedThresholds(root, given.policies, rec.learn_mode),
  };
}
