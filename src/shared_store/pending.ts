/**
 * Episodes that still have something to publish: a run whose store could not
 * be reached leaves a marker, `<root>/state/publish-pending/<episode_id>`,
 * and `noema sync` or the next noema command with a store publishes them and
 * removes it. Markers hold nothing but the id (their name).
 *
 * @module
 */
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { refuseSymlinks, writeFileAtomic } from "../store/atomic.ts";
import { assertEpisodeId, episodeIdProblem } from "../store/ids.ts";

const dirOf = (root: string) => join(root, "state", "publish-pending");

/**
 * Marks an episode as not fully published.
 *
 * @example
 * ```ts
 * import { markPending } from "./pending.ts";
 * markPending(".noema", "ep_01J…");
 * ```
 */
export function markPending(root: string, id: string): void {
  assertEpisodeId(id);
  writeFileAtomic(join(dirOf(root), id), "", { durable: false, root }); // nothing written through a symlink
}

/**
 * The episodes marked as not fully published.
 *
 * @example
 * ```ts
 * import { pendingIds } from "./pending.ts";
 * pendingIds(".noema"); // ["ep_01J…"]
 * ```
 */
export function pendingIds(root: string): string[] {
  const dir = dirOf(root);
  if (!existsSync(dir) || throughLink(dir, root)) return [];
  return readdirSync(dir).filter((n) => episodeIdProblem(n) === null).sort();
}

/**
 * Removes an episode's marker (it is published).
 *
 * @example
 * ```ts
 * import { clearPending } from "./pending.ts";
 * clearPending(".noema", "ep_01J…");
 * ```
 */
export function clearPending(root: string, id: string): void {
  assertEpisodeId(id);
  if (throughLink(dirOf(root), root)) return; // a marker there was never noema's: nothing is removed through a link
  rmSync(join(dirOf(root), id), { force: true }); // a marker that is itself a link: the link alone goes
}

/** Whether `path` passes through a symbolic link below `root` (markers are never read or removed so). */
function throughLink(path: string, root: string): boolean {
  try {
    refuseSymlinks(path, root, "read");
    return false;
  } catch {
    return true;
  }
}
