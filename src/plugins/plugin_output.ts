/**
 * What policies print never reaches stdout. noema's stdout carries results
 * (`--json` documents, ids), so a policy's `console.log`, `console.error`
 * (and the other `console` methods) and `process.stdout.write` /
 * `process.stderr.write` are routed to stderr instead, each line prefixed
 * with the policy (`[policy NoRm@1.0] …`) and with terminal control
 * characters neutralised (ESC, CR, other C0/C1 controls and bidi overrides
 * are written as `\u001b`-style escapes), at most 64 KiB per call (then one
 * `[output truncated]` line).
 *
 * Policy files run in a worker thread, whose `console` and `process.stdout`
 * are replaced for good (see `policy_worker.ts`). For a policy running in the
 * caller's thread, {@link captureOutput} routes them only while the policy
 * runs (the first capture wraps them for the life of the process; outside a
 * capture the wrappers pass everything through); anything else the process
 * prints in that window (another run in the same process, say) is routed the
 * same way. Writes that
 * bypass `console` and `process` (`Deno.stdout`, `Bun.stdout`,
 * `fs.writeSync(1, …)`) are not caught: only a separate process could.
 *
 * @module
 */
import process from "node:process";
import { nodeUtil } from "../builtins.ts";
import { CONTROL_CHARS } from "../control_chars.ts";

/** Most bytes of output routed per policy call (or load). */
export const PLUGIN_OUTPUT_LIMIT = 64 * 1024;

/**
 * Neutralises terminal control sequences: every control character except
 * newline and tab (and the bidi overrides) is written as a `\uXXXX` escape.
 *
 * @example
 * ```ts
 * import { neutralize } from "noema";
 * neutralize("\x1b[2Jgone\r"); // "\\u001b[2Jgone\\u000d"
 * ```
 */
export function neutralize(text: string): string {
  return text.replace(CONTROL_CHARS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** Counts the output of one call and turns it into prefixed, neutralised stderr lines. */
export class OutputBudget {
  #used = 0;
  #cut = false;
  readonly label: string;
  readonly #sink: (text: string) => void;

  constructor(label: string, sink: (text: string) => void = (t) => process.stderr.write(t)) {
    this.label = label;
    this.#sink = sink;
  }

  /** Routes one chunk of output. */
  write(text: string): void {
    if (this.#cut) return;
    let chunk = text;
    if (this.#used + chunk.length > PLUGIN_OUTPUT_LIMIT) {
      chunk = chunk.slice(0, Math.max(0, PLUGIN_OUTPUT_LIMIT - this.#used));
      this.#cut = true;
    }
    this.#used += chunk.length;
    const lines = chunk.replace(/\n$/, "").split("\n").map((l) => `[${this.label}] ${neutralize(l)}\n`);
    if (this.#cut) lines.push(`[${this.label}] [output truncated]\n`);
    try {
      this.#sink(lines.join(""));
    } catch {
      // stderr closed: drop it
    }
  }
}

function safeFormat(args: unknown[]): string {
  try {
    return nodeUtil().format(...args);
  } catch (e) {
    return `[unprintable: ${String((e as Error)?.message ?? "?")}]`;
  }
}

const METHODS = ["log", "info", "debug", "warn", "error", "trace", "dir", "dirxml", "table"] as const;

/**
 * Replaces `console` and `process.stdout.write`/`process.stderr.write` so
 * that everything goes to `route`. Returns the function that puts the
 * originals back.
 *
 * @example
 * ```ts
 * import { redirectOutput } from "noema";
 * const restore = redirectOutput((text) => lines.push(text));
 * console.log("caught");
 * restore();
 * ```
 */
export function redirectOutput(route: (text: string) => void): () => void {
  const c = console as unknown as Record<string, unknown>;
  const saved = new Map<string, unknown>(METHODS.map((m) => [m, c[m]]));
  const savedAssert = c.assert;
  for (const m of METHODS) c[m] = (...args: unknown[]) => route(`${safeFormat(args)}\n`);
  c.assert = (cond: unknown, ...args: unknown[]) => {
    if (!cond) route(`Assertion failed${args.length ? `: ${safeFormat(args)}` : ""}\n`);
  };
  const streams = [process.stdout, process.stderr] as { write: unknown }[];
  const savedWrites = streams.map((s) => s.write);
  for (const s of streams) {
    s.write = (chunk: unknown, ...rest: unknown[]) => {
      route(typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk as Uint8Array));
      const cb = rest.find((r) => typeof r === "function") as (() => void) | undefined;
      cb?.();
      return true;
    };
  }
  return () => {
    for (const [m, f] of saved) c[m] = f;
    c.assert = savedAssert;
    streams.forEach((s, i) => (s.write = savedWrites[i]));
  };
}

const budgets: OutputBudget[] = [];
let realStderr: ((text: string) => void) | null = null;

/**
 * Wraps `console` and `process.stdout`/`stderr.write` once, for the life of
 * the process: while a capture is open the output goes to its budget, else
 * to the original (so a capture costs a push and a pop, not re-patching
 * `console` per call).
 */
function install(): (text: string) => void {
  if (realStderr) return realStderr;
  const c = console as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const m of [...METHODS, "assert"]) {
    const original = c[m];
    if (typeof original !== "function") continue;
    c[m] = function (this: unknown, ...args: unknown[]) {
      const budget = budgets.at(-1);
      if (!budget) return original.apply(this, args);
      if (m !== "assert") budget.write(`${safeFormat(args)}\n`);
      else if (!args[0]) budget.write(`Assertion failed${args.length > 1 ? `: ${safeFormat(args.slice(1))}` : ""}\n`);
    };
  }
  const stderrWrite = process.stderr.write.bind(process.stderr);
  for (const stream of [process.stdout, process.stderr] as unknown as { write: (...a: unknown[]) => boolean }[]) {
    const original = stream.write;
    stream.write = function (this: unknown, chunk: unknown, ...rest: unknown[]) {
      const budget = budgets.at(-1);
      if (!budget) return original.call(this, chunk, ...rest);
      budget.write(typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk as Uint8Array));
      (rest.find((r) => typeof r === "function") as (() => void) | undefined)?.();
      return true;
    };
  }
  realStderr = (t) => void stderrWrite(t);
  return realStderr;
}

/**
 * Starts routing the output of a policy running in the caller's thread to
 * stderr (see the module doc). Call the returned function when the call is
 * over (settled or timed out). The first capture wraps `console` and
 * `process.stdout`/`stderr.write` for the life of the process; outside a
 * capture the wrappers pass everything through unchanged.
 *
 * @example
 * ```ts
 * import { captureOutput } from "noema";
 * const end = captureOutput("policy NoRm@1.0");
 * try {
 *   await policy.advise(state);
 * } finally {
 *   end();
 * }
 * ```
 */
export function captureOutput(label: string): () => void {
  const budget = new OutputBudget(label, install());
  budgets.push(budget);
  let ended = false;
  return () => {
    if (ended) return;
    ended = true;
    const i = budgets.lastIndexOf(budget);
    if (i >= 0) budgets.splice(i, 1);
  };
}
