/**
 * The process of a run's live publishing: `noema __store-live` (internal;
 * started by the run, see `live_background.ts` and `src/channels.ts`). It
 * takes the messages of `live_serve.ts` one per line on stdin and answers
 * one per line on stdout.
 *
 * - It gets its start (the store's URL, the episode) in its environment,
 *   `NOEMA_STORE_LIVE_START`, and watches the episode's files itself: what a
 *   run writes to a pipe waits until the run's event loop turns, which a run
 *   busy in its own thread may not do for seconds.
 * - It starts at the run's priority, so that connecting and the first write
 *   are prompt: a store that cannot be reached is found out while even a
 *   short run goes, and said in its record.
 * - After the first write the store accepted (or the store failed), every
 *   thread of it moves to the idle class and its autogroup to nice 19: the
 *   rest of the live publishing runs on CPU time the run does not want (its
 *   compiler and collector threads are its own, unlike a worker thread's).
 * - Once the run asked it to finish, it goes back to the normal class and
 *   publishes what is left however long that takes (the run waits for it
 *   only briefly: the episode's pending marker names this process, so later
 *   commands leave the episode to it while it lives). It clears the marker
 *   when everything is published, and exits.
 * - When its stdin closes before that (the run died), it exits at once: the
 *   marker then names a process that is gone, and the next noema command (or
 *   `noema sync`) publishes the episode. In the idle class on a busy machine,
 *   "at once" may take long: until it exits, it never takes the episode's
 *   lease once its run is gone (a resume may have claimed the episode since).
 * - While another process of this host holds the episode's lease (the
 *   publisher of the run before a resume, exiting), it waits for it as long
 *   as it may publish at all, not giving up after the run's 30 s: given up,
 *   the episode would wait for the next noema command.
 *
 * @module
 */
import process from "node:process";
import { runChannel } from "../channels.ts";
import { idleThisProcess, unidleThisProcess } from "../priority.ts";
import { episodeRoot } from "../store/nofollow.ts";
import { processGone } from "../store/lock.ts";
import { clearPending } from "./pending.ts";
import { type LivePublishingStart, serveLivePublishing } from "./live_serve.ts";
import { LIVE_PUBLISH_COMMAND } from "./live_command.ts";

export { LIVE_PUBLISH_COMMAND };

/** How long the process publishes what is left after the run, at most (a slow store, not one that is down). */
const ALONE_DEADLINE_MS = 10 * 60_000;

/** The environment variable that carries the {@link LivePublishingStart} (JSON) to the process. */
export const LIVE_PUBLISH_START_ENV = "NOEMA_STORE_LIVE_START";

/**
 * Serves one run's live publishing, started as `NOEMA_STORE_LIVE_START`
 * says, taking `finish` on stdin and answering on stdout; resolves with the
 * exit code once it finished (0 when everything was published, 2 when it was
 * started without a valid start).
 *
 * @example
 * ```ts
 * // what `noema __store-live` does
 * const code = await serveLivePublishProcess();
 * ```
 */
export async function serveLivePublishProcess(): Promise<number> {
  const start = startOf(process.env[LIVE_PUBLISH_START_ENV]);
  delete process.env[LIVE_PUBLISH_START_ENV]; // the store's URL goes no further (chrt, say)
  if (start === null) {
    process.stderr.write(`noema ${LIVE_PUBLISH_COMMAND}: internal: started without ${LIVE_PUBLISH_START_ENV}\n`);
    return 2;
  }
  let finishAsked = false, lowered = false;
  // Once it knows whether the store answers (a first write, or a failure): the rest may wait for idle CPU time.
  const lower = () => {
    if (lowered || finishAsked) return;
    lowered = true;
    idleThisProcess();
  };
  const channel = runChannel({
    line: (text) => server.take(text),
    closed: () => {
      if (!finishAsked) process.exit(0); // the run died: the next noema command publishes its episode
    },
  });
  // The run it publishes for: gone before it asked to finish, publishing is no longer wanted.
  const runGone = () => !finishAsked && typeof start.adoptPid === "number" && processGone(start.adoptPid);
  const server = serveLivePublishing({ ...start, heldWaitMs: ALONE_DEADLINE_MS }, (m) => {
    if (m.type === "unavailable") lower();
    channel.post(m);
  }, {
    deadlineOf: () => ALONE_DEADLINE_MS,
    onFirstWrite: lower,
    onFinishAsked: () => {
      finishAsked = true;
      unidleThisProcess(); // waited for now: a machine busy with other work must not starve it
    },
    abandoned: runGone,
  });
  const r = await server.done;
  channel.close();
  if (r.ok) clearPending(episodeRoot(start.dir), start.episodeId, { by: process.pid });
  return r.ok ? 0 : 1;
}

/** The start the environment carries, or null (none, or not one). */
function startOf(text: string | undefined): LivePublishingStart | null {
  try {
    const s = JSON.parse(text ?? "") as LivePublishingStart;
    const fields = [s.url, s.from, s.dir, s.episodeId, s.host];
    return fields.every((f) => typeof f === "string" && f !== "") ? s : null;
  } catch {
    return null;
  }
}
