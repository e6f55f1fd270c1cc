/**
 * Kicks from a run's thread to the thread that publishes or exports it: at
 * most one every `intervalMs`, posted at once when due. A run busy in its
 * own thread may not turn its event loop for a long while, so a kick that
 * waited for a timer would never go; the timer is only for the last kick of
 * a burst.
 *
 * @module
 */

/**
 * Calls `send` for kicks, at most once every `intervalMs`.
 *
 * @example
 * ```ts
 * import { Kicks } from "./kicks.ts";
 * const kicks = new Kicks(250, () => worker.postMessage("pump"));
 * kicks.kick(); // on every event
 * kicks.cancel(); // at the end
 * ```
 */
export class Kicks {
  readonly #interval: number;
  readonly #send: () => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #last = 0;

  /** `intervalMs`: the least time between two sends. */
  constructor(intervalMs: number, send: () => void) {
    this.#interval = intervalMs;
    this.#send = send;
  }

  /** Something happened: sent now when the last send is `intervalMs` old, else by a timer (one at a time). */
  kick(): void {
    const now = Date.now();
    if (now - this.#last >= this.#interval) {
      this.cancel();
      this.#fire(now);
      return;
    }
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#fire(Date.now());
    }, this.#last + this.#interval - now);
    // A pending kick never keeps the process alive: the end sends what is left.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Drops a kick waiting for its timer. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #fire(now: number): void {
    this.#last = now;
    this.#send();
  }
}
