/**
 * The live export of the hook path (an agent session governed by `noema
 * install-hooks`): the resident hook server exports the episodes it serves.
 * A call answered in its own process exports nothing itself (it would make
 * the agent wait for the collector); the server follows the episode's files
 * from their start, so that call's events are in the trace too. When the
 * server stops, it sends what is left and each episode's root span, waiting
 * at most the export timeout. A collector that fails is not retried by the
 * server; `onUnavailable` hears it once (the server writes it to its log and
 * into the episode, as an `otel.unavailable` runtime event at its next call),
 * and `noema export otel` sends the episodes later.
 *
 * @module
 */
import { join } from "node:path";
import { episodesDir } from "../../store/layout.ts";
import { otelSettings } from "./config.ts";
import type { ExportFailure } from "./exporter.ts";
import { OtelLiveSink } from "./live.ts";

/** The server's exporter: `served(root, id)` after each answer, `close()` when it stops. */
export interface HookOtelExporter {
  served(root: string, episodeId: string): void;
  close(): Promise<void>;
}

/**
 * The hook server's exporter, when `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
 * traces variable) is set; null otherwise, or when the settings are bad.
 *
 * @example
 * ```ts
 * const otel = hookOtelExporter((id, f) => console.error(`${id}: ${f.message}`));
 * otel?.served(".noema", "ep_01J…");
 * await otel?.close();
 * ```
 */
export function hookOtelExporter(
  onUnavailable: (episodeId: string, failure: ExportFailure) => void = () => {},
): HookOtelExporter | null {
  let settings;
  try {
    settings = otelSettings();
  } catch {
    return null; // a bad variable never fails a hook call
  }
  if (settings === null) return null;
  const s = settings;
  const sinks = new Map<string, OtelLiveSink>();
  let down = false;
  return {
    served(root, id) {
      if (down) return;
      const key = `${root}\0${id}`;
      let sink = sinks.get(key);
      if (!sink) {
        sink = new OtelLiveSink(s, {
          onUnavailable: (f) => {
            if (!down) onUnavailable(id, f);
            down = true;
          },
        });
        sink.begin(join(episodesDir(root), id), id);
        sinks.set(key, sink);
      }
      sink.kick();
    },
    async close() {
      await Promise.all([...sinks].map(async ([key, sink]) => {
        const r = await sink.finish().catch(() => null);
        if (r?.failed && !down) onUnavailable(key.split("\0")[1], r.failed);
        if (r?.failed) down = true;
      }));
    },
  };
}
