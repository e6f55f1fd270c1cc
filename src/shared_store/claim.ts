/**
 * Claiming an episode before a resume runs anything: one root continues a
 * run, fleet-wide. The resume takes the episode's lease in the store (a live
 * writer elsewhere, or a run of this host waiting for its decision, keeps
 * it) and publishes what this copy has that the store lacks, which checks
 * this copy against the shared one: a copy the store has gone on without
 * (another root resumed it) is refused, so an approved action never runs
 * twice. A pulled copy is never resumed: the root that holds the run does.
 *
 * @module
 */
import { join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import { episodesDir } from "../store/layout.ts";
import { processGone } from "../store/lock.ts";
import { publishingHost } from "./host.ts";
import { handedOffTo } from "./pending.ts";
import { EpisodePublisher } from "./publish.ts";
import { pulledCopy } from "./pulled.ts";
import { LeaseHeldError, type LeaseOwner, type SharedStore, StoreConflictError } from "./shared_store.ts";
import { calledAs } from "../called_as.ts";

/** How long a claim waits for a background sync of this host that holds the lease (it publishes a run's tail). */
const HANDED_OFF_WAIT_MS = 30_000;

/**
 * Refuses a resume of a pulled copy (exit 10), naming where the run is held.
 *
 * @example
 * ```ts
 * import { refusePulledCopy } from "./claim.ts";
 * refusePulledCopy(".noema", "ep_01J…", "host-a"); // throws for a copy pulled from the store
 * ```
 */
export function refusePulledCopy(root: string, id: string, holder: string | null): void {
  if (pulledCopy(root, id) === null) return;
  throw new NoemaError(
    "pulled_copy",
    `${id} here is a copy pulled from the shared store, not the run: ${
      holder ? `host ${holder} holds it and applies its decisions` : "the machine that ran it holds it"
    } (${calledAs()} resume there; a decision made here is recorded in the store for it)`,
    { exitCode: EXIT.LOCKED },
  );
}

/** Options of {@link claimEpisode}. */
export interface ClaimOptions {
  /**
   * How long the claim waits, at most, while the lease is held by the process the episode's marker names (its run's
   * publishing process, which exits once its run has gone, or publishes the run's tail alone): the whole time that
   * process lives, up to this many ms, and no more than 30 s for any other holder of this host. An idle-priority
   * process on a busy machine may take minutes to be scheduled and exit. @default {30000}
   */
  publisherWaitMs?: number;
  /** Told once, when the claim has waited a few seconds for that process, that it is waiting and for what. */
  onWait?: (message: string) => void;
}

/** After how long waiting for the publishing process is said (a publish that ends in a moment is not). */
const SAY_WAIT_AFTER_MS = 2_000;

/**
 * Claims episode `id` of `root` for a resume in this process: takes its lease and publishes what this copy has
 * that the store lacks. Throws exit 10 when another root holds or has gone on with the run, or when this is a
 * pulled copy. The lease stays with this process; the resume's publisher takes it over (`adoptPid`).
 *
 * @example
 * ```ts
 * import { claimEpisode } from "./claim.ts";
 * await claimEpisode(store, ".noema", "ep_01J…", { publisherWaitMs: 600_000, onWait: (m) => console.error(m) });
 * ```
 */
export async function claimEpisode(
  store: SharedStore,
  root: string,
  id: string,
  options: ClaimOptions = {},
): Promise<void> {
  const row = await store.get(id).catch(() => null);
  refusePulledCopy(root, id, row?.host ?? null);
  const publisher = handedOffTo(root, id);
  const longest = Math.max(HANDED_OFF_WAIT_MS, options.publisherWaitMs ?? HANDED_OFF_WAIT_MS);
  let said = false;
  const keepWaiting = (owner: LeaseOwner, waitedMs: number): boolean => {
    if (publisher === null) return false;
    const theirs = owner.pid === publisher && !processGone(publisher);
    if (theirs && !said && waitedMs >= SAY_WAIT_AFTER_MS) {
      said = true;
      options.onWait?.(
        `noema: ${id} is held by the process publishing its last run (pid ${publisher}, this host), ` +
          `which exits once its work is done: waiting for it (at most ${Math.round(longest / 1000)} s)`,
      );
    }
    return waitedMs < HANDED_OFF_WAIT_MS || (theirs && waitedMs < longest);
  };
  const claim = new EpisodePublisher(store, join(episodesDir(root), id), id, { keepWaiting });
  try {
    await claim.publish();
  } catch (e) {
    if (e instanceof LeaseHeldError) throw heldError(store, id, e.owner, publisher);
    if (e instanceof StoreConflictError) {
      // Found by an audit: the lease taken on the way (its holder looking gone from here) kept the run's own writer
      // fenced out after the refusal.
      await claim.releaseLease().catch(() => {});
      throw new NoemaError(
        "diverged",
        `${id} here is not the run the shared store ${store.location} holds, which has gone on without it ` +
          `(resumed elsewhere?): ${e.message}. Nothing was run`,
        { exitCode: EXIT.LOCKED },
      );
    }
    throw e;
  }
}

/** The refusal (exit 10) of a claim whose episode's lease another process holds: its run's publisher, or a run. */
function heldError(store: SharedStore, id: string, owner: LeaseOwner, publisher: number | null): NoemaError {
  const message = owner.pid === publisher && owner.host === publishingHost()
    ? `${id} is held by the process publishing its last run (pid ${owner.pid}, this host) in the shared store ` +
      `${store.location}: it has not let the episode go yet; ${calledAs()} resume again once that process has exited`
    : `${id} is held by ${owner.host} (pid ${owner.pid}) in the shared store ${store.location}: ` +
      `that process applies its decisions; one root resumes a run`;
  return new NoemaError("held_elsewhere", message, { exitCode: EXIT.LOCKED });
}
