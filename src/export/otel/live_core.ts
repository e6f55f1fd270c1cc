/**
 * The work of a live export, done in its own thread (see `live_worker.ts`):
 * the episode's files are the queue. Each `pump()` reads the lines written
 * since the last one, at most 1 MiB at a time, hands their spans to the
 * SDK's `BatchSpanProcessor` (batches of 512 sent by the official OTLP
 * exporter) and waits for them to be sent before reading more, so nothing is
 * dropped and the memory held stays bounded however fast the run writes. A
 * collector that is down, slow or refusing is reported once
 * (`onUnavailable`) and then not tried again.
 *
 * @module
 */
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace";
import type { OtelSettings } from "./config.ts";
import { type ExportFailure, GuardedExporter, otelResource } from "./exporter.ts";
import { EpisodeFollower } from "./follow.ts";

/** Spans the batch processor holds at most (it drops what comes beyond). */
const QUEUE_SIZE = 4096;

/** What {@link LiveExportCore.finish} reports. */
export interface LiveExportResult {
  /** Spans the collector accepted. */
  sent: number;
  /** The failure, when there was one (also when the export ran out of time). */
  failed: ExportFailure | null;
}

/**
 * One episode's live export, in the thread that does it.
 *
 * @example
 * ```ts
 * const core = new LiveExportCore(settings, (f) => console.error(f.message));
 * core.begin(".noema/episodes/ep_01J…", "ep_01J…", null);
 * await core.pump();
 * await core.finish(true);
 * ```
 */
export class LiveExportCore {
  readonly #settings: OtelSettings;
  readonly #exporter: GuardedExporter;
  readonly #processor: BatchSpanProcessor;
  #follower: EpisodeFollower | null = null;
  #pumping: Promise<void> | null = null;
  #again = 0; // the budget of a pump asked for while one runs

  readonly #onAcked: (offsets: number[]) => void;

  /**
   * `onAcked` is told, after each batch the collector accepted, the file
   * offsets up to which every span was sent (where a hand-over goes on).
   */
  constructor(
    settings: OtelSettings,
    onUnavailable: (f: ExportFailure) => void = () => {},
    onAcked: (offsets: number[]) => void = () => {},
  ) {
    this.#settings = settings;
    this.#onAcked = onAcked;
    this.#exporter = new GuardedExporter(settings, onUnavailable);
    this.#processor = new BatchSpanProcessor({
      exporter: this.#exporter,
      maxQueueSize: QUEUE_SIZE,
      maxExportBatchSize: 512,
      scheduledDelayMillis: 1000,
      exportTimeoutMillis: settings.timeoutMs,
    });
  }

  /**
   * Follows the episode in `dir`. With `skipTo` (a resumed run: the sizes of
   * its files when it resumed), what the files held then is read, not sent
   * again.
   */
  begin(dir: string, episodeId: string, skipTo: readonly number[] | null = null): void {
    if (this.#follower !== null) return;
    this.#follower = new EpisodeFollower(dir, episodeId, {
      resource: otelResource(),
      capture: this.#settings.capture,
    });
    if (skipTo !== null) this.#follower.skipTo(skipTo);
  }

  /**
   * Sends what was written since the last pump, at most about `maxBytes` of
   * it (one pump at a time; one asked for meanwhile runs after it, with the
   * budget it was given).
   */
  pump(maxBytes = Infinity): Promise<void> {
    if (this.#pumping) {
      this.#again = Math.max(this.#again, maxBytes);
      return this.#pumping;
    }
    this.#pumping = (async () => {
      let budget = maxBytes;
      do {
        this.#again = 0;
        await this.#drain(budget);
        budget = this.#again;
      } while (budget > 0);
    })().finally(() => (this.#pumping = null));
    return this.#pumping;
  }

  async #drain(maxBytes: number): Promise<void> {
    const f = this.#follower;
    if (f === null) return;
    const end = f.offsets().reduce((a, b) => a + b, 0) + maxBytes;
    do {
      if (this.#exporter.failed) return;
      let spans;
      try {
        spans = f.read(1 << 20);
      } catch {
        return; // a file that cannot be read now is read at the next pump, or by `noema export otel`
      }
      const offsets = f.offsets();
      // Never more than the processor's queue holds (it drops the rest): a chunk of short lines has many spans.
      for (let i = 0; i < spans.length; i += QUEUE_SIZE) {
        for (const span of spans.slice(i, i + QUEUE_SIZE)) this.#processor.onEnd(span);
        if (!(await this.#flush())) return;
      }
      this.#onAcked(offsets);
    } while (f.more && f.offsets().reduce((a, b) => a + b, 0) < end);
  }

  /** Sends the spans queued; false when the collector did not take them (the failure is then reported). */
  async #flush(): Promise<boolean> {
    try {
      await this.#processor.forceFlush();
      await this.#exporter.idle();
    } catch (e) {
      this.#exporter.fail(e instanceof Error ? e : new Error(String(e))); // the processor's timeout
    }
    return this.#exporter.failed === null;
  }

  /** Sends what is left and, with `root`, the root span; resolves when the collector answered. */
  async finish(root: boolean): Promise<LiveExportResult> {
    await this.pump();
    const r = root && this.#follower !== null && !this.#exporter.failed ? this.#follower.root() : null;
    if (r !== null) this.#processor.onEnd(r);
    await this.#flush();
    await this.#processor.shutdown().catch(() => {});
    return { sent: this.#exporter.sent, failed: this.#exporter.failed };
  }
}
