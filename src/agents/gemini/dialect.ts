/**
 * Gemini CLI's hook dialect (verified against @google/gemini-cli 0.61.0):
 * `SessionStart`, `BeforeAgent` (the prompt), `BeforeTool`, `AfterTool`,
 * `AfterAgent` (the agent stopped) and `SessionEnd`; other events are
 * ignored. Shell calls arrive as tool `run_shell_command` with `{command}`;
 * `AfterTool` carries `tool_response: {llmContent, returnDisplay, error?}`.
 * Gemini sends no tool call id: a call is named by a hash of its session,
 * tool and input ({@link geminiCallId}), and a rewritten call is mapped back
 * by `rewrites.ts`.
 *
 * | decision | answer to `BeforeTool` |
 * |---|---|
 * | deny | `{decision: "deny", reason}`: the model gets `Tool execution blocked: <reason>` |
 * | ask | `{decision: "ask", reason, systemMessage}`; unattended (`--print`, `gemini -p`) a `deny` saying approval is needed, since headless Gemini would wait forever |
 * | patch | `{decision: "allow", reason, hookSpecificOutput: {tool_input}}`: Gemini runs the rewritten input |
 * | hints | `systemMessage` (Gemini ignores `additionalContext` at `BeforeTool`) |
 * | allow | nothing (Gemini's own policy still applies to an `allow`) |
 *
 * @module
 */
import * as v from "valibot";
import type { Decision } from "../core.ts";
import { type AnswerContext, type Dialect, parsePayload, reasonText } from "../dialect.ts";
import type { HookAnswer, HookEvent, PreToolEvent } from "../event.ts";
import { geminiCallId } from "./call_id.ts";
import { decidedCallId, rememberRewrite } from "./rewrites.ts";
import { answerJson } from "../answer_json.ts";
import { geminiDelivery, geminiResultAnswer } from "../result_answer.ts";

export { geminiCallId };

const Base = v.looseObject({
  session_id: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
  cwd: v.optional(v.string()),
  hook_event_name: v.string(),
});
const Tool = v.looseObject({
  ...Base.entries,
  tool_name: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
  tool_input: v.record(v.string(), v.unknown()),
});

/** Payload schemas of the Gemini CLI events noema acts on. */
export const GEMINI_PAYLOADS = {
  SessionStart: Base,
  BeforeAgent: v.looseObject({ ...Base.entries, prompt: v.string() }),
  BeforeTool: Tool,
  AfterTool: v.looseObject({ ...Tool.entries, tool_response: v.optional(v.unknown()) }),
  AfterAgent: v.looseObject({ ...Base.entries, prompt_response: v.optional(v.string()) }),
  SessionEnd: v.looseObject({ ...Base.entries, reason: v.optional(v.string()) }),
} as const;

/** The events noema registers for in Gemini CLI. */
export const GEMINI_EVENTS: readonly (keyof typeof GEMINI_PAYLOADS)[] = [
  "SessionStart",
  "BeforeAgent",
  "BeforeTool",
  "AfterTool",
  "AfterAgent",
  "SessionEnd",
];

function afterTool(p: v.InferOutput<(typeof GEMINI_PAYLOADS)["AfterTool"]>, name: string): HookEvent {
  const response = (p.tool_response ?? null) as Record<string, unknown> | null;
  const err = response && typeof response === "object" ? response.error : undefined;
  const message = err && typeof err === "object" ? (err as { message?: unknown }).message : err;
  return {
    kind: "post_tool",
    session_id: p.session_id,
    cwd: p.cwd ?? null,
    name,
    tool: p.tool_name,
    input: p.tool_input,
    call_id: geminiCallId(p.session_id, p.tool_name, p.tool_input),
    repeatable: true,
    status: message ? "error" : "ok",
    output: response,
    error: message ? String(message) : null,
    duration_ms: null,
  };
}

function parseGemini(payload: unknown): HookEvent | null {
  const { hook_event_name: name } = parsePayload(
    v.looseObject({ hook_event_name: v.string() }),
    payload,
    "gemini hook event",
  );
  if (!Object.hasOwn(GEMINI_PAYLOADS, name)) return null;
  const what = `gemini ${name}`;
  const base = (p: v.InferOutput<typeof Base>) => ({ session_id: p.session_id, cwd: p.cwd ?? null, name });
  switch (name as keyof typeof GEMINI_PAYLOADS) {
    case "SessionStart":
      return { kind: "session_start", ...base(parsePayload(Base, payload, what)) };
    case "BeforeAgent": {
      const p = parsePayload(GEMINI_PAYLOADS.BeforeAgent, payload, what);
      return { kind: "prompt", ...base(p), prompt: p.prompt };
    }
    case "BeforeTool": {
      const p = parsePayload(Tool, payload, what);
      const call_id = geminiCallId(p.session_id, p.tool_name, p.tool_input);
      return { kind: "pre_tool", ...base(p), tool: p.tool_name, input: p.tool_input, call_id, repeatable: true };
    }
    case "AfterTool":
      return afterTool(parsePayload(GEMINI_PAYLOADS.AfterTool, payload, what), name);
    case "AfterAgent": {
      const p = parsePayload(GEMINI_PAYLOADS.AfterAgent, payload, what);
      return { kind: "stop", ...base(p), message: p.prompt_response ?? null };
    }
    case "SessionEnd": {
      const p = parsePayload(GEMINI_PAYLOADS.SessionEnd, payload, what);
      return { kind: "session_end", ...base(p), message: p.reason ?? null };
    }
  }
}

/** Why a call that needs approval is blocked when Gemini runs unattended. */
export const GEMINI_APPROVAL_NOTE = "needs approval, and Gemini runs unattended, so the call is blocked";

function answerGemini(_event: PreToolEvent, decision: Decision, context: AnswerContext): HookAnswer {
  const out: Record<string, unknown> = {};
  if (decision.verdict === "deny") {
    out.decision = "deny";
    out.reason = reasonText(decision, "vetoed");
  } else if (decision.verdict === "ask" && context.print) {
    out.decision = "deny";
    out.reason = `${reasonText(decision, "approval required")} (${GEMINI_APPROVAL_NOTE})`;
  } else if (decision.verdict === "ask") {
    out.decision = "ask";
    out.reason = reasonText(decision, "needs approval");
    out.systemMessage = out.reason;
  } else if (decision.verdict === "patch") {
    out.decision = "allow";
    out.reason = reasonText(decision, "input rewritten");
    out.hookSpecificOutput = { hookEventName: "BeforeTool", tool_input: decision.input };
  }
  if ((decision.verdict === "allow" || decision.verdict === "patch") && decision.hints.length > 0) {
    out.systemMessage = decision.hints.map((h) => `noema: ${h}`).join("\n");
  }
  return Object.keys(out).length > 0 ? { stdout: answerJson(out), exitCode: 0 } : { stdout: null, exitCode: 0 };
}

/**
 * The Gemini CLI dialect.
 *
 * @example
 * ```ts
 * import { gemini } from "./dialect.ts";
 * gemini.parse({ session_id: "s", hook_event_name: "BeforeTool", tool_name: "run_shell_command", tool_input: { command: "ls" } });
 * ```
 */
export const gemini: Dialect = {
  name: "gemini",
  parse: parseGemini,
  answer: answerGemini,
  // Unattended, a call that needs approval is refused; interactive, Gemini asks its user.
  onAsk: (context) => (context.print ? "deny" : "agent"),
  answered: rememberRewrite,
  callOf: decidedCallId,
  // AfterTool: a reviewed result is replaced by a denied result whose reason carries it (result_answer.ts).
  resultDelivery: geminiDelivery,
  answerResult: geminiResultAnswer,
};
