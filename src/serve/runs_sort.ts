/**
 * Sorting the runs by a column of the runs table (`sort=` and `dir=` in the
 * URL, so a sorted view is a link and works without JavaScript): start time,
 * duration, cost, adapter, model, host, status or task. A run without a value
 * in that column (no cost yet, no adapter) sorts last either way.
 *
 * @module
 */
import type { EpisodeEntry } from "../read/list.ts";
import { runFacts } from "./run_facts.ts";

/** The columns the runs can be sorted by. */
export const SORT_COLUMNS = ["started", "duration", "cost", "adapter", "model", "host", "status", "task"] as const;
/** A sortable column. */
export type SortColumn = (typeof SORT_COLUMNS)[number];

type Key = number | string | null;

function keyOf(e: EpisodeEntry, column: SortColumn, hostOf: (e: EpisodeEntry) => string | null): Key {
  switch (column) {
    case "started":
      return e.started_at === null ? null : Date.parse(e.started_at);
    case "duration":
      return runFacts(e).duration_ms;
    case "cost":
      return runFacts(e).cost_usd;
    case "adapter":
      return runFacts(e).adapter;
    case "model":
      return runFacts(e).models.join(",") || null;
    case "host":
      return hostOf(e);
    case "status":
      return e.run_state === "terminal" ? e.status : e.run_state;
    case "task":
      return e.task?.toLowerCase() ?? null;
  }
}

/**
 * The entries sorted by `column` (`desc`: largest first), ties by id; missing values last.
 *
 * @example
 * ```ts
 * import { sortRuns } from "./runs_sort.ts";
 * sortRuns([], "cost", "desc", () => null); // []
 * ```
 */
export function sortRuns(
  entries: readonly EpisodeEntry[],
  column: SortColumn,
  dir: "asc" | "desc",
  hostOf: (e: EpisodeEntry) => string | null,
): EpisodeEntry[] {
  const keyed = entries.map((e) => ({ e, k: keyOf(e, column, hostOf) }));
  const sign = dir === "asc" ? 1 : -1;
  keyed.sort((a, b) => {
    if (a.k === null || b.k === null) {
      if (a.k !== b.k) return a.k === null ? 1 : -1;
    } else if (a.k !== b.k) return (a.k < b.k ? -1 : 1) * sign;
    return a.e.episode_id < b.e.episode_id ? sign : a.e.episode_id > b.e.episode_id ? -sign : 0;
  });
  return keyed.map((x) => x.e);
}
