/**
 * Claude Code's hook dialect: payload schemas for `SessionStart`,
 * `UserPromptSubmit`, `PreToolUse`, `PostToolUse`, `PostToolUseFailure`,
 * `PermissionDenied`, `PermissionRequest`, `Stop` and `SessionEnd` (any
 * other event is ignored: exit 0, no output), the `hookSpecificOutput`
 * answer of `PreToolUse` and that of `PermissionRequest`
 * ({@link permissionOutput}).
 *
 * | decision | answer |
 * |---|---|
 * | deny | `permissionDecision: "deny"` with the reason |
 * | patch | `allow` with `updatedInput` |
 * | hints | `additionalContext` |
 * | ask | `defer` in print mode (the episode pauses), else `ask` |
 * | allow, no hints | nothing (or `allow` when granting) |
 *
 * A result the policies reviewed is answered at `PostToolUse` (see `../result_answer.ts`).
 *
 * @module
 */
import * as v from "valibot";
import type { Decision } from "../core.ts";
import { type AnswerContext, type Dialect, parsePayload, reasonText } from "../dialect.ts";
import type { HookAnswer, HookEvent, PreToolEvent } from "../event.ts";
import { transcriptResults } from "./transcript.ts";
import { recordTranscriptTurns } from "./model_turns.ts";
import { answerJson } from "../answer_json.ts";
import { claudeDelivery, claudeResultAnswer } from "../result_answer.ts";

const Base = v.looseObject({
  session_id: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
  cwd: v.optional(v.string()),
  hook_event_name: v.string(),
});
const Input = v.record(v.string(), v.unknown());

/** Payload schemas of the Claude Code events noema acts on (loose: unknown fields are kept). */
export const CLAUDE_PAYLOADS = {
  SessionStart: v.looseObject({ ...Base.entries, source: v.optional(v.string()) }),
  UserPromptSubmit: v.looseObject({ ...Base.entries, prompt: v.string() }),
  PreToolUse: v.looseObject({
    ...Base.entries,
    tool_name: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
    tool_input: Input,
    tool_use_id: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
  }),
  PostToolUse: v.looseObject({
    ...Base.entries,
    tool_name: v.string(),
    tool_input: Input,
    tool_use_id: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
    tool_response: v.optional(v.unknown()),
    duration_ms: v.optional(v.number()),
  }),
  PostToolUseFailure: v.looseObject({
    ...Base.entries,
    tool_name: v.string(),
    tool_input: Input,
    tool_use_id: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
    error: v.optional(v.unknown()),
    is_interrupt: v.optional(v.boolean()),
    duration_ms: v.optional(v.number()),
  }),
  PermissionDenied: v.looseObject({
    ...Base.entries,
    tool_name: v.string(),
    tool_input: Input,
    tool_use_id: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
    reason: v.optional(v.string()),
  }),
  PermissionRequest: v.looseObject({
    ...Base.entries,
    tool_name: v.pipe(v.string(), v.minLength(1, "must be a non-empty string")),
    tool_input: Input,
    permission_suggestions: v.optional(v.unknown()),
  }),
  Stop: v.looseObject({ ...Base.entries, last_assistant_message: v.optional(v.string()) }),
  SessionEnd: v.looseObject({ ...Base.entries, reason: v.optional(v.string()) }),
} as const;

type ClaudeEventName = keyof typeof CLAUDE_PAYLOADS;

/** The events noema registers for and acts on. */
export const CLAUDE_EVENTS: readonly ClaudeEventName[] = Object.keys(CLAUDE_PAYLOADS) as ClaudeEventName[];

function transcriptOf(p: Record<string, unknown>): string | null {
  return typeof p.transcript_path === "string" && p.transcript_path !== "" ? p.transcript_path : null;
}

function eventName(payload: unknown): string {
  const p = parsePayload(v.looseObject({ hook_event_name: v.string() }), payload, "claude-code hook event");
  return p.hook_event_name;
}

function parseClaude(payload: unknown): HookEvent | null {
  const name = eventName(payload);
  if (!Object.hasOwn(CLAUDE_PAYLOADS, name)) return null;
  const what = `claude-code ${name}`;
  const base = (p: v.InferOutput<typeof Base>) => ({
    session_id: p.session_id,
    cwd: p.cwd ?? null,
    name,
    transcript: transcriptOf(p),
  });
  switch (name as ClaudeEventName) {
    case "SessionStart":
      return { kind: "session_start", ...base(parsePayload(CLAUDE_PAYLOADS.SessionStart, payload, what)) };
    case "UserPromptSubmit": {
      const p = parsePayload(CLAUDE_PAYLOADS.UserPromptSubmit, payload, what);
      return { kind: "prompt", ...base(p), prompt: p.prompt };
    }
    case "PreToolUse": {
      const p = parsePayload(CLAUDE_PAYLOADS.PreToolUse, payload, what);
      return { kind: "pre_tool", ...base(p), tool: p.tool_name, input: p.tool_input, call_id: p.tool_use_id };
    }
    case "PostToolUse": {
      const p = parsePayload(CLAUDE_PAYLOADS.PostToolUse, payload, what);
      return {
        kind: "post_tool",
        ...base(p),
        tool: p.tool_name,
        input: p.tool_input,
        call_id: p.tool_use_id,
        status: "ok",
        output: p.tool_response ?? null,
        error: null,
        duration_ms: p.duration_ms ?? null,
      };
    }
    case "PostToolUseFailure": {
      const p = parsePayload(CLAUDE_PAYLOADS.PostToolUseFailure, payload, what);
      return {
        kind: "post_tool",
        ...base(p),
        tool: p.tool_name,
        input: p.tool_input,
        call_id: p.tool_use_id,
        status: "error",
        output: null,
        error: p.is_interrupt ? "interrupted" : typeof p.error === "string" ? p.error : JSON.stringify(p.error ?? null),
        duration_ms: p.duration_ms ?? null,
      };
    }
    case "PermissionDenied": {
      const p = parsePayload(CLAUDE_PAYLOADS.PermissionDenied, payload, what);
      return {
        kind: "denied",
        ...base(p),
        tool: p.tool_name,
        input: p.tool_input,
        call_id: p.tool_use_id,
        reason: `denied by Claude Code (auto mode): ${p.reason ?? "permission denied"}`,
      };
    }
    case "PermissionRequest": {
      const p = parsePayload(CLAUDE_PAYLOADS.PermissionRequest, payload, what);
      return { kind: "permission", ...base(p), tool: p.tool_name, input: p.tool_input };
    }
    case "Stop": {
      const p = parsePayload(CLAUDE_PAYLOADS.Stop, payload, what);
      return { kind: "stop", ...base(p), message: p.last_assistant_message ?? null, transcript: transcriptOf(p) };
    }
    case "SessionEnd": {
      const p = parsePayload(CLAUDE_PAYLOADS.SessionEnd, payload, what);
      return { kind: "session_end", ...base(p), message: p.reason ?? null, transcript: transcriptOf(p) };
    }
  }
}

/**
 * The `hookSpecificOutput` of a Claude Code `PreToolUse` answer (Codex has
 * its own, stricter one: `codex/dialect.ts`). `undefined` means no opinion.
 *
 * @example
 * ```ts
 * import { preToolOutput } from "./dialect.ts";
 * preToolOutput({ verdict: "deny", reason: "no", policy_id: "p", hints: [] } as never, { print: true, grant: false }, true);
 * ```
 */
export function preToolOutput(
  decision: Decision,
  context: AnswerContext,
  canDefer: boolean,
): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = { hookEventName: "PreToolUse" };
  if (decision.verdict === "deny") {
    out.permissionDecision = "deny";
    out.permissionDecisionReason = reasonText(decision, "vetoed");
  } else if (decision.verdict === "ask") {
    out.permissionDecision = context.print && canDefer ? "defer" : "ask";
    out.permissionDecisionReason = reasonText(decision, "needs approval");
  } else if (decision.verdict === "patch") {
    out.permissionDecision = "allow";
    out.permissionDecisionReason = reasonText(decision, "input rewritten");
    out.updatedInput = decision.input;
  } else if (context.grant) {
    out.permissionDecision = "allow";
  }
  if (decision.verdict !== "deny" && decision.hints.length > 0) {
    out.additionalContext = decision.hints.map((h) => `noema: ${h}`).join("\n");
  }
  return Object.keys(out).length > 1 ? out : undefined;
}

/**
 * The `hookSpecificOutput` of a Claude Code `PermissionRequest` answer, from
 * noema's decision on the call (`undefined`: no opinion, Claude Code's own
 * flow goes on):
 *
 * | decision | answer |
 * |---|---|
 * | deny | `decision: {behavior: "deny", message}` |
 * | allow, patch | `{behavior: "allow"}` when nobody can answer Claude Code's prompt (print mode) or noema is the gate (`grant`); else no opinion: its user is asked as before |
 * | ask | print mode: `deny` with the reason (the approval flow is `PreToolUse`'s defer); else no opinion: its user is asked |
 * | no call seen proposed | no opinion |
 *
 * @example
 * ```ts
 * import { permissionOutput } from "./dialect.ts";
 * permissionOutput({ verdict: "allow", reason: null, policy_id: null, hints: [] } as never, { print: true, grant: false });
 * // { hookEventName: "PermissionRequest", decision: { behavior: "allow" } }
 * ```
 */
export function permissionOutput(
  decision: Decision | null,
  context: AnswerContext,
): Record<string, unknown> | undefined {
  const out = (d: Record<string, unknown>) => ({ hookEventName: "PermissionRequest", decision: d });
  if (decision === null) return undefined;
  if (decision.verdict === "deny") return out({ behavior: "deny", message: reasonText(decision, "vetoed") });
  if (decision.verdict === "ask") {
    return context.print ? out({ behavior: "deny", message: reasonText(decision, "needs approval") }) : undefined;
  }
  return context.print || context.grant ? out({ behavior: "allow" }) : undefined;
}

function answerClaude(_event: PreToolEvent, decision: Decision, context: AnswerContext): HookAnswer {
  const out = preToolOutput(decision, context, true);
  return out ? { stdout: answerJson({ hookSpecificOutput: out }), exitCode: 0 } : { stdout: null, exitCode: 0 };
}

/**
 * The Claude Code dialect.
 *
 * @example
 * ```ts
 * import { claudeCode } from "./dialect.ts";
 * const e = claudeCode.parse({ session_id: "s", hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: "t1" });
 * console.log(e?.kind); // "pre_tool"
 * ```
 */
export const claudeCode: Dialect = {
  name: "claude-code",
  parse: parseClaude,
  answer: answerClaude,
  // `-p` defers the call and exits (the calls it runs meanwhile end first); the driver then pauses the episode for
  // noema approve. Interactive, claude asks its user.
  onAsk: (context) => (context.print ? "defer" : "agent"),
  answerPermission: (_event, decision, context) => {
    const out = permissionOutput(decision, context);
    return out ? { stdout: answerJson({ hookSpecificOutput: out }), exitCode: 0 } : { stdout: null, exitCode: 0 };
  },
  notRunReasons: (event, ids) => (event.transcript ? transcriptResults(event.transcript, ids) : new Map()),
  modelTurns: (root, event, episode, final) =>
    recordTranscriptTurns({
      root,
      session: event.session_id,
      transcript: event.transcript ?? null,
      episodeId: episode.episodeId,
      dir: episode.dir,
      final,
    }),
  // PostToolUse: a reviewed result is replaced (`updatedToolOutput`) or blocked (`decision: "block"`).
  resultDelivery: claudeDelivery,
  answerResult: claudeResultAnswer,
};
