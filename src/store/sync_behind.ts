/**
 * Write-behind for a growing file: once a few MiB were written since the
 * last time, the file's data is flushed to disk in the background (a
 * `fdatasync` on the runtime's thread pool), so the `fsync` a writer must
 * make at a durability point (sealing a run) finds little left to write
 * instead of every byte of a long log.
 *
 * The background flush goes through a descriptor of its own, opened read-only
 * on the same file (checked by device and inode), never the writer's: on
 * Linux a write-back error is reported once per open file description, so a
 * flush on the writer's descriptor that failed in the background would hide
 * the error from the writer's own `fsync`. With a descriptor of its own, the
 * writer's `fsync` still reports it, and the background flush's outcome does
 * not matter (it is only ever an early start of the same work).
 *
 * @module
 */
import { closeSync, fdatasync, fstatSync } from "node:fs";
import { openSameFile } from "./regular_file.ts";

/** Bytes written since the last background flush that start the next one. @default {4 MiB} */
export const SYNC_BEHIND_BYTES = 4 * 1024 * 1024;

/**
 * Background flushes waiting at once, at most. Their completions are only
 * seen when the event loop turns, which a run of quick steps may not let it
 * do for a while: more than one may be queued (each then finds less to do).
 */
const MAX_IN_FLIGHT = 8;

/**
 * Flushes a file written through `fd` to disk in the background, every
 * {@link SYNC_BEHIND_BYTES} written.
 *
 * @example
 * ```ts
 * import { openSync, writeSync } from "node:fs";
 * import { SyncBehind } from "./sync_behind.ts";
 * const fd = openSync("/tmp/log.jsonl", "a");
 * const behind = new SyncBehind("/tmp/log.jsonl", fd);
 * behind.wrote(writeSync(fd, "x\n")); // a background flush starts once 4 MiB were written
 * behind.start(); // or now
 * behind.close(); // before the writer closes `fd`
 * ```
 */
export class SyncBehind {
  readonly #path: string;
  readonly #fd: number;
  /** The read-only descriptor the flushes go through (opened at the first one). */
  #own: number | undefined;
  #written = 0;
  #inFlight = 0;
  #closed = false;

  /** For the file at `path`, which the writer has open at `fd`. */
  constructor(path: string, fd: number) {
    this.#path = path;
    this.#fd = fd;
  }

  /** Counts `bytes` written; starts a background flush when enough were. */
  wrote(bytes: number): void {
    this.#written += bytes;
    if (this.#written >= SYNC_BEHIND_BYTES) this.start();
  }

  /** Starts a background flush of what was written so far (none when nothing was, or enough are waiting). */
  start(): void {
    if (this.#closed || this.#written === 0 || this.#inFlight >= MAX_IN_FLIGHT) return;
    const fd = this.#own ??= this.#ownDescriptor();
    if (fd === undefined) return;
    this.#written = 0;
    this.#inFlight++;
    try {
      fdatasync(fd, () => this.#settled()); // its error is the writer's fsync's to report (see the module doc)
    } catch {
      this.#settled();
    }
  }

  /** Stops: no flush starts after this; the own descriptor is closed once the last one settled. Idempotent. */
  close(): void {
    this.#closed = true;
    if (this.#inFlight === 0) this.#release();
  }

  #settled(): void {
    this.#inFlight--;
    if (this.#closed && this.#inFlight === 0) this.#release();
  }

  #release(): void {
    const fd = this.#own;
    this.#own = undefined;
    if (fd === undefined) return;
    try {
      closeSync(fd);
    } catch {
      // already gone: nothing to release
    }
  }

  /** A read-only descriptor on the writer's file (see `openSameFile`), or undefined when none can be had. */
  #ownDescriptor(): number | undefined {
    try {
      return openSameFile(this.#fd, this.#path, fstatSync(this.#fd, { bigint: true }));
    } catch {
      return undefined; // the writer's descriptor is gone: its own fsync does the work
    }
  }
}
