/**
 * The governor: what the LLM loop asks before each tool call and tells after
 * it. The episode core (`src/runtime/core/episode_core.ts`, `EpisodeCore`)
 * satisfies this interface; so does {@link PolicyGovernor} (policies without
 * an episode), which tests and {@link govern} use.
 *
 * The shapes are the episode core's `ProposedAction`, `Decision` and
 * `RecordedResult` (imported as types only).
 *
 * @module
 */

import type { Decision, ProposedAction, RecordedResult } from "../runtime/core/episode_core.ts";
import type { RecordedReview, ReviewDelivery } from "../runtime/review_record.ts";

export type { Decision, ProposedAction, RecordedResult, RecordedReview, ReviewDelivery };

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
  /**
   * Records the result of an action that ran (by step id or call id). A governor whose policies review results
   * returns what the agent is shown instead (see `src/runtime/review.ts`); nothing or null: the result as it is.
   */
  record(
    stepOrCallId: string,
    result: RecordedResult,
    delivery?: ReviewDelivery,
  ): Promise<RecordedReview | null | void>;
  /**
   * Optional: the model's id of a call proposed under another key (the AI
   * SDK refines a call's input, where the decision is made, before it tells
   * its id).
   */
  bindCall?(key: string, callId: string): void;
  /**
   * Optional: an allowed call is about to run; what the governor keeps about
   * the calls so far must be durable now (an episode writes the events it
   * holds in memory). Throwing denies the call.
   */
  beforeExecute?(): void;
  /**
   * Optional: a governor that pauses (an episode) has this. One call at a
   * time can wait for approval there, so the hooks propose calls with
   * `on_ask: "defer"` and hold back the later calls of a turn once one asks;
   * when the turn's other calls have run and been recorded, the agent calls
   * `pauseDeferred()`, which pauses the episode at its checkpoint (returned;
   * null when no call waits).
   */
  pauseDeferred?(): string | null;
}
