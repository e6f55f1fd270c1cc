/**
 * The worker side of {@link WorkerLivePublisher} (`live_thread.ts`): a run's
 * live publishing off its main thread. Reading the new lines, hashing the
 * files, reading the catalog's facts and the database client's I/O all
 * happen here, so the run's event loop only posts "kick" messages.
 *
 * Messages in: `start {url, from, dir, episodeId, host, intervalMs?,
 * filesIntervalMs?}` (once), `kick`, `finish {deadlineMs, firstWriteWaitMs}`
 * (the longer wait while the store has not accepted a write yet). Messages out:
 * `unavailable {message, code}` (once, when a publish failed), `published`
 * (once, after the first write the store accepted), `finished {ok, failed}`
 * (the answer to `finish`).
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import { lowerThisThread } from "../priority.ts";
import type { LivePublisher } from "./live.ts";
import type { SharedStore } from "./shared_store.ts";

/** A message to the worker. */
export type ToLiveWorker =
  | {
    type: "start";
    url: string;
    from: string;
    dir: string;
    episodeId: string;
    host: string;
    intervalMs?: number;
    filesIntervalMs?: number;
  }
  | { type: "kick" }
  | { type: "finish"; deadlineMs: number; firstWriteWaitMs: number };

/** A message from the worker. */
export type FromLiveWorker =
  | { type: "unavailable"; message: string; code: string | null }
  | { type: "published" }
  | { type: "finished"; ok: boolean; failed: boolean };

// First, before the publisher and the database client are loaded: on a busy machine the run's own thread goes first.
lowerThisThread();
const modules = Promise.all([import("./live.ts"), import("./open.ts"), import("./publish.ts")]);
const port = parentPort!;
let store: Promise<SharedStore> | null = null;
let live: Promise<LivePublisher> | null = null;
let published = false;

const post = (m: FromLiveWorker) => port.postMessage(m);
const unavailable = (e: Error) =>
  post({ type: "unavailable", message: e.message, code: (e as { code?: string }).code ?? null });

port.on("message", (m: ToLiveWorker) => {
  if (m.type === "start") {
    store = modules.then(([, { openSharedStore }]) => openSharedStore(m.url, m.from));
    // The first write the store accepted only: the run's thread then knows the worker runs and the store answers.
    const sent = () => {
      if (published) return;
      published = true;
      post({ type: "published" });
    };
    live = Promise.all([modules, store]).then(([[{ LivePublisher }, , { EpisodePublisher }], s]) =>
      new LivePublisher(new EpisodePublisher(s, m.dir, m.episodeId, { host: m.host, onSent: sent }), {
        intervalMs: m.intervalMs,
        filesIntervalMs: m.filesIntervalMs,
        onUnavailable: unavailable,
      })
    );
    live.catch((e) => unavailable(e instanceof Error ? e : new Error(String(e))));
  } else if (m.type === "kick") {
    void live?.then((l) => l.kick(), () => {});
  } else if (m.type === "finish") {
    // Until the store accepted a first write, the wait is longer: the worker may still be starting.
    void finish(published ? m.deadlineMs : Math.max(m.deadlineMs, m.firstWriteWaitMs));
  }
});

async function finish(deadlineMs: number): Promise<void> {
  let ok = false, failed = true;
  try {
    const l = await live!;
    ok = await l.finish(deadlineMs);
    failed = l.failed !== null;
  } catch {
    // could not even open the store: said as unavailable already
  }
  post({ type: "finished", ok, failed });
  // Done (or handed over): the connection closes without holding up the answer.
  void store?.then((s) => s.close()).catch(() => {});
}
