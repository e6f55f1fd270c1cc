/**
 * `noema store prune` in the files backend: what one episode's directory
 * holds (lines, files, their bytes), and its removal.
 *
 * A pruned episode loses its `lines/`, `files/`, `lease.json`, and last its
 * `catalog.json` and `stored_at` (so a prune cut short is found and finished
 * by the next one). Its `decisions/` stay, each rewritten as a tombstone:
 * `pruned_at` set and the note cleared. The directory itself stays, holding
 * them (and the write lock's file); it has no catalog row, so no command
 * lists, reads or pulls it.
 *
 * @module
 */
import { lstatSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../../store/atomic.ts";
import { refuseSymlinks } from "../../store/nofollow.ts";
import { episodeIdProblem } from "../../store/ids.ts";
import type { PruneBatch, StoredDecision } from "../shared_store.ts";
import type { StoredLease } from "./lease.ts";
import { STORED_AT_FILE } from "./layout.ts";
import { storedLineBytes } from "./lines.ts";

/** A lease renewed within this long (ms), and not released, is a live writer's: its run is never pruned. */
export const LIVE_LEASE_MS = 60_000;

/**
 * Whether a lease is a live writer's (not released, renewed within {@link LIVE_LEASE_MS} by the shared clock).
 *
 * @example
 * ```ts
 * import { leaseLive } from "./prune.ts";
 * leaseLive({ host: "a", pid: 1, token: 1n, renewed_at: Date.now(), released: false }); // true
 * ```
 */
export function leaseLive(lease: StoredLease | null, now = Date.now()): boolean {
  return lease !== null && !lease.released && now - lease.renewed_at < LIVE_LEASE_MS;
}

/** Names in a directory (none when it does not exist). */
function names(dir: string, root: string): string[] {
  refuseSymlinks(dir, root, "read");
  try {
    return readdirSync(dir);
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return [];
    throw e;
  }
}

/**
 * What pruning the episode in `ep` removes (or would): one batch of one episode. With `remove`, it is removed and its
 * decisions made tombstones (the caller holds the episode's write lock and has checked it may go).
 *
 * @example
 * ```ts
 * import { pruneEpisodeDir } from "./prune.ts";
 * // pruneEpisodeDir("/mnt/noema", "/mnt/noema/episodes/ep_1", "ep_1", false).bytes;
 * ```
 */
export function pruneEpisodeDir(root: string, ep: string, id: string, remove: boolean): PruneBatch {
  let lines = 0, files = 0, bytes = 0, tombstones = 0;
  for (const stream of names(join(ep, "lines"), root)) {
    if (episodeIdProblem(stream)) continue;
    const s = storedLineBytes(join(ep, "lines", stream), root);
    lines += s.lines;
    bytes += s.bytes;
  }
  for (const f of names(join(ep, "files"), root)) {
    const st = lstatSync(join(ep, "files", f));
    if (!st.isFile()) continue;
    files++;
    bytes += st.size;
  }
  const lease = lstatSync(join(ep, "lease.json"), { throwIfNoEntry: false }) ? 1 : 0;
  const now = new Date().toISOString();
  for (const d of names(join(ep, "decisions"), root)) {
    const path = join(ep, "decisions", d);
    let stored: StoredDecision;
    try {
      refuseSymlinks(path, root, "read");
      stored = JSON.parse(readFileSync(path, "utf8"));
    } catch {
      continue; // a decision that cannot be read is left as it is
    }
    if (stored.pruned_at) continue;
    tombstones++;
    if (remove) writeFileAtomic(path, JSON.stringify({ ...stored, note: null, pruned_at: now }) + "\n", { root });
  }
  if (remove) {
    for (const part of ["lines", "files", "lease.json", "catalog.json", STORED_AT_FILE]) {
      refuseSymlinks(join(ep, part), root);
      rmSync(join(ep, part), { recursive: true, force: true });
    }
  }
  return { episode_ids: [id], rows: 1 + lines + files + lease, lines, files, bytes, tombstones };
}
