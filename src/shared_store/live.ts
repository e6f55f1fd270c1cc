/**
 * Publishing a run while it runs, without ever making it wait: the episode's
 * own files are the queue. Each write "kicks" the publisher, kicks coalesce,
 * at most one publish is in flight, and publishes are spaced by an interval,
 * so the memory it holds is bounded whatever the run writes. A run that
 * writes nothing for 15 s is published all the same: its lease is renewed
 * (it goes stale after 60 s), and a store that stopped answering is found
 * then, not only at the next write. When the store
 * cannot be reached, the run goes on locally: the publisher says so once and
 * stops trying; `noema sync` (or the next noema command) publishes the rest.
 *
 * @module
 */
import type { EpisodePublisher } from "./publish.ts";

/**
 * Lines a publisher is assumed to send per ms (20 MB/s): at the end of a run,
 * a backlog larger than this times the wait allowed is handed over without waiting.
 */
const BACKLOG_BYTES_PER_MS = 20_000;

/**
 * Lines a live publish sends per second at most (4 MB/s; a run's events are
 * usually far slower): a run that writes faster is not chased at the cost of
 * the CPU it needs, and what is left when it ends is handed over.
 */
const LIVE_BYTES_PER_SECOND = 4 << 20;

/** Options of {@link LivePublisher}. */
export interface LivePublisherOptions {
  /** Least time between two publishes, in ms. @default {250} */
  intervalMs?: number;
  /**
   * Least time between two publishes of the whole files and the catalog row
   * (lines go at every publish), in ms; the first one comes this long after
   * the publisher starts (or at `finish`). @default {2000}
   */
  filesIntervalMs?: number;
  /**
   * Longest time without a publish while the run writes nothing (a long step, an agent thinking), in ms: a publish
   * then renews the episode's lease, which goes stale after 60 s, and finds a store that stopped answering even
   * though nothing is sent. @default {15000}
   */
  heartbeatMs?: number;
  /** Called once when a publish fails (the store is down, refused a write, or holds a conflicting line). */
  onUnavailable?: (error: Error) => void;
}

/**
 * Publishes an episode in the background as it grows.
 *
 * @example
 * ```ts
 * import { LivePublisher } from "./live.ts";
 * const live = new LivePublisher(new EpisodePublisher(store, dir, id));
 * // on every event: live.kick();
 * const ok = await live.finish(5_000);
 * ```
 */
export class LivePublisher {
  readonly #publisher: EpisodePublisher;
  readonly #interval: number;
  readonly #onUnavailable: (error: Error) => void;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #inFlight: Promise<void> | null = null;
  #again = false;
  #failed: Error | null = null;
  #last = 0;
  #lastFull = Date.now(); // the first whole-files publish comes one files interval in: a run is busiest as it starts
  #trailing: ReturnType<typeof setTimeout> | undefined;
  #handedOver = false; // finish() ran out of time: what is left is another process's to publish
  #finishing = false; // finish() was called: it does the last publish, and nothing else starts one
  readonly #filesInterval: number;
  readonly #heartbeat: number;
  #beat: ReturnType<typeof setTimeout> | undefined; // the publish owed when nothing else comes (see heartbeatMs)

  constructor(publisher: EpisodePublisher, options: LivePublisherOptions = {}) {
    this.#publisher = publisher;
    this.#interval = options.intervalMs ?? 250;
    this.#onUnavailable = options.onUnavailable ?? (() => {});
    this.#filesInterval = options.filesIntervalMs ?? 2000;
    this.#heartbeat = options.heartbeatMs ?? 15_000;
  }

  /** The error that stopped publishing, or null. */
  get failed(): Error | null {
    return this.#failed;
  }

  /** Something was written: publish soon (never now, never twice at once). */
  kick(): void {
    if (this.#failed || this.#finishing) return;
    if (this.#inFlight) {
      this.#again = true;
      return;
    }
    if (this.#timer !== undefined) return;
    const wait = Math.max(0, this.#last + this.#interval - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#start();
    }, wait);
    // A pending publish never keeps the process alive: finish() does the last one.
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #start(): void {
    clearTimeout(this.#beat);
    this.#beat = undefined;
    this.#last = Date.now();
    const full = this.#last - this.#lastFull >= this.#filesInterval;
    if (full) this.#lastFull = this.#last;
    // A run that writes faster than that is not chased at the cost of its CPU: the rest is handed over at its end.
    const maxLineBytes = Math.ceil((LIVE_BYTES_PER_SECOND * this.#interval) / 1000);
    this.#inFlight = this.#publisher.publish({ linesOnly: !full, maxLineBytes }).then(
      () => {},
      (e) => this.#fail(e instanceof Error ? e : new Error(String(e))),
    ).finally(() => {
      this.#inFlight = null;
      if (this.#again) {
        this.#again = false;
        this.kick();
      } else if (!full || this.#publisher.backlogBytes() > 0) this.#trail();
      this.#beatLater();
    });
  }

  /** Owes a publish {@link LivePublisherOptions.heartbeatMs} from now, unless another publish starts first. */
  #beatLater(): void {
    if (this.#failed || this.#handedOver || this.#finishing) return;
    clearTimeout(this.#beat);
    this.#beat = setTimeout(() => {
      this.#beat = undefined;
      this.kick();
    }, this.#heartbeat);
    // Like a pending publish, never keeps the process alive.
    (this.#beat as { unref?: () => void }).unref?.();
  }

  /**
   * A publish owed without a kick: the files (the state a paused or idle
   * run's catalog row shows) after a publish of lines only, or the lines left
   * past a publish's budget. Without it, a run that stops writing (paused
   * for approval, a session's agent thinking) would show its last state only
   * at its next event, or its end.
   */
  #trail(): void {
    if (this.#trailing !== undefined || this.#failed || this.#handedOver || this.#finishing) return;
    const wait = Math.max(this.#interval, this.#lastFull + this.#filesInterval - Date.now());
    this.#trailing = setTimeout(() => {
      this.#trailing = undefined;
      this.kick();
    }, wait);
    (this.#trailing as { unref?: () => void }).unref?.();
  }

  #fail(e: Error): void {
    if (this.#failed || this.#handedOver) return; // a publish cut short by the hand-over is not the store failing
    this.#failed = e;
    this.#onUnavailable(e);
  }

  /**
   * Whether what is left to publish can be sent within `deadlineMs` (at the
   * 20 MB/s a publisher is assumed to send): a run that ends far ahead of its
   * publisher does not wait for what cannot be sent in time.
   */
  fitsIn(deadlineMs: number): boolean {
    return this.#publisher.backlogBytes() <= deadlineMs * BACKLOG_BYTES_PER_MS;
  }

  /**
   * Publishes what is left and stops; resolves true when everything written
   * was published, false when the store failed or `deadlineMs` ran out.
   */
  async finish(deadlineMs = 10_000): Promise<boolean> {
    this.#finishing = true; // a kick or a trailing publish from now on would race the last one
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    clearTimeout(this.#trailing);
    this.#trailing = undefined;
    clearTimeout(this.#beat);
    this.#beat = undefined;
    // Far behind (a fast run): what is left cannot be sent within the deadline, so it is handed over at once.
    if (this.#failed === null && !this.fitsIn(deadlineMs)) {
      this.#handedOver = true;
      return false;
    }
    const last = (async () => {
      if (this.#inFlight) await this.#inFlight;
      if (this.#failed) return false;
      try {
        await this.#publisher.publish();
        return true;
      } catch (e) {
        this.#fail(e instanceof Error ? e : new Error(String(e)));
        return false;
      }
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), deadlineMs);
    });
    try {
      const done = await Promise.race([last, timeout]);
      if (!done && this.#failed === null) this.#handedOver = true;
      return done;
    } finally {
      clearTimeout(timer);
    }
  }
}
