/**
 * Riding out a shared store's outages (a restart, a failover, a network cut)
 * while waiting on it: how long to wait before the next try (bounded
 * exponential backoff), what to say about it, once when the store becomes
 * unreachable and once when it is back, and the subscription to an episode's
 * changes, made again once the store answers.
 *
 * @module
 */
import process from "node:process";
import { type SharedStore, StoreTimeoutError, StoreUnreachableError } from "./shared_store.ts";

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
export function isOutage(e: unknown): e is StoreUnreachableError | StoreTimeoutError {
  return e instanceof StoreUnreachableError || e instanceof StoreTimeoutError;
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
 * // after a call that went through: outage.succeeded();
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

  /**
   * Records a failed call: says so the first time of an outage; returns how
   * long to wait before the next try (250 ms, doubling to 5 s).
   */
  failed(e: StoreUnreachableError | StoreTimeoutError): number {
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

/**
 * A subscription to an episode's changes ({@link SharedStore.subscribe}) that
 * outlives outages: {@link Resubscription.drop} it when the store cannot be
 * reached (it went with its connection), {@link Resubscription.renew} it after
 * each call that went through. A renewal is made in the background: the
 * database client's own reconnection backoff may hold a new `LISTEN` for
 * seconds (up to 20) after the store is back, and the waiter polls meanwhile.
 *
 * @example
 * ```ts
 * import { Resubscription } from "./outage.ts";
 * import { openSharedStore } from "./open.ts";
 * const store = await openSharedStore("postgres://noema@127.0.0.1:5432/noema");
 * const sub = new Resubscription(store, "ep_1", () => console.log("changed"));
 * await sub.start();
 * // on an outage: sub.drop(); after a call that went through: sub.renew();
 * await sub.close();
 * ```
 */
export class Resubscription {
  #stop: (() => Promise<void>) | null = null;
  #making = false;
  /** Bumped by every drop and the close: a renewal made before one is stopped at once. */
  #generation = 0;

  constructor(readonly store: SharedStore, readonly episodeId: string, readonly wake: () => void) {}

  /**
   * The callback of a subscription made now: it wakes only while no drop or close came after it. A dropped
   * subscription whose stop could not reach the store (its connection gone) may be made again by the client's own
   * reconnection; silenced so, it never wakes the waiter, nor anyone once closed.
   */
  #waker(): () => void {
    const generation = this.#generation;
    return () => {
      if (generation === this.#generation) this.wake();
    };
  }

  /** Subscribes now, waiting for it (the first time: before the waiter first looks, so that it misses nothing). */
  async start(): Promise<void> {
    this.#stop = await this.store.subscribe(this.episodeId, this.#waker());
  }

  /** After a call that went through: subscribes again, in the background, when the subscription was dropped. */
  renew(): void {
    if (this.#stop !== null || this.#making) return;
    this.#making = true;
    const generation = this.#generation;
    this.store.subscribe(this.episodeId, this.#waker()).then(
      (stop) => {
        if (generation === this.#generation) this.#stop = stop;
        else void stop().catch(() => {});
      },
      () => {}, // tried again after the next call that goes through
    ).finally(() => this.#making = false);
  }

  /** The store could not be reached: the subscription went with its connection. */
  drop(): void {
    this.#generation++;
    const stop = this.#stop;
    this.#stop = null;
    void stop?.().catch(() => {});
  }

  /** Stops it (a renewal still being made stops itself when it is). */
  async close(): Promise<void> {
    this.#generation++;
    const stop = this.#stop;
    this.#stop = null;
    await stop?.();
  }
}

/** The store's methods that only read (and subscribing), which {@link answering} bounds. */
const READS = new Set<PropertyKey>(["decision", "get", "subscribe", "lineCount", "readLines", "readFile", "list"]);

/**
 * `store` whose reads (and `subscribe`) give up after `ms()` without an
 * answer, with a {@link StoreUnreachableError}: a network cut holds a query
 * until TCP gives up, many minutes, which would hold a wait past its
 * deadline. An abandoned read changes nothing; writes are not bounded (one
 * given up on might still be recorded).
 *
 * @example
 * ```ts
 * import { answering } from "./outage.ts";
 * import { openSharedStore } from "./open.ts";
 * const store = answering(await openSharedStore("postgres://noema@127.0.0.1:5432/noema"), () => 10_000);
 * await store.get("ep_1"); // a StoreUnreachableError after 10 s without an answer
 * ```
 */
export function answering(store: SharedStore, ms: () => number): SharedStore {
  return new Proxy(store, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target);
      if (typeof v !== "function") return v;
      const f = (v as (...args: unknown[]) => unknown).bind(target);
      if (!READS.has(prop)) return f;
      return (...args: unknown[]) => {
        const limit = ms();
        let timer: ReturnType<typeof setTimeout> | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new StoreUnreachableError(target.location, `no answer within ${limit / 1000} s`)),
            limit,
          );
        });
        return Promise.race([f(...args), late]).finally(() => clearTimeout(timer));
      };
    },
  });
}

/** What the database client's own connection attempts fail with while the store is down. */
const STRAY_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
]);

/**
 * Whether `e` is the database client's write to a connection it has just
 * closed: `postgres` flushes its buffered bytes from a `setImmediate` that
 * its close handler clears, and under Deno a cleared immediate of the batch
 * already running still fires, so it writes to a socket it has set to null
 * (a TypeError thrown from its `nextWrite`, uncaught). That connection is
 * closed and reconnects; a query on it fails as an outage would.
 */
function isStrayWrite(e: unknown): boolean {
  return e instanceof TypeError && /\bnextWrite\b/.test(e.stack ?? "") && /write/.test(e.message);
}

/**
 * Runs `work` (a wait that rides out outages) so that a connection error the
 * database client leaves in a promise nobody awaits (its own reconnection
 * of a subscription, under Deno), or throws from a write to a connection it
 * has closed (see {@link isStrayWrite}), does not end the process: the wait
 * learns of the outage from its own calls. Any other unhandled rejection or
 * uncaught exception is thrown on, as without this.
 *
 * @example
 * ```ts
 * import { ridingOutStrayErrors } from "./outage.ts";
 * const got = await ridingOutStrayErrors(() => waitLoop());
 * ```
 */
export async function ridingOutStrayErrors<T>(work: () => Promise<T>): Promise<T> {
  const stray = (e: unknown) => {
    if (!STRAY_CODES.has(String((e as { code?: unknown })?.code))) throw e;
  };
  const strayWrite = (e: unknown) => {
    if (isStrayWrite(e)) return;
    // Not ours: thrown again with this listener gone, it ends the process as it would have.
    process.off("uncaughtException", strayWrite);
    setImmediate(() => {
      throw e;
    });
  };
  process.on("unhandledRejection", stray);
  process.on("uncaughtException", strayWrite);
  try {
    return await work();
  } finally {
    process.off("unhandledRejection", stray);
    process.off("uncaughtException", strayWrite);
  }
}
