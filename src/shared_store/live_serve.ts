/**
 * The publishing side of a run's live publishing, whatever carries its
 * messages: a process of its own (`live_process.ts`, for a run) or a worker
 * thread (`store_live_worker.ts`, where no process can be started). It watches the
 * episode's files itself (their sizes and times, every `intervalMs`), so the
 * run sends nothing while it goes: a run busy in its own thread may not turn
 * its event loop for seconds, and what it writes to a pipe waits for that.
 * Reading the new lines, hashing the files, reading the catalog's facts and
 * the database client's I/O all happen here.
 *
 * Messages in: `finish {deadlineMs, firstWriteWaitMs}` (the longer wait
 * while the store has not accepted a write yet). Messages out: `unavailable
 * {message, code}` (once, when a publish failed), `published` (once, after
 * the first write the store accepted), `heard` (at once, when `finish` is
 * taken: the run leaves its tail to a process only once it has heard from it
 * after asking), `alone` (after `finish`, from a
 * process that goes on after the run: what is left cannot be sent within the
 * run's deadline), `finished {ok, failed}` (the answer to `finish`).
 *
 * @module
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import type { LivePublisher } from "./live.ts";
import type { SharedStore } from "./shared_store.ts";

/** What starts a run's live publishing. */
export interface LivePublishingStart {
  /** The store's URL (its password is never written anywhere). */
  url: string;
  /** Where the URL came from, for messages (`NOEMA_STORE`, `--store`, `noema.jsonc`). */
  from: string;
  /** The episode's directory. */
  dir: string;
  /** The episode's id. */
  episodeId: string;
  /** The host name for the catalog. */
  host: string;
  /** Least time between two publishes, and between two looks at the files, in ms. @default {250} */
  intervalMs?: number;
  /** Least time between two publishes of the whole files and the catalog row, in ms. @default {2000} */
  filesIntervalMs?: number;
  /** How long to wait for the lease while another process of this host holds it (see `EpisodePublisher`). */
  heldWaitMs?: number;
  /** The run's process: the lease it holds (a resume claims its episode before anything runs) is taken over. */
  adoptPid?: number;
}

/** A message to the publishing side (after it started). */
export type ToLivePublishing = { type: "finish"; deadlineMs: number; firstWriteWaitMs: number };

/** A message from the publishing side. */
export type FromLivePublishing =
  | { type: "unavailable"; message: string; code: string | null }
  | { type: "published" }
  /** At once when `finish` is taken: alive after the run asked (a process killed is never heard). */
  | { type: "heard" }
  /** After `finish`: what is left cannot be sent within the deadline the run asked; the process goes on alone. */
  | { type: "alone" }
  | { type: "finished"; ok: boolean; failed: boolean };

/** What {@link serveLivePublishing} returns. */
export interface LivePublishingServer {
  /** Takes one message, as JSON text (text that is not a message is ignored). */
  take(text: string): void;
  /** Resolves with the answer to `finish` once it is posted. */
  done: Promise<{ ok: boolean; failed: boolean }>;
}

/** What the side that carries the messages may add to {@link serveLivePublishing}. */
export interface LivePublishingHooks {
  /** The deadline a `finish` is given, from the one asked (a process that goes on alone after the run: its own). */
  deadlineOf?: (deadlineMs: number) => number;
  /** Called once, after the first write the store accepted. */
  onFirstWrite?: () => void;
  /** Called when `finish` is asked (before the rest is published). */
  onFinishAsked?: () => void;
  /**
   * Asked before each try for the episode's lease: true when publishing is no longer wanted (the run died before it
   * asked to finish), so that the lease is never taken back from a resume that claimed the episode since.
   */
  abandoned?: () => boolean;
}

/**
 * Serves a run's live publishing (loads the publisher and the database
 * client: lower the priority first).
 *
 * @example
 * ```ts
 * import { serveLivePublishing } from "./live_serve.ts";
 * const start = { url: "postgres://noema@db/noema", from: "NOEMA_STORE", dir, episodeId, host: "ci-7" };
 * const server = serveLivePublishing(start, (m) => console.log(JSON.stringify(m)));
 * server.take(JSON.stringify({ type: "finish", deadlineMs: 100, firstWriteWaitMs: 3000 }));
 * await server.done;
 * ```
 */
export function serveLivePublishing(
  start: LivePublishingStart,
  post: (m: FromLivePublishing) => void,
  hooks: LivePublishingHooks = {},
): LivePublishingServer {
  let published = false;
  // The first write the store accepted only: the run then knows the publisher runs and the store answers.
  const sent = () => {
    if (published) return;
    published = true;
    post({ type: "published" });
    hooks.onFirstWrite?.();
  };
  const unavailable = (e: Error) =>
    post({ type: "unavailable", message: e.message, code: (e as { code?: string }).code ?? null });
  const modules = Promise.all([import("./live.ts"), import("./open.ts"), import("./publish.ts")]);
  const store: Promise<SharedStore> = modules.then(([, { openSharedStore }]) => openSharedStore(start.url, start.from));
  const live: Promise<LivePublisher> = Promise.all([modules, store]).then((
    [[{ LivePublisher }, , { EpisodePublisher }], s],
  ) =>
    new LivePublisher(
      new EpisodePublisher(s, start.dir, start.episodeId, {
        host: start.host,
        onSent: sent,
        heldWaitMs: start.heldWaitMs,
        adoptPid: typeof start.adoptPid === "number" ? start.adoptPid : undefined,
        abandoned: hooks.abandoned,
      }),
      { intervalMs: start.intervalMs, filesIntervalMs: start.filesIntervalMs, onUnavailable: unavailable },
    )
  );
  live.catch((e) => unavailable(e instanceof Error ? e : new Error(String(e))));
  const watching = watchFiles(start.dir, start.intervalMs ?? 250, () => void live.then((l) => l.kick(), () => {}));
  let answered!: (r: { ok: boolean; failed: boolean }) => void;
  const done = new Promise<{ ok: boolean; failed: boolean }>((resolve) => (answered = resolve));
  let finishing = false;
  const finish = async (m: ToLivePublishing) => {
    let ok = false, failed = true;
    // Until the store accepted a first write, the wait is longer: the publisher may still be starting.
    const asked = published ? m.deadlineMs : Math.max(m.deadlineMs, m.firstWriteWaitMs);
    try {
      const l = await live;
      const deadlineMs = hooks.deadlineOf?.(asked) ?? asked;
      // Going on after the run: a run that ended far ahead of this publisher is told at once not to wait.
      if (hooks.deadlineOf !== undefined && !l.fitsIn(m.deadlineMs)) post({ type: "alone" });
      ok = await l.finish(deadlineMs);
      failed = l.failed !== null;
    } catch {
      // could not even open the store: said as unavailable already
    }
    post({ type: "finished", ok, failed });
    answered({ ok, failed });
    // Done (or handed over): the connection closes without holding up the answer.
    void store.then((s) => s.close()).catch(() => {});
  };
  const take = (text: string) => {
    let m: ToLivePublishing;
    try {
      m = JSON.parse(text);
    } catch {
      return; // not a message of the run: ignored
    }
    if (m?.type !== "finish" || finishing) return;
    finishing = true;
    post({ type: "heard" });
    clearInterval(watching);
    hooks.onFinishAsked?.();
    void finish(m);
  };
  return { take, done };
}

/**
 * Calls `changed` whenever the files of `dir` change (a file's size or
 * modification time, a file added or removed), looking every `intervalMs`.
 */
function watchFiles(dir: string, intervalMs: number, changed: () => void): ReturnType<typeof setInterval> {
  let last = "";
  const look = () => {
    const now = filesSignature(dir);
    if (now === last) return;
    last = now;
    changed();
  };
  look();
  return setInterval(look, intervalMs);
}

/** The names, sizes and modification times of the files of `dir` (top level), as one string ("" when it is gone). */
function filesSignature(dir: string): string {
  try {
    return readdirSync(dir).sort().map((name) => {
      const s = statSync(join(dir, name));
      return `${name}:${s.size}:${s.mtimeMs}`;
    }).join("/");
  } catch {
    return ""; // not there yet (a new episode is renamed into place), or gone
  }
}
