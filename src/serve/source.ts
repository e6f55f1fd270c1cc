/**
 * Where the app's runs come from: the root's files, or (with `--store`) a
 * shared store's catalog, an episode held here being read from the root
 * either way. The routes ask these functions, never the files or the store
 * directly.
 *
 * @module
 */
import { join } from "node:path";
import type { EpisodeEntry } from "../read/list.ts";
import { episodesDir } from "../store/layout.ts";
import { lexists } from "../store/nofollow.ts";
import { decide, type DecisionAsk, type Waiting, waitingRun, waitingRuns } from "./approvals.ts";
import type { ServeConfig } from "./config.ts";
import { episodeDirIn } from "./paths.ts";
import { hostOf, listRuns, type RunsQuery, seesEveryRun } from "./runs.ts";
import { runsCacheReady } from "./runs_cache.ts";
import { sortRuns } from "./runs_sort.ts";
import { storeDecide, storeEpisodeDir, storeRuns, storeWaiting } from "./store_source.ts";

/**
 * One page of runs.
 *
 * @example
 * ```ts
 * import { runsOf } from "./source.ts";
 * // const { entries, more } = await runsOf(config, query)
 * ```
 */
export function runsOf(cfg: ServeConfig, q: RunsQuery): Promise<{ entries: EpisodeEntry[]; more: boolean }> {
  if (!cfg.store) {
    // A view of every run waits for the runs cache to be read back (just after start), not to read the runs itself.
    return seesEveryRun(q)
      ? runsCacheReady(cfg.root).then(() => listRuns(cfg.root, q))
      : Promise.resolve(listRuns(cfg.root, q));
  }
  // Over a store, a column sort orders the page the catalog gave (its own order is by when it stored each run).
  return storeRuns(cfg.store, q).then((got) =>
    q.sort === null ? got : { ...got, entries: sortRuns(got.entries, q.sort, q.dir, hostOf) }
  );
}

/**
 * The directory an episode is read from: the root's (checked, see `episodeDirIn`), else a copy pulled from the store.
 *
 * @example
 * ```ts
 * import { episodeDirOf } from "./source.ts";
 * // const { dir, pulled } = await episodeDirOf(config, "ep_01J…")
 * ```
 */
export async function episodeDirOf(cfg: ServeConfig, id: string): Promise<{ dir: string; pulled: boolean }> {
  if (!cfg.store) return { dir: episodeDirIn(cfg.root, id), pulled: false };
  let here = false;
  try {
    here = lexists(join(episodesDir(cfg.root), id));
  } catch { /* not a plain name: episodeDirIn says why */ }
  if (here || id.includes("/") || id.includes("..")) return { dir: episodeDirIn(cfg.root, id), pulled: false };
  return { dir: await storeEpisodeDir(cfg.store, id), pulled: true };
}

/**
 * Every run waiting for a decision (fleet-wide over a store).
 *
 * @example
 * ```ts
 * import { waitingOf } from "./source.ts";
 * // (await waitingOf(config)).length
 * ```
 */
export function waitingOf(cfg: ServeConfig): Promise<Waiting[]> {
  return cfg.store ? storeWaiting(cfg.store) : Promise.resolve(waitingRuns(cfg.root));
}

/**
 * What run `id` waits on, or null.
 *
 * @example
 * ```ts
 * import { waitingOne } from "./source.ts";
 * // await waitingOne(config, "ep_01J…")
 * ```
 */
export async function waitingOne(cfg: ServeConfig, id: string): Promise<Waiting | null> {
  const local = waitingRun(cfg.root, id);
  if (local !== null || !cfg.store) return local;
  return (await storeWaiting(cfg.store)).find((w) => w.episode_id === id) ?? null;
}

/**
 * Records a decision: in the files (as `noema approve`), or in the store (as `noema approve --store`).
 *
 * @example
 * ```ts
 * import { decideOn } from "./source.ts";
 * // await decideOn(config, "ep_01J…", { decision: "approved", note: null, by: null, checkpointId: null })
 * ```
 */
export async function decideOn(cfg: ServeConfig, id: string, ask: DecisionAsk): Promise<unknown> {
  if (!cfg.store) return decide(cfg.root, id, ask);
  return await storeDecide(cfg.store, id, ask);
}
