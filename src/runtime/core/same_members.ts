/**
 * Whether two objects have the same own keys, in the same order, holding
 * identical (`===`) values: a shallow equality cheap enough for every step
 * (the snapshot reuses a part that did not change; the state hash reuses
 * the canonical text of inputs an action copied).
 *
 * @module
 */

/**
 * Whether `a` and `b` have the same own keys in the same order, with identical values.
 *
 * @example
 * ```ts
 * import { sameMembers } from "./same_members.ts";
 * const inputs = { n: 1, sql: "SELECT 1" };
 * sameMembers(inputs, { ...inputs }); // true
 * sameMembers({ a: 1, b: 2 }, { b: 2, a: 1 }); // false: another order
 * ```
 */
export function sameMembers(a: object, b: object): boolean {
  if (a === b) return true;
  const ka = Object.keys(a), kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    const k = ka[i];
    if (k !== kb[i] || (a as Record<string, unknown>)[k] !== (b as Record<string, unknown>)[k]) return false;
  }
  return true;
}
