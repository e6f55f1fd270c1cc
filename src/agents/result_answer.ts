/**
 * The answers to a tool result that policies reviewed (`review`), in each
 * agent CLI's dialect, and what each can show its model instead of a result.
 *
 * | agent | redact | block | hint |
 * |---|---|---|---|
 * | Claude Code `PostToolUse` | `hookSpecificOutput.updatedToolOutput`: the masked output, or the text in the output's shape (Bash: `stdout`) | `decision: "block"` + `reason`, and `updatedToolOutput` with the reason, so the model never reads the result | `additionalContext` |
 * | Claude Code `PostToolUseFailure` | cannot replace: the model saw the original | `decision: "block"` + `reason` (the error stays) | `additionalContext` |
 * | Gemini CLI `AfterTool` | `decision: "deny"` whose `reason` carries the masked result: the model gets the call as an error, the reason then the masked output | `decision: "deny"` + `reason` | `hookSpecificOutput.additionalContext` |
 * | Codex `PostToolUse` | cannot replace (Codex refuses `updatedMCPToolOutput`): the model saw the original | `decision: "block"` + `reason`: Codex gives the model the reason in place of the output | `additionalContext` |
 *
 * What the model saw is recorded in the review's governance event (`agent_saw`).
 *
 * @module
 */
import type { RecordedReview, ReviewDelivery } from "../runtime/review_record.ts";
import { answerJson } from "./answer_json.ts";
import type { HookAnswer, PostToolEvent } from "./event.ts";
import { NO_OPINION } from "./event.ts";

/** The reason an agent reads for a review decision, naming the policy. */
export function reviewReason(review: RecordedReview): string {
  const why = review.reason ?? review.decision;
  const verb = review.decision === "block" ? "withheld this result" : "masked parts of this result";
  return review.policy_id ? `noema (${review.policy_id}) ${verb}: ${why}` : `noema ${verb}: ${why}`;
}

function hintsText(review: RecordedReview): string | undefined {
  return review.hints.length > 0 ? review.hints.map((h) => `noema: ${h}`).join("\n") : undefined;
}

/**
 * A text shown in place of a result, in the shape of the original output
 * (Claude Code accepts a replacement only in the tool's own output shape):
 * Bash's `{stdout, stderr, …}` gets it as `stdout`, a file read's
 * `{file: {content}}` as the content, a `{content}` or `{output}` object in
 * that field; a string output is replaced by it.
 *
 * @example
 * ```ts
 * import { inShapeOf } from "./result_answer.ts";
 * inShapeOf({ stdout: "sk-…", stderr: "", interrupted: false }, "[withheld]"); // { stdout: "[withheld]", stderr: "", interrupted: false }
 * ```
 */
export function inShapeOf(original: unknown, text: string): unknown {
  if (typeof original !== "object" || original === null || Array.isArray(original)) return text;
  const o = original as Record<string, unknown>;
  if (typeof o.stdout === "string") return { ...o, stdout: text, stderr: "" };
  const file = o.file as Record<string, unknown> | undefined;
  if (typeof file === "object" && file !== null && typeof file.content === "string") {
    return { ...o, file: { ...file, content: text } };
  }
  for (const key of ["content", "output", "result", "text"]) {
    if (typeof o[key] === "string") return { ...o, [key]: text };
  }
  return text;
}

/** What Claude Code can show instead of a result: any output of a call that succeeded; nothing for a failure. */
export function claudeDelivery(event: PostToolEvent): ReviewDelivery {
  return { replace: event.status === "ok" };
}

/**
 * Claude Code's answer to `PostToolUse` (or `PostToolUseFailure`) after a review.
 *
 * @example
 * ```ts
 * import { claudeResultAnswer } from "./result_answer.ts";
 * // claudeResultAnswer(event, review).stdout; // {"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":…}}
 * ```
 */
export function claudeResultAnswer(event: PostToolEvent, review: RecordedReview): HookAnswer {
  const out: Record<string, unknown> = {};
  const specific: Record<string, unknown> = { hookEventName: event.name };
  if (review.agent_saw === "redacted") {
    specific.updatedToolOutput = typeof review.shown === "string"
      ? inShapeOf(event.output, review.shown)
      : review.shown;
  } else if (review.decision === "block" && review.enforced) {
    out.decision = "block";
    out.reason = reviewReason(review);
    if (review.agent_saw === "blocked") specific.updatedToolOutput = inShapeOf(event.output, out.reason as string);
  }
  const hints = hintsText(review);
  if (hints) specific.additionalContext = hints;
  if (Object.keys(specific).length > 1) out.hookSpecificOutput = specific;
  return Object.keys(out).length > 0 ? { stdout: answerJson(out), exitCode: 0 } : NO_OPINION;
}

/** What Gemini CLI can show instead of a result: a denied result whose reason carries the replacement. */
export function geminiDelivery(_event: PostToolEvent): ReviewDelivery {
  return { replace: true };
}

/**
 * Gemini CLI's answer to `AfterTool` after a review: the model gets the call as an error whose text is the
 * reason, carrying the masked result for a redaction.
 *
 * @example
 * ```ts
 * import { geminiResultAnswer } from "./result_answer.ts";
 * // geminiResultAnswer(event, review).stdout; // {"decision":"deny","reason":"noema (…) masked parts of this result: …"}
 * ```
 */
export function geminiResultAnswer(_event: PostToolEvent, review: RecordedReview): HookAnswer {
  const out: Record<string, unknown> = {};
  if (review.agent_saw === "redacted") {
    const content = geminiContent(review.shown);
    const text = typeof content === "string" ? content : answerJson(content);
    out.decision = "deny";
    out.reason = `${reviewReason(review)}\n${text}`;
  } else if (review.agent_saw === "blocked") {
    out.decision = "deny";
    out.reason = reviewReason(review);
  }
  const hints = hintsText(review);
  if (hints) out.hookSpecificOutput = { hookEventName: "AfterTool", additionalContext: hints };
  return Object.keys(out).length > 0 ? { stdout: answerJson(out), exitCode: 0 } : NO_OPINION;
}

/** The part of Gemini's `tool_response` the model reads (`llmContent`), else the whole response. */
function geminiContent(response: unknown): unknown {
  const r = response as { llmContent?: unknown } | null;
  return r && typeof r === "object" && "llmContent" in r ? r.llmContent : response;
}

/** Codex cannot replace a result (a redaction leaves the original in front of the model), but a block withholds it. */
export function codexDelivery(_event: PostToolEvent): ReviewDelivery {
  return { replace: false, block: true };
}

/**
 * Codex's answer to `PostToolUse` after a review: `decision: "block"` with the reason for a block (Codex gives
 * the model the reason instead of the output), `additionalContext` for hints; a redaction cannot be expressed
 * (recorded as seen).
 *
 * @example
 * ```ts
 * import { codexResultAnswer } from "./result_answer.ts";
 * // codexResultAnswer(event, review).stdout; // {"decision":"block","reason":"noema (…) withheld this result: …"}
 * ```
 */
export function codexResultAnswer(_event: PostToolEvent, review: RecordedReview): HookAnswer {
  const out: Record<string, unknown> = {};
  if (review.decision === "block" && review.enforced) {
    out.decision = "block";
    out.reason = reviewReason(review);
  }
  const hints = hintsText(review);
  if (hints) out.hookSpecificOutput = { hookEventName: "PostToolUse", additionalContext: hints };
  return Object.keys(out).length > 0 ? { stdout: answerJson(out), exitCode: 0 } : NO_OPINION;
}
