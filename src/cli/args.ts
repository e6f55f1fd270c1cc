/**
 * Small option parsers shared by several commands: repeatable options and
 * `key=value` tags.
 *
 * @module
 */
import { usageError } from "./errors.ts";
import { tagNameProblem } from "../runtime/settings.ts";

/**
 * Collects a repeatable option's values, in order (commander's argParser).
 *
 * @example
 * ```ts
 * import { collect } from "./args.ts";
 * collect("b", ["a"]); // ["a", "b"]
 * ```
 */
export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/**
 * Turns `key=value` pairs (from repeated `--tag`) into an object; a pair
 * without `=`, with an empty key or a reserved one (`__proto__`…) is a usage
 * error naming the flag.
 *
 * @example
 * ```ts
 * import { parseTags } from "./args.ts";
 * parseTags(["team=infra", "ticket=42"]); // { team: "infra", ticket: "42" }
 * ```
 */
export function parseTags(pairs: readonly string[] | undefined, flag = "--tag"): Record<string, string> | undefined {
  if (!pairs) return undefined;
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf("=");
    if (eq <= 0) throw usageError(`${flag} must be key=value, got ${JSON.stringify(p)}`);
    const problem = tagNameProblem(p.slice(0, eq));
    if (problem) throw usageError(`${flag}: ${problem}`);
    out[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return out;
}
