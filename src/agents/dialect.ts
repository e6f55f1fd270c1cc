/**
 * A dialect: how one agent CLI speaks the hook protocol. It parses the
 * CLI's stdin payload into a {@link HookEvent} and turns the episode's
 * {@link Decision} into the CLI's answer.
 *
 * @module
 */
import * as v from "valibot";
import { EXIT, NoemaError } from "../errors.ts";
import { toProblems } from "../schema/problems.ts";
import type { ModelUsage } from "../schema/summary.ts";
import type { Decision } from "./core.ts";
import type { EndEvent, HookAnswer, HookEvent, PermissionEvent, PostToolEvent, PreToolEvent } from "./event.ts";
import type { RecordedReview, ReviewDelivery } from "../runtime/review_record.ts";

/** How the agent runs, which changes what an approval becomes. */
export interface AnswerContext {
  /**
   * The agent runs without a person at the keyboard (`claude -p`): a call
   * that needs approval is deferred and the episode pauses. Otherwise the
   * agent asks its user. @default {false}
   */
  print: boolean;
  /**
   * Say `allow` explicitly when noema lets a call go ahead, so the agent's
   * own permission prompts do not stop it (noema's policies are the gate:
   * `noema run --using claude-code`). Otherwise a plain allow prints
   * nothing and the agent's own permission rules apply. @default {false}
   */
  grant: boolean;
}

/** One agent CLI's hook protocol. */
export interface Dialect {
  /** The name given to `noema hook <name>`. */
  readonly name: string;
  /** Parses one payload; `null` for an event noema ignores. Throws a NoemaError (exit 2) for a bad payload. */
  parse(payload: unknown): HookEvent | null;
  /**
   * What a call that needs approval becomes (see `ProposedAction.on_ask`):
   * `defer` when the agent stops and waits for `noema approve` (Claude Code
   * `-p`; the driver pauses the episode once it stopped), `agent` when the
   * agent asks its own user, `deny` when it cannot ask. @default {"pause"}
   */
  onAsk?(context: AnswerContext): "pause" | "agent" | "deny" | "defer";
  /** The answer to a `pre_tool` event. */
  answer(event: PreToolEvent, decision: Decision, context: AnswerContext): HookAnswer;
  /**
   * The answer to a `permission` event, from the decision on the call it
   * names (see `EpisodeCore.decisionFor`; null when noema saw no such call
   * proposed). A dialect without it ignores permission events.
   */
  answerPermission?(event: PermissionEvent, decision: Decision | null, context: AnswerContext): HookAnswer;
  /**
   * Called with the answer given to a `pre_tool` event, for an agent that
   * sends no call id and must find the call again after noema rewrote its
   * input (Gemini CLI). `root` is the episodes root.
   */
  answered?(root: string, event: PreToolEvent, answer: HookAnswer): void;
  /**
   * What the agent says about calls that got no result by the end of a turn
   * (they did not run), by call id: Claude Code's transcript holds the
   * `tool_result` of a call its permission prompt refused.
   */
  notRunReasons?(event: EndEvent, callIds: readonly string[]): Map<string, string>;
  /**
   * Reads the model turns the agent recorded since the last call (Claude
   * Code's transcript) into the episode's `model.jsonl`, and returns the
   * episode's tokens per model so far (`summary.json` `metrics.tokens`), or
   * null when the agent tells none. `final` at the episode's end. Called
   * while the episode lock is held.
   */
  modelTurns?(
    root: string,
    event: HookEvent,
    episode: { episodeId: string; dir: string },
    final: boolean,
  ): Record<string, ModelUsage> | null;
  /** The id of the call a `post_tool` event belongs to, when the event's own id may not be it (Gemini CLI). */
  callOf?(root: string, event: PostToolEvent): string;
  /**
   * What the agent can be shown instead of this result (see `src/agents/result_answer.ts`). @default {cannot
   * replace: the agent sees the original, and the review records so}
   */
  resultDelivery?(event: PostToolEvent): ReviewDelivery;
  /** The answer to a `post_tool` event whose result policies reviewed. @default {no opinion} */
  answerResult?(event: PostToolEvent, review: RecordedReview): HookAnswer;
}

/**
 * Parses `payload` with a valibot schema; a mismatch is a NoemaError (exit 2)
 * naming the first wrong field in the words of every other input error
 * (`tool_use_id: required field is missing`, `expected string, got number`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { parsePayload } from "./dialect.ts";
 * parsePayload(v.object({ session_id: v.string() }), { session_id: "s1" }, "claude-code PreToolUse");
 * ```
 */
export function parsePayload<S extends v.GenericSchema>(schema: S, payload: unknown, what: string): v.InferOutput<S> {
  const r = v.safeParse(schema, payload);
  if (r.success) return r.output;
  const [problem] = toProblems(r.issues.slice(0, 1));
  throw new NoemaError("bad_hook_input", `stdin: ${what}: ${problem.path || "(payload)"}: ${problem.message}`, {
    exitCode: EXIT.USAGE,
  });
}

/**
 * The reason an agent shows for a decision, with the deciding policy.
 *
 * @example
 * ```ts
 * import { reasonText } from "./dialect.ts";
 * reasonText({ reason: "no pushes", policy_id: "no-push" } as never, "denied"); // "noema (no-push): no pushes"
 * ```
 */
export function reasonText(decision: Decision, fallback: string): string {
  const why = decision.reason ?? fallback;
  return decision.policy_id ? `noema (${decision.policy_id}): ${why}` : `noema: ${why}`;
}
