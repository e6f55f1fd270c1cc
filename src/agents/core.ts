/**
 * The episode core as the agent integrations see it: the interface of
 * `src/runtime/core/episode_core.ts` (issue 13 §1), which external drivers
 * (hooks, `noema run --using claude-code`) call with one action at a time.
 *
 * Everything under `src/agents/` depends on these types only, so that wiring
 * the core in is one import.
 *
 * @module
 */
import type { RunResult } from "../runtime/engine.ts";

/** One action an agent proposes (a tool call). */
export interface ProposedAction {
  kind: string;
  tool: string;
  input: Record<string, unknown>;
  command?: string;
  description?: string;
  call_id?: string;
}

/** What the episode decided about a proposed action. */
export interface Decision {
  verdict: "allow" | "patch" | "deny" | "ask";
  step_id: string;
  action_candidate_id: string;
  input: Record<string, unknown>;
  reason: string | null;
  policy_id: string | null;
  hints: string[];
  checkpoint_id?: string;
}

/** What happened when the action ran. */
export interface RecordedResult {
  status: "ok" | "error" | "skipped";
  outcome?: string;
  output?: unknown;
  error?: { type: string; message: string };
  duration_ms?: number;
  artifacts?: Record<string, unknown>[];
  facts?: { key: string; value: unknown }[];
}

/** How an external driver ends an episode. */
export interface FinishOptions {
  adapter_result?: "success" | "error" | "skipped";
  message?: string;
  error?: { type: string; message: string };
}

/** An open episode that actions enter from outside. */
export interface EpisodeHandle {
  readonly episodeId: string;
  readonly dir: string;
  propose(action: ProposedAction): Promise<Decision>;
  record(stepOrCallId: string, result: RecordedResult): Promise<void>;
  finish(end?: FinishOptions): Promise<RunResult>;
  close(): void;
}
