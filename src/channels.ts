/**
 * Where a run's background work runs (its live OpenTelemetry export, its
 * live publishing to the shared store), seen from the run: a worker thread
 * of this process, or a process of its own (`noema __otel-live`, `noema
 * __store-live`). Both take and give JSON messages as text, one per line
 * over the process's stdin and stdout. (What a process is sent waits until
 * the run's event loop turns, which a run busy in its own thread may not do
 * for seconds: a process that must follow the run watches its files.)
 *
 * A process of its own costs a run less than a thread of it: its compiler and
 * collector threads are its own, in the idle scheduling class with it
 * (a worker's code is compiled by the run's own compiler threads, at the
 * run's priority), and at the run's end it can go on alone with what is
 * left, so the run neither waits for it nor starts another process to hand
 * over to.
 *
 * @module
 */
import { spawn } from "node:child_process";
import process from "node:process";
import type { Worker } from "node:worker_threads";
import { nodeReadline, nodeWorkerThreads } from "./builtins.ts";
import { idleCommand, lowerProcess } from "./priority.ts";

/** What a channel tells its owner. */
export interface ChannelHandlers {
  /** A message (JSON text) from the other side. */
  message(text: string): void;
  /** The other side stopped before it finished, or could not start. */
  lost(why: string): void;
}

/** How to start a background process (`noema __otel-live`, `noema __store-live`), and its environment. */
export interface BackgroundProcess {
  /** The command line. */
  argv: readonly string[];
  /**
   * Its environment: best without noema's secrets (`childEnv`); what it needs comes in its messages, or in one
   * variable set for it. @default {this process's}
   */
  env?: Record<string, string>;
  /**
   * Its priority from the start: `"idle"`, in the idle scheduling class (only
   * on CPU time nothing else wants) at nice 10, its session's autogroup
   * lowered, for work that may wait until the run's end; `"self"`, at the
   * run's priority, for a process that must first do something promptly
   * (connect, say whether it can) and then lowers itself (see
   * `idleThisProcess`).
   * @default {"idle"}
   */
  priority?: "idle" | "self";
}

/** The channel to a background thread or process. */
export interface BackgroundChannel {
  /** Sends a message (JSON text). */
  post(text: string): void;
  /** Keeps this process alive while an answer is awaited. */
  hold(): void;
  /** The end: a thread is stopped; a process is left to finish what it was asked to on its own. */
  close(): void;
  /** The process's pid (a process that started). */
  readonly pid?: number;
}

/**
 * A worker thread of this process, started from `url` (it posts and takes
 * JSON text).
 *
 * @example
 * ```ts
 * const url = new URL("./export/otel/live_worker.ts", import.meta.url);
 * const channel = threadChannel(url, { message: (t) => console.log(t), lost: (why) => console.error(why) });
 * channel.post(JSON.stringify({ type: "pump", maxBytes: 1 << 20 }));
 * ```
 */
export function threadChannel(url: URL, on: ChannelHandlers): BackgroundChannel {
  const { Worker } = nodeWorkerThreads();
  const worker: Worker = new Worker(url);
  worker.unref(); // never keeps the process alive: the owner holds it while it waits
  let closed = false;
  worker.on("message", (text: string) => on.message(text));
  worker.on("error", (e: Error) => closed || on.lost(`its thread failed: ${e?.message ?? e}`));
  worker.on("exit", () => closed || on.lost("its thread stopped"));
  return {
    post: (text) => worker.postMessage(text),
    hold: () => worker.ref(),
    close() {
      closed = true;
      void worker.terminate().catch(() => {});
    },
  };
}

/**
 * A process of its own, started as `start` says (`noema __otel-live`, `noema
 * __store-live`): detached into a session of its own (a Ctrl-C of the run
 * does not cut its work short), at the priority `start.priority` says (by
 * default in the idle scheduling class where Linux's `chrt` is installed and
 * allowed, at nice 10 with its session's autogroup lowered). It ends once it
 * has finished, or when its stdin closes (this process ended, or died).
 *
 * @example
 * ```ts
 * const channel = processChannel({ argv: ["noema", "__otel-live"] }, { message: console.log, lost: console.error });
 * ```
 */
export function processChannel(start: BackgroundProcess, on: ChannelHandlers): BackgroundChannel {
  const idle = start.priority !== "self";
  const [cmd, ...args] = idle ? idleCommand(start.argv) : start.argv;
  const child = spawn(cmd, args, { detached: true, stdio: ["pipe", "pipe", "ignore"], env: start.env });
  if (idle) lowerProcess(child.pid);
  child.unref();
  let closed = false;
  const lost = (why: string) => closed || on.lost(why);
  child.on("error", (e) => lost(`its process could not start: ${e.message}`));
  child.stdin!.on("error", () => {}); // it ended: said by "close"
  child.stdout!.on("error", () => {});
  const lines = nodeReadline().createInterface({ input: child.stdout! });
  lines.on("line", (text) => closed || on.message(text));
  // After its stdout is read to the end: a "finished" it wrote before it exited is taken first.
  child.on("close", (code, signal) => lost(`its process stopped (${signal ?? `exit ${code}`})`));
  const release = () => {
    (child.stdout as { unref?: () => void } | null)?.unref?.();
    (child.stdin as { unref?: () => void } | null)?.unref?.();
  };
  release(); // only what is awaited keeps this process alive
  return {
    pid: child.pid,
    post(text) {
      if (!closed && child.stdin!.writable) child.stdin!.write(`${text}\n`);
    },
    hold() {
      child.ref();
      (child.stdout as { ref?: () => void } | null)?.ref?.();
    },
    close() {
      closed = true;
      lines.close();
      child.stdin!.end();
      child.stdout!.destroy();
      child.unref();
    },
  };
}

/** The other end of {@link processChannel}, in the background process. */
export interface RunChannel {
  /** Sends a message to the run (one JSON text line on stdout); dropped once the run no longer reads them. */
  post(m: unknown): void;
  /** Stops reading the run's messages. */
  close(): void;
}

/**
 * The other end of {@link processChannel}, in the background process: the
 * run's messages one JSON text per line on stdin, its own on stdout.
 * `closed` is called when stdin closes (the run ended and no longer
 * listens, or died), or at {@link RunChannel.close}.
 *
 * @example
 * ```ts
 * const channel = runChannel({ line: (text) => console.error(text), closed: () => process.exit(0) });
 * channel.post({ type: "published" });
 * ```
 */
export function runChannel(on: { line(text: string): void; closed(): void }): RunChannel {
  let listened = true; // the run still reads what this says
  process.stdout.on("error", () => (listened = false));
  const lines = nodeReadline().createInterface({ input: process.stdin });
  lines.on("line", (text) => on.line(text));
  lines.on("close", () => {
    listened = false;
    on.closed();
  });
  return {
    post(m) {
      if (listened) process.stdout.write(`${JSON.stringify(m)}\n`);
    },
    close: () => lines.close(),
  };
}
