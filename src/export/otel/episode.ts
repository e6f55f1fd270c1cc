/**
 * Exporting recorded episodes after the fact (`noema export otel`): each
 * episode's files read once into its spans (the same trace as a live export
 * of it), then sent to a collector by the official exporter, or written as
 * OTLP/JSON to a file.
 *
 * @module
 */
import type { ReadableSpan } from "@opentelemetry/sdk-trace";
import type { OtelSettings } from "./config.ts";
import { type ExportFailure, GuardedExporter, otelResource, otlpJson } from "./exporter.ts";
import { EpisodeFollower } from "./follow.ts";

/** An episode to export: its id and directory. */
export interface EpisodeRef {
  id: string;
  dir: string;
}

/** One exported episode, for `--json`. */
export interface EpisodeExport {
  episode_id: string;
  trace_id: string;
  spans: number;
}

/**
 * The spans of a recorded episode: its tool and model spans, then the root.
 *
 * @example
 * ```ts
 * const spans = episodeSpans({ id: "ep_01J…", dir: ".noema/episodes/ep_01J…" });
 * ```
 */
export function episodeSpans(
  ref: EpisodeRef,
  capture = false,
): { traceId: string; spans: ReadableSpan[] } {
  const f = new EpisodeFollower(ref.dir, ref.id, { resource: otelResource(), capture });
  const spans = f.read();
  const root = f.root();
  if (root !== null) spans.push(root);
  return { traceId: f.spans.traceId, spans };
}

/**
 * Sends episodes to the collector, one request per 512 spans at most, each
 * episode read 1 MiB of its files at a time (the memory held is bounded
 * however long the episode); resolves with what was sent, or the failure of
 * the first request refused.
 *
 * @example
 * ```ts
 * const r = await sendEpisodes([{ id, dir }], otelSettings({ endpoint: "http://127.0.0.1:4318" })!);
 * ```
 */
export async function sendEpisodes(
  refs: readonly EpisodeRef[],
  settings: OtelSettings,
): Promise<{ episodes: EpisodeExport[]; failed: ExportFailure | null }> {
  const exporter = new GuardedExporter(settings);
  const episodes: EpisodeExport[] = [];
  try {
    for (const ref of refs) {
      const f = new EpisodeFollower(ref.dir, ref.id, { resource: otelResource(), capture: settings.capture });
      let sent = 0;
      const send = async (spans: ReadableSpan[]) => {
        for (let i = 0; i < spans.length; i += 512) {
          const failed = await exporter.send(spans.slice(i, i + 512));
          if (failed) return failed;
        }
        sent += spans.length;
        return null;
      };
      let failed: ExportFailure | null = null;
      do failed = await send(f.read(1 << 20)); while (failed === null && f.more);
      const root = f.root();
      if (failed === null && root !== null) failed = await send([root]);
      if (failed) return { episodes, failed };
      episodes.push({ episode_id: ref.id, trace_id: f.spans.traceId, spans: sent });
    }
    return { episodes, failed: null };
  } finally {
    void exporter.shutdown().catch(() => {});
  }
}

/**
 * The OTLP/JSON request of episodes (what `--file` writes), with a summary of each.
 *
 * @example
 * ```ts
 * const { text } = episodesJson([{ id, dir }]);
 * ```
 */
export function episodesJson(
  refs: readonly EpisodeRef[],
  capture = false,
): { text: string; episodes: EpisodeExport[] } {
  const all: ReadableSpan[] = [];
  const episodes: EpisodeExport[] = [];
  for (const ref of refs) {
    const { traceId, spans } = episodeSpans(ref, capture);
    all.push(...spans);
    episodes.push({ episode_id: ref.id, trace_id: traceId, spans: spans.length });
  }
  return { text: otlpJson(all), episodes };
}
