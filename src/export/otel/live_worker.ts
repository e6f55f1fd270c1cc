/**
 * The thread of a live export (started by {@link OtelLiveSink} in `live.ts`):
 * it follows the episode's files and sends their spans, so the run's own
 * thread only says "something was written". Messages are JSON text:
 *
 * - in: `{type: "begin", settings, dir, episodeId, skipTo}`, `{type: "pump"}`, `{type: "finish", root, url}`;
 * - out: `{type: "acked", offsets}` (after each batch the collector accepted), `{type: "unavailable", failure}`
 *   (once), `{type: "finished", result}`.
 *
 * @module
 */
import { readlinkSync } from "node:fs";
import { setPriority } from "node:os";
import { parentPort } from "node:worker_threads";
import { LiveExportCore } from "./live_core.ts";

let core: LiveExportCore | null = null;

/**
 * Lowers this thread's priority (Linux: a thread's id names it to
 * `setpriority`), so that on a busy machine the run's own thread goes first.
 * Nothing happens where that is not possible.
 */
function yieldToTheRun(): void {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (Number.isInteger(tid) && tid > 0) setPriority(tid, 10);
  } catch {
    // not Linux, or not allowed: the export runs at the run's priority
  }
}
yieldToTheRun();

function post(m: unknown): void {
  parentPort!.postMessage(JSON.stringify(m));
}

parentPort!.on("message", (text: string) => {
  const m = JSON.parse(text);
  if (m.type === "begin") {
    core = new LiveExportCore(
      m.settings,
      (failure) => post({ type: "unavailable", failure }),
      (offsets) => post({ type: "acked", offsets }),
    );
    try {
      core.begin(m.dir, m.episodeId, m.skipTo);
    } catch {
      // an episode that cannot be read yet is read at the next pump
    }
  } else if (m.type === "pump") void core?.pump().catch(() => {});
  else if (m.type === "finish") {
    const done = core?.finish(m.root) ?? Promise.resolve({ sent: 0, failed: null });
    done.then(
      (result) => post({ type: "finished", result }),
      (e) => post({ type: "finished", result: { sent: 0, failed: { url: m.url, message: String(e?.message ?? e) } } }),
    );
  }
});
