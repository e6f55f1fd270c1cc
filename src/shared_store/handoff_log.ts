/**
 * The hand-over log, `<root>/state/sync-handoff.log`: what each background
 * `noema sync --handoff` (the last publish a run hands over as it ends)
 * printed, its standard output and error, after a line naming it. Such a
 * sync runs detached, with no terminal: this file is where it says what it
 * published, or why it could not (the episode then stays marked pending, and
 * the next noema command with a store, or `noema sync`, publishes it).
 *
 * The log is kept to about 256 KiB: a longer one is moved to
 * `sync-handoff.log.1` (replacing the one before) before the next sync
 * writes. It is opened without following a symbolic link, below the root
 * only; when it cannot be opened (a read-only root, a planted link) the sync
 * runs without one, as before.
 *
 * @module
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, renameSync, writeSync } from "node:fs";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import process from "node:process";
import { FILE_MODE } from "../store/atomic.ts";
import { mkdirBelow, O_NOFOLLOW, refuseSymlinks } from "../store/nofollow.ts";

/** The log's name under `<root>/state/`. */
export const HANDOFF_LOG = "sync-handoff.log";

/** Past this size the log is moved aside before the next sync writes. */
const MAX_BYTES = 256 * 1024;

/** The log's path under a root. */
const logPath = (root: string) => join(root, "state", HANDOFF_LOG);

/**
 * Opens the hand-over log for appending, after a line saying which episodes
 * are handed over and by which process; the descriptor is for the sync's
 * stdout and stderr (the caller closes it once the sync is started). Null
 * when it cannot be opened.
 *
 * @example
 * ```ts
 * import { openHandoffLog } from "./handoff_log.ts";
 * const fd = openHandoffLog(".noema", ["ep_01J…"]); // then spawn(…, { stdio: ["ignore", fd, fd] })
 * ```
 */
export function openHandoffLog(root: string, ids: readonly string[]): number | null {
  const path = logPath(root);
  try {
    mkdirBelow(join(root, "state"), root);
    refuseSymlinks(path, root);
    const size = lstatSync(path, { throwIfNoEntry: false })?.size ?? 0;
    if (size > MAX_BYTES) renameSync(path, `${path}.1`);
    const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | O_NOFOLLOW, FILE_MODE);
    writeSync(
      fd,
      `${new Date().toISOString()} noema sync --handoff ${ids.join(" ")} (handed over by pid ${process.pid})\n`,
    );
    return fd;
  } catch {
    return null;
  }
}

/**
 * The last `bytes` of the hand-over log (its whole text when shorter), or
 * "" when there is none: for a message saying why an episode is still
 * pending.
 *
 * @example
 * ```ts
 * import { handoffLogTail } from "./handoff_log.ts";
 * handoffLogTail(".noema"); // "2026-…Z noema sync --handoff ep_01J… (handed over by pid 4242)\nsynced 1 episode …\n"
 * ```
 */
export function handoffLogTail(root: string, bytes = 4096): string {
  let fd: number | undefined;
  try {
    // O_NONBLOCK: a FIFO planted as the log is not waited on; fstat: the size of the file opened, not of a path
    // that may have been replaced since.
    fd = openSync(logPath(root), constants.O_RDONLY | O_NOFOLLOW | (constants.O_NONBLOCK ?? 0));
    const stat = fstatSync(fd);
    if (!stat.isFile()) return "";
    const size = stat.size;
    const from = Math.max(0, size - bytes);
    const buf = Buffer.alloc(size - from);
    const n = readSync(fd, buf, 0, buf.length, from);
    return buf.subarray(0, n).toString("utf8");
  } catch {
    return "";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The last hand-over sync the log tells of (see {@link lastHandoff}). */
export interface HandoffEntry {
  /** When it was started (ISO 8601). */
  at: string;
  /** The episodes handed over. */
  episodes: string[];
  /** The process that handed them over. */
  pid: number;
  /** The last line the sync printed (`synced 1 episode to …`, or why not), or null when it has printed nothing yet. */
  said: string | null;
}

const HEADER = /^(\S+) noema sync --handoff (.*) \(handed over by pid (\d+)\)$/;

/**
 * The last hand-over sync in the log, read from its last 16 KiB, or null
 * when the log is absent or tells of none (for `noema store status`).
 *
 * @example
 * ```ts
 * import { lastHandoff } from "./handoff_log.ts";
 * lastHandoff(".noema")?.said; // "synced 1 episode to postgres://noema@db/noema"
 * ```
 */
export function lastHandoff(root: string): HandoffEntry | null {
  const lines = handoffLogTail(root, 16 * 1024).split("\n");
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = HEADER.exec(lines[i]);
    if (!m) continue;
    const said = lines.slice(i + 1).map((l) => l.trim()).filter((l) => l !== "").at(-1) ?? null;
    return { at: m[1], episodes: m[2].split(" ").filter((x) => x !== ""), pid: Number(m[3]), said };
  }
  return null;
}
