/**
 * Newline-delimited messages on a byte stream, as MCP's stdio transport
 * frames them: each line is handed on as it was sent (its bytes kept, the
 * `\r` of a `\r\n` dropped), so a relay can pass it through unchanged.
 *
 * @module
 */
import { Buffer } from "node:buffer";

/** Longest line kept (bytes); a longer one is dropped whole, and said (see {@link LineSplitter.push}). */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

/**
 * Splits chunks into lines.
 *
 * @example
 * ```ts
 * import { LineSplitter } from "./lines.ts";
 * const lines: string[] = [];
 * const s = new LineSplitter((l) => lines.push(l));
 * s.push(new TextEncoder().encode('{"a":1}\n{"b"'));
 * s.push(new TextEncoder().encode(':2}\n')); // lines: ['{"a":1}', '{"b":2}']
 * ```
 */
export class LineSplitter {
  #parts: Uint8Array[] = [];
  #size = 0;
  /** Within a line over the limit: its bytes are dropped up to its end. */
  #skipping = false;
  readonly #onLine: (line: string) => void;
  readonly #maxBytes: number;

  constructor(onLine: (line: string) => void, maxBytes = MAX_LINE_BYTES) {
    this.#onLine = onLine;
    this.#maxBytes = maxBytes;
  }

  /**
   * Adds a chunk; calls back for each line it completes. A line longer than the limit is dropped whole, up to its
   * newline, and `push` throws once, when it goes over (after the lines before it were handed on): what was kept of
   * it was never joined to its tail, which read as a shorter message (a tool result with its middle cut out).
   */
  push(chunk: Uint8Array): void {
    let start = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, start)) {
      const skipped = this.#skipping;
      if (!skipped) this.#parts.push(chunk.subarray(start, i));
      const line = skipped ? "" : Buffer.concat(this.#parts).toString("utf8").replace(/\r$/, "");
      this.#parts = [];
      this.#size = 0;
      this.#skipping = false;
      start = i + 1;
      if (line.trim() !== "") this.#onLine(line);
    }
    if (start < chunk.length && !this.#skipping) {
      this.#size += chunk.length - start;
      if (this.#size > this.#maxBytes) {
        this.#parts = [];
        this.#size = 0;
        this.#skipping = true;
        throw new Error(`a message longer than ${this.#maxBytes} bytes: dropped`);
      }
      this.#parts.push(chunk.slice(start));
    }
  }

  /** The unterminated rest, if any (a peer that closed mid-line). */
  rest(): string | null {
    if (this.#skipping) this.#skipping = false;
    if (this.#size === 0) return null;
    const line = Buffer.concat(this.#parts).toString("utf8");
    this.#parts = [];
    this.#size = 0;
    return line.trim() === "" ? null : line;
  }
}
