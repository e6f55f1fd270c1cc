/**
 * A run's live publishing in a worker thread (`live_worker.ts`): the run's
 * event loop only posts a "kick" now and then (kicks coalesce here, at most
 * one message every 50 ms), while reading the new lines, hashing, reading
 * the catalog's facts and the database client's I/O run beside it. The same
 * promises as {@link LivePublisher}, which does the work inside the worker:
 * the episode's files are the queue, a failure is reported once, and
 * `finish` waits at most its deadline, after which what is left is handed
 * over.
 *
 * @module
 */
import process from "node:process";
import type { Worker } from "node:worker_threads";
import { nodeWorkerThreads } from "../builtins.ts";
import { Kicks } from "../kicks.ts";
import type { FromLiveWorker, ToLiveWorker } from "./live_worker.ts";

/** How often at most the run's thread posts a kick, ms. */
const KICK_EVERY_MS = 50;

/**
 * How long `finish` waits at least while the store has not accepted a first
 * write from the worker (it is still starting): a short run's end is then
 * the store's first chance to say it cannot be reached, or to take the whole
 * episode in this process.
 */
const FIRST_WRITE_WAIT_MS = 3000;

/** What starts the worker's publisher. */
export type LiveWorkerStart = Omit<Extract<ToLiveWorker, { type: "start" }>, "type">;

/**
 * Publishes an episode from a worker thread as it grows.
 *
 * @example
 * ```ts
 * import { WorkerLivePublisher } from "./live_thread.ts";
 * const live = WorkerLivePublisher.start({ url, from: "NOEMA_STORE", dir, episodeId, host }, { onUnavailable });
 * // on every event: live?.kick();
 * const ok = await live?.finish(100);
 * ```
 */
export class WorkerLivePublisher {
  readonly #worker: Worker;
  readonly #onUnavailable: (error: Error) => void;
  #failed: Error | null = null;
  #dead = false; // the worker exited or failed to load: finishing hands everything over
  #published = false; // the store accepted a first write from the worker: it runs, and the store answers
  readonly #kicks = new Kicks(KICK_EVERY_MS, () => this.#post({ type: "kick" }));
  #finished: ((m: Extract<FromLiveWorker, { type: "finished" }>) => void) | null = null;

  private constructor(worker: Worker, onUnavailable: (error: Error) => void) {
    this.#worker = worker;
    this.#onUnavailable = onUnavailable;
    worker.on("message", (m: FromLiveWorker) => {
      if (m.type === "unavailable") {
        const e = Object.assign(new Error(m.message), m.code === null ? {} : { code: m.code });
        this.#fail(e);
      } else if (m.type === "published") this.#published = true;
      else if (m.type === "finished") this.#finished?.(m);
    });
    const lost = () => {
      this.#dead = true;
      this.#finished?.({ type: "finished", ok: false, failed: false });
    };
    worker.on("error", lost);
    worker.on("exit", lost);
    worker.unref(); // never keeps the process alive: finish() holds it while it waits
  }

  /**
   * Starts the worker; null when no worker can be started here (the caller
   * publishes in its own thread). `NOEMA_STORE_PUBLISH_THREAD=0` says so too.
   */
  static start(start: LiveWorkerStart, options: { onUnavailable: (error: Error) => void }): WorkerLivePublisher | null {
    if (process.env.NOEMA_STORE_PUBLISH_THREAD === "0") return null;
    let worker: Worker;
    try {
      const { Worker } = nodeWorkerThreads();
      worker = new Worker(new URL("./live_worker.ts", import.meta.url));
    } catch {
      return null;
    }
    const live = new WorkerLivePublisher(worker, options.onUnavailable);
    live.#post({ type: "start", ...start });
    return live;
  }

  /** The error that stopped publishing, or null. */
  get failed(): Error | null {
    return this.#failed;
  }

  #fail(e: Error): void {
    if (this.#failed) return;
    this.#failed = e;
    this.#onUnavailable(e);
  }

  #post(m: ToLiveWorker): void {
    try {
      this.#worker.postMessage(m);
    } catch {
      this.#dead = true;
    }
  }

  /**
   * Something was written: publish soon. Posted at once when the last kick
   * went at least 50 ms ago (a run busy in this thread may not turn its event
   * loop for a while: a timer would not fire), else by a timer for the last one.
   */
  kick(): void {
    if (this.#failed || this.#dead) return;
    this.#kicks.kick();
  }

  /**
   * Publishes what is left and stops the worker; resolves true when
   * everything written was published, false when the store failed or
   * `deadlineMs` ran out (what is left is then another process's to publish).
   * Until the store accepted a first write from the worker, it waits at least 3 s.
   */
  async finish(deadlineMs = 10_000): Promise<boolean> {
    this.#kicks.cancel();
    if (this.#dead || this.#failed) return this.#stop(false);
    const answer = new Promise<boolean>((resolve) => {
      this.#finished = (m) => resolve(m.ok && !m.failed);
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    // The worker keeps its own deadline (it alone knows at once whether the store accepted a write yet: its
    // messages may still wait in this thread's queue); this one, a little later, is for a worker too busy to answer.
    const longest = this.#published ? deadlineMs : Math.max(deadlineMs, FIRST_WRITE_WAIT_MS);
    const timeout = new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), longest + 50));
    this.#worker.ref(); // held while it answers
    this.#post({ type: "finish", deadlineMs, firstWriteWaitMs: FIRST_WRITE_WAIT_MS });
    try {
      return this.#stop(await Promise.race([answer, timeout]));
    } finally {
      clearTimeout(timer);
    }
  }

  #stop(ok: boolean): boolean {
    this.#finished = null;
    // Done: the worker goes (a publish it was still making is cut short: the hand-over sends it again, idempotent).
    void Promise.resolve(this.#worker.terminate()).catch(() => {});
    return ok;
  }
}
