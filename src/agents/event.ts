/**
 * The hook events noema understands, whatever agent CLI sent them: one
 * normalized shape that the `noema hook` command acts on. Each dialect
 * (`claude_code`, `codex`, `gemini`) parses its payloads into these.
 *
 * @module
 */

/** Fields every event carries. */
export interface EventBase {
  /** The agent's session id: one session is one episode. */
  session_id: string;
  /** The agent's working directory. */
  cwd: string | null;
  /** The agent's event name, as sent. */
  name: string;
  /** The agent's transcript (JSONL) when it names one (Claude Code's `transcript_path`), else absent or null. */
  transcript?: string | null;
}

/** A session started. */
export interface SessionStartEvent extends EventBase {
  kind: "session_start";
}

/** The user submitted a prompt (the first one becomes the episode's goal). */
export interface PromptEvent extends EventBase {
  kind: "prompt";
  prompt: string;
}

/** A tool call is about to run. */
export interface PreToolEvent extends EventBase {
  kind: "pre_tool";
  tool: string;
  input: Record<string, unknown>;
  call_id: string;
  /**
   * The agent sends no call id, so `call_id` names the call's content: the
   * same call made again after the first one ended is a new call.
   */
  repeatable?: boolean;
}

/** A tool call ran (successfully or not). */
export interface PostToolEvent extends EventBase {
  kind: "post_tool";
  tool: string;
  input: Record<string, unknown>;
  call_id: string;
  /** See {@link PreToolEvent.repeatable}. */
  repeatable?: boolean;
  status: "ok" | "error";
  output: unknown;
  error: string | null;
  duration_ms: number | null;
}

/** The agent stopped answering (`stop`) or the session ended (`session_end`). */
export interface EndEvent extends EventBase {
  kind: "stop" | "session_end";
  /** The agent's last message, or why the session ended. */
  message: string | null;
}

/** The agent itself refused a tool call (its permission rules or classifier): the call does not run. */
export interface DeniedEvent extends EventBase {
  kind: "denied";
  tool: string;
  input: Record<string, unknown>;
  call_id: string;
  /** Who denied it and why, as the agent says. */
  reason: string;
}

/**
 * The agent asks for permission to run a call it names by content only (no
 * call id: Claude Code's `PermissionRequest`, sent where it would show its
 * permission prompt, and in print mode where nobody can answer one).
 */
export interface PermissionEvent extends EventBase {
  kind: "permission";
  tool: string;
  input: Record<string, unknown>;
}

/** A hook event, normalized. */
export type HookEvent =
  | SessionStartEvent
  | PromptEvent
  | PreToolEvent
  | PostToolEvent
  | EndEvent
  | DeniedEvent
  | PermissionEvent;

/**
 * What the hook prints and how it exits. `stdout: null` prints nothing (no
 * opinion); exit 2 blocks the call with `stderr` as the reason.
 */
export interface HookAnswer {
  stdout: string | null;
  stderr?: string;
  exitCode: 0 | 2;
}

/**
 * The answer that expresses no opinion: exit 0, nothing printed.
 *
 * @example
 * ```ts
 * import { NO_OPINION } from "./event.ts";
 * console.log(NO_OPINION.exitCode); // 0
 * ```
 */
export const NO_OPINION: HookAnswer = Object.freeze({ stdout: null, exitCode: 0 });
