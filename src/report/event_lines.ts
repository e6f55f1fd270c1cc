/**
 * The records of an episode's `events.jsonl` for a page or a report: the same
 * entries, with the same problems, as `readJsonl` gives, read in bounded
 * memory WITHOUT the forced garbage collections `readJsonl` makes around each
 * long line (a plan, a state projection: a 10,000-step run writes three lines
 * of 1 to 4 MB). A forced collection costs what the whole heap holds, and a
 * page is built inside a server whose heap holds other things (the runs it
 * listed, other episodes' models): six of them took about a second of a
 * 10,000-step episode's first open. Here a line longer than {@link LONG_LINE}
 * is not kept by the line reader; its bytes are read from the file at its
 * offset, decoded and parsed, and let go for the runtime to collect on its own.
 * Memory stays bounded by one chunk plus the longest line (at most the line
 * limit, `NOEMA_MAX_LINE_BYTES`).
 *
 * @module
 */
import { type JsonlEntry, readJsonl } from "../store/jsonl.ts";
import { limits } from "../store/limits.ts";

/** Lines longer than this (bytes) are read from the file at their offset, not kept by the line reader. */
export const LONG_LINE = 256 * 1024;

/**
 * Streams the records of the events file at `path`: each line's object, or a
 * problem (invalid UTF-8, blank, invalid JSON, not an object, too long, torn),
 * as `readJsonl` gives them. The `text` of a long line's entry is empty.
 *
 * @example
 * ```ts
 * import { readEventLines } from "./event_lines.ts";
 * for (const e of readEventLines(".noema/episodes/ep_1/events.jsonl")) {
 *   if (e.problem) console.error(`events.jsonl:${e.line}: ${e.message}`);
 * }
 * ```
 */
export function readEventLines(path: string): Generator<JsonlEntry> {
  return readJsonl(path, { maxLineBytes: limits().lineBytes, deferOver: LONG_LINE, collect: false, noFollow: true });
}
