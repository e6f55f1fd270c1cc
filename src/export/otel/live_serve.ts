/**
 * The export side of a live export, whatever carries its messages: a worker
 * thread (`live_worker.ts`, for the hook server) or a process of its own
 * (`live_process.ts`, for a run). Messages are JSON text:
 *
 * - in: `{type: "begin", settings, dir, episodeId, skipTo}`, `{type: "pump", maxBytes}`, `{type: "finish", root, url}`;
 * - out: `{type: "acked", offsets}` (after each batch the collector accepted), `{type: "unavailable", failure}`
 *   (once), `{type: "finished", result}`.
 *
 * The OpenTelemetry SDK is loaded when this starts (not before: the caller
 * lowers its priority first); messages are taken at once and handled in
 * order once it is loaded.
 *
 * @module
 */
import type { OtelSettings } from "./config.ts";
import type { LiveExportCore, LiveExportResult } from "./live_core.ts";

/** A message from the export side. */
export type FromLiveExport =
  | { type: "acked"; offsets: number[] }
  | { type: "unavailable"; failure: { url: string; message: string } }
  | { type: "finished"; result: LiveExportResult };

/** What {@link serveLiveExport} returns: where its messages go in. */
export interface LiveExportServer {
  /** Takes one message (JSON text; text that is not JSON is ignored). */
  take(text: string): void;
  /** Resolves once a `finish` was handled (its `finished` posted). */
  done: Promise<void>;
}

/**
 * Serves a live export: `post` sends a message back; `onFinishAsked` runs
 * at once when `finish` comes (before the SDK is loaded, if it is not yet).
 *
 * @example
 * ```ts
 * import { parentPort } from "node:worker_threads";
 * const server = serveLiveExport((m) => parentPort!.postMessage(JSON.stringify(m)));
 * parentPort!.on("message", (text: string) => server.take(text));
 * ```
 */
export function serveLiveExport(
  post: (m: FromLiveExport) => void,
  onFinishAsked: () => void = () => {},
): LiveExportServer {
  const loading = import("./live_core.ts");
  let core: LiveExportCore | null = null;
  let ready: Promise<unknown> = loading;
  let finished!: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const handle = (mod: typeof import("./live_core.ts"), m: Record<string, unknown> & { type: string }) => {
    if (m.type === "begin") {
      core = new mod.LiveExportCore(
        m.settings as OtelSettings,
        (failure) => post({ type: "unavailable", failure }),
        (offsets) => post({ type: "acked", offsets }),
      );
      try {
        core.begin(m.dir as string, m.episodeId as string, m.skipTo as number[] | null);
      } catch {
        // an episode that cannot be read yet is read at the next pump
      }
      return;
    }
    if (m.type === "pump") {
      return void core?.pump(typeof m.maxBytes === "number" ? m.maxBytes : Infinity).catch(() => {});
    }
    if (m.type !== "finish") return;
    return (core?.finish(m.root as boolean) ?? Promise.resolve({ sent: 0, failed: null })).then(
      (result) => post({ type: "finished", result }),
      (e) =>
        post({
          type: "finished",
          result: { sent: 0, failed: { url: String(m.url), message: String(e?.message ?? e) } },
        }),
    ).finally(finished);
  };
  const take = (text: string) => {
    let m;
    try {
      m = JSON.parse(text);
    } catch {
      return; // not a message: ignored
    }
    if (m?.type === "finish") onFinishAsked();
    ready = ready.then(() => loading).then(
      (mod) => handle(mod, m),
      (e) => { // the SDK could not be loaded: said once, as a collector that is not there
        const failure = { url: String(m.settings?.url ?? m.url ?? ""), message: `the export failed to start: ${e}` };
        if (m.type === "finish") {
          post({ type: "finished", result: { sent: 0, failed: failure } });
          finished();
        } else post({ type: "unavailable", failure });
      },
    );
  };
  return { take, done };
}
