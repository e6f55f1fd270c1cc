// The scratch directory `npm test` (scripts/test.mjs) gives every test file's runner as its TMPDIR: a directory of
// its own, made for the run and removed at its end, so that whatever a test leaves in its temporary directory does
// not pile up in /tmp from run to run.
// It is made in NOEMA_TEST_TMPDIR when that is set, else in /dev/shm (memory) when there is one with at least 2 GiB
// free, else in the system's temporary directory. In memory, the tests' many small files and fsyncs cost no disk
// I/O: on a 2-core VM with an ext4 disk the suite used ~10% less CPU and time. What the tests check does not depend
// on the file system (those that need a particular one, a full disk say, mount their own).
// Its mode is that of /tmp (1777, sticky): the tests run some programs as other users (PostgreSQL as `postgres`
// when run as root), which must reach and make their own directories in it.
import { accessSync, chmodSync, constants, mkdtempSync, rmSync, statfsSync, statSync } from "node:fs";
import { join } from "node:path";

/** The free space /dev/shm must have to be used. */
export const MIN_FREE_BYTES = 2 * 1024 ** 3;

/** Where to make the scratch directory: NOEMA_TEST_TMPDIR, else /dev/shm when usable, else `fallback`. */
export function scratchBase(env, fallback, shm = "/dev/shm") {
  if (env.NOEMA_TEST_TMPDIR) return env.NOEMA_TEST_TMPDIR;
  try {
    if (!statSync(shm).isDirectory()) return fallback;
    accessSync(shm, constants.W_OK | constants.X_OK);
    const fs = statfsSync(shm);
    return fs.bavail * fs.bsize >= MIN_FREE_BYTES ? shm : fallback;
  } catch {
    return fallback;
  }
}

/** Makes the run's scratch directory in `base` (mode 1777); returns its path. */
export function makeScratch(base) {
  const dir = mkdtempSync(join(base, "noema-test-"));
  chmodSync(dir, 0o1777);
  return dir;
}

/** Removes the scratch directory and all in it (what another user left there too, when run as root). */
export function removeScratch(dir) {
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch (e) {
    process.stderr.write(`npm test: could not remove the scratch directory ${dir}: ${e.message}\n`);
  }
}
