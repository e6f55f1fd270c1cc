/**
 * Newline-delimited messages on a byte stream, as MCP's stdio transport
 * frames them: each line is handed on as it was sent (its bytes kept, the
 * `\r` of a `\r\n` dropped), so a relay can pass it through unchanged.
 *
 * @module
 */
import { Buffer } from "node:buffer";

/** Longest line kept (bytes); a longer one is an error (MCP's SDK stops at 10 MB too). */
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
  readonly #onLine: (line: string) => void;

  constructor(onLine: (line: string) => void) {
    this.#onLine = onLine;
  }

  /** Adds a chunk; calls back for each line it completes. */
  push(chunk: Uint8Array): void {
    let start = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, start)) {
      this.#parts.push(chunk.subarray(start, i));
      const line = Buffer.concat(this.#parts).toString("utf8").replace(/\r$/, "");
      this.#parts = [];
      this.#size = 0;
      start = i + 1;
      if (line.trim() !== "") this.#onLine(line);
    }
    if (start < chunk.length) {
      this.#size += chunk.length - start;
      if (this.#size > MAX_LINE_BYTES) throw new Error(`a message longer than ${MAX_LINE_BYTES} bytes`);
      this.#parts.push(chunk.slice(start));
    }
  }

  /** The unterminated rest, if any (a peer that closed mid-line). */
  rest(): string | null {
    if (this.#size === 0) return null;
    const line = Buffer.concat(this.#parts).toString("utf8");
    this.#parts = [];
    this.#size = 0;
    return line.trim() === "" ? null : line;
  }
}
