/**
 * The governor: what the LLM loop asks before each tool call and tells after
 * it. The episode core (`src/runtime/core/episode_core.ts`, `EpisodeCore`)
 * satisfies this interface; so does {@link PolicyGovernor} (policies without
 * an episode), which tests and {@link govern} use.
 *
 * The shapes mirror the episode core's `ProposedAction`, `Decision` and
 * `RecordedResult` exactly, so the loop codes against the core without
 * importing it.
 *
 * @module
 */

/** A tool call the agent wants to make. */
export interface ProposedAction {
  /** Always `tool` for LLM tool calls. */
  kind: string;
  /** The tool name, e.g. `shell`, `read_file`, `mcp__files__read`. */
  tool: string;
  /** The arguments the model sent (parsed JSON). */
  input: Record<string, unknown>;
  /** One display string of what will run (the shell command, or a short view of the input). */
  command?: string;
  /** A description of the call. */
  description?: string;
  /** The model's tool call id. */
  call_id?: string;
}

/** What the governor decided about a proposed action. */
export interface Decision {
  /** allow (run as is), patch (run `input`), deny (refuse with `reason`), ask (pause for approval). */
  verdict: "allow" | "patch" | "deny" | "ask";
  /** The step the call became. */
  step_id: string;
  /** The action candidate recorded for it. */
  action_candidate_id: string;
  /** The input to run (patched by interventions). */
  input: Record<string, unknown>;
  /** Why (for deny and ask). */
  reason: string | null;
  /** The policy that decided. */
  policy_id: string | null;
  /** Advice from hints. */
  hints: string[];
  /** The checkpoint, when the verdict is ask. */
  checkpoint_id?: string;
}

/** What a tool call produced. */
export interface RecordedResult {
  /** ok, error or skipped. */
  status: "ok" | "error" | "skipped";
  /** One-line outcome text. */
  outcome?: string;
  /** Structured output (JSON). */
  output?: unknown;
  /** For errors: what went wrong. */
  error?: { type: string; message: string };
  /** Wall time of the call. */
  duration_ms?: number;
  /** Files the call produced. */
  artifacts?: Record<string, unknown>[];
  /** Facts to remember. */
  facts?: { key: string; value: unknown }[];
}

/**
 * What the LLM loop needs from an episode: a decision before each call and a
 * record after it.
 *
 * @example
 * ```ts
 * import type { Governor } from "noema";
 * const allowAll: Governor = {
 *   propose: async (a) => ({ verdict: "allow", step_id: "s1", action_candidate_id: "ac1", input: a.input, reason: null, policy_id: null, hints: [] }),
 *   record: async () => {},
 * };
 * ```
 */
export interface Governor {
  /** Consults the policies about one action; `ask` pauses the episode. */
  propose(action: ProposedAction): Promise<Decision>;
  /** Records the result of an action that ran (by step id or call id). */
  record(stepOrCallId: string, result: RecordedResult): Promise<void>;
}
