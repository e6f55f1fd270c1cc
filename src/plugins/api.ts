/**
 * The plugin API: what a policy or adapter file imports from `"noema"`.
 *
 * A **policy** advises before each action. It gets a deeply frozen state and
 * may return a hint, an intervention (a patch to the pending action's input)
 * or a veto, or nothing. Write it as a class extending
 * {@link DirectedIntuition}, or as a plain object with `advise` (then the file
 * needs no import at all).
 *
 * An **adapter** acts: it executes one step's action and reports the result.
 *
 * @example
 * ```ts
 * import { DirectedIntuition, type PolicyState } from "noema";
 *
 * export default class SqlGuard extends DirectedIntuition {
 *   static version = "1.0";
 *   advise(state: PolicyState) {
 *     if (/drop\s+table/i.test(state.action.command)) {
 *       return this.veto({ advice: "Destructive SQL is not allowed." });
 *     }
 *   }
 * }
 * ```
 *
 * @module
 */
import type { DeepReadonly } from "./freeze.ts";
import type { Outcomes, State } from "../schema/state.ts";
import type { SpawnedChild } from "./process.ts";
import type { ReviewedResult, ReviewVerdict } from "./review.ts";

export type { ReviewedResult, ReviewKind, ReviewVerdict } from "./review.ts";

/**
 * Version of this plugin API. A plugin may declare the version it was written
 * for (`static api = "1"` or `api: "1"`); a different major version is refused
 * at load time.
 */
export const PLUGIN_API_VERSION = "1.0";

/** The three kinds of policy verdict. */
export type VerdictKind = "hint" | "intervention" | "veto";

/**
 * What a policy returns from `advise` (or nothing).
 *
 * @example
 * ```ts
 * import type { Verdict } from "noema";
 * const v: Verdict = { kind: "intervention", advice: "Limit rows", patch: { sql: "SELECT 1 LIMIT 10" } };
 * ```
 */
export interface Verdict {
  /** hint (advice only), intervention (patch the action input) or veto (block the action). */
  kind: VerdictKind;
  /** What the policy says, in words. */
  advice: string;
  /**
   * 0 to 1. Verdicts below the run's `direction_min_confidence` are recorded but not applied.
   * @default {0.5 for hints, 0.6 for interventions, 0.8 for vetoes}
   */
  confidence?: number;
  /** For interventions: keys to set on the pending action's input (`null` deletes a key). */
  patch?: Record<string, unknown>;
  /** Why, at more length. */
  rationale?: string;
  /** Risk tags to attach to the action candidate, e.g. `["destructive"]`. */
  risk_tags?: string[];
  /** Ask a human to approve the action before it runs. */
  requires_approval?: boolean;
  /**
   * For a veto: only watch. Governance records it as a would-have-vetoed (decision `veto`, not enforced, counted in
   * `would_veto_count`) and the action runs, as under `--governance audit`, for this verdict alone.
   */
  audit?: boolean;
}

/** The action a step is about to take. */
export interface PendingAction {
  /** Action kind, e.g. `shell`, `command`, `adapter`. */
  kind: string;
  /** Tool label, e.g. `adapter:shell`. */
  tool: string;
  /** The input the adapter will receive (after applied interventions). */
  input: Record<string, unknown>;
  /** What will run as one display string, when the caller knows it better than the input says. */
  command?: string;
  /**
   * The directory the call runs in, when the agent says (a hook event's `cwd`: where the agent's shell is now,
   * after a `cd`). Relative paths in its command are read against it; else against the episode's workspace.
   */
  cwd?: string;
}

/** The action about to run, as policies see it: the pending action plus its display string. */
export interface PolicyAction extends PendingAction {
  /**
   * What will run, as one display string: `input.command`, or `input.argv`
   * joined with POSIX shell quoting, or a short display of the input.
   */
  command: string;
}

/** The step about to run, as policies see it. */
export interface PolicyStep {
  /** Step id. */
  id: string;
  /** Step kind (`act` for agent tool calls). */
  kind: string;
  /** Step description. */
  description: string;
  /** Zero-based position in the plan. */
  index: number;
  /** Number of steps in the plan (it grows as an agent works). */
  total: number;
  /** The step's inputs (real values; artifacts hold them masked). */
  inputs: Record<string, unknown>;
}

/** `state.json`'s fields, with the parts the runtime always writes required. */
type StateSnapshotFields =
  & State
  & Required<Pick<State, "episode" | "goal" | "beliefs" | "plan" | "links">>
  & {
    outcomes: Outcomes & Required<Pick<Outcomes, "actions">>;
    memory: Memory & Required<Pick<Memory, "facts">>;
  };
type Memory = NonNullable<State["memory"]>;

/**
 * The contract's state snapshot alone (without the pending call), deeply frozen.
 *
 * @example
 * ```ts
 * import type { StateView } from "noema";
 * const task = (s: StateView) => s.goal.task;
 * ```
 */
export type StateView = DeepReadonly<StateSnapshotFields>;

/**
 * The state a policy receives in `advise`: the contract's state snapshot
 * (every field of `state.json` as it stands at that moment: `version`,
 * `state_schema_version`, `episode` with `intuition_mode`, `goal`, `beliefs`,
 * `plan` with the current step statuses, `memory`, `outcomes` with the
 * actions so far, `links`), plus the pending `action` and `step`, and the
 * `workspace` directory (or null). It is deeply frozen: any attempt to change
 * it throws a `TypeError`. The type is inferred from the `State` schema.
 *
 * @example
 * ```ts
 * import type { PolicyState } from "noema";
 * const done = (s: PolicyState) => s.plan.steps.filter((x) => x.status === "done").length;
 * ```
 */
export type PolicyState = DeepReadonly<
  & StateSnapshotFields
  & {
    /** The action about to run (after applied interventions). */
    action: PolicyAction;
    /** The step about to run, with its position in the plan. */
    step: PolicyStep;
    /** The workspace directory, when the episode has one. */
    workspace: string | null;
  }
>;

/**
 * The state a policy receives in `review`: the same frozen snapshot as in
 * `advise` (its `outcomes.actions` already hold the action that ran), the
 * `action` and `step` that ran, and the action's `result`: `status`,
 * `output` (the real output, secrets included), `excerpt` (the output as one
 * text, at most 2,000 characters) and `error`.
 *
 * @example
 * ```ts
 * import type { ReviewState } from "noema";
 * const leaked = (s: ReviewState) => /sk-[A-Za-z0-9]{20,}/.test(s.result.excerpt);
 * ```
 */
export type ReviewState = DeepReadonly<
  & StateSnapshotFields
  & {
    /** The action that ran. */
    action: PolicyAction;
    /** The step that ran. */
    step: PolicyStep;
    /** The workspace directory, when the episode has one. */
    workspace: string | null;
    /** What the action produced. */
    result: ReviewedResult;
  }
>;

/** What `review` returns: a review verdict, or nothing to pass the result on as it is. */
export type ReviewReturn =
  | ReviewVerdict
  | null
  | undefined
  | void
  | Promise<ReviewVerdict | null | undefined | void>;

/** Options of {@link DirectedIntuition.redact}: `text` replaces the result, or `patterns` mask parts of it. */
export interface RedactOptions extends HintOptions {
  /** What the agent gets instead of the result. */
  text?: string;
  /** Regular expression sources (strings, used with the `g` flag): every match in the result is masked. */
  patterns?: string[];
}

/** Options of {@link DirectedIntuition.hint}. */
export interface HintOptions {
  advice: string;
  /** @default {0.5} */
  confidence?: number;
  rationale?: string;
  risk_tags?: string[];
}

/** Options of {@link DirectedIntuition.intervene}. */
export interface InterveneOptions extends HintOptions {
  /** Keys to set on the action input; `null` deletes a key. */
  patch: Record<string, unknown>;
}

/** Options of {@link DirectedIntuition.veto}. */
export interface VetoOptions extends HintOptions {
  /** Ask for human approval instead of refusing outright (used with approval pauses). */
  requires_approval?: boolean;
}

/**
 * Base class for policies. Subclass it, set `static version`, implement
 * `advise`. The policy id is `<ClassName>@<version>`.
 *
 * @example
 * ```ts
 * import { DirectedIntuition, type PolicyState } from "noema";
 * export default class LongTask extends DirectedIntuition {
 *   static version = "1.0";
 *   advise(state: PolicyState) {
 *     if (state.goal.task.length > 320) return this.hint({ advice: "Consider chunking the task." });
 *   }
 * }
 * ```
 */
export abstract class DirectedIntuition {
  /** Version of the policy; part of its id. */
  static version = "unspecified";
  /** Plugin API version the policy was written for. */
  static api = PLUGIN_API_VERSION;

  /**
   * Decide about the pending action. Return nothing to allow it silently. (A policy that only reviews results
   * returns nothing here.)
   *
   * A policy may also define `review(state: ReviewState)`: it decides about an action's result, after the action
   * ran and before the result reaches the agent, and returns {@link DirectedIntuition.redact},
   * {@link DirectedIntuition.block}, {@link DirectedIntuition.hint} or nothing (see {@link ReviewState},
   * {@link ReviewReturn}). It is not declared on this class, so that subclasses need no `override`.
   */
  abstract advise(state: PolicyState): Verdict | null | undefined | void | Promise<Verdict | null | undefined | void>;

  /** An advisory verdict: recorded, never changes the action (in `review`: context for the agent). */
  hint(options: HintOptions): Verdict & { kind: "hint" } {
    return { kind: "hint", confidence: 0.5, ...options };
  }

  /**
   * A review verdict: the agent gets the result with `text` in its place, or with the parts matching
   * `patterns` masked.
   *
   * @example
   * ```ts
   * import { DirectedIntuition, type ReviewState } from "noema";
   * export default class NoKeys extends DirectedIntuition {
   *   static version = "1.0";
   *   review(state: ReviewState) {
   *     if (/sk-\w{20,}/.test(state.result.excerpt)) return this.redact({ patterns: ["sk-\\w{20,}"], advice: "key masked" });
   *   }
   * }
   * ```
   */
  redact(options: RedactOptions): ReviewVerdict {
    return { kind: "redact", confidence: 0.8, ...options };
  }

  /** A review verdict: the agent gets an error carrying `advice` instead of the result. */
  block(options: HintOptions): ReviewVerdict {
    return { kind: "block", confidence: 0.8, ...options };
  }

  /** An intervention: a patch to the pending action's input. */
  intervene(options: InterveneOptions): Verdict {
    return { kind: "intervention", confidence: 0.6, ...options };
  }

  /** A veto: block the pending action. */
  veto(options: VetoOptions): Verdict {
    return { kind: "veto", confidence: 0.8, ...options };
  }
}

/**
 * A policy written as a plain object (no import needed).
 *
 * @example
 * ```ts
 * export default {
 *   name: "NoRm",
 *   version: "1.0",
 *   advise(state) {
 *     if (state.action.command.includes("rm -rf")) return { kind: "veto", advice: "no rm -rf" };
 *   },
 * };
 * ```
 */
export interface PolicyObject {
  /** Policy name; the id is `<name>@<version>`. */
  name: string;
  /** @default {"unspecified"} */
  version?: string;
  /** Plugin API version the policy was written for. */
  api?: string;
  /** Decide about the pending action (optional when the policy has `review`). */
  advise?(state: PolicyState): Verdict | null | undefined | void | Promise<Verdict | null | undefined | void>;
  /** Optional: decide about an action's result before it reaches the agent (see {@link ReviewState}). */
  review?(state: ReviewState): ReviewReturn;
}

/**
 * Typed identity helper for plain-object policies.
 *
 * @example
 * ```ts
 * import { definePolicy } from "noema";
 * export default definePolicy({ name: "Quiet", version: "1.0", advise: () => undefined });
 * ```
 */
export function definePolicy(policy: PolicyObject): PolicyObject {
  return policy;
}

/** Status of one executed action. */
export type ActStatus = "ok" | "error" | "skipped";

/** What the runtime asks an adapter to do. */
export interface ActRequest {
  /** The episode id. */
  episode_id: string;
  /** The task. */
  task: string;
  /** The step to execute. */
  step: DeepReadonly<{ id: string; kind: string; description: string; inputs: Record<string, unknown> }>;
  /** The action, after applied interventions. */
  action: DeepReadonly<PendingAction>;
  /** Advice from policies' hints for this action. */
  hints: readonly string[];
  /** The workspace directory (the adapter's working directory), or null. */
  workspace: string | null;
  /** Aborted when the run is interrupted (SIGINT/SIGTERM); stop promptly. */
  signal: AbortSignal;
  /**
   * An adapter that starts a program passes this as `runProcess`'s
   * `onSpawn`: the runtime records the child's process group in the event
   * log (durably) before the program runs, so that `resume` after a crash
   * can stop a program that survived noema. Absent outside a run.
   */
  onProcess?: (child: SpawnedChild) => void | Promise<void>;
}

/** What an adapter reports for one action. */
export interface ActResult {
  /** ok, error or skipped. */
  status: ActStatus;
  /** One-line outcome text, e.g. `exit 0` or `Completed step step-2`. */
  outcome?: string;
  /** Structured output (JSON). Large text should be excerpted by the adapter. */
  output?: unknown;
  /** For errors: what went wrong. */
  error?: { type: string; message: string };
  /** Files the action produced, e.g. `[{ path: "out.txt" }]`. */
  artifacts?: { path: string; kind?: string }[];
  /** Facts to remember (`memory.facts`). */
  facts?: { key: string; value: unknown }[];
  /** The exit code of the program the action ran (null: killed by a signal); recorded as the act event's `exit_code`. */
  exit_code?: number | null;
}

/** What an adapter factory receives. */
export interface AdapterContext {
  /** The adapter's configuration (task file `adapter` object, CLI args). */
  config: Record<string, unknown>;
  /** Arguments after `--` on the command line. */
  args: readonly string[];
  /** The workspace directory, or null. */
  workspace: string | null;
  /** The episode directory (for adapters that write attachments). */
  episode_dir: string;
  /**
   * Names of environment variables whose values are secrets, as the run was
   * given them: an entry `"!NAME"` opts `NAME` out of the masking of variables
   * whose names say secret (pass the list to a `Redactor` as is).
   */
  secrets: readonly string[];
}

/** A running adapter. */
export interface AdapterInstance {
  /** Executes one step's action. Throwing counts as an error result. */
  act(request: ActRequest): ActResult | Promise<ActResult>;
  /** Releases resources at the end of the run. */
  close?(): void | Promise<void>;
}

/**
 * An adapter plugin: a name and a factory.
 *
 * @example
 * ```ts
 * import { defineAdapter } from "noema";
 * export default defineAdapter({
 *   name: "echo",
 *   version: "1.0",
 *   create: () => ({ act: (req) => ({ status: "ok", outcome: `did ${req.step.id}` }) }),
 * });
 * ```
 */
export interface AdapterPlugin {
  /** Adapter name; the tool label is `adapter:<name>`. */
  name: string;
  /** @default {"unspecified"} */
  version?: string;
  /** Plugin API version the adapter was written for. */
  api?: string;
  /** The action kind recorded for its actions. @default {"adapter"} */
  kind?: string;
  /** Creates the adapter for one run. May throw a usage error for bad config. */
  create(context: AdapterContext): AdapterInstance | Promise<AdapterInstance>;
}

/**
 * Typed identity helper for adapters.
 *
 * @example
 * ```ts
 * import { defineAdapter } from "noema";
 * export default defineAdapter({ name: "noop", create: () => ({ act: () => ({ status: "ok" }) }) });
 * ```
 */
export function defineAdapter(adapter: AdapterPlugin): AdapterPlugin {
  return adapter;
}
