/**
 * Where the piecewise JSON walk (`json_split.ts`) reads its text: a string,
 * or a byte range of a file read a window at a time, so that a 71 MB
 * `state.json` or a 37 MB event line is never held whole, as bytes or as
 * text. The walk only looks at ASCII structure (brackets, quotes, commas),
 * which UTF-8 never uses inside a multi-byte character, so bytes and UTF-16
 * units answer alike; the pieces it cuts out are decoded strictly.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { readSync } from "node:fs";

/** A text read by position: code units of a string, or bytes of UTF-8. */
export interface JsonSource {
  /** How many units the text has. */
  readonly length: number;
  /** The unit at `i`, or a negative number past the end. */
  at(i: number): number;
  /** Where the next unit `unit` (an ASCII code) at or after `from` is, or -1. */
  indexOf(unit: number, from: number): number;
  /** The text of `[a, b)`, decoded (invalid UTF-8 throws a `TypeError`). */
  slice(a: number, b: number): string;
  /** Nothing before `i` is asked for again. */
  release(i: number): void;
}

/**
 * A string as a {@link JsonSource}.
 *
 * @example
 * ```ts
 * import { StringSource } from "./json_source.ts";
 * new StringSource('{"a":1}').indexOf(58, 0); // 4
 * ```
 */
export class StringSource implements JsonSource {
  readonly length: number;
  constructor(readonly text: string) {
    this.length = text.length;
  }
  at(i: number): number {
    return i < this.length ? this.text.charCodeAt(i) : -1;
  }
  indexOf(unit: number, from: number): number {
    return this.text.indexOf(String.fromCharCode(unit), from);
  }
  slice(a: number, b: number): string {
    return this.text.slice(a, b);
  }
  release(): void {}
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Bytes read per call. */
const CHUNK = 256 << 10;

/**
 * The bytes `[start, start + length)` of the file open at `fd` as a
 * {@link JsonSource}, positions counted from `start`. It holds a window:
 * from the first position not released up to what was asked for (one
 * chunk, or the longest piece the walk is in).
 *
 * @example
 * ```ts
 * import { openSync, writeFileSync } from "node:fs";
 * import { FileSource } from "./json_source.ts";
 * writeFileSync("/tmp/source.json", 'x{"é":1}');
 * const s = new FileSource(openSync("/tmp/source.json", "r"), 1, 9);
 * s.slice(0, s.length); // '{"é":1}'
 * ```
 */
export class FileSource implements JsonSource {
  #buf: Buffer = Buffer.allocUnsafe(CHUNK);
  /** The position of `#buf[0]`. */
  #base = 0;
  /** Bytes held in `#buf`. */
  #held = 0;
  /** Nothing before this position is asked for again. */
  #released = 0;

  constructor(readonly fd: number, readonly start: number, readonly length: number) {}

  at(i: number): number {
    const r = i - this.#base;
    if (r >= 0 && r < this.#held) return this.#buf[r];
    return this.#fill(i) ? this.#buf[i - this.#base] : -1;
  }

  indexOf(unit: number, from: number): number {
    for (let i = from;;) {
      if (!this.#fill(i)) return -1;
      const r = this.#buf.indexOf(unit, i - this.#base);
      if (r >= 0 && r < this.#held) return this.#base + r;
      i = this.#base + this.#held; // not in what is held: read on
    }
  }

  slice(a: number, b: number): string {
    if (b <= a) return "";
    if (!this.#fill(b - 1)) throw new RangeError(`read past the end (${b} > ${this.length})`);
    return strictUtf8.decode(this.#buf.subarray(a - this.#base, b - this.#base));
  }

  release(i: number): void {
    if (i > this.#released) this.#released = i;
  }

  /** Makes the window reach position `i` (false past the end); what was released is dropped first when room is needed. */
  #fill(i: number): boolean {
    if (i >= this.length) return false;
    if (i < this.#base) throw new RangeError(`position ${i} was released`);
    while (i >= this.#base + this.#held) {
      if (this.#held === this.#buf.length) this.#makeRoom();
      const want = Math.min(this.#buf.length - this.#held, this.length - this.#base - this.#held);
      const n = readSync(this.fd, this.#buf, this.#held, want, this.start + this.#base + this.#held);
      if (n === 0) throw new RangeError(`the file ended before byte ${this.start + this.length}`);
      this.#held += n;
    }
    return true;
  }

  /** Drops the released bytes, or grows the buffer when none are. */
  #makeRoom(): void {
    const drop = Math.min(this.#released - this.#base, this.#held);
    if (drop >= this.#buf.length / 2) {
      this.#buf.copy(this.#buf, 0, drop, this.#held);
    } else {
      const grown = Buffer.allocUnsafe(this.#buf.length * 2);
      this.#buf.copy(grown, 0, drop, this.#held);
      this.#buf = grown;
    }
    this.#base += drop;
    this.#held -= drop;
  }
}
