/**
 * A per-episode lock: a `lock` file naming its owner (pid, host, the
 * process's start time and a unique nonce), created whole and exclusively
 * (`link()` of a fully written claim file, so a reader never sees half a lock).
 *
 * A lock is **held** while its owner lives. It is **stale** when the owner is
 * gone: on the same host, the pid does not exist, is a zombie (`/proc/PID/stat`
 * state `Z` or `X`: killed, not yet reaped, as in containers without an init
 * process), or belongs to another process now (its start time, field 22 of
 * `/proc/PID/stat`, differs from the one recorded: pid reuse). A lock from
 * another host is always treated as held.
 *
 * Taking over a stale lock cannot be shared: node's `fs` offers no
 * kernel-released lock (`flock`) under both Bun and Deno, so the takeover is
 * an atomic claim. Each lock has an identity (its nonce). To replace the lock
 * with identity N, a process must first create the token file
 * `lock.tmp-takeover-N` exclusively; only the token's holder re-reads the lock,
 * checks it still is N and still stale, renames its own claim over it, then
 * removes the token. A slower contender that judged N stale earlier either
 * fails to create the token, or creates it after the replacement and finds the
 * lock is no longer N. A token whose creator died is taken over the same way,
 * one level down.
 *
 * @module
 */
import {
  closeSync,
  fstatSync,
  fsyncSync,
  linkSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { Buffer } from "node:buffer";
import { hostname } from "node:os";
import { basename, dirname, join } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { FILE_MODE } from "./atomic.ts";
import { episodeRoot, refuseSymlinks } from "./nofollow.ts";
import { openRegularFile } from "./regular_file.ts";

/** The lock file's name inside an episode directory. */
export const LOCK_FILE = "lock";

/** What a lock file holds. */
export interface LockInfo {
  /** The owner's process id. */
  pid: number;
  /** The owner's host name. */
  host: string;
  /** When the lock was taken (ISO 8601). */
  started_at: string;
  /** What holds it: `run`, `resume`, `approve`, … */
  purpose: string;
  /** The owner's process start time in clock ticks since boot (`/proc/PID/stat` field 22), or null off Linux. */
  start_ticks?: number | null;
  /** Unique per acquisition: the lock's identity. */
  nonce?: string;
}

/** Options of {@link acquireLock}. */
export interface AcquireLockOptions {
  /**
   * How long to wait, in milliseconds, while a live process holds the lock
   * (polling every few milliseconds) before failing. 0 fails at once.
   * @default {0}
   */
  waitMs?: number;
}

/** A held lock; release it when done. */
export interface EpisodeLock {
  /** Removes the lock file (only if it is still ours). Idempotent. */
  release(): void;
  /** Follows the episode directory after it was renamed. */
  moveTo(dir: string): void;
}

/** The state of an episode's lock, as {@link lockStatus} reports it. */
export interface LockStatus {
  /** `none`: no lock file; `held`: its owner is alive; `stale`: its owner is dead, a zombie, or its pid was reused. */
  state: "none" | "held" | "stale";
  /** The lock's contents (null when there is none or it cannot be read). */
  info: LockInfo | null;
}

/**
 * A process's start time in clock ticks since boot (field 22 of
 * `/proc/PID/stat`) and its state letter, or null where `/proc` is not
 * available or the process does not exist.
 *
 * @example
 * ```ts
 * import { procStat } from "./lock.ts";
 * procStat(process.pid)?.state; // "R" or "S" on Linux, undefined elsewhere
 * ```
 */
export function procStat(
  pid: number,
): { state: string; startTicks: number; exiting: boolean; pgrp: number } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // "pid (comm) S ppid …": comm may hold spaces and parentheses; the fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const startTicks = Number(fields[19]);
  if (!fields[0] || !Number.isFinite(startTicks)) return null;
  // The kernel's PF_EXITING (0x4) in the task's flags: killed (or exiting), tearing itself down, never to run again.
  return { state: fields[0], startTicks, exiting: (Number(fields[6]) & 0x4) !== 0, pgrp: Number(fields[2]) };
}

const HAS_PROC = procStat(process.pid) !== null;

/**
 * Whether process `pid` of this host is gone: no such process, one killed
 * and tearing itself down (which on a busy machine, in the idle class, can
 * take seconds), or one that exited and was not reaped (a zombie: an orphan
 * whose new parent, PID 1 in a container without an init, never reaps it).
 *
 * @example
 * ```ts
 * import { processGone } from "./lock.ts";
 * processGone(process.pid); // false
 * ```
 */
export function processGone(pid: number): boolean {
  if (!HAS_PROC) return !pidExists(pid);
  const st = procStat(pid);
  return st === null || tornDown(st);
}

/** A process that will never run again: killed and exiting, or exited and not yet reaped (a zombie). */
function tornDown(st: { state: string; exiting: boolean }): boolean {
  return st.state === "Z" || st.state === "X" || st.exiting;
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}

/** Whether the owner a lock names is alive: `false` only when it is certainly gone. */
function ownerAlive(info: LockInfo | null): boolean {
  if (info === null) return false; // unreadable: a legacy lock torn by a crash
  if (info.host !== hostname()) return true; // cannot tell; never take another host's lock
  if (!Number.isInteger(info.pid) || info.pid <= 0) return false;
  if (!pidExists(info.pid)) return false;
  if (!HAS_PROC) return true;
  const st = procStat(info.pid);
  if (st === null) return false; // gone between the two checks
  if (tornDown(st)) return false; // killed: exiting, or not yet reaped
  if (typeof info.start_ticks === "number" && st.startTicks !== info.start_ticks) return false; // pid reused
  return true;
}

interface SeenLock {
  info: LockInfo | null;
  /** The lock's identity: its nonce, else its inode (legacy or unreadable locks). */
  id: string;
}

function readLockAt(path: string): SeenLock | null {
  let text: string;
  let ino: number;
  try {
    ino = lstatSync(path).ino;
    const fd = openRegularFile(path); // a FIFO planted as the lock would block for ever
    try {
      text = readFileSync(fd, "utf8");
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return null;
    throw e;
  }
  let info: LockInfo | null = null;
  try {
    const v = JSON.parse(text);
    if (typeof v === "object" && v !== null && typeof v.pid === "number") info = v as LockInfo;
  } catch {
    info = null;
  }
  const id = typeof info?.nonce === "string" && /^[A-Za-z0-9_-]{1,64}$/.test(info.nonce) ? info.nonce : `ino${ino}`;
  return { info, id };
}

let counter = 0;

function newInfo(purpose: string): LockInfo {
  return {
    pid: process.pid,
    host: hostname(),
    started_at: new Date().toISOString(),
    purpose,
    start_ticks: procStat(process.pid)?.startTicks ?? null,
    nonce: `${process.pid.toString(36)}-${
      Buffer.from(crypto.getRandomValues(new Uint8Array(9))).toString("base64url")
    }`,
  };
}

/** Writes `info` to a unique temp file next to `path`, fsynced; returns its path. */
function writeClaim(path: string, info: LockInfo): string {
  refuseSymlinks(path, episodeRoot(dirname(path))); // the lock, its claims and tokens are in an episode directory
  const tmp = `${path}.tmp-claim-${info.nonce}-${(counter++).toString(36)}`;
  const fd = openSync(tmp, "wx", FILE_MODE);
  try {
    writeSync(fd, JSON.stringify(info) + "\n");
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  return tmp;
}

/** Creates `path` holding `info` if it does not exist; false when it does. */
function tryCreate(path: string, info: LockInfo): boolean {
  const tmp = writeClaim(path, info);
  try {
    linkSync(tmp, path);
    return true;
  } catch (e) {
    if ((e as { code?: string }).code === "EEXIST") return false;
    throw e;
  } finally {
    rmSync(tmp, { force: true });
  }
}

/** Removes `path` if it still holds the lock with nonce `nonce`. */
function removeIfOurs(path: string, nonce: string | undefined): void {
  try {
    if (readLockAt(path)?.info?.nonce === nonce) rmSync(path, { force: true });
  } catch {
    // already gone or unreadable: not ours to remove
  }
}

const MAX_TOKEN_DEPTH = 3;

/** The longest `purpose` a lock record has (see `onlyALock`). */
const MAX_PURPOSE = 128;

/**
 * The record of the token that takes over the stale lock at `path` for `info`: the taker's, its purpose naming the
 * lock by its file name (not its path, which may be longer than a lock's purpose is: a token left by a taker killed
 * meanwhile is then still a lock's record, which the checks of a sealed episode leave out) and the taker's purpose.
 *
 * @example
 * ```ts
 * import { takeoverInfo } from "./lock.ts";
 * const info = { pid: 1, host: "h", started_at: "2026-01-01T00:00:00.000Z", purpose: "resume", start_ticks: null, nonce: "1-x" };
 * takeoverInfo("/deep/ep_1/lock", info, 0).purpose; // "takeover of lock for resume"
 * ```
 */
export function takeoverInfo(path: string, info: LockInfo, depth: number): LockInfo {
  const purpose = `takeover of ${basename(path)} for ${info.purpose}`.slice(0, MAX_PURPOSE);
  return { ...info, purpose, nonce: `${info.nonce}t${depth}` };
}

/**
 * Replaces the stale lock `seen` at `path` with `info`, or returns false when
 * another process is doing it (or did it) first.
 */
function takeOver(path: string, seen: SeenLock, info: LockInfo, depth: number): boolean {
  const token = `${path}.tmp-takeover-${seen.id}`;
  const tokenInfo = takeoverInfo(path, info, depth);
  if (!holdToken(token, tokenInfo, depth)) return false;
  try {
    const now = readLockAt(path);
    if (now === null || now.id !== seen.id || ownerAlive(now.info)) return false;
    const tmp = writeClaim(path, info);
    try {
      renameSync(tmp, path);
    } catch (e) {
      rmSync(tmp, { force: true });
      throw e;
    }
    return true;
  } finally {
    removeIfOurs(token, tokenInfo.nonce);
  }
}

/** Creates the takeover token, or takes over a token whose creator died. */
function holdToken(token: string, info: LockInfo, depth: number): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    if (tryCreate(token, info)) return true;
    const t = readLockAt(token);
    if (t === null) continue; // removed meanwhile: try again
    if (ownerAlive(t.info) || depth >= MAX_TOKEN_DEPTH) return false;
    return takeOver(token, t, info, depth + 1);
  }
  return false;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));

function sleepMs(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/**
 * How long a caller that lost the takeover of a stale lock waits for the
 * winner's lock to appear, so that its error names the live winner instead
 * of the dead owner (the winner only writes and renames one small file).
 */
const TAKEOVER_GRACE_MS = 2000;

function lockedError(held: LockInfo | null, path: string, waitedMs: number): NoemaError {
  const owner = (i: LockInfo) => `${i.purpose} (pid ${i.pid} on ${i.host}, since ${i.started_at})`;
  const who = held === null
    ? "another process"
    : ownerAlive(held)
    ? owner(held)
    : `another process taking over the stale lock of ${owner(held)}`;
  const waited = waitedMs > 0 ? ` after waiting ${waitedMs} ms` : "";
  return new NoemaError(
    "locked",
    `episode is locked by ${who}${waited}; if that process is gone, remove ${path}`,
    { exitCode: EXIT.LOCKED },
  );
}

/**
 * Takes an episode's lock, or throws a {@link NoemaError} (exit code 10)
 * naming the process that holds it. A stale lock (its owner dead, a zombie,
 * or its pid reused) is taken over by exactly one contender. With
 * `options.waitMs`, a caller finding a live holder polls until the lock is
 * free or the time is up (for many short-lived processes appending to one
 * episode, such as agent hooks).
 *
 * @example
 * ```ts
 * import { acquireLock } from "noema";
 * const lock = acquireLock(".noema/episodes/ep_1", "resume", { waitMs: 2000 });
 * try { … } finally { lock.release(); }
 * ```
 */
export function acquireLock(dir: string, purpose: string, options: AcquireLockOptions = {}): EpisodeLock {
  let path = join(dir, LOCK_FILE);
  const me = newInfo(purpose);
  const waitMs = Math.max(0, options.waitMs ?? 0);
  const t0 = Date.now();
  for (let attempt = 0;; attempt++) {
    if (tryCreate(path, me)) break;
    const seen = readLockAt(path);
    if (seen === null) continue; // released meanwhile
    const stale = !ownerAlive(seen.info);
    if (stale && takeOver(path, seen, me, 0)) break;
    const waited = Date.now() - t0;
    if (stale && waited < Math.max(waitMs, TAKEOVER_GRACE_MS)) {
      // Another contender is replacing this stale lock right now: judge the lock it leaves, not the dead one.
      sleepMs(1);
      continue;
    }
    // A live holder: wait, or refuse.
    if (waited >= waitMs) {
      throw lockedError(readLockAt(path)?.info ?? seen.info, path, waitMs > 0 ? waited : 0);
    }
    sleepMs(Math.min(20 + attempt, 100, Math.max(1, waitMs - waited)));
  }
  let released = false;
  return {
    moveTo(next: string) {
      path = join(next, LOCK_FILE);
    },
    release() {
      if (released) return;
      released = true;
      removeIfOurs(path, me.nonce);
    },
  };
}

/**
 * Whether an episode is locked, and by whom: `held` while the owner is alive
 * (a running or waiting process), `stale` when the owner is gone (a crashed
 * run), `none` without a lock file.
 *
 * @example
 * ```ts
 * import { lockStatus } from "noema";
 * const { state, info } = lockStatus(".noema/episodes/ep_1");
 * if (state === "stale") console.log(`crashed (pid ${info?.pid})`);
 * ```
 */
export function lockStatus(dir: string): LockStatus {
  let seen: SeenLock | null;
  try {
    seen = readLockAt(join(dir, LOCK_FILE));
  } catch {
    seen = null;
  }
  if (seen === null) return { state: "none", info: null };
  return { state: ownerAlive(seen.info) ? "held" : "stale", info: seen.info };
}

/** A lock's fields, each a scalar of its kind (see {@link LockInfo}). */
const LOCK_FIELDS: Record<string, (v: unknown) => boolean> = {
  pid: (v) => Number.isSafeInteger(v),
  host: (v) => typeof v === "string" && v.length <= 255,
  started_at: (v) => typeof v === "string" && v.length <= 64,
  purpose: (v) => typeof v === "string" && v.length <= MAX_PURPOSE,
  start_ticks: (v) => v === null || Number.isSafeInteger(v),
  nonce: (v) => typeof v === "string" && v.length <= 64,
};

/**
 * Whether `dir/name` holds a lock record and nothing more (at most 1 KiB, only a lock's fields, each of its kind):
 * what the checks of a sealed episode may leave out under the lock's names, and nothing else.
 *
 * @example
 * ```ts
 * import { onlyALock } from "./lock.ts";
 * onlyALock(".noema/episodes/ep_1", "lock"); // false: absent, or carrying more than a lock
 * ```
 */
export function onlyALock(dir: string, name: string): boolean {
  try {
    const fd = openRegularFile(join(dir, name)); // never a FIFO swapped in meanwhile
    let text: string;
    try {
      if (fstatSync(fd).size > 1024) return false;
      text = readFileSync(fd, "utf8");
    } finally {
      closeSync(fd);
    }
    const v = JSON.parse(text);
    if (typeof v !== "object" || v === null || Array.isArray(v) || typeof v.pid !== "number") return false;
    return Object.entries(v).every(([k, x]) => Object.hasOwn(LOCK_FIELDS, k) && LOCK_FIELDS[k](x));
  } catch {
    return false; // gone meanwhile, or not JSON: not a lock to leave out
  }
}

/**
 * Whether `name` is one of the lock's names in an episode directory: the lock, or a claim or takeover token of it
 * (`lock.tmp-…`, see {@link acquireLock}); any other `lock.*` name is a file like the rest.
 *
 * @example
 * ```ts
 * import { isLockName } from "./lock.ts";
 * isLockName("lock.tmp-claim-x"); // true
 * isLockName("lock.data"); // false
 * ```
 */
export function isLockName(name: string): boolean {
  return name === LOCK_FILE || name.startsWith(`${LOCK_FILE}.tmp-`);
}

/**
 * Removes an episode's stale lock (its owner gone): taken over as any stale
 * lock is, then released, so that a live process taking it meanwhile keeps
 * it. For a sealed episode, whose last writer was killed after sealing and
 * before it removed its lock (`noema verify` clears such a lock instead of
 * warning of it). Returns whether a lock was removed; a lock held by a live
 * process, or one that cannot be removed (a read-only directory), is left.
 *
 * @example
 * ```ts
 * import { clearStaleLock } from "./lock.ts";
 * clearStaleLock(".noema/episodes/ep_1"); // false: no lock, or a live one
 * ```
 */
export function clearStaleLock(dir: string): boolean {
  if (lockStatus(dir).state !== "stale") return false;
  try {
    acquireLock(dir, "clearing a stale lock").release();
    return true;
  } catch {
    return false;
  }
}
