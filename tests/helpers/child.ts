/**
 * Runs a child process without blocking this one (the tests' scripted model
 * servers live in this process and must keep answering it), collecting its
 * output.
 *
 * @module
 */
import { spawn } from "node:child_process";

/** How a child process ended and what it printed. */
export interface ChildResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@link runChild}. */
export interface ChildOptions {
  cwd?: string;
  /** The whole environment of the child. @default {process.env} */
  env?: Record<string, string | undefined>;
  /** Written to stdin, which is then closed; without it stdin is `/dev/null`. */
  input?: string;
  /** The child is SIGKILLed after this long (its result is then code `null`). @default {no limit} */
  timeoutMs?: number;
  /** Called with the child's pid once it is started (to signal it). */
  onSpawn?: (pid: number) => void;
  /** Called with each chunk of stdout as it arrives (to act while the child runs). */
  onStdout?: (chunk: string) => void;
  /** Called with each chunk of stderr as it arrives. */
  onStderr?: (chunk: string) => void;
}

/**
 * Runs `cmd args` and resolves when it has exited; rejects when it cannot be
 * started.
 *
 * @example
 * ```ts
 * import { runChild } from "./helpers/child.ts";
 * const r = await runChild("sh", ["-c", "echo hi"], { timeoutMs: 10_000 });
 * r.stdout; // "hi\n"
 * ```
 */
export function runChild(cmd: string, args: string[], options: ChildOptions = {}): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: [options.input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    let stdout = "", stderr = "";
    child.stdout!.on("data", (d) => {
      stdout += d;
      options.onStdout?.(String(d));
    });
    child.stderr!.on("data", (d) => {
      stderr += d;
      options.onStderr?.(String(d));
    });
    const timer = options.timeoutMs === undefined
      ? undefined
      : setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (child.pid !== undefined) options.onSpawn?.(child.pid);
    if (options.input !== undefined) child.stdin!.end(options.input);
  });
}
