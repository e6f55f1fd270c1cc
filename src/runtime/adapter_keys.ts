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
import { didYouMean, keyLine } from "./jsonc.ts";

/** The keys every adapter's config may hold: its name, and the runtime's guard on each `act`. */
const COMMON_KEYS = ["name", "act_timeout_ms", "output_limit_bytes"] as const;

/** The config keys of each built-in adapter whose config is checked (see the adapters' module docs). */
export const ADAPTER_CONFIG_KEYS: Readonly<Record<string, readonly string[]>> = {
  shell: ["timeout_ms", "env_allow", "env", "excerpt_bytes", ...COMMON_KEYS],
  command: ["command", "timeout_ms", "excerpt_bytes", "stdin", "tee", ...COMMON_KEYS],
};

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
 * merged) does not know; adapters other than `shell` and `command` are not
 * checked here (`llm` checks its own config; a plugin reads what it likes).
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
  const known = using === undefined ? undefined : ADAPTER_CONFIG_KEYS[using];
  if (known === undefined) return;
  for (const { path, adapter } of sources) {
    const key = Object.keys(adapter).find((k) => !known.includes(k));
    if (key === undefined) continue;
    let line: number | undefined;
    try {
      line = keyLine(readFileSync(path, "utf8"), ["adapter", key]);
    } catch {
      // the file was read a moment ago: without its line, the error still names the file and the key
    }
    const hint = didYouMean(key, known);
    const message = `unknown key for the ${using} adapter${
      hint ? ` (did you mean "${hint}"?)` : `; its keys: ${known.join(", ")}`
    }`;
    throw new NoemaError("unknown_key", message, {
      file: path,
      line,
      field: `adapter.${key}`,
      exitCode: EXIT.USAGE,
    });
  }
}
