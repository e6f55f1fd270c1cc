/**
 * The model turns of a Claude Code session, read from its transcript
 * (`transcript_path`, JSONL) incrementally: from a byte offset on, in
 * chunks, one line in memory at a time, so that a transcript of any size is
 * read in bounded memory and each byte once.
 *
 * An assistant message is written as several lines (one per content block)
 * that share its `message.id` and usage: it is one turn, counted once, with
 * the usage of its last line. A message is complete once an assistant line of
 * another message follows it; the last one is held back (`pending`) until
 * then, or until the final read at the episode's end. A torn last line (still
 * being written) is left for the next read; a line that is not JSON is
 * skipped; so is a line longer than 16 MiB (the message's other lines carry
 * the same usage). A transcript that shrank (rewritten) is read again from
 * its start, the ids of the last messages counted keeping them from being
 * counted twice. `<synthetic>` messages (Claude Code's own, no model call)
 * are not turns.
 *
 * @module
 */
import { closeSync, fstatSync, readSync } from "node:fs";
import * as v from "valibot";
import { openRegularFile } from "../../store/regular_file.ts";

const Tokens = v.pipe(v.number(), v.integer(), v.minValue(0));

/**
 * One assistant turn: the model and the tokens of its call.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ClaudeTurn } from "./transcript_turns.ts";
 * v.is(ClaudeTurn, { message_id: "msg_1", model: "claude-opus-5-5", timestamp: null, stop_reason: "end_turn",
 *   sidechain: false, usage: { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 } }); // true
 * ```
 */
export const ClaudeTurn = v.object({
  message_id: v.string(),
  model: v.string(),
  timestamp: v.nullable(v.string()),
  stop_reason: v.nullable(v.string()),
  sidechain: v.boolean(),
  usage: v.object({
    input_tokens: Tokens,
    output_tokens: Tokens,
    cache_creation_input_tokens: Tokens,
    cache_read_input_tokens: Tokens,
  }),
});
/** One assistant turn. */
export type ClaudeTurn = v.InferOutput<typeof ClaudeTurn>;

/**
 * Where the reading of a transcript stands.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ReadPosition } from "./transcript_turns.ts";
 * v.is(ReadPosition, { offset: 0, pending: null, recent: [] }); // true
 * ```
 */
export const ReadPosition = v.object({
  /** Bytes read and done with (whole lines). */
  offset: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** The last message read, not yet counted: more of its lines may follow. */
  pending: v.nullable(ClaudeTurn),
  /** Ids of the last messages counted (at most 256), so that none is counted twice. */
  recent: v.array(v.string()),
});
/** Where the reading of a transcript stands. */
export type ReadPosition = v.InferOutput<typeof ReadPosition>;

/**
 * A transcript not read yet.
 *
 * @example
 * ```ts
 * import { readTurns, START } from "./transcript_turns.ts";
 * readTurns("/home/me/.claude/projects/p/s.jsonl", START, (t) => console.log(t.model));
 * ```
 */
export const START: ReadPosition = Object.freeze({ offset: 0, pending: null, recent: [] as string[] });

const CHUNK = 1024 * 1024;
const MAX_LINE = 16 * 1024 * 1024;
const RECENT = 256;
const ASSISTANT = Buffer.from('"assistant"');
const USAGE = Buffer.from('"usage"');

const count = (n: unknown) => (typeof n === "number" && Number.isInteger(n) && n >= 0 ? n : 0);

/** The turn a transcript line holds, or null (another kind of line, not JSON, no usage). */
function turnOf(line: Buffer): ClaudeTurn | null {
  if (line.indexOf(ASSISTANT) < 0 || line.indexOf(USAGE) < 0) return null; // most lines: not parsed at all
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line.toString("utf8"));
  } catch {
    return null;
  }
  const m = entry?.message as Record<string, unknown> | undefined;
  if (entry?.type !== "assistant" || typeof m !== "object" || m === null) return null;
  const u = m.usage as Record<string, unknown> | undefined;
  if (typeof u !== "object" || u === null || typeof m.model !== "string" || m.model === "<synthetic>") return null;
  const id = typeof m.id === "string" ? m.id : typeof entry.uuid === "string" ? entry.uuid : null;
  if (id === null) return null;
  return {
    message_id: id,
    model: m.model,
    timestamp: typeof entry.timestamp === "string" ? entry.timestamp : null,
    stop_reason: typeof m.stop_reason === "string" ? m.stop_reason : null,
    sidechain: entry.isSidechain === true,
    usage: {
      input_tokens: count(u.input_tokens),
      output_tokens: count(u.output_tokens),
      cache_creation_input_tokens: count(u.cache_creation_input_tokens),
      cache_read_input_tokens: count(u.cache_read_input_tokens),
    },
  };
}

/** Folds turns into a position: a message's later lines replace its pending turn; a complete one is emitted. */
class Turns {
  constructor(readonly at: ReadPosition, readonly emit: (turn: ClaudeTurn) => void) {}

  add(turn: ClaudeTurn): void {
    const at = this.at;
    if (at.pending?.message_id === turn.message_id) {
      at.pending = turn; // the same message's next block: the same call, its latest usage
      return;
    }
    if (at.recent.includes(turn.message_id)) return; // counted already (a rewritten transcript read again)
    this.flush();
    at.pending = turn;
  }

  flush(): void {
    const at = this.at;
    if (at.pending === null) return;
    this.emit(at.pending);
    at.recent.push(at.pending.message_id);
    if (at.recent.length > RECENT) at.recent.splice(0, at.recent.length - RECENT);
    at.pending = null;
  }
}

/**
 * Reads the transcript at `path` from `from` on, calling `onTurn` for each
 * complete turn (and, with `final`, for the last one too). Returns the new
 * position; `from` is not changed. A missing transcript reads as empty.
 *
 * @example
 * ```ts
 * import { readTurns, START } from "./transcript_turns.ts";
 * let at = START;
 * at = readTurns("/home/me/.claude/projects/p/s.jsonl", at, (t) => console.log(t.model, t.usage));
 * at = readTurns("/home/me/.claude/projects/p/s.jsonl", at, (t) => console.log(t.model, t.usage), { final: true });
 * ```
 */
export function readTurns(
  path: string,
  from: ReadPosition,
  onTurn: (turn: ClaudeTurn) => void,
  options: { final?: boolean } = {},
): ReadPosition {
  const at: ReadPosition = structuredClone(from);
  const turns = new Turns(at, onTurn);
  let fd: number;
  try {
    fd = openRegularFile(path, path);
  } catch (e) {
    if ((e as { code?: string }).code !== "ENOENT") throw e;
    if (options.final) turns.flush();
    return at;
  }
  try {
    const size = fstatSync(fd).size;
    if (size < at.offset) at.offset = 0; // rewritten: read again, `recent` keeps what was counted
    readLines(fd, at.offset, size, (line, end) => {
      if (line !== null) {
        const turn = turnOf(line);
        if (turn !== null) turns.add(turn);
      }
      at.offset = end;
    });
  } finally {
    closeSync(fd);
  }
  if (options.final) turns.flush();
  return at;
}

/**
 * Calls `onLine` with each whole line between `start` and `size` and the
 * offset just after it (`null` for a line over 16 MiB, skipped); a torn last
 * line is not passed. A line that spans chunks is gathered in one buffer,
 * reused from line to line (grown up to 16 MiB), so that memory stays bounded
 * whatever the transcript's size.
 */
function readLines(fd: number, start: number, size: number, onLine: (line: Buffer | null, end: number) => void): void {
  const buf = Buffer.alloc(CHUNK);
  let line = Buffer.alloc(0), held = 0, skipping = false;
  const hold = (piece: Buffer) => {
    if (held + piece.length > line.length) {
      const grown = Buffer.alloc(Math.min(MAX_LINE, Math.max(held + piece.length, line.length * 2)));
      line.copy(grown, 0, 0, held);
      line = grown;
    }
    piece.copy(line, held);
    held += piece.length;
  };
  let pos = start;
  while (pos < size) {
    const n = readSync(fd, buf, 0, Math.min(CHUNK, size - pos), pos);
    if (n <= 0) break;
    let from = 0;
    for (let nl = buf.indexOf(10, from); nl >= 0 && nl < n; nl = buf.indexOf(10, from)) {
      const piece = buf.subarray(from, nl);
      if (skipping || held + piece.length > MAX_LINE) onLine(null, pos + nl + 1);
      else if (held === 0) onLine(piece, pos + nl + 1);
      else {
        hold(piece);
        onLine(line.subarray(0, held), pos + nl + 1);
      }
      held = 0;
      skipping = false;
      from = nl + 1;
    }
    if (from < n && !skipping) {
      if (held + n - from > MAX_LINE) {
        held = 0;
        skipping = true; // too long to hold: skipped up to its end
      } else hold(buf.subarray(from, n));
    }
    pos += n;
  }
}
