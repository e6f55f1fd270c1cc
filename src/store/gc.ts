/**
 * A hint to the garbage collector, for readers that stream large artifacts
 * in bounded memory: between phases that each leave much garbage behind
 * (a long line parsed, a large artifact checked), so the next phase does not
 * start on top of it.
 *
 * @module
 */

/**
 * Collects garbage now where the runtime can be asked to (Bun); elsewhere
 * (Deno, without `--expose-gc`) it does nothing and the runtime collects on
 * its own.
 *
 * @example
 * ```ts
 * import { collectGarbage } from "./gc.ts";
 * collectGarbage();
 * ```
 */
export function collectGarbage(): void {
  (globalThis as { Bun?: { gc(sync: boolean): void } }).Bun?.gc(true);
}
