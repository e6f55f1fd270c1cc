/**
 * A per-episode lock: a `lock` file holding the owner's pid, host and start
 * time, created exclusively. A lock whose owner process is gone (same host,
 * pid not alive) is stale and taken over; any other lock refuses the second
 * writer with a clear error.
 *
 * @module
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { FILE_MODE } from "./atomic.ts";

/** The lock file's name inside an episode directory. */
export const LOCK_FILE = "lock";

/** What a lock file holds. */
export interface LockInfo {
  pid: number;
  host: string;
  started_at: string;
  /** What holds it: `run` or `resume`. */
  purpose: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}

/** A held lock; release it when done. */
export interface EpisodeLock {
  /** Removes the lock file (only if it is still ours). Idempotent. */
  release(): void;
  /** Follows the episode directory after it was renamed. */
  moveTo(dir: string): void;
}

/**
 * Takes an episode's lock, or throws a {@link NoemaError} (exit code 10)
 * naming the process that holds it.
 *
 * @example
 * ```ts
 * import { acquireLock } from "noema";
 * const lock = acquireLock(".noema/episodes/ep_1", "resume");
 * try { … } finally { lock.release(); }
 * ```
 */
export function acquireLock(dir: string, purpose: string): EpisodeLock {
  let path = join(dir, LOCK_FILE);
  const me: LockInfo = { pid: process.pid, host: hostname(), started_at: new Date().toISOString(), purpose };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, "wx", FILE_MODE);
      writeSync(fd, JSON.stringify(me) + "\n");
      closeSync(fd);
      let released = false;
      return {
        moveTo(next: string) {
          path = join(next, LOCK_FILE);
        },
        release() {
          if (released) return;
          released = true;
          try {
            const held = JSON.parse(readFileSync(path, "utf8")) as LockInfo;
            if (held.pid === me.pid && held.host === me.host && held.started_at === me.started_at) {
              rmSync(path, { force: true });
            }
          } catch {
            // already gone
          }
        },
      };
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw e;
    }
    let held: LockInfo | null = null;
    try {
      held = JSON.parse(readFileSync(path, "utf8")) as LockInfo;
    } catch {
      held = null; // unreadable or torn: written by a process killed mid-write; treat as stale
    }
    const stale = held === null || (held.host === me.host && !alive(held.pid));
    if (!stale) {
      throw new NoemaError(
        "locked",
        `episode is locked by ${held!.purpose} (pid ${held!.pid} on ${held!.host}, since ${held!.started_at}); ` +
          `if that process is gone, remove ${path}`,
        { exitCode: EXIT.LOCKED },
      );
    }
    rmSync(path, { force: true });
  }
  throw new NoemaError("locked", `cannot take the lock ${path}`, { exitCode: EXIT.LOCKED });
}

/** What {@link lockStatus} found. */
export interface LockStatus {
  /** `none`: no lock file; `held`: its owner is alive (or on another host); `stale`: its owner is gone. */
  state: "none" | "held" | "stale";
  /** The lock file's content, or `null` (no file, or unreadable). */
  info: LockInfo | null;
}

/**
 * Whether an episode's lock is held by a live process, without taking it.
 * A lock from another host counts as held (its pid cannot be checked here).
 *
 * @example
 * ```ts
 * import { lockStatus } from "./lock.ts";
 * if (lockStatus(".noema/episodes/ep_1").state === "held") console.log("running");
 * ```
 */
export function lockStatus(dir: string): LockStatus {
  let text: string;
  try {
    text = readFileSync(join(dir, LOCK_FILE), "utf8");
  } catch {
    return { state: "none", info: null };
  }
  let info: LockInfo | null = null;
  try {
    info = JSON.parse(text) as LockInfo;
  } catch {
    return { state: "stale", info: null };
  }
  if (typeof info?.pid !== "number") return { state: "stale", info: null };
  const held = info.host !== hostname() || alive(info.pid);
  return { state: held ? "held" : "stale", info };
}
