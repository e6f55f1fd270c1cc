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
 * 10 minutes), within a second of its socket (or the socket's directory)
 * being removed, or on SIGTERM/SIGINT;
 * its episodes are then written and released. Any failure of a call is
 * answered with exit 2 (the call is blocked), like the in-process path.
 *
 * @module
 */
import { appendFileSync, existsSync, unlinkSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import process from "node:process";
import type { HookAnswer } from "../event.ts";
import type { HookRequest } from "./client.ts";
import { ResidentEpisodes } from "./episodes.ts";
import { cwdExists } from "./address.ts";
import { dirname } from "node:path";

/** Answers one call: the hook's stdin in, the agent's answer out (episodes from `episodes`). */
export type HookHandler = (stdin: string, episodes: ResidentEpisodes) => Promise<HookAnswer>;

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
}

function idleDefault(): number {
  const n = Number(process.env.NOEMA_HOOK_SERVER_IDLE_MS);
  return Number.isFinite(n) && n > 0 ? n : 600_000;
}

/** Whether something accepts connections on `path`. */
function listening(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection(path);
    s.on("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });
}

function listen(server: Server, path: string): Promise<boolean> {
  return new Promise((resolve) => {
    server.once("error", () => resolve(false));
    server.listen(path, () => resolve(true));
  });
}

/** Reads one request line from a connection. */
function readRequest(conn: Socket): Promise<HookRequest | null> {
  return new Promise((resolve) => {
    let text = "";
    conn.setEncoding("utf8");
    conn.on("data", (chunk: string) => {
      text += chunk;
      const nl = text.indexOf("\n");
      if (nl < 0) return;
      try {
        resolve(JSON.parse(text.slice(0, nl)) as HookRequest);
      } catch {
        resolve(null);
      }
    });
    conn.on("error", () => resolve(null));
    conn.on("end", () => resolve(null));
  });
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
  // Nothing to serve from a removed directory (and Bun's net would spin on a deleted working directory).
  if (!cwdExists() || !existsSync(dirname(socket))) return false;
  if (await listening(socket)) return false;
  try {
    unlinkSync(socket); // a stale socket of a server that died
  } catch {
    // none
  }
  const episodes = new ResidentEpisodes();
  let queue: Promise<void> = Promise.resolve();
  let idle: ReturnType<typeof setTimeout> | undefined;
  let stopping = false;
  const server = createServer((conn) => {
    queue = queue.then(() => serveOne(conn, argv, options.handle, episodes)).finally(arm);
  });
  const stopped = new Promise<void>((resolve) => server.on("close", resolve));
  const stop = () => {
    if (stopping) return;
    stopping = true;
    log("stopping");
    clearTimeout(idle);
    server.close();
    queue.finally(() => {
      episodes.closeAll();
      try {
        unlinkSync(socket);
      } catch {
        // already gone
      }
    });
  };
  const arm = () => {
    clearTimeout(idle);
    // A removed socket (or one another server took over) means nobody can reach this one.
    if (!existsSync(socket)) return stop();
    idle = setTimeout(stop, options.idleMs ?? idleDefault());
  };
  if (!await listen(server, socket)) return false;
  log(`listening on ${socket}`);
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  // Removing the socket (or its directory: what `noema run --using claude-code` does at the end) stops the server,
  // and so does the removal of its working directory.
  const watch = setInterval(() => (existsSync(socket) && cwdExists()) || stop(), 1000);
  server.on("close", () => clearInterval(watch));
  arm();
  await stopped;
  await queue;
  return true;
}

/** One line to the server's log (`NOEMA_HOOK_SERVER_LOG`, a file path), for diagnosing a server. */
function log(line: string): void {
  const path = process.env.NOEMA_HOOK_SERVER_LOG;
  if (!path) return;
  try {
    appendFileSync(path, `${new Date().toISOString()} [${process.pid}] ${line}\n`);
  } catch {
    // logging is best effort
  }
}

async function serveOne(conn: Socket, argv: readonly string[], handle: HookHandler, episodes: ResidentEpisodes) {
  const t0 = performance.now();
  const request = await readRequest(conn);
  log(`request ${request ? "read" : "unreadable"} in ${(performance.now() - t0).toFixed(1)} ms`);
  if (!request) return void conn.destroy();
  let answer: HookAnswer;
  if (request.v !== 1 || JSON.stringify(request.argv) !== JSON.stringify(argv)) {
    answer = { stdout: null, stderr: "noema: the hook server serves another command line", exitCode: 2 };
  } else {
    try {
      answer = await handle(request.stdin, episodes);
    } catch (e) {
      answer = { stdout: null, stderr: `noema: ${(e as Error).message ?? String(e)}`, exitCode: 2 };
    }
  }
  log(
    `answered exit ${answer.exitCode} in ${(performance.now() - t0).toFixed(1)} ms${
      answer.stderr ? `: ${answer.stderr}` : ""
    }`,
  );
  conn.end(`${JSON.stringify(answer)}\n`);
  episodes.settle();
  log(`settled in ${(performance.now() - t0).toFixed(1)} ms`);
}
