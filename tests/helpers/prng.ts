/**
 * A small deterministic random number generator (xorshift32) for tests that
 * try many random inputs: a failure names its seed, and the same seed gives
 * the same inputs under Deno and Bun.
 *
 * @module
 */

/**
 * Numbers in [0, 1), the same sequence for the same seed.
 *
 * @example
 * ```ts
 * import { prng } from "./helpers/prng.ts";
 * const rand = prng(7);
 * rand() === prng(7)(); // true
 * ```
 */
export function prng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}
