/**
 * Search in a files store: a bounded scan of the stored `events.jsonl` of the
 * catalog's runs, newest first, with the same bounds as `noema serve`'s
 * search of a root (at most 5,000 runs and 256 MiB of lines per search, the
 * first 32 MiB of a run), saying when it stopped early. The fields searched
 * are `src/read/event_search.ts`'s.
 *
 * @module
 */
import { searchJsonl } from "../../read/event_search.ts";
import {
  type CatalogEntry,
  type EventSearchHit,
  type EventSearchOptions,
  type EventSearchResult,
  isUnreadable,
} from "../shared_store.ts";

/** Bounds of the scan. */
export const SCAN = { episodes: 5000, bytes: 256 * 1024 * 1024, fileBytes: 32 * 1024 * 1024 };

/**
 * Searches the stored events of `rows` (the catalog's newest, at most {@link SCAN}`.episodes + 1` of them: one more
 * says the scan stops before the oldest); `head(id, max)` reads the first complete lines of a run's `events.jsonl`,
 * at most `max` bytes, and whether it left lines out.
 *
 * @example
 * ```ts
 * import { scanEvents } from "./search.ts";
 * // await scanEvents(await store.list({ limit: 5001 }), (id, max) => readHead(id, max), "zebra", {})
 * ```
 */
export function scanEvents(
  rows: CatalogEntry[],
  head: (id: string, max: number) => { text: string; cut: boolean },
  query: string,
  o: EventSearchOptions,
): EventSearchResult {
  const limit = o.limit ?? 200, perEpisode = o.perEpisode ?? 5;
  const hits: EventSearchHit[] = [];
  let bytes = 0, truncated = rows.length > SCAN.episodes;
  for (const row of rows.slice(0, SCAN.episodes)) {
    if (isUnreadable(row)) continue; // its host is not believed: nothing of it is shown
    if (hits.length >= limit || bytes >= SCAN.bytes) {
      truncated = true;
      break;
    }
    const got = head(row.episode_id, Math.min(SCAN.fileBytes, SCAN.bytes - bytes));
    bytes += got.text.length;
    truncated ||= got.cut;
    for (const h of searchJsonl(got.text, query, Math.min(perEpisode, limit - hits.length))) {
      hits.push({ episode_id: row.episode_id, host: row.host, ...h });
    }
  }
  return { hits, truncated };
}
