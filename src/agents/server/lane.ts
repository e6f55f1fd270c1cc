/**
 * The resident hook server's one lane: its calls use the session's episodes
 * one at a time, in the order they came. A call that waits for a long time
 * without using them (a decision made elsewhere, `--wait`) steps out of the
 * lane for the wait, so the session's other calls (the results of calls the
 * agent ran beside it) are answered meanwhile, then takes its turn again.
 *
 * @module
 */

/** Runs `work` (a long wait that uses no episode) out of the lane, and takes the caller's turn again after it. */
export type Outside = <T>(work: () => Promise<T>) => Promise<T>;

/**
 * A first-come, first-served lane.
 *
 * @example
 * ```ts
 * import { Lane } from "./lane.ts";
 * const lane = new Lane();
 * const leave = await lane.enter();
 * try { … } finally { leave(); }
 * ```
 */
export class Lane {
  #tail: Promise<void> = Promise.resolve();

  /** Waits for the lane (every caller before has left it); resolves to the function that leaves it. */
  async enter(): Promise<() => void> {
    let leave!: () => void;
    const mine = new Promise<void>((resolve) => leave = resolve);
    const before = this.#tail;
    this.#tail = before.then(() => mine);
    await before;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      leave();
    };
  }
}
