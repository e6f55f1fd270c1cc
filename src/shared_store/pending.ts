/**
 * Episodes that still have something to publish: a run whose store could not
 * be reached leaves a marker, `<root>/state/publish-pending/<episode_id>`,
 * and `noema sync` or the next noema command with a store publishes them and
 * removes it. A marker is named by the id; it is empty, or names the process
 * a run handed its last publish to.
 *
 * @module
 */
import { existsSync, lstatSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { refuseSymlinks, writeFileAtomic } from "../store/atomic.ts";
import { assertEpisodeId, episodeIdProblem } from "../store/ids.ts";
import { processGone } from "../store/lock.ts";

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
 * Marks an episode as handed to a background process that publishes it
 * (`noema sync --handoff`): its marker names that process, so the next
 * commands leave the episode to it while it lives.
 *
 * @example
 * ```ts
 * import { markHandedOff } from "./pending.ts";
 * markHandedOff(".noema", "ep_01J…", 4242);
 * ```
 */
export function markHandedOff(root: string, id: string, pid: number): void {
  assertEpisodeId(id);
  writeFileAtomic(join(dirOf(root), id), String(pid), { durable: false, root });
}

/**
 * The live process an episode was handed to (see {@link markHandedOff}), or
 * null (none, or it is gone: the episode is anyone's to publish).
 *
 * @example
 * ```ts
 * import { handedOffTo } from "./pending.ts";
 * handedOffTo(".noema", "ep_01J…"); // 4242 while that sync runs
 * ```
 */
export function handedOffTo(root: string, id: string): number | null {
  assertEpisodeId(id);
  if (throughLink(dirOf(root), root)) return null;
  const pid = markedPid(root, id);
  return pid !== null && !processGone(pid) ? pid : null;
}

/**
 * Removes an episode's marker (it is published). With `by` (the pid of the
 * process that published it), a marker that names another process stays.
 *
 * @example
 * ```ts
 * import { clearPending } from "./pending.ts";
 * clearPending(".noema", "ep_01J…");
 * ```
 */
export function clearPending(root: string, id: string, options: { by?: number } = {}): void {
  assertEpisodeId(id);
  if (throughLink(dirOf(root), root)) return; // a marker there was never noema's: nothing is removed through a link
  // A process that was handed the episode leaves a marker naming another one: a resume since handed it anew.
  const named = options.by === undefined ? null : markedPid(root, id);
  if (named !== null && named !== options.by) return;
  rmSync(join(dirOf(root), id), { force: true }); // a marker that is itself a link: the link alone goes
}

/** The pid an episode's marker names, or null (none, empty, or not a file). */
function markedPid(root: string, id: string): number | null {
  try {
    const path = join(dirOf(root), id);
    if (!lstatSync(path).isFile()) return null;
    const pid = Number(readFileSync(path, "utf8").slice(0, 20).trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
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
