/**
 * Holding an episode's lease while its run waits for a decision
 * (`noema run … --wait`): the run's publishing process has finished, and a
 * lease not renewed for 60 s may be taken over by another root. The waiting
 * process takes the lease over from its own publisher once that is gone and
 * renews it, so a resume elsewhere is refused while this run waits; when
 * another root took it over anyway (this host was cut off for longer than
 * that), the wait ends and the decision is not applied here.
 *
 * @module
 */
import process from "node:process";
import { processGone } from "../store/lock.ts";
import { publishingHost } from "./host.ts";
import { LeaseHeldError, type SharedStore } from "./shared_store.ts";

/** How often the lease is renewed (a lease is stale after 60 s). @default {10000} */
const RENEW_MS = 10_000;

/** A lease held while waiting: see {@link keepLease}. */
export interface LeaseKeeper {
  /** Why the lease was lost (another root holds it now), or null. */
  readonly lost: LeaseHeldError | null;
  /** Stops renewing (the lease stays this process's: the resume that follows takes it over). */
  stop(): void;
}

/**
 * Renews episode `id`'s lease for this process every `intervalMs` until
 * stopped; calls `onLost` once if another root holds it. A store that cannot
 * be reached is tried again at the next renewal.
 *
 * @example
 * ```ts
 * import { keepLease } from "./lease_keeper.ts";
 * const keeper = keepLease(store, "ep_01J…", () => controller.abort());
 * // … wait for the decision …
 * keeper.stop();
 * ```
 */
export function keepLease(
  store: SharedStore,
  id: string,
  onLost: (e: LeaseHeldError) => void,
  intervalMs = RENEW_MS,
): LeaseKeeper {
  const host = publishingHost();
  let lost: LeaseHeldError | null = null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const renew = async () => {
    try {
      await store.acquireLease(id, { host, pid: process.pid }, { ownerGone: processGone });
    } catch (e) {
      // This host's own publisher still finishing is not a loss: taken over at the next renewal.
      if (e instanceof LeaseHeldError && e.owner.host !== host && !stopped) {
        lost = e;
        onLost(e);
        return;
      }
    }
    if (!stopped) timer = setTimeout(renew, intervalMs);
  };
  void renew();
  return {
    get lost() {
      return lost;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
