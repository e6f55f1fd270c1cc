/**
 * The display string of an action: what will run, as one line. Policies read
 * it as `state.action.command`; action descriptions and excerpts use it too.
 *
 * @module
 */
import { clipText } from "../../text_head.ts";

const SAFE = /^[A-Za-z0-9_\/.,:=@%+-]+$/;

/**
 * Quotes one argument for a POSIX shell: kept as is when it needs no quoting,
 * else wrapped in single quotes (a single quote inside becomes `'\''`).
 *
 * @example
 * ```ts
 * import { shellQuote } from "./command.ts";
 * shellQuote("build dir"); // "'build dir'"
 * ```
 */
export function shellQuote(arg: string): string {
  if (arg === "") return "''";
  return SAFE.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** Input keys whose value names what a tool call works on, in order of preference. */
const TARGET_KEYS = ["file_path", "path", "notebook_path", "url", "pattern", "query", "sql"] as const;

/**
 * The display string of an action input: `input.command` when it is a string,
 * else `input.argv` joined with POSIX shell quoting, else the value of a key
 * naming the target (`file_path`, `path`, `url`, `pattern`, `query`, `sql`),
 * else the input as compact JSON, cut to `max` characters.
 *
 * @example
 * ```ts
 * import { displayCommand } from "./command.ts";
 * displayCommand({ argv: ["rm", "-rf", "my build"] }); // "rm -rf 'my build'"
 * displayCommand({ command: "git push --force" }); // "git push --force"
 * ```
 */
export function displayCommand(input: Readonly<Record<string, unknown>>, max = 400): string {
  if (typeof input.command === "string") return input.command;
  if (Array.isArray(input.argv)) return input.argv.map((a) => shellQuote(String(a))).join(" ");
  for (const key of TARGET_KEYS) {
    if (typeof input[key] === "string") return cut(input[key] as string, max);
  }
  if (Object.keys(input).length === 0) return "";
  let text: string;
  try {
    text = JSON.stringify(input) ?? "";
  } catch {
    text = "[unserializable input]";
  }
  return cut(text, max);
}

function cut(text: string, max: number): string {
  return clipText(text, max);
}
