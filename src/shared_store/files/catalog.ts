/**
 * The catalog filters of the files backend, the same as the PostgreSQL
 * backend's SQL: every given filter must match, rows come newest first
 * (`stored_at`, the store's clock, descending, rows without it last, then the id descending),
 * and only the best `limit` rows are ever held in memory.
 *
 * @module
 */
import type { CatalogEntry, CatalogFilter, CatalogRow } from "../shared_store.ts";

function time(iso: string | null): number {
  const t = iso === null ? NaN : Date.parse(iso);
  return Number.isNaN(t) ? -Infinity : t;
}

/**
 * Whether a row passes a filter: `status` words are a terminal run's status or
 * an unfinished run's state; tags must all be present; the task text is a
 * case-insensitive literal substring.
 *
 * @example
 * ```ts
 * import { matchesFilter } from "./catalog.ts";
 * matchesFilter(row, { status: ["vetoed"], host: "ci-7" });
 * ```
 */
export function matchesFilter(row: CatalogRow, f: CatalogFilter): boolean {
  if (
    f.status?.length && !((row.run_state === "terminal" && f.status.includes(row.status)) ||
      f.status.includes(row.run_state))
  ) return false;
  if (f.run_state?.length && !f.run_state.includes(row.run_state)) return false;
  if (f.tags && Object.entries(f.tags).some(([k, v]) => row.tags[k] !== v)) return false;
  if (f.task && !(row.task ?? "").toLowerCase().includes(f.task.toLowerCase())) return false;
  if (f.task && row.task === null) return false;
  if (f.since && !(time(row.stored_at ?? null) >= time(f.since))) return false;
  if (f.within_ms !== undefined && !(time(row.stored_at ?? null) >= Date.now() - f.within_ms)) return false;
  if (f.host && row.host !== f.host) return false;
  if (f.adapter && row.adapter !== f.adapter) return false;
  if (f.policy && !row.policy_ids.includes(f.policy)) return false;
  if (f.project !== undefined && row.project !== f.project) return false;
  return true;
}

/**
 * Orders rows newest first (negative when `a` comes first).
 *
 * @example
 * ```ts
 * import { newestFirst } from "./catalog.ts";
 * rows.sort(newestFirst);
 * ```
 */
export function newestFirst(a: CatalogEntry, b: CatalogEntry): number {
  const ta = time(a.stored_at ?? null), tb = time(b.stored_at ?? null);
  if (ta !== tb) return tb - ta > 0 ? 1 : -1;
  return a.episode_id < b.episode_id ? 1 : a.episode_id > b.episode_id ? -1 : 0;
}

/**
 * Keeps the best `limit` rows seen, newest first, holding no more than that.
 *
 * @example
 * ```ts
 * import { TopRows } from "./catalog.ts";
 * const top = new TopRows(20);
 * for (const r of rows) top.add(r);
 * top.rows;
 * ```
 */
export class TopRows {
  readonly rows: CatalogEntry[] = [];
  constructor(readonly limit: number) {}

  /** Offers one row. */
  add(row: CatalogEntry): void {
    if (this.limit <= 0) return;
    const last = this.rows[this.rows.length - 1];
    if (this.rows.length >= this.limit && newestFirst(row, last) >= 0) return;
    let i = this.rows.length;
    while (i > 0 && newestFirst(row, this.rows[i - 1]) < 0) i--;
    this.rows.splice(i, 0, row);
    if (this.rows.length > this.limit) this.rows.pop();
  }
}
