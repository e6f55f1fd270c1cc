/**
 * Staging directories: a new episode is written in `episodes/.tmp-<id>-<pid>`
 * and renamed into place, so a killed run can leave one behind. They do not
 * pile up: {@link sweepStaleStaging} removes those whose owner is dead (their
 * lock is stale), and those without a lock older than
 * {@link STAGING_GRACE_MS} (killed between creating the directory and
 * locking it). `noema run` sweeps before it creates its own.
 *
 * @module
 */
import { lstatSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { lockStatus } from "./lock.ts";

/** Prefix of staging directories under `episodes/`. */
export const STAGING_PREFIX = ".tmp-";

/** How old a staging directory without a lock must be to count as abandoned: 10 minutes. */
export const STAGING_GRACE_MS = 10 * 60_000;

/** One staging directory and whether it is abandoned. */
export interface StagingDir {
  /** The directory name (`.tmp-<id>-<pid>`). */
  name: string;
  /** `live`: a running process owns it; `stale`: its owner is gone. */
  state: "live" | "stale";
}

/**
 * The staging directories under an `episodes/` directory.
 *
 * @example
 * ```ts
 * import { listStaging } from "./staging.ts";
 * listStaging(".noema/episodes").filter((s) => s.state === "stale");
 * ```
 */
export function listStaging(episodes: string, now: number = Date.now()): StagingDir[] {
  let names: string[];
  try {
    names = readdirSync(episodes).filter((n) => n.startsWith(STAGING_PREFIX));
  } catch {
    return [];
  }
  const out: StagingDir[] = [];
  for (const name of names.sort()) {
    const dir = join(episodes, name);
    let st;
    try {
      st = lstatSync(dir);
    } catch {
      continue;
    }
    if (!st.isDirectory()) continue;
    const lock = lockStatus(dir);
    const stale = lock.state === "stale" || (lock.state === "none" && now - st.mtimeMs > STAGING_GRACE_MS);
    out.push({ name, state: stale ? "stale" : "live" });
  }
  return out;
}

/**
 * Removes the abandoned staging directories under `episodes/` (see the
 * module doc); returns their names. Never touches one a live process owns.
 *
 * @example
 * ```ts
 * import { sweepStaleStaging } from "./staging.ts";
 * sweepStaleStaging(".noema/episodes"); // [".tmp-ep_01K…-4242"]
 * ```
 */
export function sweepStaleStaging(episodes: string): string[] {
  const removed: string[] = [];
  for (const s of listStaging(episodes)) {
    if (s.state !== "stale") continue;
    try {
      rmSync(join(episodes, s.name), { recursive: true, force: true });
      removed.push(s.name);
    } catch {
      // another sweeper got there first, or it is not ours to remove
    }
  }
  return removed;
}
