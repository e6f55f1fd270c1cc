/**
 * What a run (or a resume) is given to export itself live: an `onEvent` that
 * kicks the {@link OtelLiveSink}, `notices` that write the collector's
 * unavailability into the record as a `runtime` event (`otel.unavailable`),
 * and `finish()` to await after the run. The warning is said once per
 * process on stderr, whatever the number of runs. A collector that cannot be
 * connected to at all is found by a quick look at the start (`probe.ts`),
 * which the run awaits (briefly) before its end, so that a short run says
 * and records it too.
 *
 * @module
 */
import { join } from "node:path";
import process from "node:process";
import type { RuntimeNotices } from "../../runtime/core/options.ts";
import { episodesDir } from "../../store/layout.ts";
import type { OtelSettings } from "./config.ts";
import type { ExportFailure } from "./exporter.ts";
import { type LiveExportResult, OtelLiveSink } from "./live.ts";
import type { BackgroundProcess } from "../../channels.ts";
import { probeCollector } from "./probe.ts";

/** A run's live export: pass `onEvent` and `notices` to the run, await `finish()` after it. */
export interface LiveOtelExport {
  /** Pass to the run as `notices` (see `RunOptions.notices`). */
  notices: RuntimeNotices;
  /** Give it every event the run writes (the export starts at the `start` event, which names the episode). */
  onEvent(e: { phase: string; payload: Record<string, unknown> }): void;
  /**
   * Sends the rest and the root span; `episodeId` names the run when no
   * `start` event was seen. What is not sent in time is sent after the run
   * by the export process (see {@link startLiveOtel}).
   */
  finish(episodeId?: string): Promise<LiveExportResult>;
}

/**
 * The `otel.unavailable` runtime event a run (or the hook server) records when the collector fails.
 *
 * @example
 * ```ts
 * otelUnavailableNotice({ url: "http://127.0.0.1:4318/v1/traces", message: "connect ECONNREFUSED" });
 * ```
 */
export function otelUnavailableNotice(f: ExportFailure): ReturnType<RuntimeNotices["take"]>[number] {
  return { event_type: "otel.unavailable", payload: { endpoint: f.url, error: f.message } };
}

/** How long a run waits at its end, at most, for the look at whether the collector is there (see `probe.ts`). */
const PROBE_BOUND_MS = 1000;

/** Set once this process has warned that the collector is unavailable. */
let warned = false;

/**
 * The one-line warning about a failed export.
 *
 * @example
 * ```ts
 * unavailableMessage({ url: "http://127.0.0.1:4318/v1/traces", message: "connect ECONNREFUSED" });
 * ```
 */
export function unavailableMessage(f: ExportFailure): string {
  return `noema: OpenTelemetry export to ${f.url} failed: ${f.message}; the run is recorded as usual, ` +
    `and noema export otel sends it later`;
}

/**
 * Starts the live export of the run about to start under `root` (or, with
 * `episodeId`, of that episode resumed: what it holds already is not sent
 * again). `warn` says the failure on stderr (once per process). With
 * `exportProcess` (how to start `noema __otel-live`), the export runs
 * in that process, the run waits for it at most 5% of its own time at its
 * end (see `flushWaitMs`), and the process sends what is left alone; without,
 * in a thread of this process, waited for up to the export timeout.
 *
 * @example
 * ```ts
 * const otel = startLiveOtel(settings, ".noema", (m) => console.error(m));
 * const result = await run(task, { onEvent: otel.onEvent, notices: otel.notices });
 * await otel.finish(result.episode_id);
 * ```
 */
export function startLiveOtel(
  settings: OtelSettings,
  root: string,
  warn: (message: string) => void,
  episodeId?: string,
  exportProcess?: BackgroundProcess,
): LiveOtelExport {
  const started = Date.now();
  const waiting: ReturnType<RuntimeNotices["take"]> = [];
  let said = false;
  const say = (f: ExportFailure) => {
    if (said) return;
    said = true;
    waiting.push(otelUnavailableNotice(f));
    if (!warned) warn(unavailableMessage(f));
    warned = true;
  };
  const sink = new OtelLiveSink(settings, { onUnavailable: say, process: exportProcess });
  // A collector that is down is known in a moment: said and recorded even when the run ends before the export's
  // own retries give up. The run waits for this look at most PROBE_BOUND_MS, at its end, if it is still going.
  const probe = probeCollector(settings.url, Math.min(PROBE_BOUND_MS, settings.timeoutMs)).then((f) => {
    if (f) say(f);
  });
  let begun: string | null = null;
  const begin = (id: string, resumed: boolean) => {
    begun = id;
    sink.begin(join(episodesDir(root), id), id, resumed);
  };
  if (episodeId !== undefined) begin(episodeId, true);
  return {
    notices: { take: () => waiting.splice(0), settle: () => probe },
    onEvent(e) {
      if (begun === null) {
        if (e.phase !== "start" || typeof e.payload.episode_id !== "string") return;
        begin(e.payload.episode_id, false);
      }
      sink.kick();
    },
    async finish(id) {
      if (begun === null && id !== undefined) begin(id, false);
      const alone = exportProcess !== undefined; // the export process can go on alone after the run
      let wait = flushWaitMs(started, alone ? undefined : settings.timeoutMs);
      // More left than the export sends in that time: left to it at once, not waited for in vain.
      if (alone && sink.backlogBytes() > wait * BYTES_PER_MS) wait = 0;
      const r = await sink.finish(true, wait);
      if (r.failed) say(r.failed);
      return r;
    },
  };
}

/**
 * What the export sends in a millisecond, at least (reading, building
 * and encoding the spans of the events: about 100 KB/ms on one core).
 */
const BYTES_PER_MS = 50_000;

/**
 * How long the end of a run waits for its export: `NOEMA_OTEL_FLUSH_MS` when
 * set, else 5% of the run's time so far (at least 50 ms): a run is never
 * made more than 5% longer by waiting; the export process sends what is
 * left alone. Without one (a thread), the export timeout.
 */
function flushWaitMs(started: number, fixed?: number): number {
  const v = Number(process.env.NOEMA_OTEL_FLUSH_MS);
  if (process.env.NOEMA_OTEL_FLUSH_MS && Number.isFinite(v) && v >= 0) return v;
  return fixed ?? Math.max(50, (Date.now() - started) * 0.05);
}

/**
 * The notices of several sources as one queue (a run takes one `notices`).
 *
 * @example
 * ```ts
 * run(task, { notices: joinNotices(publishing?.notices, otel?.notices) });
 * ```
 */
export function joinNotices(...all: (RuntimeNotices | undefined)[]): RuntimeNotices | undefined {
  const some = all.filter((n): n is RuntimeNotices => n !== undefined);
  if (some.length <= 1) return some[0];
  return { take: () => some.flatMap((n) => n.take()), settle: () => Promise.all(some.map((n) => n.settle?.())) };
}
