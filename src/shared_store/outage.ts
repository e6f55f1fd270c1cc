/**
 * Riding out a shared store's outages (a restart, a failover, a network cut)
 * while waiting on it: how long to wait before the next try (bounded
 * exponential backoff), and what to say about it, once when the store
 * becomes unreachable and once when it is back.
 *
 * @module
 */
import { StoreUnreachableError } from "./shared_store.ts";

/** The first retry's delay, ms. */
export const OUTAGE_FIRST_RETRY_MS = 250;
/** The longest delay between two retries, ms. */
export const OUTAGE_MAX_RETRY_MS = 5_000;

/**
 * Whether an error means the store cannot be reached now (and may be later):
 * worth waiting out, unlike a refused login or a missing schema.
 *
 * @example
 * ```ts
 * import { isOutage } from "./outage.ts";
 * isOutage(new Error("boom")); // false
 * ```
 */
export function isOutage(e: unknown): e is StoreUnreachableError {
  return e instanceof StoreUnreachableError;
}

/**
 * One waiter's view of the store's outages. Call {@link StoreOutage.failed}
 * with each error that {@link isOutage}, and {@link StoreOutage.succeeded}
 * after each call that went through.
 *
 * @example
 * ```ts
 * import { StoreOutage } from "./outage.ts";
 * const outage = new StoreOutage((line) => console.error(line), "postgres://db/noema", "ep_1 waits for approval");
 * // catch (e) { if (isOutage(e)) await sleep(outage.failed(e)); }
 * // after a call that went through: if (outage.succeeded()) subscribeAgain();
 * ```
 */
export class StoreOutage {
  #delay = 0;
  #down = false;

  /**
   * @param say where the two lines go (stderr)
   * @param location the store's (masked) location
   * @param waiting what keeps waiting, for those lines (`ep_1 waits for approval`)
   */
  constructor(readonly say: (line: string) => void, readonly location: string, readonly waiting: string) {}

  /** Whether the last call failed with an outage. */
  get down(): boolean {
    return this.#down;
  }

  /**
   * Records a failed call: says so the first time of an outage; returns how
   * long to wait before the next try (250 ms, doubling to 5 s).
   */
  failed(e: StoreUnreachableError): number {
    if (!this.#down) {
      this.#down = true;
      this.say(`noema: ${e.message}; ${this.waiting} and keeps waiting for it to come back`);
    }
    this.#delay = this.#delay === 0 ? OUTAGE_FIRST_RETRY_MS : Math.min(OUTAGE_MAX_RETRY_MS, this.#delay * 2);
    return this.#delay;
  }

  /** Records a call that went through: says so when the store was down; returns whether it was. */
  succeeded(): boolean {
    this.#delay = 0;
    if (!this.#down) return false;
    this.#down = false;
    this.say(`noema: the shared store at ${this.location} can be reached again; ${this.waiting}`);
    return true;
  }
}
