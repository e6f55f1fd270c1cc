/**
 * Exporting a run's spans while it runs, without ever making it wait: like
 * the shared store's live publishing, the episode's own files are the queue,
 * and the work (reading them, building the spans, encoding and sending them)
 * is done elsewhere: in a process of its own for a run (`process`), in a
 * thread of this one for the hook server (see `src/channels.ts`). Each
 * recorded event "kicks" the sink; kicks coalesce into one message every
 * `intervalMs`. When the run ends, `finish()` has the rest and the root span
 * sent, waiting at most the export timeout (plus half a second); what a
 * process did not send by then it sends alone after the run. A collector that
 * is down, slow or refusing is reported once (`onUnavailable`); `noema export
 * otel` sends the episode later.
 *
 * @module
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { Kicks } from "../../kicks.ts";
import type { OtelSettings } from "./config.ts";
import { MODEL_TURN_FILES } from "./model_turns.ts";
import type { ExportFailure } from "./exporter.ts";
import type { LiveExportResult } from "./live_core.ts";
import { type BackgroundChannel, type BackgroundProcess, processChannel, threadChannel } from "../../channels.ts";

export type { LiveExportResult } from "./live_core.ts";

/**
 * Bytes of the episode's files a live export reads per second at most
 * (8 MiB/s, some 3,000 steps a second; an agent's run is far slower): a
 * run that writes faster has the rest sent at its end, or by the process it
 * hands over to.
 */
const LIVE_BYTES_PER_SECOND = 8 << 20;

/** The sizes of the files a follower reads, in its order (0 for one not there). */
function fileSizes(dir: string): number[] {
  return ["events.jsonl", ...MODEL_TURN_FILES].map((f) => {
    try {
      return statSync(join(dir, f)).size;
    } catch {
      return 0;
    }
  });
}

/** Options of {@link OtelLiveSink}. */
export interface OtelLiveSinkOptions {
  /** Least time between two reads of the files, ms. @default {250} */
  intervalMs?: number;
  /** Called once, when the collector does not take the spans. */
  onUnavailable?: (failure: ExportFailure) => void;
  /**
   * How to start `noema __otel-live`: the export then runs in that process,
   * which goes on alone with what is left at `finish()`.
   * @default {undefined} (a worker thread of this process, stopped at `finish()`)
   */
  process?: BackgroundProcess;
}

/**
 * One episode's live export.
 *
 * @example
 * ```ts
 * const sink = new OtelLiveSink(settings, { onUnavailable: (f) => console.error(f.message) });
 * sink.begin(".noema/episodes/ep_01J…", "ep_01J…");
 * // on every event: sink.kick();
 * await sink.finish();
 * ```
 */
export class OtelLiveSink {
  readonly #settings: OtelSettings;
  readonly #interval: number;
  readonly #onUnavailable: (failure: ExportFailure) => void;
  readonly #process: BackgroundProcess | undefined;
  #channel: BackgroundChannel | null = null;
  #failed: ExportFailure | null = null;
  #finished: ((r: LiveExportResult) => void) | null = null;
  readonly #kicks: Kicks;
  #done = false;
  #acked: number[] = [];
  #answered = false; // the export said it finished
  #lost = false; // the export thread failed or stopped: nothing to wait for
  #dir: string | null = null;

  constructor(settings: OtelSettings, options: OtelLiveSinkOptions = {}) {
    this.#settings = settings;
    this.#interval = options.intervalMs ?? 250;
    this.#kicks = new Kicks(this.#interval, () => this.#pump());
    this.#onUnavailable = options.onUnavailable ?? (() => {});
    this.#process = options.process;
  }

  /**
   * Follows the episode in `dir`. With `skipExisting` (a resumed run), what
   * the files hold already is read, not sent again.
   */
  begin(dir: string, episodeId: string, skipExisting = false): void {
    if (this.#channel !== null) return;
    const handlers = {
      message: (text: string) => {
        let m;
        try {
          m = JSON.parse(text);
        } catch {
          return; // not one of its messages (a runtime's own warning on stdout): ignored
        }
        if (m?.type === "acked") this.#acked = m.offsets;
        else if (m?.type === "unavailable") this.#fail(m.failure);
        else if (m?.type === "finished") {
          this.#answered = true;
          this.#finished?.(m.result);
        }
      },
      lost: (why: string) => {
        if (this.#answered) return; // it stopped once it had finished
        this.#fail({ url: this.#settings.url, message: why });
        this.#lost = true;
        this.#finished?.({ sent: 0, failed: this.#failed });
      },
    };
    this.#channel = this.#process
      ? processChannel(this.#process, handlers)
      : threadChannel(new URL("./live_worker.ts", import.meta.url), handlers);
    this.#dir = dir;
    // What the files hold now (not when the export starts: the run goes on meanwhile) is not sent again.
    const skipTo = skipExisting ? fileSizes(dir) : null;
    if (skipTo !== null) this.#acked = skipTo; // not unsent: what is left counts from there
    this.#post({ type: "begin", settings: this.#settings, dir, episodeId, skipTo });
  }

  #post(m: unknown): void {
    this.#channel?.post(JSON.stringify(m));
  }

  #fail(f: ExportFailure): void {
    if (this.#failed || this.#done) return;
    this.#failed = f;
    this.#onUnavailable(f);
  }

  /**
   * Something was recorded: the export thread reads it soon. Posted at once
   * when the last read was asked for at least `intervalMs` ago (a run busy in
   * this thread may not turn its event loop for a while: a timer would not
   * fire), else by a timer, for the last events of a burst.
   */
  kick(): void {
    if (this.#channel === null || this.#done || this.#failed) return;
    this.#kicks.kick();
  }

  #pump(): void {
    // A run that writes faster is not chased at the cost of its CPU: the rest goes at its end, or after it.
    const maxBytes = Math.ceil((LIVE_BYTES_PER_SECOND * Math.max(this.#interval, 50)) / 1000);
    this.#post({ type: "pump", maxBytes });
  }

  /** How many bytes of the files are not sent yet (as far as the collector acknowledged). */
  backlogBytes(): number {
    if (this.#dir === null) return 0;
    return fileSizes(this.#dir).reduce((sum, size, i) => sum + Math.max(0, size - (this.#acked[i] ?? 0)), 0);
  }

  /**
   * Sends what is left and, with `root`, the root span (a paused run sends
   * it too: its resume sends it again, ended later, under the same id).
   * Waits at most `waitMs` (default: the export timeout plus half a second).
   * Then a process goes on alone with what is left; a thread is stopped.
   */
  async finish(
    root = true,
    waitMs = this.#settings.timeoutMs + 500,
  ): Promise<LiveExportResult> {
    this.#kicks.cancel();
    const channel = this.#channel;
    if (channel === null) return { sent: 0, failed: null };
    if (this.#lost) return { sent: 0, failed: this.#failed };
    let timer: ReturnType<typeof setTimeout> | undefined;
    const result = await new Promise<LiveExportResult | null>((resolve) => {
      this.#finished = resolve;
      timer = setTimeout(() => resolve(null), waitMs);
      channel.hold();
      this.#post({ type: "finish", root, url: this.#settings.url });
    });
    clearTimeout(timer);
    this.#done = true;
    channel.close();
    return { sent: result?.sent ?? 0, failed: this.#failed ?? result?.failed ?? null };
  }
}
