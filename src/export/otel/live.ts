/**
 * Exporting a run's spans while it runs, without ever making it wait: like
 * the shared store's live publisher, the episode's own files are the queue.
 * Each recorded event "kicks" the sink; kicks coalesce into one read of the
 * new lines every `intervalMs`, whose spans go to the SDK's
 * `BatchSpanProcessor` (a bounded queue, sent in batches by the official
 * OTLP exporter). When the run ends, `finish()` sends the rest and the root
 * span, waiting at most the export timeout. A collector that is down, slow
 * or refusing is reported once (`onUnavailable`) and then not tried again;
 * `noema export otel` sends the episode later.
 *
 * @module
 */
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace";
import type { OtelSettings } from "./config.ts";
import { type ExportFailure, GuardedExporter, otelResource } from "./exporter.ts";
import { EpisodeFollower } from "./follow.ts";

/** Options of {@link OtelLiveSink}. */
export interface OtelLiveSinkOptions {
  /** Least time between two reads of the files, ms. @default {250} */
  intervalMs?: number;
  /** Called once, when the collector does not take the spans. */
  onUnavailable?: (failure: ExportFailure) => void;
}

/** What {@link OtelLiveSink.finish} reports. */
export interface LiveExportResult {
  /** Spans the collector accepted. */
  sent: number;
  /** The failure, when there was one (also when `finish` ran out of time). */
  failed: ExportFailure | null;
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
  readonly #exporter: GuardedExporter;
  readonly #processor: BatchSpanProcessor;
  readonly #interval: number;
  #follower: EpisodeFollower | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #last = 0;
  #finished = false;

  constructor(settings: OtelSettings, options: OtelLiveSinkOptions = {}) {
    this.#settings = settings;
    this.#interval = options.intervalMs ?? 250;
    this.#exporter = new GuardedExporter(settings, options.onUnavailable);
    this.#processor = new BatchSpanProcessor({
      exporter: this.#exporter,
      maxQueueSize: 4096,
      maxExportBatchSize: 512,
      scheduledDelayMillis: 1000,
      exportTimeoutMillis: settings.timeoutMs,
    });
  }

  /**
   * Follows the episode in `dir`. With `skipExisting` (a resumed run, a
   * later hook call), what the files hold already is read, not sent again.
   */
  begin(dir: string, episodeId: string, skipExisting = false): void {
    if (this.#follower !== null) return;
    this.#follower = new EpisodeFollower(dir, episodeId, {
      resource: otelResource(),
      capture: this.#settings.capture,
    });
    if (skipExisting) this.#follower.read();
  }

  /** Something was recorded: read it soon (never now: the run is not slowed). */
  kick(): void {
    if (this.#follower === null || this.#finished || this.#timer !== undefined || this.#exporter.failed) return;
    const wait = Math.max(0, this.#last + this.#interval - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#pump();
    }, wait);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #pump(): void {
    this.#last = Date.now();
    if (this.#follower === null || this.#exporter.failed) return;
    try {
      for (const span of this.#follower.read()) this.#processor.onEnd(span);
    } catch {
      // a file that cannot be read now is read at the next kick, or by `noema export otel`
    }
  }

  /**
   * Sends what is left and, with `root`, the root span (a paused run sends
   * it too: its resume sends it again, ended later, under the same id);
   * waits at most the export timeout.
   */
  async finish(root = true): Promise<LiveExportResult> {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#finished = true;
    if (this.#follower !== null && !this.#exporter.failed) {
      this.#pump();
      const r = root ? this.#follower.root() : null;
      if (r !== null) this.#processor.onEnd(r);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<"late">((resolve) => {
      timer = setTimeout(() => resolve("late"), this.#settings.timeoutMs + 500);
    });
    try {
      const done = await Promise.race([this.#processor.forceFlush().then(() => "done" as const), deadline]);
      void this.#processor.shutdown().catch(() => {});
      const failed = this.#exporter.failed ??
        (done === "late" ? { url: this.#settings.url, message: "the export timed out" } : null);
      return { sent: this.#exporter.sent, failed };
    } finally {
      clearTimeout(timer);
    }
  }
}
