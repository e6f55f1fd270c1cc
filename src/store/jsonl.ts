/**
 * JSON Lines: appends that write one whole line per write call, and a
 * streaming reader that never loads a whole file, reports each bad line with
 * its number, and tells a torn final line (a write cut short by a crash) from
 * other damage.
 *
 * @module
 */
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { Buffer } from "node:buffer";
import process from "node:process";
import { FILE_MODE } from "./atomic.ts";
import { O_NOFOLLOW, refuseSymlinks, symlinkError } from "./nofollow.ts";
import { openRegularFile } from "./regular_file.ts";
import { jsonType } from "../json.ts";
import { NoemaError } from "../errors.ts";
import { collectGarbage } from "./gc.ts";
import { diskFull } from "./disk_full.ts";
import { DEFAULT_MAX_LINE_BYTES, limits } from "./limits.ts";
import { SyncBehind } from "./sync_behind.ts";
import { LogDigest } from "./log_digest.ts";
import type { FileDigest } from "./hash.ts";

/** Options of {@link JsonlAppender}. */
export interface JsonlAppenderOptions {
  /**
   * Keep appended lines in memory and write them together: at
   * {@link JsonlAppender.flush}, `sync`, `close`, when 64 KiB are waiting,
   * at the latest on the next turn of the event loop, and when the process
   * exits (not when it is killed). A batch is one write call of whole
   * lines. For a log written at every step of a loop, where the caller
   * flushes before anything acts on what it logged.
   * @default {false}
   */
  buffered?: boolean;
  /** The root the file lies below: no component below it may be a symlink (see `refuseSymlinks`). @default {only the file and its directory are checked} */
  root?: string;
  /**
   * Longest line written, in bytes: a longer one throws a {@link LineTooLongError} and nothing is written, so
   * the file never holds a line that {@link readLines} would skip.
   * @default {limits().lineBytes (NOEMA_MAX_LINE_BYTES, 16 MiB)}
   */
  maxLineBytes?: number;
  /**
   * Hash the file on a worker thread as it grows (see `log_digest.ts`), for {@link JsonlAppender.digest} once
   * closed: a long log's digest is then ready when it is sealed.
   * @default {false}
   */
  digest?: boolean;
}

/** Bytes waiting in a buffered appender before they are written without waiting for a flush. */
const BATCH_BYTES = 64 * 1024;

/** The error for a log path that is not a regular file (a FIFO, a device, a directory). */
function notRegular(path: string): NoemaError {
  return new NoemaError("not_regular", "not a regular file; refusing to append to it", { file: path });
}

/** Buffered appenders holding lines: written when the process exits (an uncaught error, `process.exit`). */
const waiting = new Set<JsonlAppender>();
let exitHook = false;

/** Writes what buffered appenders hold when the process exits (installed once). */
function watchExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.on("exit", flushAtExit);
  // Deno ends on an uncaught error without the "exit" event; its error events come first (listening to
  // them changes nothing else: the process still ends with the error).
  if ("Deno" in globalThis) {
    globalThis.addEventListener("error", flushAtExit);
    globalThis.addEventListener("unhandledrejection", flushAtExit);
  }
}

function flushAtExit(): void {
  for (const a of [...waiting]) {
    try {
      a.flush();
    } catch {
      // exiting anyway: nothing left to report to
    }
  }
}

/**
 * An open JSONL file for appending. Each {@link JsonlAppender.append} adds
 * exactly one line (`JSON + "\n"`), written with one write call on an
 * `O_APPEND` descriptor (a buffered appender writes a batch of whole lines
 * per call), so concurrent readers never see half a line from a finished
 * write. Call {@link JsonlAppender.sync} at durability points. The file is
 * opened with `O_NOFOLLOW`, and a symlinked file or directory is refused.
 *
 * @example
 * ```ts
 * import { JsonlAppender } from "noema";
 * const out = new JsonlAppender("/tmp/events.jsonl");
 * out.append({ id: "e1" });
 * out.sync();
 * out.close();
 * ```
 */
export class JsonlAppender {
  #fd: number | undefined;
  #buf: Buffer = Buffer.allocUnsafe(BATCH_BYTES);
  /** Bytes of whole lines waiting in `#buf` (buffered appenders only). */
  #pending = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The file's size after this appender's last write (a single writer appends to it: the episode's lock). */
  #end = 0;
  /** A write that failed in the background flush, reported by the next call. */
  #failed: unknown = undefined;
  readonly #buffered: boolean;
  readonly #maxLine: number;
  /** Flushes what was written to disk in the background, every few MiB (see `sync_behind.ts`). */
  #behind: SyncBehind | undefined;
  /** Hashes the file in the background (the `digest` option). */
  #digest: LogDigest | undefined;
  #closedDigest: FileDigest | null = null;
  /** The file path. */
  readonly path: string;

  constructor(path: string, options: JsonlAppenderOptions = {}) {
    this.path = path;
    this.#buffered = options.buffered ?? false;
    this.#maxLine = options.maxLineBytes ?? limits().lineBytes;
    refuseSymlinks(path, options.root);
    // O_NONBLOCK: a FIFO planted where the log should be fails at once (ENXIO, or refused below) instead of
    // blocking the open until a reader appears (no effect on a regular file).
    // Read and write: the last byte is read (see #endLine).
    const flags = constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | O_NOFOLLOW |
      (constants.O_NONBLOCK ?? 0);
    try {
      this.#fd = openSync(path, flags, FILE_MODE);
    } catch (e) {
      if ((e as { code?: string }).code === "ENXIO") throw notRegular(path);
      throw symlinkError(e, path);
    }
    const stat = fstatSync(this.#fd);
    if (!stat.isFile()) {
      closeSync(this.#fd);
      this.#fd = undefined;
      throw notRegular(path);
    }
    this.#end = stat.size + this.#endLine(stat.size);
    this.#behind = new SyncBehind(path, this.#fd);
    if (options.digest) this.#digest = new LogDigest(this.#fd, this.#end);
  }

  /**
   * Ends the file's last line when a write was cut just before its newline (a crash, a full disk), so the first
   * line appended starts a line of its own instead of joining that one (both would be lost to every reader);
   * returns the bytes written (0 or 1). A resume sets a last line that does not parse aside before it appends.
   */
  #endLine(size: number): number {
    if (size === 0) return 0;
    const last = Buffer.alloc(1);
    if (readSync(this.#fd!, last, 0, 1, size - 1) !== 1 || last[0] === 10) return 0;
    try {
      return writeSync(this.#fd!, "\n");
    } catch (e) {
      closeSync(this.#fd!);
      this.#fd = undefined;
      throw diskFull(e, this.path);
    }
  }

  /**
   * Size and `sha256:` of the whole file as this appender closed it, when the `digest` option had a worker hash it
   * (a long log); else null.
   */
  get digest(): FileDigest | null {
    return this.#closedDigest;
  }

  /** Appends one value as one line; returns the line as written (without the newline). */
  append(value: unknown): string {
    const text = JSON.stringify(value);
    this.appendRaw(text);
    return text;
  }

  /**
   * Appends an already serialized JSON text (must not contain a newline). A text longer than the line limit
   * throws a {@link LineTooLongError} (line 0: not written) and writes nothing.
   */
  appendRaw(text: string): void {
    if (this.#fd === undefined) throw new Error(`${this.path}: append after close`);
    this.#rethrow();
    if (text.length * 3 > this.#maxLine && Buffer.byteLength(text, "utf8") > this.#maxLine) {
      throw new LineTooLongError(this.path, 0, this.#maxLine, Buffer.byteLength(text, "utf8"));
    }
    // Encode into one reused buffer (a UTF-16 unit takes at most 3 UTF-8 bytes), then one write call.
    const most = text.length * 3 + 1;
    if (this.#pending > 0 && this.#pending + most > this.#buf.length) this.flush();
    if (this.#buf.length < this.#pending + most) {
      const grown = Buffer.allocUnsafe(Math.max(this.#pending + most, this.#buf.length * 2));
      this.#buf.copy(grown, 0, 0, this.#pending);
      this.#buf = grown;
    }
    const end = this.#pending + this.#buf.write(text, this.#pending, "utf8") + 1;
    this.#buf[end - 1] = 10;
    this.#pending = end;
    if (!this.#buffered || end >= BATCH_BYTES) return this.flush();
    waiting.add(this);
    // One write scheduled at a time: a flush leaves it in place (it then finds nothing, or the lines since), so a
    // loop that appends and flushes at every step does not set and clear a timer at every step.
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(this.#flushLater, 0);
    watchExit();
  }

  /** Writes the lines waiting in a buffered appender, in one write call. */
  flush(): void {
    this.#rethrow();
    const size = this.#pending;
    if (size === 0 || this.#fd === undefined) return;
    waiting.delete(this);
    let off = 0;
    try {
      // A short write is rare (disk full, signals); finish the lines before anything else.
      while (off < size) off += writeSync(this.#fd, this.#buf, off, size - off);
      this.#end += size;
      this.#behind?.wrote(size);
      this.#digest?.wrote(this.#end);
    } catch (e) {
      off = this.#cutTorn(off, size);
      throw diskFull(e, this.path);
    } finally {
      // A buffered appender keeps what a failed write call did not write (it wrote nothing) for the next flush,
      // so a transient error neither loses nor repeats a line; an unbuffered append that failed is dropped.
      const left = this.#buffered ? size - off : 0;
      if (left > 0 && off > 0) this.#buf.copy(this.#buf, 0, off, size);
      this.#pending = left;
      if (left > 0) waiting.add(this);
    }
  }

  /**
   * After a write of `size` bytes failed part-way (a full disk): cuts the file back to the end of the last whole
   * line written, so no torn line is left for a reader or a resume; returns the bytes of the batch kept. What was
   * written is the file's growth since the last write (Deno's `writeSync` throws without saying how much it wrote),
   * else the `off` bytes the write calls reported.
   */
  #cutTorn(off: number, size: number): number {
    this.#digest?.abandon(); // the file is cut back: not what the worker hashed
    let end: number;
    try {
      end = fstatSync(this.#fd!).size;
    } catch {
      return off; // cannot tell: a torn line may stay, and resume sets it aside as after a crash
    }
    const grown = end - this.#end;
    const written = grown >= off && grown <= size ? grown : off;
    const whole = written === 0 ? 0 : this.#buf.lastIndexOf(10, written - 1) + 1;
    try {
      if (written > whole) ftruncateSync(this.#fd!, end - (written - whole)); // O_APPEND: the bytes at the end
      this.#end = end - (written - whole);
    } catch {
      this.#end = end; // the torn line stays: resume sets it aside as after a crash
    }
    return whole;
  }

  readonly #flushLater = (): void => {
    this.#timer = undefined;
    try {
      this.flush();
    } catch (e) {
      this.#failed ??= e; // reported by the next append, flush, sync or close
    }
  };

  #rethrow(): void {
    if (this.#failed === undefined) return;
    const e = this.#failed;
    this.#failed = undefined;
    throw e;
  }

  /**
   * Writes what is buffered and starts flushing the file to disk in the
   * background, so a {@link JsonlAppender.sync} soon after has less to wait
   * for (it still waits for every byte).
   */
  syncSoon(): void {
    this.flush();
    this.#behind?.start();
  }

  /** Writes what is buffered and flushes the file to stable storage. */
  sync(): void {
    this.flush();
    if (this.#fd !== undefined) fsyncSync(this.#fd);
  }

  /** Writes what is buffered and closes the file (after an fsync). Idempotent. */
  close(): void {
    if (this.#fd === undefined) return;
    try {
      this.flush();
      fsyncSync(this.#fd);
      this.#closedDigest = this.#digest?.finish(this.#end) ?? null;
    } finally {
      this.#digest?.abandon(); // nothing after finish
      this.#digest = undefined;
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#pending = 0;
      waiting.delete(this);
      this.#behind?.close();
      this.#behind = undefined;
      closeSync(this.#fd);
      this.#fd = undefined;
    }
  }
}

/** One raw line of a file. */
export interface RawLine {
  /** 1-based line number. */
  line: number;
  /** Byte offset of the line's first byte. */
  offset: number;
  /** Byte length of the line, without its newline. */
  bytes: number;
  /** The decoded text, or `null` when the bytes are not valid UTF-8 or the line is too long to keep. */
  text: string | null;
  /** False for a final line that has no newline. */
  terminated: boolean;
  /** True when the line is longer than `maxLineBytes`: its bytes were skipped, not kept (`text` is null). */
  tooLong?: boolean;
  /**
   * True when the line is longer than `deferOver` (and not too long): its bytes were not kept (`text` is null),
   * for the caller to read at `offset` (`bytes` include a `\r` before the newline).
   */
  deferred?: boolean;
}

/** Options for {@link readLines}. */
export interface ReadLinesOptions {
  /**
   * Bytes read per call.
   * @default {1048576}
   */
  chunkSize?: number;
  /**
   * Longest line kept, in bytes. A longer line is skipped in bounded memory
   * and reported with `tooLong: true` (a 2 GB line costs no more memory
   * than a short one).
   * @default {limits().lineBytes (NOEMA_MAX_LINE_BYTES, 16 MiB): the limit the writer keeps to}
   */
  maxLineBytes?: number;
  /**
   * A line longer than this (and not longer than `maxLineBytes`) is not kept either: it is yielded with
   * `deferred: true` and `text: null`, for a caller that reads it from the file in its own way (`validate`
   * parses a large state projection from its bytes). For {@link readJsonl}, see `parseRange`.
   * @default {none: every line up to maxLineBytes is kept}
   */
  deferOver?: number;
  /**
   * Collect garbage (Bun) around each line of many chunks or deferred, so that a reader of lines of many MB stays in
   * bounded memory. A full collection costs what the whole heap holds: a process whose heap holds much else (a
   * server) turns it off and lets the runtime collect on its own.
   * @default {true}
   */
  collect?: boolean;
  /**
   * Refuse (`unsafe_path`) a symbolic link at `path` instead of following it: an episode's own files are never
   * links, so one planted there is not read.
   * @default {false}
   */
  noFollow?: boolean;
}

/**
 * A line longer than the line limit: read by a caller that refuses such lines, or refused by
 * {@link JsonlAppender.appendRaw} (line 0, with the `bytes` it would have had; nothing was written).
 */
export class LineTooLongError extends Error {
  constructor(readonly path: string, readonly line: number, readonly limit: number, readonly bytes?: number) {
    super(
      line === 0
        ? `${path}: refused to write a line of ${bytes} bytes, longer than the ${limit}-byte line limit (NOEMA_MAX_LINE_BYTES)`
        : `${path}:${line}: line longer than ${limit} bytes`,
    );
    this.name = "LineTooLongError";
  }
}

/** The default of {@link ReadLinesOptions.maxLineBytes} when `NOEMA_MAX_LINE_BYTES` is not set: 16 MiB. */
export const MAX_LINE_BYTES = DEFAULT_MAX_LINE_BYTES;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

function decode(buf: Buffer, start: number, end: number): string | null {
  const text = buf.toString("utf8", start, end);
  // Non-fatal decoding marks bad bytes with U+FFFD; confirm on the rare line that has one.
  if (text.includes("\uFFFD")) {
    try {
      return strictUtf8.decode(buf.subarray(start, end));
    } catch {
      return null;
    }
  }
  return text;
}

/**
 * A line longer than one chunk, decoded piece by piece as it is read: its
 * bytes are let go at once, so a long line costs its text, not also its bytes
 * in an ever-doubling buffer. Invalid UTF-8 makes its text null. Garbage is
 * collected before it, once its pieces are joined, and after it (Bun;
 * measured: 142 → 105 MB peak validating a 200,000-event log with an 18 MB
 * line).
 */
class LongLine {
  bytes = 0;
  #pieces: string[] = [];
  #bad = false;
  #lastByte = -1;
  // ignoreBOM keeps a leading U+FEFF in the text, as Buffer#toString does (readJsonl reports it).
  readonly #decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

  constructor(readonly offset: number) {}

  /** Takes `buf[start, end)`; `final` ends the line (a multi-byte character cut at the end is invalid). */
  add(buf: Buffer, start: number, end: number, final: boolean): void {
    this.bytes += end - start;
    if (end > start) this.#lastByte = buf[end - 1];
    if (this.#bad) return;
    try {
      this.#pieces.push(this.#decoder.decode(buf.subarray(start, end), { stream: !final }));
    } catch {
      this.#bad = true;
      this.#pieces = [];
    }
  }

  /** The decoded line (a `\r` before the newline dropped when `terminated`), or null for invalid UTF-8. */
  text(terminated: boolean): string | null {
    if (this.#bad) return null;
    const text = this.#pieces.join("");
    this.#pieces = [];
    return terminated && this.#lastByte === 13 ? text.slice(0, -1) : text;
  }
}

/**
 * The first newline in `buf` from `start` to `end`, or -1. The typed array's
 * own `indexOf` on the filled part only: Deno's `Buffer#indexOf` is twice as
 * slow, and a search of the whole buffer would scan the stale bytes past `end`.
 */
function newline(buf: Buffer, start: number, end: number): number {
  return Uint8Array.prototype.indexOf.call(buf.subarray(0, end), 10, start);
}

/**
 * Streams the lines of a file in bounded memory (one chunk plus the longest
 * line kept, at most `maxLineBytes`, as text). A `\r` before the newline is dropped.
 * A line longer than `maxLineBytes` is skipped without being kept and
 * yielded with `tooLong: true` and `text: null`. A path that is not a regular
 * file (a directory, a FIFO, a device) throws a `NoemaError` naming it.
 *
 * @example
 * ```ts
 * import { readLines } from "noema";
 * for (const l of readLines("/tmp/events.jsonl")) console.log(l.line, l.text);
 * ```
 */
export function* readLines(path: string, options: ReadLinesOptions = {}): Generator<RawLine> {
  const chunkSize = options.chunkSize ?? 1 << 20;
  const maxLine = options.maxLineBytes ?? limits().lineBytes;
  const keepMost = Math.min(maxLine, options.deferOver ?? Infinity);
  const collect = options.collect === false ? () => {} : collectGarbage;
  const fd = openRegularFile(path, path, { noFollow: options.noFollow });
  try {
    let buf = Buffer.allocUnsafe(chunkSize * 2);
    let start = 0; // first unconsumed byte in buf
    let end = 0; // bytes filled in buf
    let fileOffset = 0; // file offset of buf[0]
    let line = 0;
    let eof = false;
    let skipping: { offset: number; bytes: number } | null = null; // a line too long to keep
    let long: LongLine | null = null; // a line longer than a chunk, decoded as it comes
    while (!eof) {
      if (buf.length - end < chunkSize) {
        // Make room: drop consumed bytes, grow when one line fills the buffer.
        const pending = end - start;
        // Doubling, but never past what the longest kept line needs (a longer one is skipped, not kept).
        const grown = Math.max(buf.length, (pending + chunkSize) * (pending > buf.length / 2 ? 2 : 1));
        const size = Math.max(buf.length, Math.min(grown, maxLine + 2 * chunkSize));
        const next = size === buf.length ? buf : Buffer.allocUnsafe(size);
        buf.copy(next, 0, start, end);
        buf = next;
        fileOffset += start;
        end = pending;
        start = 0;
      }
      const n = readSync(fd, buf, end, buf.length - end, null);
      if (n === 0) eof = true;
      end += n;
      let nl: number;
      while ((nl = newline(buf, start, end)) !== -1) {
        line++;
        if (skipping) {
          const bytes = skipping.bytes + (nl - start);
          yield bytes > maxLine
            ? { line, offset: skipping.offset, bytes, text: null, terminated: true, tooLong: true }
            : { line, offset: skipping.offset, bytes, text: null, terminated: true, deferred: true };
          skipping = null;
        } else if (long) {
          long.add(buf, start, nl, true);
          const { offset, bytes } = long;
          const text = bytes > maxLine ? null : long.text(true);
          long = null;
          collect(); // its pieces, joined: the caller gets the text alone
          yield text === null && bytes > maxLine
            ? { line, offset, bytes, text: null, terminated: true, tooLong: true }
            : { line, offset, bytes, text, terminated: true };
          collect(); // this line, once the caller let it go
        } else if (nl - start > maxLine) {
          // Read whole in one go, but still over the limit: the same answer as a skipped one.
          yield { line, offset: fileOffset + start, bytes: nl - start, text: null, terminated: true, tooLong: true };
        } else if (nl - start > keepMost) {
          yield { line, offset: fileOffset + start, bytes: nl - start, text: null, terminated: true, deferred: true };
        } else {
          const stop = nl > start && buf[nl - 1] === 13 ? nl - 1 : nl;
          yield {
            line,
            offset: fileOffset + start,
            bytes: nl - start,
            text: decode(buf, start, stop),
            terminated: true,
          };
        }
        start = nl + 1;
      }
      if (skipping || (long?.bytes ?? 0) + end - start > keepMost) {
        // Too long to keep (or deferred): count its bytes and let them go.
        skipping ??= { offset: long?.offset ?? fileOffset + start, bytes: long?.bytes ?? 0 };
        long = null;
        skipping.bytes += end - start;
        start = end;
      } else if (long || end - start >= chunkSize) {
        if (!long) {
          collect(); // the lines before it, or this one, once the caller let them go
          long = new LongLine(fileOffset + start);
        }
        long.add(buf, start, end, false);
        start = end;
      }
    }
    if (skipping) {
      line++;
      const { offset, bytes } = skipping;
      yield bytes > maxLine
        ? { line, offset, bytes, text: null, terminated: false, tooLong: true }
        : { line, offset, bytes, text: null, terminated: false, deferred: true };
    } else if (long) {
      line++;
      long.add(buf, end, end, true);
      yield { line, offset: long.offset, bytes: long.bytes, text: long.text(false), terminated: false };
    } else if (end - start > maxLine) {
      line++;
      yield { line, offset: fileOffset + start, bytes: end - start, text: null, terminated: false, tooLong: true };
    } else if (end - start > keepMost) {
      line++;
      yield { line, offset: fileOffset + start, bytes: end - start, text: null, terminated: false, deferred: true };
    } else if (end > start) {
      line++;
      yield { line, offset: fileOffset + start, bytes: end - start, text: decode(buf, start, end), terminated: false };
    }
  } finally {
    closeSync(fd);
  }
}

/** Why a JSONL line could not be read. */
export type JsonlProblemKind = "utf8" | "blank" | "json" | "torn" | "not_object" | "too_long";

/** One line of a JSONL file: a parsed value, or a problem. */
export type JsonlEntry =
  | { line: number; offset: number; bytes: number; value: Record<string, unknown>; text: string; problem?: undefined }
  | { line: number; offset: number; bytes: number; problem: JsonlProblemKind; message: string; value?: undefined };

/** The text of a deferred line, read from the file (a `\r` before the newline dropped); null when not UTF-8. */
function deferredText(path: string, raw: RawLine, noFollow = false): string | null {
  const fd = openRegularFile(path, path, { noFollow });
  try {
    const buf = Buffer.allocUnsafe(raw.bytes);
    let off = 0;
    for (let n = 1; off < raw.bytes && n > 0; off += n) n = readSync(fd, buf, off, raw.bytes - off, raw.offset + off);
    const stop = raw.terminated && off > 0 && buf[off - 1] === 13 ? off - 1 : off;
    return decode(buf, 0, stop);
  } finally {
    closeSync(fd);
  }
}

/** What {@link readJsonl} makes of a deferred line: its value parsed by `parseRange`, or its text. */
function readDeferred(
  path: string,
  raw: RawLine,
  parseRange: ((path: string, offset: number, bytes: number) => unknown) | undefined,
  noFollow = false,
): { value: unknown } | { text: string | null } {
  if (parseRange) {
    try {
      return { value: parseRange(path, raw.offset, raw.bytes) };
    } catch {
      // read it as text: whatever made parseRange refuse it is reported as for any line
    }
  }
  return { text: deferredText(path, raw, noFollow) };
}

/**
 * Streams the records of a JSONL file. Each line gives a parsed object or a
 * problem: invalid UTF-8, a blank line, invalid JSON, a value that is not an
 * object, a line longer than the limit (skipped in bounded memory), or a torn
 * final line (no newline and not valid JSON: a write that a
 * crash cut short). A final line without a newline that parses is accepted.
 * `options.parse` replaces `JSON.parse` for each line; with `deferOver`, a
 * longer line is given to `options.parseRange` (its file, byte offset and
 * length), and read as text when that is not set or throws. The `text` of an
 * entry of a deferred line (parsed by `parseRange` or read whole) is empty.
 *
 * @example
 * ```ts
 * import { readJsonl } from "noema";
 * for (const e of readJsonl("/tmp/events.jsonl")) {
 *   if (e.problem) console.error(`events.jsonl:${e.line}: ${e.message}`);
 * }
 * ```
 */
export function* readJsonl(
  path: string,
  options: ReadLinesOptions & {
    parse?: (text: string) => unknown;
    parseRange?: (path: string, offset: number, bytes: number) => unknown;
  } = {},
): Generator<JsonlEntry> {
  const collect = options.collect === false ? () => {} : collectGarbage;
  for (const raw of readLines(path, options)) {
    const { line, offset, bytes } = raw;
    let parsed: { value: unknown } | null = null;
    if (raw.deferred) {
      collect(); // what the lines before it left (a streaming caller collects young objects only): not kept under it
      const read = readDeferred(path, raw, options.parseRange, options.noFollow);
      if ("value" in read) parsed = read;
      else raw.text = read.text;
      collect(); // the bytes it was read from: the caller gets the text (or value) alone
    }
    if (raw.tooLong) {
      const limit = options.maxLineBytes ?? limits().lineBytes;
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
    if (parsed) {
      const { value } = parsed;
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        yield { line, offset, bytes, problem: "not_object", message: `expected a JSON object, got ${jsonType(value)}` };
      } else yield { line, offset, bytes, value: value as Record<string, unknown>, text: "" };
      continue;
    }
    if (raw.text === null) {
      yield { line, offset, bytes, problem: "utf8", message: "line is not valid UTF-8" };
      continue;
    }
    if (raw.text.trim() === "") {
      if (!raw.terminated) continue; // trailing whitespace after the last newline
      yield { line, offset, bytes, problem: "blank", message: "blank line (expected one JSON object per line)" };
      continue;
    }
    if (deeperThan(raw.text, MAX_DEPTH)) {
      const message =
        `invalid JSON: nested deeper than ${MAX_DEPTH} levels (not parsed: it would take ~90 bytes a level)`;
      yield { line, offset, bytes, problem: "json", message };
      continue;
    }
    let value: unknown;
    try {
      value = options.parse ? options.parse(raw.text) : JSON.parse(raw.text);
    } catch (e) {
      if (!raw.terminated) {
        yield {
          line,
          offset,
          bytes,
          problem: "torn",
          message:
            `torn final line: ${bytes} bytes without a newline that are not complete JSON (a write was cut short)`,
        };
      } else {
        const message = line === 1 && raw.text.charCodeAt(0) === 0xfeff
          ? "starts with a byte order mark (BOM); JSONL files must be plain UTF-8"
          : `invalid JSON: ${(e as Error).message}`;
        yield { line, offset, bytes, problem: "json", message };
      }
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      yield { line, offset, bytes, problem: "not_object", message: `expected a JSON object, got ${jsonType(value)}` };
      continue;
    }
    if (!raw.deferred) {
      yield { line, offset, bytes, value: value as Record<string, unknown>, text: raw.text };
      continue;
    }
    // A deferred line read whole: its text goes before the caller gets its value (the text, the value and the bytes
    // it was read from held at once took 4× the line), and what the caller let go of it is collected after.
    raw.text = null;
    yield { line, offset, bytes, value: value as Record<string, unknown>, text: "" };
    collect();
  }
}

/**
 * How deep a line's arrays and objects may nest to be parsed: parsing costs about 90 bytes a level (a 16 MiB line of
 * `[` would take 700 MB), so deeper is refused as invalid (at most ~9 MB). noema writes nothing nearly as deep (Bun's
 * `JSON.stringify` stops before 100,000 levels; a task file may nest 256).
 */
export const MAX_DEPTH = 100_000;

/** Whether `text` holds at most `max` `[` and `{` (then it cannot nest deeper): counted natively, not char by char. */
function opensAtMost(text: string, max: number): boolean {
  let opens = 0;
  for (const bracket of ["[", "{"]) {
    for (let i = text.indexOf(bracket); i !== -1; i = text.indexOf(bracket, i + 1)) if (++opens > max) return false;
  }
  return true;
}

/**
 * Whether JSON `text` nests arrays and objects more than `max` levels deep (brackets in strings do not count). A text
 * of at most `2 * max` characters cannot, and is not scanned.
 *
 * @example
 * ```ts
 * import { deeperThan } from "./jsonl.ts";
 * deeperThan("[[[]]]", 2); // true
 * deeperThan('{"a":"[[[["}', 2); // false
 * ```
 */
export function deeperThan(text: string, max: number): boolean {
  if (text.length <= 2 * max || opensAtMost(text, max)) return false;
  let depth = 0, inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
