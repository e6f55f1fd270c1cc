/**
 * The resident hook server: one background process per hook command line and
 * session (or `--episode`), started by the first `noema hook` call that found
 * none. It keeps the episode loaded — state, policies (their workers warm) —
 * and answers each later call over a Unix socket, so a call costs the client's
 * start plus the decision, whatever the episode's length. Calls are served
 * one at a time, in arrival order. The answer is sent as soon as the events
 * are appended; `state.json` and `core.json` are written right after, before
 * the lock is released for the next call or for another process (a driver,
 * `noema approve`).
 *
 * The server exits after `NOEMA_HOOK_SERVER_IDLE_MS` without calls (default
 * 10 minutes; `NOEMA_HOOK_SERVER_EMPTY_IDLE_MS`, default 30 s, while it has
 * no episode open), within a second of its socket (or the socket's directory)
 * being removed, or on SIGTERM/SIGINT;
 * its episodes are then written and released. Any failure of a call is
 * answered with exit 2 (the call is blocked), like the in-process path.
 *
 * @module
 */
import { appendFileSync, existsSync, unlinkSync } from "node:fs";
import process from "node:process";
import type { HookAnswer } from "../event.ts";
import { answerJson } from "../answer_json.ts";
import type { HookRequest } from "./client.ts";
import { ResidentEpisodes } from "./episodes.ts";
import { Lane, type Outside } from "./lane.ts";
import type { EpisodeNotices } from "./notices.ts";
import { cwdExists } from "./address.ts";
import { dirname } from "node:path";

/**
 * Answers one call: the hook's stdin in, the agent's answer out (episodes from `episodes`); `gone` is aborted when its
 * client closed the connection before the answer (killed); `outside` runs a long wait that uses no episode out of the
 * server's lane (see `lane.ts`), the session's other calls served meanwhile.
 */
export type HookHandler = (
  stdin: string,
  episodes: ResidentEpisodes,
  gone: AbortSignal,
  outside: Outside,
) => Promise<HookAnswer>;

/** Options of {@link serveHooks}. */
export interface ServeOptions {
  /** The Unix socket to listen on. */
  socket: string;
  /** The hook command line this server serves (requests with another one are refused). */
  argv: readonly string[];
  /** Answers one call. */
  handle: HookHandler;
  /** Exit after this long without calls. @default {NOEMA_HOOK_SERVER_IDLE_MS or 600000} */
  idleMs?: number;
  /**
   * Exit after this long without calls while no episode is open (a no-op
   * `SessionStart`, a session whose episode ended). @default {NOEMA_HOOK_SERVER_EMPTY_IDLE_MS or 30000}
   */
  emptyIdleMs?: number;
  /** What the server's background work says about an episode, written into it at its next event. */
  notices?: EpisodeNotices;
}

function envMs(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

/** The part of Bun's socket API the server uses (node:net spins at full CPU once the working directory is gone). */
interface BunSocket {
  data: {
    text: string;
    done: boolean;
    out: Uint8Array;
    ending: boolean;
    decoder: TextDecoder;
    /** Aborted when the client closes the connection. */
    gone: AbortController;
  };
  write(data: Uint8Array): number;
  end(): void;
}

/** Writes what is pending on `conn` (the rest waits for drain); ends it once all is written, if asked. */
function flushOut(conn: BunSocket): void {
  const d = conn.data;
  if (d.out.length > 0) d.out = d.out.subarray(Math.max(0, conn.write(d.out)));
  if (d.out.length === 0 && d.ending) conn.end();
}
interface BunListener {
  stop(closeActiveConnections?: boolean): void;
}
interface BunNet {
  listen(options: unknown): BunListener;
  connect(options: unknown): Promise<{ end(): void }>;
}

/** Whether something accepts connections on `path`. */
async function listening(bun: BunNet, path: string): Promise<boolean> {
  try {
    const s = await bun.connect({ unix: path, socket: { data() {}, error() {}, close() {} } });
    s.end();
    return true;
  } catch {
    return false;
  }
}

/**
 * Serves hook calls on `socket` until idle; resolves when the server stopped.
 * Returns false at once when another server already listens there.
 *
 * @example
 * ```ts
 * import { serveHooks } from "./server.ts";
 * // await serveHooks({ socket, argv, handle: (stdin, episodes) => answer(stdin, episodes) });
 * ```
 */
export async function serveHooks(options: ServeOptions): Promise<boolean> {
  const { socket, argv } = options;
  const bun = (globalThis as { Bun?: BunNet }).Bun;
  // Nothing to serve from a removed directory, or outside Bun.
  if (!bun || !cwdExists() || !existsSync(dirname(socket))) return false;
  if (await listening(bun, socket)) return false;
  try {
    unlinkSync(socket); // a stale socket of a server that died
  } catch {
    // none
  }
  const episodes = new ResidentEpisodes({ notices: options.notices });
  const lane = new Lane();
  // Calls read and not yet answered: what a stop waits for, and no idle stop while one is under way.
  const calls = new Set<Promise<void>>();
  let idle: ReturnType<typeof setTimeout> | undefined;
  let stopping = false;
  let resolveStopped = () => {};
  const stopped = new Promise<void>((resolve) => resolveStopped = resolve);
  const serve = (conn: BunSocket, line: string) => {
    clearTimeout(idle);
    const call = serveInLane(lane, conn, line, argv, options.handle, episodes).finally(() => {
      calls.delete(call);
      arm();
    });
    calls.add(call);
  };
  let listener: BunListener;
  try {
    listener = bun.listen({
      unix: socket,
      socket: {
        open(conn: BunSocket) {
          conn.data = {
            text: "",
            done: false,
            out: new Uint8Array(0),
            ending: false,
            decoder: new TextDecoder(),
            gone: new AbortController(),
          };
        },
        drain: flushOut,
        data(conn: BunSocket, chunk: Uint8Array) {
          if (conn.data.done) return;
          // One decoder per connection: a character split across chunks stays whole.
          conn.data.text += conn.data.decoder.decode(chunk, { stream: true });
          const nl = conn.data.text.indexOf("\n");
          if (nl < 0) return;
          conn.data.done = true;
          serve(conn, conn.data.text.slice(0, nl));
        },
        // The client gone (the agent killed the hook): a call still waiting for a decision stops waiting.
        close(conn: BunSocket) {
          conn.data?.gone.abort();
        },
        error() {},
      },
    });
  } catch {
    return false; // taken meanwhile, or not allowed
  }
  const stop = () => {
    if (stopping) return;
    stopping = true;
    serverLog("stopping");
    clearTimeout(idle);
    clearInterval(watch);
    // New connections are refused; those whose calls are queued or under way still get their answers.
    listener.stop(false);
    Promise.allSettled([...calls]).finally(() => {
      episodes.closeAll();
      try {
        unlinkSync(socket);
      } catch {
        // already gone
      }
      resolveStopped();
    });
  };
  const arm = () => {
    clearTimeout(idle);
    if (calls.size > 0) return; // re-armed when the last call is answered
    // A removed socket (or one another server took over) means nobody can reach this one.
    if (!existsSync(socket)) return stop();
    const busy = options.idleMs ?? envMs("NOEMA_HOOK_SERVER_IDLE_MS", 600_000);
    // With no episode open there is nothing warm to keep: a much shorter wait (the next call starts a new server).
    const empty = Math.min(busy, options.emptyIdleMs ?? envMs("NOEMA_HOOK_SERVER_EMPTY_IDLE_MS", 30_000));
    idle = setTimeout(stop, episodes.size === 0 ? empty : busy);
  };
  serverLog(`listening on ${socket}`);
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  // Removing the socket (or its directory: what `noema run --using claude-code` does at the end) stops the server,
  // and so does the removal of its working directory.
  const watch = setInterval(() => (existsSync(socket) && cwdExists()) || stop(), 1000);
  arm();
  await stopped;
  return true;
}

/**
 * One line to the server's log (`NOEMA_HOOK_SERVER_LOG`, a file path), for diagnosing a server; nothing without it.
 *
 * @example
 * ```ts
 * import { serverLog } from "./server.ts";
 * serverLog("published ep_01J…");
 * ```
 */
export function serverLog(line: string): void {
  const path = process.env.NOEMA_HOOK_SERVER_LOG;
  if (!path) return;
  try {
    appendFileSync(path, `${new Date().toISOString()} [${process.pid}] ${line}\n`);
  } catch {
    // logging is best effort
  }
}

/** Serves one call in its turn of the lane; its long waits step out of it (`outside`). */
async function serveInLane(
  lane: Lane,
  conn: BunSocket,
  line: string,
  argv: readonly string[],
  handle: HookHandler,
  episodes: ResidentEpisodes,
): Promise<void> {
  let leave = await lane.enter();
  const outside: Outside = async (work) => {
    leave();
    try {
      return await work();
    } finally {
      leave = await lane.enter();
    }
  };
  try {
    await serveOne(conn, line, argv, handle, episodes, outside);
  } finally {
    leave();
  }
}

async function serveOne(
  conn: BunSocket,
  line: string,
  argv: readonly string[],
  handle: HookHandler,
  episodes: ResidentEpisodes,
  outside: Outside,
) {
  const t0 = performance.now();
  let request: HookRequest | null = null;
  try {
    request = JSON.parse(line) as HookRequest;
  } catch {
    // unreadable: no answer
  }
  serverLog(`request ${request ? "read" : "unreadable"}`);
  if (!request) return void conn.end();
  let answer: HookAnswer;
  if (request.v !== 1 || JSON.stringify(request.argv) !== JSON.stringify(argv)) {
    answer = { stdout: null, stderr: "noema: the hook server serves another command line", exitCode: 2 };
  } else {
    try {
      answer = await handle(request.stdin, episodes, conn.data.gone.signal, outside);
    } catch (e) {
      answer = { stdout: null, stderr: `noema: ${(e as Error).message ?? String(e)}`, exitCode: 2 };
    }
  }
  serverLog(
    `answered exit ${answer.exitCode} in ${(performance.now() - t0).toFixed(1)} ms${
      answer.stderr ? `: ${answer.stderr}` : ""
    }`,
  );
  conn.data.out = new TextEncoder().encode(`${answerJson(answer)}\n`); // a plugin's JSON.stringify cannot touch it
  conn.data.ending = true;
  flushOut(conn);
  episodes.settle();
  serverLog(`settled in ${(performance.now() - t0).toFixed(1)} ms`);
}
