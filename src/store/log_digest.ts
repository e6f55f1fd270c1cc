/**
 * The SHA-256 of a long append-only log, computed on a worker thread while
 * the log is written, so that sealing an episode does not hash tens of MB
 * on the run's own thread: the manifest takes the digest the worker made of
 * the file as closed (`stageManifest`'s `known` digests).
 *
 * Once the writer has written {@link LOG_DIGEST_START_BYTES} itself, a worker starts
 * (`log_digest_worker.ts`); every {@link LOG_DIGEST_STEP_BYTES} written it is
 * told how far the file now goes and hashes the file itself up to there,
 * reading it through a descriptor of its own. At the end the writer waits
 * for the rest (a bounded wait on a shared buffer) and gets the digest of
 * the whole file, or null: no worker, a failure of any kind, a wait past its
 * bound, a file cut back after a failed write. The worker then releases its
 * descriptor and ends by itself (it never keeps the process alive). Null means the manifest
 * hashes the file as it always did. Linux only (the worker finds the file
 * through `/proc/self/fd`); elsewhere it never starts.
 *
 * @module
 */
import { existsSync, fstatSync } from "node:fs";
import { Buffer } from "node:buffer";
import { nodeWorkerThreads } from "../builtins.ts";
import type { FileDigest } from "./hash.ts";

/**
 * What the worker is told: the writer's descriptor and file, how far to hash; `answer`, where to write the digest;
 * `last`, that it then releases its descriptor and ends.
 */
export interface DigestMessage {
  fd: number;
  dev: string;
  ino: string;
  end: number;
  answer?: SharedArrayBuffer;
  last?: boolean;
}

/**
 * Bytes written before a worker starts: under Bun a worker costs ~3 ms of the writer's thread to start, under Deno
 * ~30 ms, against ~1 ms per MiB hashed.
 */
export const LOG_DIGEST_START_BYTES: number = "Deno" in globalThis ? 48 << 20 : 8 << 20;

/** Bytes written between two messages to the worker. */
export const LOG_DIGEST_STEP_BYTES = 4 << 20;

/** The longest wait for the worker's answer, in ms, plus 1 ms per 100 KiB it had left to hash. */
const WAIT_MS = 2000;

/**
 * A log's digest, hashed in the background as it is written.
 *
 * @example
 * ```ts
 * import { openSync, writeSync } from "node:fs";
 * import { LogDigest } from "./log_digest.ts";
 * const fd = openSync("/tmp/log.jsonl", "a");
 * const digest = new LogDigest(fd);
 * let end = 0;
 * end += writeSync(fd, "x\n");
 * digest.wrote(end);
 * digest.finish(end); // { size_bytes, sha256 } once the log was long enough for a worker, else null
 * ```
 */
export class LogDigest {
  readonly #fd: number;
  #worker: import("node:worker_threads").Worker | null = null;
  #dev = "";
  #ino = "";
  /** How far the worker was told to hash. */
  #told = 0;
  #off = false;

  /** The file's size when the writer opened it. */
  readonly #opened: number;

  /**
   * For the log the writer has open at `fd`, which was `opened` bytes long then: a worker starts only once this
   * writer has written {@link LOG_DIGEST_START_BYTES} (a process that appends a few lines to a long log, such as a
   * hook call, never hashes it).
   */
  constructor(fd: number, opened = 0) {
    this.#fd = fd;
    this.#opened = opened;
  }

  /** The file now ends at `end` (every byte before it written by this writer or there before it opened). */
  wrote(end: number): void {
    if (this.#off) return;
    if (this.#worker === null) {
      if (end - this.#opened < LOG_DIGEST_START_BYTES) return;
      this.#start();
      if (this.#worker === null) return;
    }
    if (end - this.#told >= LOG_DIGEST_STEP_BYTES) this.#tell(end);
  }

  /** Gives the digest up (the file was cut back, or is no longer what was written). */
  abandon(): void {
    this.#off = true;
    this.#stop();
  }

  /**
   * The digest of the file's first `end` bytes (the whole log, as the writer closes it), or null (see the module
   * doc). Waits for the worker, at most a bounded time; stops it.
   */
  finish(end: number): FileDigest | null {
    if (this.#off || this.#worker === null) return this.#stop();
    const answer = new SharedArrayBuffer(8 + 64);
    const state = new Int32Array(answer, 0, 1);
    const left = end - this.#told;
    this.#tell(end, answer, true);
    this.#worker = null; // it ends by itself after answering
    const waited = Atomics.wait(state, 0, 0, WAIT_MS + left / 102_400);
    if (waited === "timed-out" || Atomics.load(state, 0) !== 1) return null;
    return { size_bytes: end, sha256: "sha256:" + Buffer.from(new Uint8Array(answer, 8, 64)).toString("latin1") };
  }

  #start(): void {
    if (!existsSync(`/proc/self/fd/${this.#fd}`)) return void (this.#off = true);
    try {
      const st = fstatSync(this.#fd, { bigint: true });
      this.#dev = String(st.dev);
      this.#ino = String(st.ino);
      const { Worker } = nodeWorkerThreads();
      const worker = new Worker(new URL("./log_digest_worker.ts", import.meta.url));
      worker.unref(); // never keeps the process alive
      worker.on("error", () => this.abandon());
      this.#worker = worker;
    } catch {
      this.#off = true;
    }
  }

  #tell(end: number, answer?: SharedArrayBuffer, last?: boolean): void {
    this.#told = end;
    const m: DigestMessage = { fd: this.#fd, dev: this.#dev, ino: this.#ino, end, answer, last };
    this.#worker!.postMessage(m);
  }

  /** Tells the worker to release its descriptor and end (not terminated: a thread's open descriptor would leak). */
  #stop(): null {
    if (this.#worker !== null) this.#tell(this.#told, undefined, true);
    this.#worker = null;
    return null;
  }
}
