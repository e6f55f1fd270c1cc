/**
 * The short write lock of an episode in the files backend: every write
 * (lines, files, the catalog row, the lease) holds it for a few file
 * operations, across processes and hosts. It is the episode lock of
 * `src/store/lock.ts` (a `lock` file created whole with `link()`; a lock
 * whose owner on this host is gone is taken over by exactly one contender),
 * waited for without blocking the event loop.
 *
 * @module
 */
import { acquireLock, type EpisodeLock } from "../../store/lock.ts";
import { mkdirBelow } from "../../store/nofollow.ts";
import { NoemaError } from "../../errors.ts";

/** How long a writer waits for the lock before failing. */
const WAIT_MS = 30_000;

/**
 * Runs `f` holding the episode directory's write lock (created as needed
 * below `root`).
 *
 * @example
 * ```ts
 * import { withWriteLock } from "./write_lock.ts";
 * await withWriteLock("/mnt/noema/episodes/ep_1", "/mnt/noema", () => {});
 * ```
 */
export async function withWriteLock<T>(episodeDir: string, root: string, f: () => T): Promise<T> {
  mkdirBelow(episodeDir, root);
  const t0 = Date.now();
  let lock: EpisodeLock;
  for (let attempt = 0;; attempt++) {
    try {
      lock = acquireLock(episodeDir, "shared store write");
      break;
    } catch (e) {
      if (!(e instanceof NoemaError) || e.code !== "locked" || Date.now() - t0 > WAIT_MS) throw e;
      await new Promise((r) => setTimeout(r, Math.min(2 + attempt, 25)));
    }
  }
  try {
    return f();
  } finally {
    lock.release();
  }
}
