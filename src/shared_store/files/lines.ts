/**
 * A stream's lines in the files backend: `data` holds each line's exact
 * bytes followed by a newline (the stream as it was written), and `index`
 * holds each line's end offset in `data`, 8 bytes big-endian, so line `seq`
 * is found without reading the lines before it and a page of lines is read
 * with two bounded reads.
 *
 * An append writes and fsyncs the lines to `data` first, then their entries to
 * `index`: a reader sees only lines whose entries are complete, so a line is
 * never torn. A crash between the two leaves bytes past the last entry, cut
 * off by the next append (which holds the episode's write lock).
 *
 * @module
 */
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { FILE_MODE } from "../../store/atomic.ts";
import { mkdirBelow, O_NOFOLLOW, refuseSymlinks, symlinkError } from "../../store/nofollow.ts";

const ENTRY = 8;

function openAt(path: string, flags: number, root: string, use: "read" | "write"): number | null {
  refuseSymlinks(path, root, use);
  try {
    return openSync(path, flags | O_NOFOLLOW, FILE_MODE);
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return null;
    throw symlinkError(e, path, use);
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.alloc(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, position + got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

function writeAt(fd: number, data: Uint8Array, position: number): void {
  let off = 0;
  while (off < data.length) off += writeSync(fd, data, off, data.length - off, position + off);
}

/** End offsets of entries `first…first+count-1` (0-based); entry -1 ends at 0. */
function ends(index: number, first: number, count: number): number[] {
  const from = Math.max(0, first);
  const buf = readAt(index, from * ENTRY, (first + count - from) * ENTRY);
  const out: number[] = first < 0 ? [0] : [];
  for (let i = 0; i + ENTRY <= buf.length; i += ENTRY) out.push(Number(buf.readBigUInt64BE(i)));
  return out;
}

/**
 * Complete lines stored for a stream (0 when it has none).
 *
 * @example
 * ```ts
 * import { countLines } from "./lines.ts";
 * countLines("/mnt/noema/episodes/ep_1/lines/events.jsonl", "/mnt/noema");
 * ```
 */
export function countLines(streamDir: string, root: string): number {
  const fd = openAt(join(streamDir, "index"), constants.O_RDONLY, root, "read");
  if (fd === null) return 0;
  try {
    return Math.floor(fstatSync(fd).size / ENTRY);
  } finally {
    closeSync(fd);
  }
}

/**
 * Lines `fromSeq…` (at most `limit`), each its exact bytes; memory is bounded
 * by the page, whatever the stream's length.
 *
 * @example
 * ```ts
 * import { readStoredLines } from "./lines.ts";
 * readStoredLines("/mnt/noema/episodes/ep_1/lines/events.jsonl", "/mnt/noema", 1, 100);
 * ```
 */
export function readStoredLines(streamDir: string, root: string, fromSeq: number, limit: number): Uint8Array[] {
  const index = openAt(join(streamDir, "index"), constants.O_RDONLY, root, "read");
  if (index === null) return [];
  try {
    const n = Math.floor(fstatSync(index).size / ENTRY);
    const first = Math.max(1, Math.floor(fromSeq));
    const count = Math.min(Math.max(0, Math.floor(limit)), n - first + 1);
    if (count <= 0) return [];
    const e = ends(index, first - 2, count + 1); // the end before the first line, then each line's end
    const data = openAt(join(streamDir, "data"), constants.O_RDONLY, root, "read");
    if (data === null) return [];
    try {
      const bytes = readAt(data, e[0], e[e.length - 1] - e[0]);
      const out: Uint8Array[] = [];
      for (let i = 1; i < e.length; i++) {
        const line = Uint8Array.from(bytes.subarray(e[i - 1] - e[0], e[i] - e[0] - 1)); // without its newline
        out.push(line);
      }
      return out;
    } finally {
      closeSync(data);
    }
  } finally {
    closeSync(index);
  }
}

/**
 * How many complete lines a stream holds and their bytes without their newlines (as PostgreSQL's `octet_length` of
 * each line): the last index entry's end offset less one newline per line. Reads one entry.
 *
 * @example
 * ```ts
 * import { storedLineBytes } from "./lines.ts";
 * storedLineBytes("/mnt/noema/episodes/ep_1/lines/events.jsonl", "/mnt/noema"); // { lines: 12, bytes: 3400 }
 * ```
 */
export function storedLineBytes(streamDir: string, root: string): { lines: number; bytes: number } {
  const index = openAt(join(streamDir, "index"), constants.O_RDONLY, root, "read");
  if (index === null) return { lines: 0, bytes: 0 };
  try {
    const n = Math.floor(fstatSync(index).size / ENTRY);
    return n === 0 ? { lines: 0, bytes: 0 } : { lines: n, bytes: ends(index, n - 1, 1)[0] - n };
  } finally {
    closeSync(index);
  }
}

/**
 * The first complete lines of a stream, as the stream's text (each line with its newline), at most `maxBytes` of
 * them (a line that would pass the bound is left out), and whether lines were left out. Reads the last index entry,
 * then one bounded read of `data`: bytes past the last entry (an append cut short) are never read.
 *
 * @example
 * ```ts
 * import { readStoredHead } from "./lines.ts";
 * readStoredHead("/mnt/noema/episodes/ep_1/lines/events.jsonl", "/mnt/noema", 1 << 20).bytes.length;
 * ```
 */
export function readStoredHead(streamDir: string, root: string, maxBytes: number): { bytes: Buffer; cut: boolean } {
  const index = openAt(join(streamDir, "index"), constants.O_RDONLY, root, "read");
  if (index === null) return { bytes: Buffer.alloc(0), cut: false };
  let end: number;
  try {
    const n = Math.floor(fstatSync(index).size / ENTRY);
    end = n === 0 ? 0 : ends(index, n - 1, 1)[0];
  } finally {
    closeSync(index);
  }
  const data = openAt(join(streamDir, "data"), constants.O_RDONLY, root, "read");
  if (data === null) return { bytes: Buffer.alloc(0), cut: false };
  try {
    const bytes = readAt(data, 0, Math.min(end, Math.max(0, maxBytes)));
    if (bytes.length === end) return { bytes, cut: false };
    return { bytes: bytes.subarray(0, bytes.lastIndexOf(10) + 1), cut: true };
  } finally {
    closeSync(data);
  }
}

/**
 * Appends lines after the `stored` ones (the caller holds the episode's write
 * lock and has checked the overlap). Durable: `data`, then `index`, fsynced.
 *
 * @example
 * ```ts
 * import { appendStoredLines } from "./lines.ts";
 * appendStoredLines("/mnt/noema/episodes/ep_1/lines/events.jsonl", "/mnt/noema", [new Uint8Array([123, 125])]);
 * ```
 */
export function appendStoredLines(streamDir: string, root: string, lines: Uint8Array[]): void {
  if (lines.length === 0) return;
  mkdirBelow(streamDir, root);
  const rw = constants.O_RDWR | constants.O_CREAT;
  const index = openAt(join(streamDir, "index"), rw, root, "write")!;
  try {
    const size = fstatSync(index).size;
    const n = Math.floor(size / ENTRY);
    if (size !== n * ENTRY) ftruncateSync(index, n * ENTRY); // a torn entry of a crashed append
    const end = n === 0 ? 0 : ends(index, n - 1, 1)[0];
    const data = openAt(join(streamDir, "data"), rw, root, "write")!;
    try {
      if (fstatSync(data).size !== end) ftruncateSync(data, end); // lines a crashed append never indexed
      const body = Buffer.concat(lines.flatMap((l) => [l, NEWLINE]));
      writeAt(data, body, end);
      fsyncSync(data);
    } finally {
      closeSync(data);
    }
    const entries = Buffer.alloc(lines.length * ENTRY);
    let at = end;
    lines.forEach((l, i) => entries.writeBigUInt64BE(BigInt(at += l.length + 1), i * ENTRY));
    writeAt(index, entries, n * ENTRY);
    fsyncSync(index);
  } finally {
    closeSync(index);
  }
}

const NEWLINE = new Uint8Array([10]);
