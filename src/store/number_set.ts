/**
 * A set of 53-bit non-negative integers (such as `hash53` digests of event
 * ids) in one `Float64Array`, open addressing: about 16 bytes an entry where
 * a `Set` of numbers takes three times that. `noema validate` keeps one
 * entry per event of the file it scans, and `resume` one per event of the
 * log it rebuilds a run from ({@link hash53} of each id).
 *
 * @module
 */

import type { JsonlEntry } from "./jsonl.ts";

const EMPTY = -1;

/**
 * A set of non-negative integers up to 2^53.
 *
 * @example
 * ```ts
 * import { NumberSet } from "./number_set.ts";
 * const s = new NumberSet();
 * s.add(42);
 * console.log(s.has(42), s.has(7), s.size); // true false 1
 * ```
 */
export class NumberSet {
  #slots = new Float64Array(1024).fill(EMPTY);
  #mask = 1023;
  /** How many numbers the set holds. */
  size = 0;

  #find(slots: Float64Array, mask: number, x: number): number {
    let i = (x % 0x100000000 ^ Math.floor(x / 0x100000000)) & mask;
    while (slots[i] !== EMPTY && slots[i] !== x) i = (i + 1) & mask;
    return i;
  }

  /** Whether `x` is in the set. */
  has(x: number): boolean {
    return this.#slots[this.#find(this.#slots, this.#mask, x)] === x;
  }

  /** Adds `x` (a non-negative integer up to 2^53). */
  add(x: number): void {
    const i = this.#find(this.#slots, this.#mask, x);
    if (this.#slots[i] === x) return;
    this.#slots[i] = x;
    if (++this.size * 2 > this.#slots.length) this.#grow();
  }

  #grow(): void {
    const old = this.#slots;
    const slots = new Float64Array(old.length * 2).fill(EMPTY);
    const mask = slots.length - 1;
    for (const x of old) if (x !== EMPTY) slots[this.#find(slots, mask, x)] = x;
    this.#slots = slots;
    this.#mask = mask;
  }
}

/**
 * A 53-bit string hash (two FNV-1a lanes): a compact stand-in for a string in large sets (two different strings
 * share one with odds of about 2^-53: a hit is confirmed against the strings themselves).
 *
 * @example
 * ```ts
 * import { hash53, NumberSet } from "./number_set.ts";
 * const ids = new NumberSet();
 * ids.add(hash53("ev_1"));
 * ids.has(hash53("ev_1")); // true
 * ```
 */
export function hash53(s: string): number {
  let h1 = 0x811c9dc5, h2 = 0x01000193 ^ s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  return (h1 >>> 0) * 0x200000 + ((h2 >>> 0) & 0x1fffff);
}

/**
 * The lines of `entries` whose `id` repeats an earlier line's, among the ids whose {@link hash53} was seen twice
 * (`twice`: a set of hashes only suspects a repeat; this second pass over the lines tells a repeat from a collision).
 *
 * @example
 * ```ts
 * import { hash53, repeatedIds } from "./number_set.ts";
 * import { readJsonl } from "./jsonl.ts";
 * // for (const r of repeatedIds(readJsonl("events.jsonl"), new Set([hash53("ev_1")]))) console.log(r.entry.line, r.first);
 * ```
 */
export function* repeatedIds(
  entries: Iterable<JsonlEntry>,
  twice: ReadonlySet<number>,
): Generator<{ entry: JsonlEntry; id: string; first: number }> {
  const first = new Map<string, number>();
  for (const entry of entries) {
    const id = entry.value?.id;
    if (typeof id !== "string" || !twice.has(hash53(id))) continue;
    const at = first.get(id);
    if (at === undefined) first.set(id, entry.line);
    else yield { entry, id, first: at };
  }
}
