/**
 * The keys the `adapter` object of a settings file may hold for a built-in
 * process adapter (`shell`, `command`), checked where the file is read: a
 * typo (`timout_ms`) is a usage error naming the file, the line and the key,
 * with a did-you-mean, before anything is written, as the `llm` adapter's
 * config is, instead of a setting silently ignored.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { EXIT, NoemaError } from "../errors.ts";
import { ownEntry } from "../json.ts";
import { didYouMean, keyLine } from "./jsonc.ts";
import { MAX_TIMER_MS } from "../store/limits.ts";

/** The keys every adapter's config may hold: its name, and the runtime's guard on each `act`. */
const COMMON_KEYS = ["name", "act_timeout_ms", "output_limit_bytes"] as const;

/** The config keys of each built-in adapter whose config is checked (see the adapters' module docs). */
export const ADAPTER_CONFIG_KEYS: Readonly<Record<string, readonly string[]>> = {
  shell: ["timeout_ms", "env_allow", "env", "excerpt_bytes", ...COMMON_KEYS],
  command: ["command", "timeout_ms", "excerpt_bytes", "stdin", "tee", ...COMMON_KEYS],
};

/** The most `excerpt_bytes` may keep of each stream (16 MiB): more would be held in memory for nothing. */
export const MAX_EXCERPT_BYTES = 16 * 1024 * 1024;

/** The numbers an adapter's config may hold, and the integers each may be (both ends included). */
const NUMBER_KEYS: Readonly<Record<string, { min: number; max: number; why?: string }>> = {
  timeout_ms: { min: 1, max: MAX_TIMER_MS, why: "the longest a timer waits" },
  act_timeout_ms: { min: 1, max: MAX_TIMER_MS, why: "the longest a timer waits" },
  excerpt_bytes: { min: 0, max: MAX_EXCERPT_BYTES },
  output_limit_bytes: { min: 1, max: Number.MAX_SAFE_INTEGER },
};

/**
 * What is wrong with the value of an adapter config key that holds a number (`timeout_ms`, `act_timeout_ms`,
 * `excerpt_bytes`, `output_limit_bytes`), or null when it is fine or the key holds no number. A timeout over
 * {@link MAX_TIMER_MS} would fire at once (timers clamp it to 1 ms), so it is refused, not recorded as a timeout.
 *
 * @example
 * ```ts
 * import { adapterNumberProblem } from "./adapter_keys.ts";
 * adapterNumberProblem("timeout_ms", 5000); // null
 * adapterNumberProblem("timeout_ms", 3e9); // "must be an integer from 1 to 2147483647 (the longest a timer waits)"
 * ```
 */
export function adapterNumberProblem(key: string, value: unknown): string | null {
  const range = Object.hasOwn(NUMBER_KEYS, key) ? NUMBER_KEYS[key] : undefined;
  if (range === undefined) return null;
  if (typeof value === "number" && Number.isInteger(value) && value >= range.min && value <= range.max) return null;
  return `must be an integer from ${range.min} to ${range.max}${range.why ? ` (${range.why})` : ""}`;
}

/**
 * Throws a `RangeError` naming the first of `keys` whose value in an adapter's `config` is out of range (see
 * {@link adapterNumberProblem}): for an adapter's `create`, whose config may come from the library API rather
 * than a file (the runtime makes the throw a usage error naming the adapter).
 *
 * @example
 * ```ts
 * import { checkAdapterNumbers } from "./adapter_keys.ts";
 * checkAdapterNumbers({ timeout_ms: 5000 }, ["timeout_ms", "excerpt_bytes"]); // fine
 * // checkAdapterNumbers({ timeout_ms: -5 }, ["timeout_ms"]); // RangeError: adapter.timeout_ms: must be an integer …
 * ```
 */
export function checkAdapterNumbers(config: Record<string, unknown>, keys: readonly string[]): void {
  for (const key of keys) {
    const problem = config[key] === undefined ? null : adapterNumberProblem(key, config[key]);
    if (problem) throw new RangeError(`adapter.${key}: ${problem}`);
  }
}

/** A settings file's `adapter` object. */
export interface AdapterSource {
  /** The file (`noema.jsonc` or a task file). */
  path: string;
  /** Its `adapter` object. */
  adapter: Record<string, unknown>;
}

/**
 * Throws a usage error (exit 2) for the first key of a file's `adapter`
 * object that the adapter the run uses (`using`, after every source is
 * merged) does not know, or whose number is out of range (see
 * {@link adapterNumberProblem}); adapters other than `shell` and `command`
 * have only the guard's keys checked here (`llm` checks its own config; a
 * plugin reads what it likes).
 *
 * @example
 * ```ts
 * import { checkAdapterKeys } from "./adapter_keys.ts";
 * checkAdapterKeys("shell", [{ path: "task.jsonc", adapter: { timeout_ms: 5 } }]); // fine
 * // checkAdapterKeys("shell", [{ path: "task.jsonc", adapter: { timout_ms: 5 } }]);
 * // → task.jsonc:5: adapter.timout_ms: unknown key for the shell adapter (did you mean "timeout_ms"?)
 * ```
 */
export function checkAdapterKeys(using: string | undefined, sources: readonly AdapterSource[]): void {
  const known = using === undefined ? undefined : ownEntry(ADAPTER_CONFIG_KEYS, using);
  for (const { path, adapter } of sources) {
    const key = known === undefined ? undefined : Object.keys(adapter).find((k) => !known.includes(k));
    if (key !== undefined) {
      const hint = didYouMean(key, known!);
      const message = `unknown key for the ${using} adapter${
        hint ? ` (did you mean "${hint}"?)` : `; its keys: ${known!.join(", ")}`
      }`;
      throw new NoemaError("unknown_key", message, { ...where(path, key), exitCode: EXIT.USAGE });
    }
    // The guard's keys are every adapter's; the others' numbers are checked for the adapters that have them.
    for (const k of Object.keys(adapter)) {
      if (known === undefined && !COMMON_KEYS.includes(k as never)) continue;
      const problem = adapterNumberProblem(k, adapter[k]);
      if (problem) throw new NoemaError("bad_adapter", problem, { ...where(path, k), exitCode: EXIT.USAGE });
    }
  }
}

/** The file, line and field of key `key` of a file's `adapter` object. */
function where(path: string, key: string): { file: string; line?: number; field: string } {
  let line: number | undefined;
  try {
    line = keyLine(readFileSync(path, "utf8"), ["adapter", key]);
  } catch {
    // the file was read a moment ago: without its line, the error still names the file and the key
  }
  return { file: path, line, field: `adapter.${key}` };
}
