/**
 * Reading the complete lines appended to a file since a byte offset, with
 * their exact bytes: what a publisher sends of a JSONL stream. A final line
 * without its newline is still being written, and is left for the next read.
 *
 * @module
 */
import { closeSync, readSync } from "node:fs";
import { openRegularFile } from "../store/regular_file.ts";

/** What {@link readNewLines} found. */
export interface NewLines {
  /** Each complete line's bytes, without its newline. */
  lines: Uint8Array[];
  /** The offset just past the last complete line. */
  offset: number;
}

/**
 * Reads complete lines from `offset`, at most `maxBytes` of them (at least
 * one line, however long).
 *
 * @example
 * ```ts
 * import { readNewLines } from "./line_tail.ts";
 * const { lines, offset } = readNewLines(".noema/episodes/ep_1/events.jsonl", 0);
 * ```
 */
export function readNewLines(path: string, offset: number, maxBytes = 4 << 20): NewLines {
  const fd = openRegularFile(path, path, { noFollow: true }); // a symlink planted in the episode is never followed
  try {
    const lines: Uint8Array[] = [];
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    let pos = offset;
    let next = offset; // offset past the last complete line
    const chunk = Buffer.allocUnsafe(1 << 20);
    while (next - offset < maxBytes || lines.length === 0) {
      const n = readSync(fd, chunk, 0, chunk.length, pos);
      if (n === 0) break;
      pos += n;
      let start = 0;
      let nl: number;
      while ((nl = chunk.indexOf(10, start)) !== -1 && nl < n) {
        const part = chunk.subarray(start, nl);
        const line = pendingBytes ? Buffer.concat([...pending, part]) : Buffer.from(part);
        lines.push(new Uint8Array(line.buffer, line.byteOffset, line.length));
        next += pendingBytes + part.length + 1;
        pending = [];
        pendingBytes = 0;
        start = nl + 1;
        if (next - offset >= maxBytes) break;
      }
      if (next - offset >= maxBytes && lines.length > 0) break;
      if (start < n) {
        pending.push(Buffer.from(chunk.subarray(start, n)));
        pendingBytes += n - start;
      }
    }
    return { lines, offset: next };
  } finally {
    closeSync(fd);
  }
}
