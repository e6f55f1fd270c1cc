/**
 * `noema policy backtest`'s engine: what a candidate policy set (the
 * recorded policies with files added, replaced by id or left out, and rule
 * sets changed) would have decided about every proposed action recorded in
 * the selected episodes, compared with what was decided.
 *
 * Episodes are read one at a time, oldest first, and each action is handed
 * on as it is compared: memory stays flat whatever the number of episodes.
 * Nothing is written anywhere: episode files are only read, policies run in
 * their workers (with each episode's recorded timeout).
 *
 * @module
 */
import { type EpisodeEntry, listEpisodes, type ListOptions, matchesFilters } from "../read/list.ts";
import { locateEpisode, type RootOptions } from "../store/layout.ts";
import { type CandidateChanges, CandidateSet } from "./candidates.ts";
import { type ActionBacktest, backtestEpisode, type EpisodeBacktest } from "./episode.ts";
import { FLIP_KINDS, type FlipKind } from "./verdict.ts";
import type { CatalogFilter, SharedStore } from "../shared_store/shared_store.ts";
import { type SourcedEpisode, storeEpisodes } from "./store_episodes.ts";

/** Which episodes, and what changes. */
export interface BacktestOptions extends RootOptions, CandidateChanges {
  /** Episode ids or directories; none: every episode of the root that passes the filters. */
  episodes?: readonly string[];
  /** Filters, as `noema list` has them (status, since, tags, task). */
  filters?: Pick<ListOptions, "status" | "since" | "tags" | "task">;
  /** At most this many episodes (the newest that pass the filters). */
  limit?: number;
  /** The fleet instead of the root: this shared store's episodes that pass `storeFilter`, read only. */
  store?: { store: SharedStore; filter: CatalogFilter };
}

/** A row of the report: a flipped action, an action a candidate policy failed on, an episode left out. */
export type BacktestRow =
  | ({ type: "flip"; flip: FlipKind } & ActionBacktest)
  | ({ type: "policy_error" } & ActionBacktest)
  | { type: "skipped"; episode_id: string; reason: string }
  | { type: "not_reached"; episode_id: string };

/** The totals row. */
export interface BacktestTotals {
  type: "totals";
  /** Episodes compared (not counting those left out). */
  episodes: number;
  /** Actions compared. */
  actions: number;
  /** Actions whose verdict did not change. */
  unchanged: number;
  /** Actions whose verdict changed. */
  flipped: number;
  /** Flipped actions by kind (`allow_to_deny`…), every kind present. */
  flips: Record<FlipKind, number>;
  /** Actions on which a candidate policy failed (threw, timed out, returned no verdict). */
  policy_errors: number;
  /** Episodes that stopped at a block the candidate set lets through: their later actions were never proposed. */
  not_reached: number;
  /** Episodes left out (see their `skipped` rows). */
  skipped: number;
  /** Recorded policies that ran as their file is now, changed since some episode recorded them. */
  changed_policies: string[];
}

/** The episodes to backtest, oldest first: the store's, the ones named, or the root's that pass the filters. */
function selected(options: BacktestOptions): Iterable<SourcedEpisode> | AsyncIterable<SourcedEpisode> {
  if (options.store) return storeEpisodes(options.store.store, { ...options.store.filter, limit: options.limit });
  const local = (e: { id: string; dir: string }) => ({ id: e.id, from: { dir: e.dir } });
  if (options.episodes && options.episodes.length > 0) {
    return options.episodes.map((e) => local(locateEpisode(e, options)));
  }
  const f = options.filters ?? {};
  const all: EpisodeEntry[] = listEpisodes({ root: options.root, limit: Number.MAX_SAFE_INTEGER });
  const kept = all.filter((e) => matchesFilters(e, f)).slice(0, options.limit ?? Number.MAX_SAFE_INTEGER);
  return kept.reverse().map((e) => local({ id: e.episode_id, dir: e.episode_dir }));
}

/**
 * Runs a backtest; `onRow` receives the rows as they come, and the totals are returned.
 *
 * @example
 * ```ts
 * import { backtest } from "./backtest.ts";
 * const totals = await backtest({ root: ".noema", rules: ["team-rules.jsonc"] }, (row) => console.log(row));
 * totals.flipped; // 0: the change blocks nothing that ran
 * ```
 */
export async function backtest(options: BacktestOptions, onRow: (row: BacktestRow) => void): Promise<BacktestTotals> {
  const candidates = await CandidateSet.open(options);
  const totals: BacktestTotals = {
    type: "totals",
    episodes: 0,
    actions: 0,
    unchanged: 0,
    flipped: 0,
    flips: Object.fromEntries(FLIP_KINDS.map((k) => [k, 0])) as Record<FlipKind, number>,
    policy_errors: 0,
    not_reached: 0,
    skipped: 0,
    changed_policies: [],
  };
  const changed = new Set<string>();
  const onAction = (a: ActionBacktest) => {
    totals.actions++;
    if (a.candidate.errors.length > 0) totals.policy_errors++;
    if (a.recorded.verdict === a.candidate.verdict) {
      totals.unchanged++;
      if (a.candidate.errors.length > 0) onRow({ type: "policy_error", ...a });
      return;
    }
    const flip = `${a.recorded.verdict}_to_${a.candidate.verdict}` as FlipKind;
    totals.flipped++;
    totals.flips[flip]++;
    onRow({ type: "flip", flip, ...a });
  };
  try {
    for await (const { id, from, error } of selected(options)) {
      let r: Pick<EpisodeBacktest, "skipped" | "changed" | "not_reached">;
      try {
        r = from === null
          ? { skipped: error, changed: [], not_reached: false }
          : await backtestEpisode(id, from, candidates, onAction);
      } catch (e) {
        r = { skipped: `cannot be replayed: ${(e as Error).message}`, changed: [], not_reached: false };
      }
      if (r.skipped !== undefined) {
        totals.skipped++;
        onRow({ type: "skipped", episode_id: id, reason: r.skipped });
        continue;
      }
      totals.episodes++;
      for (const c of r.changed) changed.add(c);
      if (r.not_reached) {
        totals.not_reached++;
        onRow({ type: "not_reached", episode_id: id });
      }
    }
  } finally {
    await candidates.close();
  }
  totals.changed_policies = [...changed].sort();
  return totals;
}
