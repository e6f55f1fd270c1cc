/**
 * The CLI side of publishing: a run with a shared store publishes its episode
 * live, from a process of its own that goes on after the run with what is
 * left (see `BackgroundLivePublisher`); an episode whose publishing did not
 * finish is marked pending, and any later noema command with a store
 * publishes the pending ones after it (bounded in time, never failing the
 * command; after a command that ends a run, a background sync does).
 *
 * @module
 */
import { spawn } from "node:child_process";
import { closeSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { noemaArgv } from "../agents/noema_command.ts";
import { BACKGROUND_NICE, lowerProcess } from "../priority.ts";
import { LivePublisher } from "../shared_store/live.ts";
import { BackgroundLivePublisher } from "../shared_store/live_background.ts";
import { LIVE_PUBLISH_COMMAND } from "../shared_store/live_command.ts";
import { childEnv } from "../plugins/process.ts";
import { publishingHost } from "../shared_store/host.ts";
import { maskStoreUrl, storeKind } from "../shared_store/store_url.ts";
import { openSharedStore } from "../shared_store/open.ts";
import { openHandoffLog } from "../shared_store/handoff_log.ts";
import { clearPending, handedOffTo, markHandedOff, markPending, pendingIds } from "../shared_store/pending.ts";
import { clearPublished, markPublished } from "../shared_store/published.ts";
import { EpisodePublisher } from "../shared_store/publish.ts";
import { claimEpisode, refusePulledCopy } from "../shared_store/claim.ts";
import { EXIT, NoemaError } from "../errors.ts";
import type { SharedStore } from "../shared_store/shared_store.ts";
import { episodesDir } from "../store/layout.ts";
import type { Output } from "./output.ts";
import type { RuntimeNotices } from "../runtime/core/options.ts";

/**
 * How long a finished run waits for its last publish before leaving the rest
 * to its publishing process (or a background sync): `NOEMA_STORE_FLUSH_MS`,
 * default 100 (raise it on ephemeral CI runners that kill what a job leaves
 * running).
 */
function flushWaitMs(): number {
  const v = Number(process.env.NOEMA_STORE_FLUSH_MS);
  return process.env.NOEMA_STORE_FLUSH_MS && Number.isFinite(v) && v >= 0 ? v : 100;
}

/**
 * Starts `noema sync <id>` in the background, detached, to publish what a
 * finished run could not in time. The episode stays marked pending until the
 * sync succeeds, so a sync that dies loses nothing.
 *
 * @example
 * ```ts
 * // handOff(".noema", "ep_01…", { url: "postgres://noema@db/noema", from: "NOEMA_STORE" });
 * ```
 */
export function handOff(root: string, id: string | readonly string[], pick: { url: string; from: string }): void {
  const ids = typeof id === "string" ? [id] : id;
  const [cmd, ...args] = noemaArgv();
  // No terminal: what it prints (what it published, or why it could not) goes to the hand-over log.
  const log = openHandoffLog(root, ids);
  let child;
  try {
    child = spawn(cmd, [...args, "--root", root, "sync", "--handoff", ...ids], {
      detached: true,
      stdio: log === null ? "ignore" : ["ignore", log, log],
      env: { ...process.env, NOEMA_STORE: pick.url },
    });
  } finally {
    if (log !== null) closeSync(log);
  }
  child.on("error", () => {}); // the marker stays: the next command or noema sync publishes it
  // Behind the runs of this machine (nice 10), but its session's autogroup is not lowered: the run it finishes has
  // ended, and a lowered group got so little CPU beside other sessions' work (a test suite's runners, two busy loops)
  // that publishing a run's tail took minutes.
  lowerProcess(child.pid, BACKGROUND_NICE, false);
  child.unref();
  // The next commands leave it to that process while it lives (they would race it for the episode's lease).
  for (const one of ids) {
    if (child.pid !== undefined) handedTo(root, one, child.pid);
    else handedOver.add(`${root}\0${one}`);
  }
}

/** Leaves episode `id` to the process `pid` that publishes it (this process's after-publish, and later commands too). */
function handedTo(root: string, id: string, pid: number): void {
  handedOver.add(`${root}\0${id}`);
  markHandedOff(root, id, pid);
}

/**
 * Episodes (`root\0id`) this process handed to a background sync: the
 * command's own after-publish leaves them to it, so the run exits at once
 * instead of publishing them itself.
 */
const handedOver = new Set<string>();

/**
 * How long a resume waits, at most, for the publishing process of the episode's run before (killed, say) to let the
 * episode's lease go: that process's own deadline to publish alone. It exits once its run has gone, but in the idle
 * class on a busy machine it may take minutes to be scheduled.
 */
const PUBLISHER_WAIT_MS = 10 * 60_000;

/** The ids marked pending under `root`, but those handed to a background sync (by this process, or still running). */
function pendingHere(root: string): string[] {
  return pendingIds(root).filter((id) => !handedOver.has(`${root}\0${id}`) && handedOffTo(root, id) === null);
}

/**
 * Where the store is, as noema says it: a shared directory's URL as given, a database URL with its password masked.
 *
 * @example
 * ```ts
 * storeLocation({ url: "postgres://noema:pw@db/noema", from: "NOEMA_STORE" }); // the password masked
 * ```
 */
export function storeLocation(pick: { url: string; from: string }): string {
  return storeKind(pick.url, pick.from) === "files" ? pick.url : maskStoreUrl(pick.url);
}

/**
 * The `store.unavailable` runtime event a run (or the hook server) records when the store fails.
 *
 * @example
 * ```ts
 * storeUnavailableNotice("postgres://noema:***@db/noema", new Error("connect ECONNREFUSED"));
 * ```
 */
export function storeUnavailableNotice(location: string, err: Error): ReturnType<RuntimeNotices["take"]>[number] {
  return {
    event_type: "store.unavailable",
    payload: { store: location, error: err.message, code: (err as { code?: string }).code ?? null },
  };
}

/** An error about the store, naming it once. */
function aboutStore(location: string, e: Error): string {
  return e.message.includes(location) ? e.message : `shared store ${location}: ${e.message}`;
}

/** Set once this process has said the store is unreachable: it says so once. */
let saidDown = false;

/** A run's live publishing: pass `onEvent` to the run, and await `finish()` after it. */
export interface LiveRunPublishing {
  /** Pass to the run as `notices`: the store's unreachability, written into the record as a `runtime` event. */
  notices: RuntimeNotices;
  /** Give it every event the run writes (publishing starts at the `start` event, which names the episode). */
  onEvent(e: { phase: string; payload: Record<string, unknown> }): void;
  /**
   * Publishes what is left, closes the store; true when all was published.
   * `episodeId` names the run when no `start` event was seen (a driver that
   * reports no events): it is then published whole. `paused`: the run waits
   * for a decision that approvers anywhere must see, so the last publish may
   * take up to 10 s before it is handed over (a finished run's waits at most
   * `NOEMA_STORE_FLUSH_MS`).
   */
  finish(episodeId?: string, paused?: boolean): Promise<boolean>;
}

/**
 * Starts live publishing for the run about to start under `root`.
 *
 * @example
 * ```ts
 * const live = await startLivePublishing(out, root, { url, from: "NOEMA_STORE" });
 * await run(task, { onEvent: live.onEvent });
 * await live.finish();
 * ```
 */
export function startLivePublishing(
  out: Output,
  root: string,
  pick: { url: string; from: string },
  episodeId?: string,
): Promise<LiveRunPublishing> {
  // A URL noema cannot use is a usage error now, before the run; the client itself loads where publishing runs.
  const location = storeLocation(pick);
  let store: Promise<SharedStore> | null = null; // opened in this thread only when publishing runs here
  const openStore = () => store ??= openSharedStore(pick.url, pick.from);
  let live: Live | null = null;
  let id: string | null = null;
  const waiting: ReturnType<RuntimeNotices["take"]> = [];
  const onUnavailable = (err: Error) => {
    waiting.push(storeUnavailableNotice(location, err));
    if (!saidDown) {
      out.note(
        `noema: ${aboutStore(location, err)}; the run goes on locally, ` +
          `and noema sync (or the next noema command) publishes it`,
      );
    }
    saidDown = true;
  };
  const begin = (episode: string) => {
    id = episode;
    const dir = join(episodesDir(root), id);
    const started = BackgroundLivePublisher.start({
      url: pick.url,
      from: pick.from,
      dir,
      episodeId: id,
      host: publishingHost(),
      adoptPid: process.pid, // a resume took the episode's lease before it ran: the publisher goes on with it
    }, {
      onUnavailable,
      // noema's own process, without noema's secrets in its environment (the store's URL comes with its start). At
      // the run's priority until its first write: a store that cannot be reached is found out while even a short run
      // goes, and said in its record; then in the idle class (see live_process.ts).
      process: { argv: [...noemaArgv(), LIVE_PUBLISH_COMMAND], env: childEnv(process.env), priority: "self" },
    });
    // Marked as not fully published until it is (a crash leaves the marker for the next command); a marker that
    // names the publishing process leaves the episode to it while it lives (it goes on after the run).
    if (started?.pid != null) handedTo(root, id, started.pid);
    else markPending(root, id);
    markPublished(root, id, location); // decisions on it then go through the store (see published.ts)
    live = started ?? inThread(openStore(), dir, id, onUnavailable);
  };
  if (episodeId !== undefined) begin(episodeId);
  const close = async () => {
    if (store !== null) await (await store).close();
  };
  return Promise.resolve({
    notices: { take: () => waiting.splice(0) },
    onEvent(e) {
      if (live === null) {
        if (e.phase !== "start" || typeof e.payload.episode_id !== "string") return;
        begin(e.payload.episode_id);
      }
      live!.kick?.(); // a publisher beside the run watches the files itself
    },
    async finish(episodeId?: string, paused = false) {
      if (live === null && episodeId !== undefined) begin(episodeId);
      try {
        const l = live as Live | null;
        const ok = l === null ? true : await l.finish(paused ? Math.max(10_000, flushWaitMs()) : flushWaitMs());
        if (!paused && id !== null) clearPublished(root, id); // ended: no decision is left to take
        if (ok && id !== null) clearPending(root, id);
        // Not done in time, the store still reachable: its process goes on alone (the episode marked as handed to
        // it), else a background sync finishes it; the run does not wait, not even for the connection to close
        // under the publish it cut short.
        else if (id !== null && l !== null && l.failed === null) {
          if (!(l instanceof BackgroundLivePublisher && l.continuesAlone)) handOff(root, id, pick);
          void close().catch(() => {});
          return ok;
        }
        // The store failed: what is left is anyone's to publish (a marker naming a process that gave up would keep
        // the next command from it while that process exits).
        if (!ok && id !== null && l?.failed) markPending(root, id);
        // A store that failed may leave a stalled connection: closing it is not waited for either.
        if (ok) await close().catch(() => {});
        else void close().catch(() => {});
        return ok;
      } catch (e) {
        await close().catch(() => {});
        throw e;
      }
    },
  });
}

/** What a run's live publishing does, in a worker thread or in the run's own. */
interface Live {
  /** Something was written (a publisher in this thread only: one beside it watches the files). */
  kick?(): void;
  finish(deadlineMs: number): Promise<boolean>;
  readonly failed: Error | null;
}

/** Live publishing in this thread (where no worker thread can be started), once the store is open. */
function inThread(store: Promise<SharedStore>, dir: string, id: string, onUnavailable: (e: Error) => void): Live {
  let live: LivePublisher | null = null;
  let openError: Error | null = null;
  const ready = store.then(
    (s) => live = new LivePublisher(new EpisodePublisher(s, dir, id), { onUnavailable }),
    (e) => {
      openError = e instanceof Error ? e : new Error(String(e));
      onUnavailable(openError);
    },
  );
  return {
    kick: () => live ? live.kick() : void ready.then(() => live?.kick()),
    finish: async (deadlineMs) => {
      await ready;
      return live ? await live.finish(deadlineMs) : false;
    },
    get failed() {
      return live?.failed ?? openError;
    },
  };
}

/**
 * Publishes the episodes marked pending under `root`; stops at the first
 * store failure or after `deadlineMs`. Returns the ids published.
 *
 * @example
 * ```ts
 * await publishPending(store, ".noema");
 * ```
 */
export async function publishPending(store: SharedStore, root: string, deadlineMs = 10_000): Promise<string[]> {
  const end = Date.now() + deadlineMs;
  const done: string[] = [];
  for (const id of pendingHere(root)) {
    if (Date.now() > end) break;
    // The publishing process of the run that left it pending may still hold its lease while it exits: waited for.
    const heldWaitMs = Math.max(0, end - Date.now());
    await new EpisodePublisher(store, join(episodesDir(root), id), id, { heldWaitMs }).publish();
    clearPending(root, id);
    done.push(id);
  }
  return done;
}

/**
 * The commands that end a run (`run`, `resume`, `approve`/`reject`, which may
 * resume): their exit waits at most the run's flush bound
 * (`NOEMA_STORE_FLUSH_MS`), so the episodes earlier runs left pending are
 * published by a background sync, not by them.
 */
const RUN_ENDING = new Set(["run", "resume", "approve", "reject", "mcp"]);

/**
 * After a command, with a store configured: publishes the episodes marked
 * pending (a run that could not reach the store, or was killed while it
 * published). A store still unreachable is said once on stderr; the command's
 * own exit code is kept. After a command that ended a run, they are handed to
 * a background `noema sync` instead: however many they are, and however slow
 * the store, the run's exit is not held by them. `store`, `sync`, `pull` (they
 * deal with the store themselves) and `policy backtest` (it writes nothing) never do.
 * After a command that `failed`, only a run-ending one hands them on (a
 * resume refused because the run is sealed); others publish nothing.
 *
 * @example
 * ```ts
 * // program.hook("postAction", (_p, action) => publishPendingAfter(action, out));
 * ```
 */
export async function publishPendingAfter(
  cmd: { name(): string; optsWithGlobals(): Record<string, unknown>; parent?: { name(): string } | null },
  out: Output,
  pick: { url: string; from: string },
  root: string,
  options: { failed?: boolean } = {},
): Promise<void> {
  // Not after the store's own commands (`store status` shows what is pending; it does not publish it).
  const own = ["store", "sync", "pull", "backtest"].includes(cmd.name()) || cmd.parent?.name() === "store";
  if (saidDown || own || pendingHere(root).length === 0) return;
  if (RUN_ENDING.has(cmd.name())) return handOff(root, pendingHere(root), pick);
  if (options.failed) return;
  let store: SharedStore | null = null;
  try {
    store = await openSharedStore(pick.url, pick.from);
    await publishPending(store, root);
  } catch (e) {
    out.note(`noema: ${aboutStore(store?.location ?? pick.from, e as Error)}; noema sync publishes later`);
  } finally {
    await store?.close().catch(() => {});
  }
}

/**
 * Before a resume with a store runs anything: claims the episode (see `claimEpisode`), refusing (exit 10) a pulled
 * copy, a run another root holds, or a copy the store has gone on without. A store that cannot be reached is said
 * once, and the resume goes on locally (its publishing is left pending, as a run's).
 *
 * @example
 * ```ts
 * await claimForResume(out, ".noema", { url, from: "NOEMA_STORE" }, "ep_01J…");
 * ```
 */
export async function claimForResume(
  out: Output,
  root: string,
  pick: { url: string; from: string },
  id: string,
): Promise<void> {
  let store: SharedStore | null = null;
  try {
    store = await openSharedStore(pick.url, pick.from);
    // A resume right after its run was killed waits for the run's publishing process to let the episode go.
    await claimEpisode(store, root, id, { publisherWaitMs: PUBLISHER_WAIT_MS, onWait: (m) => out.note(m) });
  } catch (e) {
    const down = e instanceof NoemaError && ["store_unreachable", "store_timeout", "store_read_only"].includes(e.code);
    if (!down) throw e;
    if (e.code === "store_read_only" && store !== null) await refuseUnclaimable(store, id);
    refusePulledCopy(root, id, null); // never resumed, store or not
    out.note(`noema: ${aboutStore(storeLocation(pick), e as Error)}; resuming ${id} locally`);
    saidDown = true;
  } finally {
    await store?.close().catch(() => {});
  }
}

/**
 * A role that may not claim runs (a reader's, an approver's) resumes only a run the store does not hold: one it holds
 * may be held or gone on elsewhere, which only a claim can tell, so it is refused (exit 10) before anything runs.
 */
async function refuseUnclaimable(store: SharedStore, id: string): Promise<void> {
  const row = await store.get(id).catch(() => undefined); // undefined: not even read, so not known to be absent
  if (row === null) return;
  throw new NoemaError(
    "unclaimable",
    `${id} is in the shared store ${store.location}, and this role may not claim it there (the store refused it ` +
      `the run's lease: a reader's or an approver's role): a resume claims the run before anything runs, so that ` +
      `it runs on one root only. Nothing was run; resume it with a runner's role (noema_runner)`,
    { exitCode: EXIT.LOCKED },
  );
}

/**
 * Runs `work` (a resume, an approve --resume) with live publishing of
 * episode `id` when a store is configured; without one, `work` gets no hooks.
 *
 * @example
 * ```ts
 * const r = await withLivePublishing(out, root, store, id, (hooks) => resume(id, { ...hooks }));
 * ```
 */
export async function withLivePublishing<T>(
  out: Output,
  root: string,
  pick: { url: string; from: string } | null,
  id: string,
  work: (hooks: Pick<LiveRunPublishing, "notices" | "onEvent"> | Record<string, never>) => Promise<T>,
): Promise<T> {
  if (pick === null) return await work({});
  const live = await startLivePublishing(out, root, pick, id);
  let value: T | undefined;
  try {
    value = await work({ notices: live.notices, onEvent: (e) => live.onEvent(e) });
    return value;
  } finally {
    await live.finish(id, (value as { status?: unknown } | undefined)?.status === "pending");
  }
}
