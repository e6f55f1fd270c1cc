/**
 * A Claude Code session's model turns in its episode: what the transcript
 * says since the last read becomes lines of the episode's `model.jsonl`
 * (one per assistant turn: the model, its input, output, cache-write and
 * cache-read tokens) and the episode's token use per model, which becomes
 * `summary.json` `metrics.tokens` and `metrics.cost` at the end.
 *
 * Where the reading stands is kept per session, in
 * `<root>/sessions/claude-code/transcripts/s_<digest>.json` (written
 * atomically, while the episode lock is held): the transcript path, the byte
 * offset read, the message held back, and the episode's turns so far. A
 * session that goes on into a new episode (an interactive session, one
 * episode per prompt) goes on reading where the last episode stopped. The
 * transcript is read at each `PostToolUse`, `PostToolUseFailure`,
 * `PermissionDenied`, `Stop` and `SessionEnd` hook call and when
 * `noema run --using claude-code` finishes: a missed hook call only delays
 * the read to the next one. A process killed between the `model.jsonl`
 * append and the cursor write leaves those turns to be read, and appended,
 * again.
 *
 * The session's subagents (the Task tool) write their turns to transcripts of
 * their own (`<session>/subagents/agent-<id>.jsonl`): each is read the same
 * way, its turns marked `sidechain`.
 *
 * A `model.jsonl` line: `{turn, mode: "transcript", provider: "anthropic",
 * model, started_at, duration_ms: null, message_id, sidechain, request: null,
 * response: {content: null, finish_reason, usage: {input_tokens,
 * output_tokens, cache_creation_input_tokens, cache_read_input_tokens}},
 * error: null}` (the llm agent's line shape, with what a transcript tells).
 *
 * @module
 */
import { closeSync, readFileSync, statSync } from "node:fs";
import process from "node:process";
import { join } from "node:path";
import * as v from "valibot";
import { ModelUsage } from "../../schema/summary.ts";
import { refuseSymlinks, writeJsonAtomic } from "../../store/atomic.ts";
import { JsonlAppender } from "../../store/jsonl.ts";
import { openRegularFile } from "../../store/regular_file.ts";
import { addUsage } from "../../runtime/cost/metrics.ts";
import { sessionKey } from "../../store/session_index.ts";
import { type ClaudeTurn, ReadPosition, readTurns, START } from "./transcript_turns.ts";
import { subagentsDir, subagentTranscripts } from "./subagent_transcripts.ts";
import { ownEntry } from "../../json.ts";

/**
 * The per-session cursor file.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { TranscriptCursor } from "./model_turns.ts";
 * // v.parse(TranscriptCursor, JSON.parse(readFileSync(cursorPath(root, session), "utf8")));
 * ```
 */
export const TranscriptCursor = v.object({
  schema_version: v.literal("claude-transcript/1.0"),
  path: v.string(),
  episode_id: v.string(),
  /** Turns written to the episode's `model.jsonl`. */
  turns: v.pipe(v.number(), v.integer(), v.minValue(0)),
  models: v.record(v.string(), ModelUsage),
  ...ReadPosition.entries,
  /** Where each subagent transcript's reading stands, by its path under `subagents/`. */
  subagents: v.optional(v.record(v.string(), ReadPosition)),
});
/** The per-session cursor file. */
export type TranscriptCursor = v.InferOutput<typeof TranscriptCursor>;

/** The model log's name in the episode directory (the llm agent's `MODEL_LOG`). */
const MODEL_LOG = "model.jsonl";

/**
 * Where a session's transcript cursor is kept.
 *
 * @example
 * ```ts
 * import { cursorPath } from "./model_turns.ts";
 * cursorPath("/w/.noema", "a07059c2-…"); // "/w/.noema/sessions/claude-code/transcripts/s_….json"
 * ```
 */
export function cursorPath(root: string, session: string): string {
  return join(root, "sessions", "claude-code", "transcripts", `${sessionKey(session)}.json`);
}

/**
 * The session's cursor, or null (none yet, or damaged: read again from the start).
 *
 * @example
 * ```ts
 * import { readCursor } from "./model_turns.ts";
 * readCursor("/w/.noema", "a07059c2-…")?.offset;
 * ```
 */
export function readCursor(root: string, session: string): TranscriptCursor | null {
  const path = cursorPath(root, session);
  let text: string;
  try {
    refuseSymlinks(path, root, "read");
    const fd = openRegularFile(path, path, { noFollow: true }); // a FIFO would block the hook for ever
    try {
      text = readFileSync(fd, "utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  try {
    const r = v.safeParse(TranscriptCursor, JSON.parse(text));
    return r.success ? r.output : null;
  } catch {
    return null;
  }
}

function lineOf(n: number, t: ClaudeTurn): string {
  return JSON.stringify({
    turn: n,
    mode: "transcript",
    provider: "anthropic",
    model: t.model,
    started_at: t.timestamp,
    duration_ms: null,
    message_id: t.message_id,
    sidechain: t.sidechain,
    request: null,
    response: { content: null, finish_reason: t.stop_reason, usage: t.usage },
    error: null,
  });
}

/** What {@link recordTranscriptTurns} needs. */
export interface TurnsTarget {
  root: string;
  session: string;
  /** The transcript path the agent gave (null: the one read last for this session, if any). */
  transcript: string | null;
  episodeId: string;
  /** The episode directory (its `model.jsonl`). */
  dir: string;
  /** The episode ends: the last message is complete. */
  final?: boolean;
}

/** How long the last read waits for Claude Code's final answer to reach the transcript (`NOEMA_TRANSCRIPT_SETTLE_MS`). */
function settleMs(): number {
  const n = Number(process.env.NOEMA_TRANSCRIPT_SETTLE_MS ?? 2000);
  return Number.isFinite(n) && n >= 0 ? n : 2000;
}

/** Whether the file at `path` grows past `offset` within `ms` (checked every 25 ms, blocking: the hook has nothing else to do). */
function grewWithin(path: string, offset: number, ms: number): boolean {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const end = Date.now() + ms;;) {
    try {
      if (statSync(path).size > offset) return true;
    } catch {
      return false;
    }
    if (Date.now() >= end) return false;
    Atomics.wait(pause, 0, 0, 25);
  }
}

/**
 * Reads the session's transcript on from its cursor into the episode's
 * `model.jsonl`, and returns the episode's tokens per model so far; null
 * when no transcript is known. Call it holding the episode lock.
 *
 * @example
 * ```ts
 * import { recordTranscriptTurns } from "./model_turns.ts";
 * const models = recordTranscriptTurns({ root, session, transcript, episodeId, dir, final: true });
 * ```
 */
export function recordTranscriptTurns(o: TurnsTarget): Record<string, ModelUsage> | null {
  const before = readCursor(o.root, o.session);
  const path = o.transcript ?? before?.path ?? null;
  if (path === null) return null;
  const position = before !== null && before.path === path ? before : START;
  const sameEpisode = before !== null && before.episode_id === o.episodeId;
  const models: Record<string, ModelUsage> = sameEpisode ? structuredClone(before.models) : {};
  let turns = sameEpisode ? before.turns : 0;
  let log: JsonlAppender | null = null;
  const onTurn = (t: ClaudeTurn) => {
    const u = t.usage;
    const cached = u.cache_creation_input_tokens + u.cache_read_input_tokens;
    addUsage(models, t.model, {
      input: u.input_tokens + cached,
      output: u.output_tokens,
      cache_write: u.cache_creation_input_tokens,
      cache_read: u.cache_read_input_tokens,
    });
    log ??= new JsonlAppender(join(o.dir, MODEL_LOG), { buffered: true, root: o.dir });
    log.appendRaw(lineOf(++turns, t));
  };
  const final = { final: o.final };
  let lastStop: string | null = null;
  const count = (t: ClaudeTurn) => {
    lastStop = t.stop_reason;
    onTurn(t);
  };
  let at = readTurns(
    path,
    { offset: position.offset, pending: position.pending, recent: position.recent },
    count,
    final,
  );
  // At the end, a last turn that asked for a tool means the final answer is not in the transcript yet (Claude Code
  // runs its Stop hook before it appends it, and may write what comes before it in several pieces): wait for it,
  // reading each piece, for at most the settle time in all.
  const settleEnd = Date.now() + settleMs();
  while (
    o.final && lastStop === "tool_use" && Date.now() < settleEnd && grewWithin(path, at.offset, settleEnd - Date.now())
  ) {
    at = readTurns(path, at, count, final);
  }
  // The subagents' turns (the Task tool) are in transcripts of their own.
  const subagents: Record<string, ReadPosition> = {};
  const known = position === START ? {} : before?.subagents ?? {};
  for (const rel of subagentTranscripts(path)) {
    const from = ownEntry(known, rel) ?? START;
    const read = readTurns(join(subagentsDir(path), rel), from, (t) => onTurn({ ...t, sidechain: true }), final);
    subagents[rel] = { offset: read.offset, pending: read.pending, recent: read.recent };
  }
  (log as JsonlAppender | null)?.close();
  const cursor: TranscriptCursor = {
    schema_version: "claude-transcript/1.0",
    path,
    episode_id: o.episodeId,
    turns,
    models,
    ...at,
    ...(Object.keys(subagents).length > 0 ? { subagents } : {}),
  };
  // Nothing new (the transcript did not grow, or does not exist yet): no write, no fsync on the hook's path.
  if (before === null || JSON.stringify(cursor) !== JSON.stringify(before)) {
    writeJsonAtomic(cursorPath(o.root, o.session), cursor, { root: o.root });
  }
  return models;
}

/**
 * Where Claude Code keeps a session's transcript when no hook call named it:
 * `$CLAUDE_CONFIG_DIR` (default `~/.claude`), `projects/`, the working
 * directory with every character but letters and digits made `-`, then
 * `<session>.jsonl`.
 *
 * @example
 * ```ts
 * import { defaultTranscriptPath } from "./model_turns.ts";
 * defaultTranscriptPath("0efe…", "/tmp/ws", { HOME: "/home/me" }); // "/home/me/.claude/projects/-tmp-ws/0efe….jsonl"
 * ```
 */
export function defaultTranscriptPath(
  session: string,
  cwd: string,
  env: Record<string, string | undefined>,
): string | null {
  const config = env.CLAUDE_CONFIG_DIR || (env.HOME ? join(env.HOME, ".claude") : null);
  if (config === null || !/^[A-Za-z0-9-]+$/.test(session)) return null;
  return join(config, "projects", cwd.replace(/[^A-Za-z0-9]/g, "-"), `${session}.jsonl`);
}
