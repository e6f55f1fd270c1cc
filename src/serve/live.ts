/**
 * Server-sent events: what changes is pushed to open pages. Each stream polls
 * cheaply (a few `stat` calls every {@link POLL_MS}) and, only when something
 * moved, renders the changed markup on the server (escaped, as the page) and
 * sends `{op, target, html}` for the client script to apply: the runs table's
 * rows, the approvals list, an episode's new events (and a reload when the
 * run pauses or ends, so the whole page shows its new state).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { readNewLines } from "../shared_store/line_tail.ts";
import { openRegularFile } from "../store/regular_file.ts";
import { markup } from "../report/escape.ts";
import type { Waiting } from "./approvals.ts";
import { approvalsQueue } from "./approvals_queue.ts";
import { eventRow } from "./events.ts";
import { listRuns, runRows, type RunsQuery } from "./runs.ts";
import type { EpisodeEntry } from "../read/list.ts";

/** How often a stream looks for changes. */
export const POLL_MS = 150;
/** How often a stream re-renders even when nothing it stats moved (a filtered view's new members). */
const FULL_MS = 2000;
/** A comment line this often keeps proxies and idle timers from closing a quiet stream. */
const HEARTBEAT_MS = 10_000;

/** A message to the client script. */
export interface LiveMessage {
  op: "html" | "append" | "reload";
  target?: string;
  html?: string;
  count?: { target: string; text: string };
}

/**
 * A `text/event-stream` response that calls `tick` every {@link POLL_MS}
 * until the client goes away; `tick` sends messages with `send`.
 *
 * @example
 * ```ts
 * import { eventStream } from "./live.ts";
 * const res = eventStream(new AbortController().signal, (send) => send({ op: "reload" }));
 * ```
 */
export function eventStream(
  signal: AbortSignal,
  tick: (send: (m: LiveMessage) => void) => void | Promise<void>,
): Response {
  const enc = new TextEncoder();
  let timer: ReturnType<typeof setInterval> | undefined;
  let beat: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    clearInterval(timer);
    clearInterval(beat);
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      let closed = false;
      const write = (text: string) => {
        if (closed) return;
        try {
          controller.enqueue(enc.encode(text));
        } catch {
          closed = true;
          stop();
        }
      };
      const send = (m: LiveMessage) => write(`data: ${JSON.stringify(m)}\n\n`);
      write("retry: 1000\n\n");
      let busy = false;
      const run = async () => {
        // A client that does not read: its queue is full, nothing more is rendered for it (the offset does not move,
        // it catches up when it reads). Without this, 3 streams never read from a 150 MB events.jsonl held 700 MB.
        if (busy || (controller.desiredSize ?? 1) <= 0) return;
        busy = true;
        try {
          await tick(send);
        } catch {
          // the files moved under us (a run being written or removed), or the store did not answer: the next tick looks again
        } finally {
          busy = false;
        }
      };
      timer = setInterval(run, POLL_MS);
      beat = setInterval(() => write(": keep-alive\n\n"), HEARTBEAT_MS);
      signal.addEventListener("abort", () => {
        stop();
        if (!closed) {
          closed = true;
          try {
            controller.close();
          } catch { /* already closed */ }
        }
      }, { once: true });
    },
    cancel: stop,
  });
  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-store",
      "x-accel-buffering": "no",
    },
  });
}

function stamp(path: string): string {
  try {
    const s = statSync(path);
    return `${s.mtimeMs}:${s.size}`;
  } catch {
    return "-";
  }
}

/**
 * The runs table, live: re-rendered when the episodes folder or a shown run
 * changes (or every {@link FULL_MS}), sent at the stream's first tick and
 * then whenever the rows differ: a page catches up with what changed between
 * its render and the stream's (re)connection.
 *
 * @example
 * ```ts
 * import { runsTicker } from "./live.ts";
 * // eventStream(signal, runsTicker(".noema", query))
 * ```
 */
export function runsTicker(root: string, q: RunsQuery): (send: (m: LiveMessage) => void) => void {
  let lastKey = "", lastHtml: string | null = null, lastFull = 0, shown: string[] = [];
  return (send) => {
    const key = [
      stamp(join(root, "episodes")),
      ...shown.flatMap((d) => ["state.json", "events.jsonl", "summary.json", "lock"].map((f) => stamp(join(d, f)))),
    ].join("|");
    const now = Date.now();
    if (key === lastKey && now - lastFull < FULL_MS) return;
    lastKey = key;
    lastFull = now;
    const got = listRuns(root, q);
    shown = got.entries.map((e) => e.episode_dir);
    const html = runRows(got.entries).value;
    if (html !== lastHtml) send({ op: "html", target: "runs", html });
    lastHtml = html;
  };
}

/**
 * The approvals list, live: sent when the set of waiting runs or their decisions change. Not at the first tick, as
 * the runs are: that would replace the forms under a user typing a note.
 *
 * @example
 * ```ts
 * import { approvalsTicker } from "./live.ts";
 * // eventStream(signal, approvalsTicker(() => waitingRuns(".noema"), ".noema"))
 * ```
 */
export function approvalsTicker(
  list: () => Waiting[] | Promise<Waiting[]>,
  root: string | null,
): (send: (m: LiveMessage) => void) => Promise<void> {
  let lastKey: string | null = null, lastStamp = "", lastFull = 0;
  return async (send) => {
    const st = root === null ? "" : stamp(join(root, "episodes"));
    const now = Date.now();
    if (st === lastStamp && now - lastFull < (root === null ? STORE_POLL_MS : FULL_MS / 4)) return;
    lastStamp = st;
    lastFull = now;
    const waiting = await list();
    const key = JSON.stringify(waiting.map((w) => [w.episode_id, w.checkpoint_id, w.decided]));
    if (lastKey !== null && key !== lastKey) {
      const html = approvalsQueue(waiting).value;
      send({ op: "html", target: "approvals", html });
    }
    lastKey = key;
  };
}

/** How often a stream over a shared store asks its catalog. */
const STORE_POLL_MS = 1000;

/**
 * The runs table over a shared store, live: the catalog asked every
 * {@link STORE_POLL_MS}, the rows sent at the first tick and when they differ.
 *
 * @example
 * ```ts
 * import { storeRunsTicker } from "./live.ts";
 * // eventStream(signal, storeRunsTicker(() => storeRuns(source, query)))
 * ```
 */
export function storeRunsTicker(
  list: () => Promise<{ entries: EpisodeEntry[] }>,
): (send: (m: LiveMessage) => void) => Promise<void> {
  let lastHtml: string | null = null, last = 0;
  return async (send) => {
    if (Date.now() - last < STORE_POLL_MS) return;
    last = Date.now();
    const html = runRows((await list()).entries).value;
    if (html !== lastHtml) send({ op: "html", target: "runs", html });
    lastHtml = html;
  };
}

/** Lines (newlines) in the first `bytes` of a file. */
function linesBefore(path: string, bytes: number): number {
  let n = 0;
  const fd = openRegularFile(path, path, { noFollow: true }); // a FIFO would block, a symlink is not followed
  try {
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let at = 0; at < bytes;) {
      const got = readSync(fd, buf, 0, Math.min(buf.length, bytes - at), at);
      if (got === 0) break;
      for (let i = buf.indexOf(10); i !== -1 && i < got; i = buf.indexOf(10, i + 1)) n++;
      at += got;
    }
  } finally {
    closeSync(fd);
  }
  return n;
}

/** How often, at most, a live episode's waterfall is drawn again. */
const REDRAW_MS = 1000;

/**
 * An episode's new events, live, from byte `offset` of its events.jsonl;
 * a reload when the run pauses at a checkpoint or ends (its summary appears)
 * and the page was rendered before. With `redraw`, the waterfall is sent
 * again (its markup, for the element `waterfall-live`) after new events, at
 * most once every {@link REDRAW_MS}.
 *
 * @example
 * ```ts
 * import { episodeTicker } from "./live.ts";
 * // eventStream(signal, episodeTicker(".noema/episodes/ep_1", 0, false))
 * ```
 */
export function episodeTicker(
  dir: string,
  offset: number,
  sawEnd: boolean,
  redraw?: () => string | null,
): (send: (m: LiveMessage) => void) => void {
  const path = join(dir, "events.jsonl");
  let n: number | null = null, added = 0, reloaded = false, stale = false, drawn = 0, tailSize = -1;
  return (send) => {
    if (reloaded) return;
    if (!sawEnd && stamp(join(dir, "summary.json")) !== "-") {
      reloaded = true;
      send({ op: "reload" });
      return;
    }
    if (stale && redraw && Date.now() - drawn >= REDRAW_MS) {
      stale = false;
      drawn = Date.now();
      const html = redraw();
      if (html !== null) send({ op: "html", target: "waterfall-live", html });
    }
    let size: number;
    try {
      size = statSync(path).size;
    } catch {
      return;
    }
    if (size <= offset || size === tailSize) return; // nothing new, or only the same unterminated tail as before
    let got;
    try {
      n ??= linesBefore(path, offset);
      got = readNewLines(path, offset, 1 << 20);
    } catch {
      return; // not a regular file now (a symlink planted in the episode is never followed): nothing new to show
    }
    offset = got.offset;
    tailSize = got.lines.length === 0 ? size : -1; // a line still being written (or never ended): read again once it grows
    const rows: string[] = [];
    let paused = false;
    for (const bytes of got.lines) {
      n++;
      try {
        const e = JSON.parse(Buffer.from(bytes).toString("utf8")) as Record<string, unknown>;
        if (e.event_type === "run.checkpoint") paused = true;
        rows.push(eventRow(n, e).value);
      } catch {
        rows.push(markup`<div class="ev t-bad">#${n} not a JSON line</div>`.value);
      }
    }
    if (rows.length === 0) return;
    added += rows.length;
    stale = true;
    send({
      op: "append",
      target: "live-events",
      html: rows.join(""),
      count: { target: "live-count", text: `${added} new ${added === 1 ? "event" : "events"}` },
    });
    if (paused) {
      reloaded = true;
      send({ op: "reload" });
    }
  };
}
