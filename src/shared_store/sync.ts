/**
 * `noema sync`: publishes every episode of a root that the shared store is
 * missing or has only in part. Each episode is published under its own
 * publisher (see {@link EpisodePublisher}), so sync after sync sends nothing
 * twice and a conflicting line is reported, never overwritten.
 *
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { NoemaError } from "../errors.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";
import { handedOffTo, pendingIds } from "./pending.ts";
import { EpisodePublisher } from "./publish.ts";
import { pulledCopy } from "./pulled.ts";
import type { SharedStore } from "./shared_store.ts";
import { lockStatus } from "../store/lock.ts";

/** One episode's result in {@link syncRoot}. */
export interface SyncRow {
  /** The episode id. */
  episode_id: string;
  /** Lines newly stored. */
  lines: number;
  /** Files stored or replaced. */
  files: number;
  /** Why it could not be published (a conflict, another writer's lease, an unreadable file), or null. */
  error: string | null;
  /** Why it was left alone (a live run publishes itself). */
  skipped?: string;
}

/** Options of {@link syncRoot}. */
export interface SyncOptions {
  /** Only these episode ids. @default {all} */
  only?: readonly string[];
  /**
   * How long to keep retrying an episode whose lease another process of this
   * host holds (a run handing its last publish over to a background sync). @default {0}
   */
  heldRetryMs?: number;
  /** Check every sealed episode's shared copy against its manifest, even when nothing is sent. @default {false} */
  verify?: boolean;
}

/** How long a sync waits for the background sync an episode was handed to (see `markHandedOff`). */
const HANDED_OFF_WAIT_MS = 120_000;

/**
 * How long a sync waits for a process of this host holding the lease of an episode left marked pending: the
 * publishing process of a run whose store failed (or that was killed) still holds it until it has exited, which at
 * idle priority on a busy machine may take seconds after the run ended.
 */
const LEFT_PENDING_WAIT_MS = 30_000;

/** Waits (up to `ms`) until no live process holds the episode's lock. */
async function lockLetGo(dir: string, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (lockStatus(dir).state === "held" && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
}

/**
 * Publishes every episode under `<root>/episodes/`, calling `progress` after
 * each one.
 *
 * @example
 * ```ts
 * import { syncRoot } from "./sync.ts";
 * const rows = await syncRoot(store, ".noema");
 * ```
 */
export async function syncRoot(
  store: SharedStore,
  root: string,
  progress: (row: SyncRow, done: number, total: number) => void = () => {},
  options: SyncOptions = {},
): Promise<SyncRow[]> {
  const parent = episodesDir(root);
  if (!existsSync(parent)) return [];
  const all = readdirSync(parent, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !episodeIdProblem(d.name))
    .map((d) => d.name)
    .sort();
  const ids = options.only ? all.filter((id) => options.only!.includes(id)) : all;
  const rows: SyncRow[] = [];
  const marked = new Set(pendingIds(root));
  for (const id of ids) {
    const row: SyncRow = { episode_id: id, lines: 0, files: 0, error: null };
    const pulled = pulledCopy(root, id) !== null;
    // A run hands its tail over (heldRetryMs) just before it exits: its lock is let go in a moment, waited for.
    if (!pulled && options.heldRetryMs) await lockLetGo(join(parent, id), options.heldRetryMs);
    if (pulled || lockStatus(join(parent, id)).state === "held") {
      // A pulled copy is the store's own: the root that holds the run publishes it.
      row.skipped = pulled ? "a copy pulled from the store" : "running: its writer publishes it";
      rows.push(row);
      progress(row, rows.length, ids.length);
      continue;
    }
    try {
      // A background sync this host handed the episode to finishes it soon, and the publishing process of a run that
      // left it pending exits soon: waited for, not reported as another writer.
      const waitMs = handedOffTo(root, id) !== null ? HANDED_OFF_WAIT_MS : marked.has(id) ? LEFT_PENDING_WAIT_MS : 0;
      const retryMs = Math.max(options.heldRetryMs ?? 0, waitMs);
      const s = await new EpisodePublisher(store, join(parent, id), id, { heldWaitMs: retryMs }).publish({
        verify: options.verify,
      });
      row.lines = s.lines;
      row.files = s.files;
    } catch (e) {
      // One episode's trouble (a conflict, another writer, an unreadable file) is its row's error;
      // the store itself failing (unreachable, read-only, no schema) stops the sync.
      const fatal = !(e instanceof NoemaError) ||
        ["store_unreachable", "store_timeout", "store_login", "store_tls", "store_read_only", "store_schema"].includes(
          e.code,
        );
      if (fatal) throw e;
      row.error = (e as Error).message;
    }
    rows.push(row);
    progress(row, rows.length, ids.length);
  }
  return rows;
}
