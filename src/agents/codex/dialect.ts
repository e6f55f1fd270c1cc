/**
 * Codex CLI's hook dialect: the same payload fields and `hookSpecificOutput`
 * as Claude Code for `SessionStart`, `UserPromptSubmit`, `PreToolUse`,
 * `PostToolUse` and `Stop` (others are ignored), with `allow`/`deny`/`ask`
 * only (no `defer`: an approval becomes `ask`). Codex treats a hook whose
 * output has an unknown field as failed and runs the tool, so the answer
 * holds only the fields Codex knows.
 *
 * @module
 */
import * as v from "valibot";
import type { Decision } from "../core.ts";
import { type AnswerContext, type Dialect, parsePayload } from "../dialect.ts";
import type { HookAnswer, HookEvent, PreToolEvent } from "../event.ts";
import { CLAUDE_PAYLOADS, preToolOutput } from "../claude_code/dialect.ts";

/** Payload schemas of the Codex events noema acts on. */
export const CODEX_PAYLOADS = {
  SessionStart: CLAUDE_PAYLOADS.SessionStart,
  UserPromptSubmit: CLAUDE_PAYLOADS.UserPromptSubmit,
  PreToolUse: CLAUDE_PAYLOADS.PreToolUse,
  PostToolUse: CLAUDE_PAYLOADS.PostToolUse,
  Stop: CLAUDE_PAYLOADS.Stop,
} as const;

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

function answerCodex(_event: PreToolEvent, decision: Decision, context: AnswerContext): HookAnswer {
  const out = preToolOutput(decision, context, false);
  return out ? { stdout: JSON.stringify({ hookSpecificOutput: out }), exitCode: 0 } : { stdout: null, exitCode: 0 };
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
export const codex: Dialect = { name: "codex", parse: parseCodex, answer: answerCodex };
