/**
 * Terminal output for the `noema` CLI: synchronous, buffered writers on
 * stdout and stderr that survive a closed pipe (`noema events … | head`),
 * JSON that is pretty on a terminal and compact when piped, NDJSON, colour
 * only on a terminal without `NO_COLOR`, and plain-text tables.
 *
 * Writes go through `node:fs` `writeSync`, which behaves the same under Bun
 * and Deno and keeps stdout and stderr in order.
 *
 * @module
 */
import { writeSync } from "node:fs";
import process from "node:process";
import { nodeTty } from "../builtins.ts";
import { CONTROL_CHARS } from "../control_chars.ts";
import { type Colors, createColors } from "./colors.ts";

export type { Colors };

/**
 * Thrown when stdout is a pipe whose reader has gone away (EPIPE). The
 * top-level handler exits quietly on it.
 */
export class BrokenPipeError extends Error {
  constructor() {
    super("stdout closed (broken pipe)");
    this.name = "BrokenPipeError";
  }
}

function errnoCode(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === "string") return code;
  // Deno names the error class instead of always setting a code.
  const name = (e as { name?: unknown } | null)?.name;
  return name === "BrokenPipe" ? "EPIPE" : undefined;
}

const sleeper = typeof SharedArrayBuffer === "function" ? new Int32Array(new SharedArrayBuffer(4)) : null;

/** Waits a little, synchronously (for a non-blocking pipe that is full). */
function pause(ms: number): void {
  if (sleeper) Atomics.wait(sleeper, 0, 0, ms);
}

/**
 * A buffered, synchronous writer on a file descriptor. Text is flushed when
 * the buffer passes 64 KiB and on {@link Writer.flush}. On stdout a closed
 * pipe throws {@link BrokenPipeError}; on stderr it is ignored.
 *
 * @example
 * ```ts
 * import { Writer } from "./output.ts";
 * const out = new Writer(1);
 * out.write("hello\n");
 * out.flush();
 * ```
 */
export class Writer {
  #chunks: string[] = [];
  #size = 0;
  #broken = false;
  /** The file descriptor (1 or 2). */
  readonly fd: number;
  /** Whether the descriptor is a terminal. */
  readonly isTTY: boolean;

  constructor(fd: number, isTTY: boolean = safeIsatty(fd)) {
    this.fd = fd;
    this.isTTY = isTTY;
  }

  /** Width of the terminal in columns, or `undefined` when not a terminal (or unknown). */
  get columns(): number | undefined {
    if (!this.isTTY) return undefined;
    const stream = this.fd === 1 ? process.stdout : process.stderr;
    const cols = stream.columns;
    if (typeof cols === "number" && cols > 0) return cols;
    const env = Number(process.env.COLUMNS);
    return Number.isInteger(env) && env > 0 ? env : 80;
  }

  /** Queues text; flushes when enough has accumulated. */
  write(text: string): void {
    if (text.length === 0) return;
    this.#chunks.push(text);
    this.#size += text.length;
    if (this.#size >= 65536) this.flush();
  }

  /** Writes everything queued. */
  flush(): void {
    if (this.#size === 0) return;
    const data = new TextEncoder().encode(this.#chunks.join(""));
    this.#chunks = [];
    this.#size = 0;
    if (this.#broken) {
      if (this.fd === 1) throw new BrokenPipeError();
      return;
    }
    let off = 0;
    let waits = 0;
    while (off < data.length) {
      try {
        off += writeSync(this.fd, data, off, data.length - off);
        waits = 0;
      } catch (e) {
        const code = errnoCode(e);
        if (code === "EAGAIN" && waits < 10_000) {
          waits++;
          pause(1);
          continue;
        }
        if (code === "EPIPE" || code === "ERR_STREAM_DESTROYED") {
          this.#broken = true;
          if (this.fd === 1) throw new BrokenPipeError();
          return;
        }
        throw e;
      }
    }
  }
}

function safeIsatty(fd: number): boolean {
  try {
    return nodeTty().isatty(fd);
  } catch {
    return false;
  }
}

/** Whether colour is allowed on a stream: a terminal, and `NO_COLOR` unset or empty (`FORCE_COLOR` forces it). */
export function colorEnabled(isTTY: boolean, env: Record<string, string | undefined> = process.env): boolean {
  if (env.NO_COLOR) return false;
  if (env.FORCE_COLOR && env.FORCE_COLOR !== "0") return true;
  return isTTY && env.TERM !== "dumb";
}

/** A column of a {@link Output.table}. */
export interface Column {
  /** Header text (conventionally upper case). */
  header: string;
  /** Right-align the values (numbers). */
  align?: "left" | "right";
  /** This column is shortened to fit the terminal width (at most one; usually the last). */
  flex?: boolean;
}

/** One cell: plain text, and optionally how to colour it (applied after padding). */
export type Cell = string | { text: string; style?: (s: string) => string };

/** Display width of a string (code points; good enough for tables). */
export function textWidth(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * Shortens text to a display width, ending with `…` when cut.
 *
 * @example
 * ```ts
 * import { truncate } from "./output.ts";
 * truncate("abcdef", 4); // "abc…"
 * ```
 */
export function truncate(s: string, width: number): string {
  if (width <= 0) return "";
  if (textWidth(s) <= width) return s;
  return [...s].slice(0, Math.max(0, width - 1)).join("") + "…";
}

/**
 * Neutralises terminal escape sequences in text that came from a task, an
 * output or a plugin: each control character is shown as a visible `\xNN`
 * (or `\u{NNNN}`), so a recorded `ESC]…` cannot retitle, recolour or clear
 * the reader's terminal. Tabs and newlines are kept.
 *
 * @example
 * ```ts
 * import { neutralize } from "./output.ts";
 * neutralize("a\x1b[2Jb"); // "a\\x1b[2Jb"
 * ```
 */
export function neutralize(s: string): string {
  return s.replace(CONTROL_CHARS, (ch) => {
    const n = ch.codePointAt(0)!;
    return n <= 0xff ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u{${n.toString(16)}}`;
  });
}

/**
 * A multi-line text as lines to print under a heading: each indented, tabs
 * as spaces, control characters {@link neutralize}d, trailing blank lines dropped.
 *
 * @example
 * ```ts
 * import { indentedLines } from "./output.ts";
 * indentedLines("Done.\n\n\tall green\n"); // ["  Done.", "", "      all green"]
 * ```
 */
export function indentedLines(text: string, indent = "  "): string[] {
  return text.trimEnd().split(/\r?\n/).map((line) => line ? indent + neutralize(line.replaceAll("\t", "    ")) : "");
}

/**
 * One line of a report whose values may hold anything (a file name planted in an episode): control characters
 * {@link neutralize}d, and newlines and tabs shown as `\n` and `\t`, so no value makes a line of its own.
 *
 * @example
 * ```ts
 * import { shownLine } from "./output.ts";
 * shownLine("- a\nstatus : ok: hash_mismatch"); // "- a\\nstatus : ok: hash_mismatch"
 * ```
 */
export function shownLine(s: string): string {
  return neutralize(s).replaceAll("\n", "\\n").replaceAll("\t", "\\t");
}

/** Collapses whitespace (newlines, tabs) so a value fits on one line, and {@link neutralize}s control characters. */
export function oneLine(s: string): string {
  return neutralize(s.replace(/\s+/g, " ").trim());
}

/**
 * Everything a command writes. Create one per invocation with
 * {@link createOutput}; call {@link Output.flush} before exiting.
 *
 * @example
 * ```ts
 * import { createOutput } from "./output.ts";
 * const out = createOutput();
 * out.json({ ok: true }); // pretty on a terminal, one line when piped
 * out.flush();
 * ```
 */
export class Output {
  /** stdout. */
  readonly stdout: Writer;
  /** stderr. */
  readonly stderr: Writer;
  /** Colours for stdout (no-ops unless stdout is a terminal and `NO_COLOR` is unset). */
  readonly color: Colors;
  /** Colours for stderr. */
  readonly errColor: Colors;

  constructor(stdout: Writer, stderr: Writer, env: Record<string, string | undefined> = process.env) {
    this.stdout = stdout;
    this.stderr = stderr;
    this.color = createColors(colorEnabled(stdout.isTTY, env));
    this.errColor = createColors(colorEnabled(stderr.isTTY, env));
  }

  /** Writes one line to stdout. */
  line(text = ""): void {
    this.stdout.write(text + "\n");
  }

  /** Writes one line to stderr (after flushing stdout, so the two stay in order). */
  note(text: string): void {
    try {
      this.stdout.flush();
    } catch (e) {
      // A closed stdout must not hide a message on stderr; the next stdout write throws again.
      if (!(e instanceof BrokenPipeError)) throw e;
    }
    this.stderr.write(text + "\n");
    this.stderr.flush();
  }

  /** Writes a JSON value: indented on a terminal, one line when piped. */
  json(value: unknown): void {
    this.stdout.write(JSON.stringify(value, null, this.stdout.isTTY ? 2 : undefined) + "\n");
  }

  /** Writes one NDJSON line: a value, or an already serialized JSON text written as is. */
  ndjson(value: unknown, raw?: string): void {
    this.stdout.write((raw ?? JSON.stringify(value)) + "\n");
  }

  /**
   * Writes a table: a header row, then one row per entry, columns separated
   * by two spaces. On a terminal the `flex` column is shortened so rows fit
   * its width.
   */
  table(columns: readonly Column[], rows: readonly (readonly Cell[])[], options: { indent?: string } = {}): void {
    const indent = options.indent ?? "";
    const text = (c: Cell) => neutralize(typeof c === "string" ? c : c.text);
    const widths = columns.map((col, i) =>
      Math.max(textWidth(col.header), ...rows.map((r) => textWidth(text(r[i] ?? ""))))
    );
    const total = this.stdout.columns === undefined ? undefined : this.stdout.columns - textWidth(indent);
    const flex = columns.findIndex((c) => c.flex);
    if (total !== undefined && flex >= 0) {
      const others = widths.reduce((a, w, i) => (i === flex ? a : a + w), 0) + 2 * (columns.length - 1);
      widths[flex] = Math.max(textWidth(columns[flex].header), Math.min(widths[flex], total - others));
    }
    const render = (cells: readonly Cell[], header: boolean) => {
      const parts = columns.map((col, i) => {
        const cell = cells[i] ?? "";
        let t = text(cell);
        if (i === flex) t = truncate(t, widths[i]);
        const last = i === columns.length - 1;
        const pad = " ".repeat(Math.max(0, widths[i] - textWidth(t)));
        const styled = header ? this.color.bold(t) : typeof cell === "string" || !cell.style ? t : cell.style(t);
        if (col.align === "right") return pad + styled;
        return last ? styled : styled + pad;
      });
      return (indent + parts.join("  ")).trimEnd();
    };
    this.line(render(columns.map((c) => c.header), true));
    for (const r of rows) this.line(render(r, false));
  }

  /** Flushes stdout, then stderr. */
  flush(): void {
    try {
      this.stdout.flush();
    } finally {
      this.stderr.flush();
    }
  }
}

/**
 * The output of the running process (fd 1 and 2).
 *
 * @example
 * ```ts
 * import { createOutput } from "./output.ts";
 * createOutput().line("hi");
 * ```
 */
export function createOutput(): Output {
  return new Output(new Writer(1), new Writer(2));
}
