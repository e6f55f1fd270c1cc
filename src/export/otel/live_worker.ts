/**
 * The thread of a live export (started by {@link OtelLiveSink} in `live.ts`):
 * it follows the episode's files and sends their spans, so the run's own
 * thread only says "something was written". Messages are JSON text:
 *
 * - in: `{type: "begin", settings, dir, episodeId, skipTo}`, `{type: "pump", maxBytes}`, `{type: "finish", root, url}`;
 * - out: `{type: "acked", offsets}` (after each batch the collector accepted), `{type: "unavailable", failure}`
 *   (once), `{type: "finished", result}`.
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import { BACKGROUND_NICE, lowerThisThread, unidleThread } from "../../priority.ts";
import type { OtelSettings } from "./config.ts";
import type { LiveExportCore } from "./live_core.ts";

// First, before the OpenTelemetry SDK is loaded: on a busy machine the run's own thread goes first.
// While the run goes, only on CPU time nothing else wants; at its end (when the run waits for it), a normal share.
const tid = lowerThisThread(BACKGROUND_NICE, true);
const loading = import("./live_core.ts");
let core: LiveExportCore | null = null;

function post(m: unknown): void {
  parentPort!.postMessage(JSON.stringify(m));
}

// Messages are taken at once and handled in order once the SDK is loaded.
let ready: Promise<unknown> = loading;
parentPort!.on("message", (text: string) => {
  const m = JSON.parse(text);
  if (m.type === "finish") unidleThread(tid); // at once, even before the SDK is loaded
  ready = ready.then(() => loading).then(
    (mod) => handle(mod, m),
    (e) => { // the SDK could not be loaded: said once, as a collector that is not there
      const failure = { url: String(m.settings?.url ?? m.url ?? ""), message: `the export thread failed: ${e}` };
      post(
        m.type === "finish"
          ? { type: "finished", result: { sent: 0, failed: failure } }
          : { type: "unavailable", failure },
      );
    },
  );
});

function handle(mod: typeof import("./live_core.ts"), m: Record<string, unknown> & { type: string }): void {
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
  } else if (m.type === "pump") void core?.pump(typeof m.maxBytes === "number" ? m.maxBytes : Infinity).catch(() => {});
  else if (m.type === "finish") {
    const done = core?.finish(m.root as boolean) ?? Promise.resolve({ sent: 0, failed: null });
    done.then(
      (result) => post({ type: "finished", result }),
      (e) => post({ type: "finished", result: { sent: 0, failed: { url: m.url, message: String(e?.message ?? e) } } }),
    );
  }
}
