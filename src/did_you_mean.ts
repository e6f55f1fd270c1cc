/**
 * The closest known word to a typo: the did-you-mean of errors about an
 * unknown key, adapter, assertion kind or rule tool.
 *
 * @module
 */

/** The Levenshtein distance of `a` and `b`. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

/**
 * The closest of `known` to `name`, when close enough to be a typo.
 *
 * @example
 * ```ts
 * import { didYouMean } from "noema";
 * didYouMean("polices", ["policies", "tags"]); // "policies"
 * ```
 */
export function didYouMean(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined, bestD = Infinity;
  for (const k of known) {
    const d = editDistance(name.toLowerCase(), k.toLowerCase());
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(name.length / 3)) ? best : undefined;
}
