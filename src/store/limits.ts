/**
 * The size limits that keep every artifact noema writes readable by noema in
 * bounded memory: the longest JSONL line the reader keeps (and the writer
 * refuses to exceed), and the intake limits derived from it (task text, one
 * tool input, one tool output, the plan), so no event comes near that line.
 *
 * | limit | default | environment |
 * |---|---|---|
 * | one JSONL line (read and write) | 16 MiB | `NOEMA_MAX_LINE_BYTES` |
 * | task text | line / 16 (1 MiB) | |
 * | one tool input | line / 16 (1 MiB) | |
 * | one tool output, kept whole | line / 16 (1 MiB) | |
 * | the plan: steps | 5,000 | `NOEMA_MAX_PLAN_STEPS` |
 * | the plan: bytes of its step records | line / 4 (4 MiB) | |
 * | inputs and outputs kept whole in `state.json`'s actions, all together | line / 4 (4 MiB) | |
 * | one catalog row of a files store (`catalog.json`, read) | line / 4 (4 MiB) | |
 * | nesting of a step's inputs, a tool call's input or output | 251 levels ({@link MAX_VALUE_DEPTH}) | |
 *
 * The environment is read at each call, so a test (or a small machine) can
 * lower the limits of one process; an episode is read back under a line limit
 * at least as large as the one it was written under.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { sha256 } from "./hash.ts";
import { MAX_JSON_DEPTH, tooDeep } from "./json_scan.ts";
import { textHead } from "../text_head.ts";

/**
 * The longest delay a timer takes: a signed 32-bit number of ms (2^31 - 1, about 24.8 days). A longer one is
 * clamped to 1 ms by the runtime, so a timeout set longer would fire at once: every such setting is refused over it.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The default longest JSONL line: 16 MiB. */
export const DEFAULT_MAX_LINE_BYTES = 16 << 20;
/** The default most steps in a plan. */
export const DEFAULT_MAX_PLAN_STEPS = 5_000;

/** The limits in force (see the module documentation). */
export interface Limits {
  /** Longest JSONL line read or written, in bytes. */
  lineBytes: number;
  /** Longest task text, in UTF-8 bytes. */
  taskBytes: number;
  /** Largest tool input (as JSON) a call may propose. */
  toolInputBytes: number;
  /** Largest tool output (as JSON) recorded whole; a larger one is kept as a digest and an excerpt. */
  toolOutputBytes: number;
  /** Most steps in a plan. */
  planSteps: number;
  /** Largest plan, as the JSON of its step records. */
  planBytes: number;
  /** Inputs and outputs kept whole in `state.json`'s action records, all together; then digests and excerpts. */
  actionBytes: number;
  /**
   * Largest `catalog.json` of a files store that is read: a row holds a task (up to {@link Limits.taskBytes}) and
   * little else; a larger one is reported unreadable, never read.
   */
  catalogRowBytes: number;
  /**
   * Largest JSON artifact read whole (`state.json`, `summary.json`, `manifest.json`…): 16 lines. A 100,000-step
   * run's `state.json` is about 47 MB; a larger file is reported as too large, never read (a planted 2 GB one would
   * take gigabytes of memory).
   */
  artifactBytes: number;
}

function positiveEnv(name: string, fallback: number, least: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < least) {
    throw new NoemaError("usage", `${name}: expected a whole number of at least ${least}, got ${JSON.stringify(raw)}`, {
      exitCode: EXIT.USAGE,
    });
  }
  return n;
}

/**
 * The limits in force: the defaults, or what `NOEMA_MAX_LINE_BYTES` and
 * `NOEMA_MAX_PLAN_STEPS` set (a bad value is a usage error, exit 2).
 *
 * @example
 * ```ts
 * import { limits } from "./limits.ts";
 * limits().taskBytes; // 1048576 by default
 * ```
 */
export function limits(): Limits {
  const lineBytes = positiveEnv("NOEMA_MAX_LINE_BYTES", DEFAULT_MAX_LINE_BYTES, 1024);
  const intake = Math.floor(lineBytes / 16);
  return {
    lineBytes,
    taskBytes: intake,
    toolInputBytes: intake,
    toolOutputBytes: intake,
    planSteps: positiveEnv("NOEMA_MAX_PLAN_STEPS", DEFAULT_MAX_PLAN_STEPS, 1),
    planBytes: Math.floor(lineBytes / 4),
    actionBytes: Math.floor(lineBytes / 4),
    catalogRowBytes: Math.floor(lineBytes / 4),
    artifactBytes: lineBytes * 16,
  };
}

/**
 * UTF-8 bytes of a string.
 *
 * @example
 * ```ts
 * import { utf8Bytes } from "./limits.ts";
 * utf8Bytes("é"); // 2
 * ```
 */
export function utf8Bytes(text: string): number {
  return Buffer.byteLength(text, "utf8");
}

/**
 * Bytes of a value's JSON text (0 for undefined).
 *
 * @example
 * ```ts
 * import { jsonBytes } from "./limits.ts";
 * jsonBytes({ a: "é" }); // 10
 * ```
 */
export function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value);
  return text === undefined ? 0 : utf8Bytes(text);
}

/**
 * How many levels the artifacts wrap a step's inputs, a tool call's input or its output in, at most: an `events.jsonl`
 * line's `payload.outcomes.actions[i].input` (the value's own top level is the 6th). Readers refuse JSON nested
 * deeper than {@link MAX_JSON_DEPTH} levels.
 */
const VALUE_WRAP_DEPTH = 5;

/**
 * Deepest nesting of a value the artifacts carry inside an event or `state.json` (a step's `inputs`, a tool
 * call's input or output), counting its own top level: deeper, the artifact would nest past
 * {@link MAX_JSON_DEPTH}, which noema's readers refuse.
 *
 * @example
 * ```ts
 * import { MAX_VALUE_DEPTH } from "./limits.ts";
 * MAX_VALUE_DEPTH; // 251
 * ```
 */
export const MAX_VALUE_DEPTH = MAX_JSON_DEPTH - VALUE_WRAP_DEPTH;

/**
 * The problem with a value nested deeper than {@link MAX_VALUE_DEPTH} (`nested N levels deep, over noema's limit
 * of 251 …`), or null; a value with no JSON form (a cycle) is left to the code that records it.
 *
 * @example
 * ```ts
 * import { valueDepthProblem } from "./limits.ts";
 * valueDepthProblem({ a: [1] }); // null
 * ```
 */
export function valueDepthProblem(value: unknown): string | null {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof RangeError)) return null; // a cycle, a BigInt: not about depth
  }
  if (text !== undefined && tooDeep(text, MAX_VALUE_DEPTH) === null) return null;
  return `nested deeper than noema's limit of ${MAX_VALUE_DEPTH} levels (the artifacts wrap it in ${VALUE_WRAP_DEPTH} ` +
    `more, and noema reads at most ${MAX_JSON_DEPTH})`;
}

/** A value too large to keep whole: its size, its digest and the start of its text. */
export interface OmittedValue {
  truncated: true;
  /** UTF-8 bytes of the value's JSON text (of the text itself, for a string). */
  bytes: number;
  /** `sha256:<hex>` of those bytes. */
  sha256: string;
  /** The first characters of that text. */
  excerpt: string;
}

/**
 * The value when its JSON fits in `maxBytes` and nests at most {@link MAX_VALUE_DEPTH} levels, else an
 * {@link OmittedValue}: its size, the sha256 of its JSON text (of the string itself, for a string) and the first
 * `excerptChars` characters (never half of a surrogate pair: the excerpt is well-formed text). `json`: the
 * value's `JSON.stringify` when the caller has it (not read for a string value).
 *
 * @example
 * ```ts
 * import { boundedValue } from "./limits.ts";
 * boundedValue({ a: 1 }, 100); // { a: 1 }
 * boundedValue("x".repeat(10), 4, 3); // { truncated: true, bytes: 10, sha256: "sha256:…", excerpt: "xxx" }
 * ```
 */
export function boundedValue(value: unknown, maxBytes: number, excerptChars = 2000, json?: string): unknown {
  const text = typeof value === "string" ? value : json ?? JSON.stringify(value);
  if (text === undefined) return value;
  const fits = text.length <= maxBytes / 3 || utf8Bytes(text) <= maxBytes;
  if (fits && (typeof value === "string" || tooDeep(text, MAX_VALUE_DEPTH) === null)) return value;
  const omitted: OmittedValue = {
    truncated: true,
    bytes: utf8Bytes(text),
    sha256: sha256(text),
    excerpt: textHead(text, Math.min(excerptChars, maxBytes)),
  };
  return omitted;
}

/**
 * Throws a usage error (exit 2) when `text` is longer than `maxBytes`:
 * `<what> of N bytes is over noema's limit of M bytes`.
 *
 * @example
 * ```ts
 * import { limits, refuseOversize } from "./limits.ts";
 * refuseOversize("the task", "fix the test", limits().taskBytes);
 * ```
 */
export function refuseOversize(what: string, text: string, maxBytes: number, hint = ""): void {
  if (text.length <= maxBytes / 3) return;
  const bytes = utf8Bytes(text);
  if (bytes <= maxBytes) return;
  throw new NoemaError(
    "too_large",
    `${what} of ${bytes} bytes is over noema's limit of ${maxBytes} bytes${hint ? ` (${hint})` : ""}`,
    { exitCode: EXIT.USAGE },
  );
}
