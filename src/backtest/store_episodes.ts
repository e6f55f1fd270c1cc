/**
 * The episodes of a shared store, for a backtest of the fleet: the catalog's
 * rows that pass the filter, oldest first, each pulled alone into a
 * temporary root of its own (`pullEpisode`: every stream line and file as
 * published, checked against its manifest), handed on, then removed. The
 * store is only read (no lease, no catalog write), and nothing is written
 * to the local root: memory and disk stay flat whatever the number of runs.
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { CatalogFilter, SharedStore } from "../shared_store/shared_store.ts";
import { pullEpisode } from "../shared_store/pull.ts";

/** An episode to backtest: its id and directory, or why it cannot be read. */
export interface SourcedEpisode {
  id: string;
  dir: string | null;
  /** Why it could not be read (dir is null). */
  error?: string;
}

/** More rows than any catalog holds: a backtest reads every row that passes the filter. */
const ALL_ROWS = 1_000_000_000;

/**
 * The store's episodes that pass `filter`, oldest first (the newest `limit` of them when given), each in a
 * temporary directory that lives until the next one is asked for.
 *
 * @example
 * ```ts
 * import { storeEpisodes } from "./store_episodes.ts";
 * // for await (const e of storeEpisodes(store, { since: "2026-11-01T00:00:00Z" })) console.log(e.id, e.dir);
 * ```
 */
export async function* storeEpisodes(
  store: SharedStore,
  filter: CatalogFilter,
): AsyncGenerator<SourcedEpisode, void, undefined> {
  const rows = await store.list({ ...filter, limit: filter.limit ?? ALL_ROWS });
  for (const row of rows.reverse()) {
    const id = row.episode_id;
    const tmp = mkdtempSync(join(tmpdir(), "noema-backtest-"));
    try {
      let dir: string;
      try {
        dir = (await pullEpisode(store, id, tmp)).episode_dir;
      } catch (e) {
        yield { id, dir: null, error: `cannot be read from ${store.location}: ${(e as Error).message}` };
        continue;
      }
      yield { id, dir };
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
}
