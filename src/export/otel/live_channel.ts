/**
 * Where a live export runs, seen from the process it exports: a worker
 * thread of this process (`live_worker.ts`: the hook server, which lives
 * on), or a process of its own (`noema __otel-live`, `live_process.ts`: a
 * run, which ends). Both take and give the JSON messages of `live_serve.ts`,
 * one per line over the process's stdin and stdout.
 *
 * A process of its own costs a run less than a thread of it: its compiler and
 * collector threads are its own, in the idle scheduling class with it
 * (a worker's code is compiled by the run's own compiler threads, at the
 * run's priority), and at the run's end it goes on alone with what is left,
 * so the run neither waits for it nor starts another process to hand over to.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { Worker } from "node:worker_threads";
import { nodeWorkerThreads } from "../../builtins.ts";
import { idleCommand, lowerProcess } from "../../priority.ts";

/** What a channel tells its owner. */
export interface ChannelHandlers {
  /** A message (JSON text) from the export. */
  message(text: string): void;
  /** The export stopped before it finished, or could not start. */
  lost(why: string): void;
}

/** How to start the export's process: `noema __otel-live`, and its environment. */
export interface ExportProcess {
  /** The command line. */
  argv: readonly string[];
  /** Its environment (none of noema's secrets: it needs the `OTEL_*` variables). @default {this process's} */
  env?: Record<string, string>;
}

/** A live export's channel. */
export interface ExportChannel {
  /** Sends a message (JSON text). */
  post(text: string): void;
  /** Keeps this process alive while an answer is awaited. */
  hold(): void;
  /** The end: a thread is stopped; a process is left to finish what it was asked to on its own. */
  close(): void;
}

/**
 * A worker thread of this process.
 *
 * @example
 * ```ts
 * const channel = threadChannel({ message: (t) => console.log(t), lost: (why) => console.error(why) });
 * channel.post(JSON.stringify({ type: "pump", maxBytes: 1 << 20 }));
 * ```
 */
export function threadChannel(on: ChannelHandlers): ExportChannel {
  const { Worker } = nodeWorkerThreads();
  const worker: Worker = new Worker(new URL("./live_worker.ts", import.meta.url));
  worker.unref(); // never keeps the process alive: finish() holds it while it waits
  let closed = false;
  worker.on("message", (text: string) => on.message(text));
  worker.on("error", (e: Error) => closed || on.lost(`the export thread failed: ${e?.message ?? e}`));
  worker.on("exit", () => closed || on.lost("the export thread stopped"));
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
 * A process of its own, started as `start` says (`noema __otel-live`): detached
 * into a session of its own (a Ctrl-C of the run does not cut its export
 * short), in the idle scheduling class where Linux's `chrt` is installed and allowed, at
 * nice 10 with its session's autogroup lowered. It ends once it has finished,
 * or when its stdin closes (this process ended, or died) and it has sent what
 * the files hold.
 *
 * @example
 * ```ts
 * const channel = processChannel({ argv: ["noema", "__otel-live"] }, { message: console.log, lost: console.error });
 * ```
 */
export function processChannel(start: ExportProcess, on: ChannelHandlers): ExportChannel {
  const [cmd, ...args] = idleCommand(start.argv);
  const child = spawn(cmd, args, { detached: true, stdio: ["pipe", "pipe", "ignore"], env: start.env });
  lowerProcess(child.pid);
  child.unref();
  let closed = false;
  const lost = (why: string) => closed || on.lost(why);
  child.on("error", (e) => lost(`the export process could not start: ${e.message}`));
  child.stdin!.on("error", () => {}); // it ended: said by "close"
  child.stdout!.on("error", () => {});
  const lines = createInterface({ input: child.stdout! });
  lines.on("line", (text) => closed || on.message(text));
  // After its stdout is read to the end: a "finished" it wrote before it exited is taken first.
  child.on("close", (code, signal) => lost(`the export process stopped (${signal ?? `exit ${code}`})`));
  const release = () => {
    (child.stdout as { unref?: () => void } | null)?.unref?.();
    (child.stdin as { unref?: () => void } | null)?.unref?.();
  };
  release(); // only what is awaited keeps this process alive
  return {
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
