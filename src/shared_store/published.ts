/**
 * Which local runs are published to a shared store: `<root>/state/published/<episode_id>`, a small file naming the
 * store (its location, the password masked), written when a run or a hook session starts publishing. The store
 * arbitrates a published run's one decision for the fleet, so `approve`, `reject` and `resume` of such a run without
 * the store are refused (a decision recorded here alone could contradict the fleet's): the marker is how they know,
 * since nothing in the episode directory names the store.
 *
 * @module
 */
import { closeSync, fstatSync, rmSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../store/atomic.ts";
import { assertEpisodeId } from "../store/ids.ts";
import { refuseSymlinks } from "../store/nofollow.ts";
import { openRegularFile, readFromStart } from "../store/regular_file.ts";

/** A marker holds one location: more than this is not noema's and is not read. */
const MAX_MARKER_BYTES = 4096;

const markerOf = (root: string, id: string) => join(root, "state", "published", id);

/**
 * Records that the run `id` under `root` is published to the store at `location` (shown to the user: a password
 * masked). Never fails the run: a marker that cannot be written is skipped.
 *
 * @example
 * ```ts
 * import { markPublished } from "./published.ts";
 * markPublished(".noema", "ep_01J…", "postgres://noema:***@db/noema");
 * ```
 */
export function markPublished(root: string, id: string, location: string): void {
  try {
    assertEpisodeId(id);
    writeFileAtomic(markerOf(root, id), location.replace(/[\r\n]+/g, " ") + "\n", { durable: false, root });
  } catch {
    // a read-only root or a planted link: the run goes on; a decision here then goes unchecked, as before
  }
}

/**
 * The store a local run is published to (see {@link markPublished}), or null when it is not, or its marker cannot be
 * read as noema's (a link, a directory, an oversized file).
 *
 * @example
 * ```ts
 * import { publishedTo } from "./published.ts";
 * publishedTo(".noema", "ep_01J…"); // "postgres://noema:***@db/noema"
 * ```
 */
export function publishedTo(root: string, id: string): string | null {
  let fd: number | undefined;
  try {
    assertEpisodeId(id);
    refuseSymlinks(markerOf(root, id), root, "read");
    fd = openRegularFile(markerOf(root, id), markerOf(root, id), { noFollow: true }); // a FIFO, a link: refused
    const size = fstatSync(fd).size;
    if (size > MAX_MARKER_BYTES) return null;
    const text = readFromStart(fd, size).toString("utf8").trim();
    return text === "" ? null : text;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Forgets that a run is published (it ended: no decision is left to take).
 *
 * @example
 * ```ts
 * import { clearPublished } from "./published.ts";
 * clearPublished(".noema", "ep_01J…");
 * ```
 */
export function clearPublished(root: string, id: string): void {
  try {
    assertEpisodeId(id);
    refuseSymlinks(markerOf(root, id), root, "read");
    rmSync(markerOf(root, id), { force: true });
  } catch {
    // a marker behind a link was never noema's: nothing is removed through it
  }
}
