/**
 * Masking a result with a `redact` verdict's patterns, and refusing the
 * patterns a backtracking regular-expression engine cannot run safely.
 *
 * JavaScript's engines backtrack: a pattern like `(a+)+$` takes exponential
 * time on a long run of `a`s. V8 (Deno) then runs until it is stopped; the
 * engine under Bun gives up after a while and reports *no match*, which
 * would pass a secret unmasked. So, before any pattern runs,
 * {@link unsafePatternProblem} refuses the shapes that backtrack
 * exponentially or that an engine may give up on:
 *
 * - a repeated group (`*`, `+`, `{n,}`, `{n,m}` with m > 1) whose body holds a
 *   quantifier (`*`, `+`, `?`, `{n,m}` with n < m) or an alternation `|`:
 *   `(a+)+`, `(\w|\s)*`, `(?:x?)+`;
 * - a backreference (`\1`, `\k<name>`).
 *
 * What remains can still take polynomial time (`\w*\w*\w*!`): the caller runs
 * the masking where the policy's timeout can stop it (the policy's worker,
 * see `src/runtime/review_mask.ts`).
 *
 * @module
 */
import { MASK } from "./redact.ts";

/** An error about a pattern that cannot be run safely: the result must be withheld. */
export class UnsafePattern extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UnsafePattern";
  }
}

interface Group {
  /** The body holds a quantifier or an alternation. */
  risky: boolean;
}

/** Reads a quantifier at `i`: its length and whether it repeats (max > 1) and varies (min < max); null if none. */
function quantifierAt(src: string, i: number): { length: number; repeats: boolean; varies: boolean } | null {
  const c = src[i];
  let length = 0, repeats = false, varies = false;
  if (c === "*" || c === "+") [length, repeats, varies] = [1, true, true];
  else if (c === "?") [length, repeats, varies] = [1, false, true];
  else if (c === "{") {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(src.slice(i));
    if (!m) return null;
    const min = Number(m[1]);
    const max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
    [length, repeats, varies] = [m[0].length, max > 1, min < max];
  } else return null;
  if (src[i + length] === "?") length++; // lazy: the same backtracking
  return { length, repeats, varies };
}

/**
 * Why a pattern (a regular expression source) cannot be run safely, or null
 * when it can.
 *
 * @example
 * ```ts
 * import { unsafePatternProblem } from "./mask_patterns.ts";
 * unsafePatternProblem("sk-[A-Za-z0-9]{20,}"); // null
 * unsafePatternProblem("(a+)+$"); // "a repeated group holds a quantifier or an alternation (…)"
 * ```
 */
export function unsafePatternProblem(src: string): string | null {
  const stack: Group[] = [{ risky: false }];
  const nested = "a repeated group holds a quantifier or an alternation (exponential backtracking)";
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    let closed: Group | null = null;
    if (c === "\\") {
      const next = src[i + 1] ?? "";
      if (/[1-9]/.test(next) || (next === "k" && src[i + 2] === "<")) return "a backreference";
      i++;
    } else if (c === "[") {
      for (i++; i < src.length && src[i] !== "]"; i++) if (src[i] === "\\") i++;
    } else if (c === "(") {
      stack.push({ risky: false });
      // A group's prefix (`?:`, `?=`, `?!`, `?<=`, `?<!`, `?<name>`) is no quantifier.
      const prefix = /^\?(?:[:=!]|<[=!]|<[^>]*>)/.exec(src.slice(i + 1));
      if (prefix) i += prefix[0].length;
      continue;
    } else if (c === ")") {
      if (stack.length > 1) closed = stack.pop()!;
      if (closed?.risky) stack.at(-1)!.risky = true;
    } else if (c === "|") {
      stack.at(-1)!.risky = true;
    }
    const q = quantifierAt(src, i + 1);
    if (!q) continue;
    if (closed?.risky && q.repeats) return nested;
    if (q.varies || closed?.risky) stack.at(-1)!.risky = true;
    i += q.length;
  }
  return null;
}

/**
 * Masks every match of `patterns` in every string of `value` (keys stay).
 * Throws {@link UnsafePattern} for a pattern {@link unsafePatternProblem}
 * refuses, before any pattern runs.
 *
 * @example
 * ```ts
 * import { maskPatterns } from "./mask_patterns.ts";
 * maskPatterns({ stdout: "key sk-abc" }, ["sk-\\w+"]); // { stdout: "key [REDACTED]" }
 * ```
 */
export function maskPatterns(value: unknown, patterns: readonly string[]): unknown {
  patterns.forEach((p, i) => {
    const problem = unsafePatternProblem(p);
    if (problem) throw new UnsafePattern(`patterns[${i}] ${JSON.stringify(p)}: ${problem}`);
  });
  const res = patterns.map((p) => new RegExp(p, "g"));
  const walk = (x: unknown): unknown => {
    if (typeof x === "string") return res.reduce((s, re) => s.replace(re, MASK), x);
    if (Array.isArray(x)) return x.map(walk);
    if (typeof x === "object" && x !== null) {
      return Object.fromEntries(Object.entries(x as Record<string, unknown>).map(([k, v]) => [k, walk(v)]));
    }
    return x;
  };
  return walk(value);
}
