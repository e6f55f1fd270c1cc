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
import { Buffer } from "node:buffer";
import { closeSync, readSync } from "node:fs";
import { jsonType } from "../json.ts";
import { type JsonlEntry, type RawLine, readLines } from "../store/jsonl.ts";
import { limits } from "../store/limits.ts";
import { openRegularFile } from "../store/regular_file.ts";

/** Lines longer than this (bytes) are read from the file at their offset, not kept by the line reader. */
export const LONG_LINE = 256 * 1024;

// ignoreBOM keeps a leading U+FEFF in the text, as the line reader does (a BOM on line 1 is reported).
const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The text of a long line, read at its offset (a `\r` before the newline dropped); null when not UTF-8. */
function longLineText(path: string, raw: RawLine): string | null {
  const fd = openRegularFile(path);
  try {
    const buf = Buffer.allocUnsafe(raw.bytes);
    let off = 0;
    for (let n = 1; off < raw.bytes && n > 0; off += n) n = readSync(fd, buf, off, raw.bytes - off, raw.offset + off);
    const stop = raw.terminated && off > 0 && buf[off - 1] === 13 ? off - 1 : off;
    try {
      return strictUtf8.decode(buf.subarray(0, stop));
    } catch {
      return null;
    }
  } finally {
    closeSync(fd);
  }
}

/** The entry of a line's text: its object, or why it is not one (as `readJsonl` words it). */
function entryOf(raw: RawLine, text: string): JsonlEntry | null {
  const { line, offset, bytes } = raw;
  if (text.trim() === "") {
    if (!raw.terminated) return null; // trailing whitespace after the last newline
    return { line, offset, bytes, problem: "blank", message: "blank line (expected one JSON object per line)" };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    if (!raw.terminated) {
      const message =
        `torn final line: ${bytes} bytes without a newline that are not complete JSON (a write was cut short)`;
      return { line, offset, bytes, problem: "torn", message };
    }
    const message = line === 1 && text.charCodeAt(0) === 0xfeff
      ? "starts with a byte order mark (BOM); JSONL files must be plain UTF-8"
      : `invalid JSON: ${(e as Error).message}`;
    return { line, offset, bytes, problem: "json", message };
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { line, offset, bytes, problem: "not_object", message: `expected a JSON object, got ${jsonType(value)}` };
  }
  return { line, offset, bytes, value: value as Record<string, unknown>, text: raw.deferred ? "" : text };
}

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
export function* readEventLines(path: string): Generator<JsonlEntry> {
  const limit = limits().lineBytes;
  for (const raw of readLines(path, { maxLineBytes: limit, deferOver: LONG_LINE })) {
    const { line, offset, bytes } = raw;
    if (raw.tooLong) {
      yield raw.terminated
        ? { line, offset, bytes, problem: "too_long", message: `line of ${bytes} bytes, longer than ${limit}; skipped` }
        : {
          line,
          offset,
          bytes,
          problem: "torn",
          message: `torn final line: ${bytes} bytes without a newline, longer than ${limit} (not an event)`,
        };
      continue;
    }
    const text = raw.deferred ? longLineText(path, raw) : raw.text;
    if (text === null) {
      yield { line, offset, bytes, problem: "utf8", message: "line is not valid UTF-8" };
      continue;
    }
    const entry = entryOf(raw, text);
    if (entry !== null) yield entry;
  }
}
