/**
 * Abbreviated long options. Programs that parse their options with getopt_long, argp or git's parse-options take
 * any unambiguous prefix of a long option for it (`tar --to-comm=CMD` is `--to-command=CMD`, `env --sp=…` is
 * `--split-string=…`, `git rebase --exe CMD` is `--exec CMD`), so an option table matched by whole names only is
 * read past. Here a word is read as every long option it is a prefix of: an ambiguous prefix is an error to the
 * program (it runs nothing), so reading it as one of them only fails closed.
 *
 * @module
 */

/** The long options named in a table's pattern, cached (`/^(-u|--user|--group)$/` → `--user`, `--group`). */
const NAMES = new WeakMap<RegExp, readonly string[]>();

/**
 * The long options a pattern of whole option names names.
 *
 * @example
 * ```ts
 * import { longNames } from "./long_options.ts";
 * longNames(/^(-u|--user|--group)$/); // ["--user", "--group"]
 * ```
 */
export function longNames(pattern: RegExp): readonly string[] {
  let names = NAMES.get(pattern);
  if (names === undefined) NAMES.set(pattern, names = pattern.source.match(/--[A-Za-z0-9][\w-]*/g) ?? []);
  return names;
}

/**
 * The long option of `names` that `word`'s name (before any `=`) stands for, whole or abbreviated; null when it
 * stands for none (or is no long option).
 *
 * @example
 * ```ts
 * import { expandLong } from "./long_options.ts";
 * expandLong("--to-comm=git push", ["--to-command", "--use-compress-program"]); // "--to-command"
 * expandLong("--totals", ["--to-command"]); // null
 * ```
 */
export function expandLong(word: string, names: readonly string[]): string | null {
  if (!word.startsWith("--") || word.length < 3) return null;
  const eq = word.indexOf("=");
  const name = eq === -1 ? word : word.slice(0, eq);
  if (names.includes(name)) return name;
  return names.find((n) => n.startsWith(name)) ?? null;
}
