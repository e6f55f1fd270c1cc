/**
 * The episodes of a shared store, for a backtest of the fleet: the catalog's
 * rows that pass the filter, oldest first, each read alone from the store
 * (its `events.jsonl` lines and its `state.json`) into memory, handed on and
 * dropped. The store is only read (no lease, no catalog write) and nothing
 * is written anywhere: memory stays flat whatever the number of runs (one
 * episode's log at a time).
 *
 * @module
 */
import type { CatalogFilter, SharedStore } from "../shared_store/shared_store.ts";
import type { JsonlEntry } from "../store/jsonl.ts";
import { ARTIFACTS } from "../store/layout.ts";
import type { EpisodeInput } from "./episode.ts";

/** An episode to backtest, or why it cannot be read. */
export type SourcedEpisode = { id: string; from: EpisodeInput; error?: undefined } | {
  id: string;
  from: null;
  error: string;
};

/** More rows than any catalog holds: a backtest reads every row that passes the filter. */
const ALL_ROWS = 1_000_000_000;
/** Lines read per call. */
const PAGE = 2000;

/** The stored lines of a log as the entries `readJsonl` gives (a line that is not a JSON object is a problem). */
function* entries(lines: readonly Uint8Array[]): Generator<JsonlEntry> {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  for (const [i, bytes] of lines.entries()) {
    const at = { line: i + 1, offset: 0, bytes: bytes.length };
    let value: unknown;
    try {
      value = JSON.parse(decoder.decode(bytes));
    } catch (e) {
      yield { ...at, problem: "json", message: (e as Error).message };
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      yield { ...at, problem: "not_object", message: "expected a JSON object" };
    } else yield { ...at, value: value as Record<string, unknown>, text: "" };
  }
}

/** One stored episode: its event lines and its `state.json`. */
async function read(store: SharedStore, id: string): Promise<EpisodeInput> {
  const lines: Uint8Array[] = [];
  for (let seq = 1;;) {
    const page = await store.readLines(id, ARTIFACTS.events, seq, PAGE);
    lines.push(...page);
    seq += page.length;
    if (page.length < PAGE) break;
  }
  const state = await store.readFile(id, ARTIFACTS.state);
  if (lines.length === 0 || state === null) {
    throw new Error(`the store holds no ${lines.length === 0 ? ARTIFACTS.events : ARTIFACTS.state} for it`);
  }
  return { events: entries(lines), state: JSON.parse(new TextDecoder().decode(state)) };
}

/**
 * The store's episodes that pass `filter`, oldest first (the newest `limit` of them when given).
 *
 * @example
 * ```ts
 * import { storeEpisodes } from "./store_episodes.ts";
 * // for await (const e of storeEpisodes(store, { since: "2026-11-01T00:00:00Z" })) console.log(e.id);
 * ```
 */
export async function* storeEpisodes(
  store: SharedStore,
  filter: CatalogFilter,
): AsyncGenerator<SourcedEpisode, void, undefined> {
  // Only the ids are kept (a catalog row is a few KB): oldest first.
  const rows = (await store.list({ ...filter, limit: filter.limit ?? ALL_ROWS })).map((r) => r.episode_id).reverse();
  const fetch = (id: string): Promise<SourcedEpisode> =>
    read(store, id).then(
      (from) => ({ id, from }),
      (e) => ({ id, from: null, error: `cannot be read from ${store.location}: ${(e as Error).message}` }),
    );
  // One episode read ahead: the store is read while the policies (in their workers) decide on the one before.
  let next = rows.length > 0 ? fetch(rows[0]) : null;
  for (let i = 0; next !== null; i++) {
    const current = await next;
    next = i + 1 < rows.length ? fetch(rows[i + 1]) : null;
    yield current;
  }
}
