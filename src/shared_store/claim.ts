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
import { handedOffTo } from "./pending.ts";
import { EpisodePublisher } from "./publish.ts";
import { pulledCopy } from "./pulled.ts";
import { LeaseHeldError, type SharedStore, StoreConflictError } from "./shared_store.ts";

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
    } (noema resume there; a decision made here is recorded in the store for it)`,
    { exitCode: EXIT.LOCKED },
  );
}

/**
 * Claims episode `id` of `root` for a resume in this process: takes its lease and publishes what this copy has
 * that the store lacks. Throws exit 10 when another root holds or has gone on with the run, or when this is a
 * pulled copy. The lease stays with this process; the resume's publisher takes it over (`adoptPid`).
 *
 * @example
 * ```ts
 * import { claimEpisode } from "./claim.ts";
 * await claimEpisode(store, ".noema", "ep_01J…");
 * ```
 */
export async function claimEpisode(store: SharedStore, root: string, id: string): Promise<void> {
  const row = await store.get(id).catch(() => null);
  refusePulledCopy(root, id, row?.host ?? null);
  const heldWaitMs = handedOffTo(root, id) !== null ? HANDED_OFF_WAIT_MS : 0;
  try {
    await new EpisodePublisher(store, join(episodesDir(root), id), id, { heldWaitMs }).publish();
  } catch (e) {
    if (e instanceof LeaseHeldError) {
      throw new NoemaError(
        "held_elsewhere",
        `${id} is held by ${e.owner.host} (pid ${e.owner.pid}) in the shared store ${store.location}: ` +
          `that process applies its decisions; one root resumes a run`,
        { exitCode: EXIT.LOCKED },
      );
    }
    if (e instanceof StoreConflictError) {
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
