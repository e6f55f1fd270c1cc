/**
 * A run's live publishing beside it: in a process of its own (`noema
 * __store-live`, `live_process.ts`) for a run, or in a worker thread
 * (`store_live_worker.ts`) where no process can be started. The other side
 * watches the episode's files itself, so the run sends nothing while it goes
 * (see `live_serve.ts`); reading the new lines, hashing, reading the
 * catalog's facts and the database client's I/O happen there. The same promises
 * as {@link LivePublisher}, which does the work there: the episode's files are
 * the queue, a failure is reported once, and `finish` waits at most its
 * deadline. What is left then is the process's to publish on its own (it
 * goes on after the run), or, from a thread, another process's.
 *
 * @module
 */
import process from "node:process";
import { type BackgroundChannel, type BackgroundProcess, processChannel, threadChannel } from "../channels.ts";
import { unidleProcess } from "../priority.ts";
import { processGone } from "../store/lock.ts";
import { LIVE_PUBLISH_START_ENV } from "./live_process.ts";
import type { FromLivePublishing, LivePublishingStart, ToLivePublishing } from "./live_serve.ts";

/**
 * How long `finish` waits at least while the store has not accepted a first
 * write (the publisher is still starting): a short run's end is then the
 * store's first chance to say it cannot be reached.
 */
const FIRST_WRITE_WAIT_MS = 3000;

/**
 * How long `finish` waits, past its deadline, to hear from a process that has not answered the request yet (it
 * answers at once with `heard`), ms: only then is the run's tail left to it.
 */
const HEARD_WAIT_MS = 2_000;

/** How long `finish` waits for a process that published everything to exit, ms. */
const EXIT_WAIT_MS = 1000;

/**
 * How long a new publisher waits for the episode's lease while another
 * process of this host holds it: the publishing process of the run before a
 * resume, finishing its last lines.
 */
const HELD_WAIT_MS = 30_000;

/**
 * Publishes an episode from a process of its own, or a worker thread, as it grows.
 *
 * @example
 * ```ts
 * import { BackgroundLivePublisher } from "./live_background.ts";
 * const live = BackgroundLivePublisher.start({ url, from: "NOEMA_STORE", dir, episodeId, host }, { onUnavailable });
 * const ok = await live?.finish(100);
 * ```
 */
export class BackgroundLivePublisher {
  readonly #channel: BackgroundChannel;
  readonly #onUnavailable: (error: Error) => void;
  #failed: Error | null = null;
  #dead = false; // the other side exited or failed to load: finishing hands everything over
  #published = false; // the store accepted a first write from the other side: it runs, and the store answers
  #waiting: (() => void) | null = null; // finish() waits: told of every message and of the end
  #answer: boolean | null = null; // the answer to finish
  #alone = false; // after finish: more is left than the run's wait could send; the process goes on alone
  #heard = false; // it took the run's finish: alive after the run asked
  /** The pid of the process that publishes (when it is one): at `finish`, it goes on alone with what is left. */
  readonly pid: number | null;

  private constructor(
    open: (on: { message(text: string): void; lost(why: string): void }) => BackgroundChannel,
    onUnavailable: (error: Error) => void,
  ) {
    this.#onUnavailable = onUnavailable;
    this.#channel = open({
      message: (text) => this.#take(text),
      lost: () => {
        this.#dead = true;
        this.#waiting?.();
      },
    });
    this.pid = this.#channel.pid ?? null;
  }

  #take(text: string): void {
    let m: FromLivePublishing;
    try {
      m = JSON.parse(text);
    } catch {
      return; // not one of its messages: ignored
    }
    if (m.type === "unavailable") {
      this.#fail(Object.assign(new Error(m.message), m.code === null ? {} : { code: m.code }));
    } else if (m.type === "published") this.#published = true;
    else if (m.type === "finished") this.#answer = m.ok && !m.failed;
    else if (m.type === "alone") this.#alone = true;
    else if (m.type === "heard") this.#heard = true;
    this.#waiting?.();
  }

  /**
   * Starts the publisher: in the process `options.process` starts (`noema
   * __store-live`), else in a worker thread; null when neither can start here
   * (the caller publishes in its own thread). `NOEMA_STORE_PUBLISH_THREAD=0`
   * says so too.
   */
  static start(
    start: LivePublishingStart,
    options: { onUnavailable: (error: Error) => void; process?: BackgroundProcess },
  ): BackgroundLivePublisher | null {
    if (process.env.NOEMA_STORE_PUBLISH_THREAD === "0") return null;
    const full: LivePublishingStart = { heldWaitMs: HELD_WAIT_MS, ...start };
    const p = options.process;
    try {
      if (p) {
        // Everything it needs comes with it: what the run writes to a pipe waits for the run's event loop to turn.
        const env = { ...(p.env ?? process.env), [LIVE_PUBLISH_START_ENV]: JSON.stringify(full) };
        return new BackgroundLivePublisher((on) => processChannel({ ...p, env }, on), options.onUnavailable);
      }
      const live = new BackgroundLivePublisher(
        (on) => threadChannel(new URL("./store_live_worker.ts", import.meta.url), on),
        options.onUnavailable,
      );
      live.#channel.post(JSON.stringify(full)); // a worker's first message: posted messages need no event loop here
      return live;
    } catch {
      return null;
    }
  }

  /**
   * Whether a process publishes, alive: after `finish`, it goes on alone with what is left (no hand-over needed).
   * Only a process heard from after the run asked it to finish: one killed whose end this process has not seen yet
   * (its "close" still queued behind a busy event loop) may still be in the system's table while it exits, and a
   * stopped one never answers; either would be left the run's tail, unpublished. One that did not answer within the
   * run's wait is handed over instead (the background sync waits for its lease, or takes it once it is gone).
   */
  get continuesAlone(): boolean {
    return this.pid !== null && this.#heard && !this.#dead && this.#failed === null && !processGone(this.pid);
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

  #post(m: ToLivePublishing): void {
    try {
      this.#channel.post(JSON.stringify(m));
    } catch {
      this.#dead = true;
    }
  }

  /**
   * Has what is left published; resolves true when everything written was
   * published, false when the store failed, the other side is gone, or
   * `deadlineMs` ran out. When the store has not accepted a first write yet,
   * it waits up to 3 s instead (the publisher may still be starting). A
   * process goes on alone with what is left (see {@link continuesAlone}),
   * once heard from: one that has not answered the request by the deadline
   * is given up to 2 s more to; a thread stops.
   */
  async finish(deadlineMs = 10_000): Promise<boolean> {
    if (this.#dead || this.#failed) return this.#stop(false);
    const asked = Date.now();
    this.#channel.hold(); // held while it answers
    // Out of the idle class first: starved on a busy machine, it could not even read the request (or, killed, exit).
    if (this.pid !== null) unidleProcess(this.pid);
    this.#post({ type: "finish", deadlineMs, firstWriteWaitMs: FIRST_WRITE_WAIT_MS });
    // Checked again at every message: an answer or a failure ends it, and so does "alone" once the store accepted a
    // first write (it answers). A publisher still starting when asked has 3 s for all of it: a short run is published
    // whole before it returns (a `noema list` right after shows it), or learns that the store cannot be reached.
    const end = asked + (this.#published ? deadlineMs : Math.max(deadlineMs, FIRST_WRITE_WAIT_MS));
    await this.#until(() => {
      const over = this.#answer !== null || this.#failed !== null || this.#dead || (this.#published && this.#alone);
      return over || end;
    });
    // Not heard from since it was asked (a busy machine): a little longer, for its word or its end, whichever comes
    // first. A process alive answers as soon as it reads the request; a dead one's pipe closes; a stopped one does
    // neither, and is handed over after this wait (see continuesAlone).
    if (this.pid !== null && !this.#heard && this.#answer === null) {
      const heardBy = Date.now() + HEARD_WAIT_MS;
      await this.#until(() => this.#heard || this.#dead || this.#failed !== null || heardBy);
    }
    // A process that published everything exits at once: waited for (briefly), so that once the run returns no
    // process of it holds the episode's lease (a `noema sync` right after takes it without waiting).
    if (this.#answer === true && this.pid !== null) {
      const exit = Date.now() + EXIT_WAIT_MS;
      await this.#until(() => this.#dead || exit);
    }
    return this.#stop(this.#answer === true && this.#failed === null);
  }

  /** Resolves once `done` says true, or at the time it returns; asked again at every message and at the end. */
  async #until(done: () => true | number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await new Promise<void>((resolve) => {
        const check = () => {
          const end = done();
          if (end === true || Date.now() >= end) return resolve();
          clearTimeout(timer);
          timer = setTimeout(check, end - Date.now());
        };
        this.#waiting = check;
        check();
      });
    } finally {
      clearTimeout(timer);
      this.#waiting = null;
    }
  }

  #stop(ok: boolean): boolean {
    // Done: a worker goes (a publish it was still making is cut short: the hand-over sends it again, idempotent);
    // a process goes on alone with what is left, and exits.
    this.#channel.close();
    return ok;
  }
}
