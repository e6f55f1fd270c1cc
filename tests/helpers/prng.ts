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

/**
 * Numbers in [0, 1) by mulberry32: the generator of the shell-line compositions (`shell_compose.ts`) and of the
 * benchmarks' inputs, so every run tries the same lines and times the same bytes.
 *
 * @example
 * ```ts
 * import { mulberry32 } from "./helpers/prng.ts";
 * mulberry32(37)() === mulberry32(37)(); // true
 * ```
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
