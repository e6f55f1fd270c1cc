/**
 * Codex CLI's hook dialect (verified against codex-cli 0.169.0): the same
 * payload fields as Claude Code for `SessionStart`, `UserPromptSubmit`,
 * `PreToolUse`, `PostToolUse` and `Stop` (others are ignored). Shell calls
 * arrive as tool `Bash` with `{command}`, `tool_use_id` is the model's call
 * id, and `tool_response` is the command's output as a string.
 *
 * Codex's `PreToolUse` answer is stricter than Claude Code's: an output it
 * does not accept counts as a failed hook and **the tool runs**. So:
 *
 * | decision | answer |
 * |---|---|
 * | deny | `permissionDecision: "deny"` with a non-empty reason |
 * | ask | `deny` too: Codex rejects `ask` and would run the call, so a call that needs approval is blocked, saying so |
 * | patch | `allow` with `updatedInput` (the only `allow` Codex accepts) |
 * | hints | `additionalContext` alone |
 * | allow | nothing, even when granting (`allow` without `updatedInput` is rejected) |
 *
 * @module
 */
import * as v from "valibot";
import type { Decision } from "../core.ts";
import { type AnswerContext, type Dialect, parsePayload, reasonText } from "../dialect.ts";
import type { HookAnswer, HookEvent, PreToolEvent } from "../event.ts";
import { CLAUDE_PAYLOADS } from "../claude_code/dialect.ts";
import { answerJson } from "../answer_json.ts";
import { codexDelivery, codexResultAnswer } from "../result_answer.ts";

/** Payload schemas of the Codex events noema acts on. */
export const CODEX_PAYLOADS = {
  SessionStart: CLAUDE_PAYLOADS.SessionStart,
  UserPromptSubmit: CLAUDE_PAYLOADS.UserPromptSubmit,
  PreToolUse: CLAUDE_PAYLOADS.PreToolUse,
  PostToolUse: CLAUDE_PAYLOADS.PostToolUse,
  Stop: CLAUDE_PAYLOADS.Stop,
} as const;

/** The events noema registers for in Codex. */
export const CODEX_EVENTS: readonly (keyof typeof CODEX_PAYLOADS)[] = Object.keys(CODEX_PAYLOADS) as (
  keyof typeof CODEX_PAYLOADS
)[];

function parseCodex(payload: unknown): HookEvent | null {
  const { hook_event_name: name } = parsePayload(
    v.looseObject({ hook_event_name: v.string() }),
    payload,
    "codex hook event",
  );
  if (!Object.hasOwn(CODEX_PAYLOADS, name)) return null;
  const what = `codex ${name}`;
  const schema = CODEX_PAYLOADS[name as keyof typeof CODEX_PAYLOADS];
  const p = parsePayload(schema, payload, what) as Record<string, unknown> & { session_id: string; cwd?: string };
  const base = { session_id: p.session_id, cwd: p.cwd ?? null, name };
  switch (name) {
    case "SessionStart":
      return { kind: "session_start", ...base };
    case "UserPromptSubmit":
      return { kind: "prompt", ...base, prompt: String(p.prompt) };
    case "PreToolUse":
      return {
        kind: "pre_tool",
        ...base,
        tool: String(p.tool_name),
        input: p.tool_input as Record<string, unknown>,
        call_id: String(p.tool_use_id),
      };
    case "PostToolUse":
      return {
        kind: "post_tool",
        ...base,
        tool: String(p.tool_name),
        input: p.tool_input as Record<string, unknown>,
        call_id: String(p.tool_use_id),
        status: "ok",
        output: p.tool_response ?? null,
        error: null,
        duration_ms: typeof p.duration_ms === "number" ? p.duration_ms : null,
      };
    default:
      return {
        kind: "stop",
        ...base,
        message: typeof p.last_assistant_message === "string" ? p.last_assistant_message : null,
      };
  }
}

/** Why a call that needs approval is blocked under Codex. */
export const CODEX_APPROVAL_NOTE = "needs approval, and Codex hooks cannot ask, so the call is blocked";

/**
 * The `hookSpecificOutput` Codex accepts for a decision; `undefined` when
 * noema has nothing to say (the call runs).
 *
 * @example
 * ```ts
 * import { codexOutput } from "./dialect.ts";
 * codexOutput({ verdict: "deny", reason: "no pushes", policy_id: "NoPush", hints: [] } as never);
 * // { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "noema (NoPush): no pushes" }
 * ```
 */
export function codexOutput(decision: Decision): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = { hookEventName: "PreToolUse" };
  if (decision.verdict === "deny") {
    out.permissionDecision = "deny";
    out.permissionDecisionReason = reasonText(decision, "vetoed");
  } else if (decision.verdict === "ask") {
    out.permissionDecision = "deny";
    out.permissionDecisionReason = `${reasonText(decision, "approval required")} (${CODEX_APPROVAL_NOTE})`;
  } else if (decision.verdict === "patch") {
    out.permissionDecision = "allow";
    out.permissionDecisionReason = reasonText(decision, "input rewritten");
    out.updatedInput = decision.input;
  }
  if (decision.verdict !== "deny" && decision.verdict !== "ask" && decision.hints.length > 0) {
    out.additionalContext = decision.hints.map((h) => `noema: ${h}`).join("\n");
  }
  return Object.keys(out).length > 1 ? out : undefined;
}

function answerCodex(_event: PreToolEvent, decision: Decision, _context: AnswerContext): HookAnswer {
  const out = codexOutput(decision);
  return out ? { stdout: answerJson({ hookSpecificOutput: out }), exitCode: 0 } : { stdout: null, exitCode: 0 };
}

/**
 * The Codex CLI dialect.
 *
 * @example
 * ```ts
 * import { codex } from "./dialect.ts";
 * codex.parse({ session_id: "s", hook_event_name: "PermissionRequest" }); // null: ignored
 * ```
 */
export const codex: Dialect = {
  name: "codex",
  parse: parseCodex,
  answer: answerCodex,
  // Codex's hooks cannot ask: a call that needs approval is refused, and the session goes on.
  onAsk: () => "deny",
  // PostToolUse: Codex cannot replace a result; a block's reason and hints reach the model (result_answer.ts).
  resultDelivery: codexDelivery,
  answerResult: codexResultAnswer,
};
