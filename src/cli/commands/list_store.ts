/**
 * `noema list` over the shared store: the same columns, filters and JSON as
 * over files, read from the catalog (its filters run as SQL, with indexes),
 * plus the host each run was published from and `stored_at`, when the store
 * first stored it (by the store's clock: the catalog is ordered and `--since`
 * filters by it, as hosts' clocks disagree).
 *
 * @module
 */
import {
  type CatalogEntry,
  type CatalogFilter,
  isUnreadable,
  type SharedStore,
} from "../../shared_store/shared_store.ts";
import type { EpisodeEntry } from "../../read/list.ts";
import { episodeDirFor, resolveRoot } from "../../store/layout.ts";
import { existsSync } from "node:fs";

/**
 * A catalog row as a `noema list` entry (`episode_dir` is the local copy, or null), with its host. A row that
 * cannot be read is an entry with `status` and `run_state` `unreadable`, `host` null and an `error`.
 */
export function entryOfRow(
  r: CatalogEntry,
  root: string,
): EpisodeEntry & { host: string | null; stored_at: string | null; episode_dir: string | null; project?: string } {
  let dir: string | null = null;
  try {
    const d = episodeDirFor(r.episode_id, root);
    dir = existsSync(d) ? d : null;
  } catch { /* an id that is not a valid local name has no local copy */ }
  return {
    episode_id: r.episode_id,
    episode_dir: dir as string,
    lifecycle: r.run_state === "terminal" ? "terminal" : "non-terminal",
    status: r.status,
    task: r.task,
    started_at: r.started_at,
    tags: r.tags,
    ...(r.outcome !== null ? { outcome: r.outcome } : {}),
    run_state: r.run_state,
    ...(r.run_state === "running" && r.started_at ? { elapsed_ms: Date.now() - Date.parse(r.started_at) } : {}),
    host: r.host,
    stored_at: r.stored_at ?? null,
    ...(r.project ? { project: r.project } : {}),
    ...(isUnreadable(r) ? { error: r.error } : {}),
  };
}

/**
 * Lists from the store's catalog.
 *
 * @example
 * ```ts
 * import { listFromStore } from "./list_store.ts";
 * const entries = await listFromStore(store, { status: ["vetoed"], limit: 20 }, { root: ".noema" });
 * ```
 */
export async function listFromStore(
  store: SharedStore,
  filter: CatalogFilter,
  options: { root?: string },
): Promise<(EpisodeEntry & { host: string | null })[]> {
  const root = resolveRoot(options);
  return (await store.list(filter)).map((r) => entryOfRow(r, root));
}

/**
 * The store a list read, in words: its location (any password masked) and the project in force, if any.
 *
 * @example
 * ```ts
 * import { storeWords } from "./list_store.ts";
 * // storeWords(store); // "the shared store postgres://noema:***@db/noema (project payments)"
 * ```
 */
export function storeWords(store: SharedStore): string {
  const project = (store as { project?: unknown }).project;
  return `the shared store ${store.location}${typeof project === "string" ? ` (project ${project})` : ""}`;
}

/**
 * What an empty `list --store` says: the store it read (never the local root, which it did not), and the filters.
 *
 * @example
 * ```ts
 * import { emptyStoreNote } from "./list_store.ts";
 * emptyStoreNote("the shared store file:///srv/noema", ["--status vetoed"]);
 * // "no episode in the shared store file:///srv/noema matches the filters: --status vetoed"
 * ```
 */
export function emptyStoreNote(where: string, filters: readonly string[]): string {
  return filters.length === 0
    ? `no episodes in ${where}`
    : `no episode in ${where} matches the filters: ${filters.join(" ")}`;
}
