/**
 * The last complete line of a file, read backwards in chunks: what the
 * episode's log ends with (its last event) without reading the rest.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, fstatSync, readSync } from "node:fs";
import { openRegularFile } from "./regular_file.ts";

/**
 * The last complete line of a file (read backwards in chunks), or null: a torn last line (no newline after it), an
 * empty file, or, with `maxBytes`, a last line longer than that (never read whole).
 *
 * @example
 * ```ts
 * import { lastLine } from "./last_line.ts";
 * // JSON.parse(lastLine(".noema/episodes/ep_1/events.jsonl")!).id
 * ```
 */
export function lastLine(path: string, maxBytes = Infinity): string | null {
  const fd = openRegularFile(path); // a FIFO would block
  try {
    const size = fstatSync(fd).size;
    let end = size;
    let tail = Buffer.alloc(0);
    while (end > 0) {
      if (size - end > maxBytes) return null;
      const start = Math.max(0, end - 65536);
      const chunk = Buffer.alloc(end - start);
      readSync(fd, chunk, 0, chunk.length, start);
      tail = Buffer.concat([chunk, tail]);
      end = start;
      const text = tail.toString("utf8");
      const body = text.endsWith("\n") ? text.slice(0, -1) : null;
      if (body === null) return null; // a torn last line: no complete last line to trust
      const nl = body.lastIndexOf("\n");
      if (nl >= 0 || start === 0) return body.slice(nl + 1);
    }
    return null;
  } finally {
    closeSync(fd);
  }
}
