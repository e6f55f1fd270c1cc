/**
 * Runs one half of the test suite (a runner such as `deno test` or `bun test`) as a child process and
 * ends when that child exits, not when its output pipes reach end-of-file: a grandchild the runner left
 * behind (an orphan still holding the inherited stdout) would otherwise keep the suite waiting forever.
 *
 * - The child gets its own process group; its output is streamed live and also collected.
 * - When the child exits, the pipes get a short grace to drain, then they are destroyed and whatever is
 *   left of its process group is killed.
 * - An overall timeout kills the whole process group and reports the half as failed, naming it; so does an
 *   `AbortSignal` that aborts (`npm test` ends every running file so at its own deadline, or on SIGUSR1).
 *
 * @module
 */
import { spawn } from "node:child_process";

/**
 * Default overall timeout: 40 minutes (override with `NOEMA_TEST_TIMEOUT_MIN`). A bound that catches a hang, not a
 * goal: the whole of `npm test` takes 7 to 10 minutes on a 2-core VM (README.md, "Development").
 */
export const DEFAULT_TIMEOUT_MS = 40 * 60_000;
/** Default time the pipes may keep draining after the child exited. */
export const DEFAULT_GRACE_MS = 2_000;

/**
 * The per-half timeout from the environment: `NOEMA_TEST_TIMEOUT_MIN` minutes (a positive number),
 * else {@link DEFAULT_TIMEOUT_MS}.
 *
 * @example
 * ```js
 * timeoutFromEnv({ NOEMA_TEST_TIMEOUT_MIN: "5" }); // 300000
 * ```
 * @param {Record<string, string | undefined>} env
 * @returns {number} milliseconds
 */
export function timeoutFromEnv(env) {
  const raw = env.NOEMA_TEST_TIMEOUT_MIN;
  if (raw === undefined || raw === "") return DEFAULT_TIMEOUT_MS;
  const minutes = Number(raw);
  if (!Number.isFinite(minutes) || minutes <= 0) {
    throw new Error(`NOEMA_TEST_TIMEOUT_MIN: expected a positive number of minutes, got ${JSON.stringify(raw)}`);
  }
  return minutes * 60_000;
}

/** Sends `signal` to the process group led by `pid`; a group already gone is not an error. */
function killGroup(pid, signal) {
  try {
    process.kill(-pid, signal);
  } catch (e) {
    if (e?.code !== "ESRCH") throw e;
  }
}

/**
 * Runs `cmd args` and resolves once the child has exited (plus at most `graceMs` of draining), or once
 * the timeout has killed its process group.
 *
 * @example
 * ```js
 * const r = await runHalf("bun", "bun", ["test"], { cwd: ".", env: process.env });
 * if (r.timedOut || r.code !== 0) process.exitCode = 1;
 * ```
 * @param {string} label the half's name, used in messages
 * @param {string} cmd
 * @param {string[]} args
 * @param {{
 *   cwd?: string,
 *   env?: Record<string, string | undefined>,
 *   timeoutMs?: number,
 *   graceMs?: number,
 *   write?: (chunk: string) => void,
 *   onStart?: (pid: number) => void,
 *   signal?: AbortSignal,
 * }} [options] `timeoutMs` @default DEFAULT_TIMEOUT_MS; `graceMs` @default DEFAULT_GRACE_MS;
 *   `write` (live output) @default process.stdout.write; `signal`: when it aborts, the process group is killed and
 *   the result is `timedOut`, as at the timeout (its reason is said in the output)
 * @returns {Promise<{ label: string, code: number | null, signal: string | null, out: string,
 *   timedOut: boolean, error?: Error }>}
 */
export function runHalf(label, cmd, args, options = {}) {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const graceMs = options.graceMs ?? DEFAULT_GRACE_MS;
  const write = options.write ?? ((s) => process.stdout.write(s));
  return new Promise((resolve) => {
    let out = "";
    let timedOut = false;
    let settled = false;
    let graceTimer;
    const child = spawn(cmd, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, so the timeout can kill the runner and everything it started
    });
    const onData = (chunk) => {
      const s = chunk.toString("utf8");
      out += s;
      write(s);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const finish = (result) => {
      if (settled) return;
      settled = true;
      clearTimeout(overall);
      clearTimeout(graceTimer);
      options.signal?.removeEventListener("abort", onAbort);
      child.stdout.destroy();
      child.stderr.destroy();
      if (child.pid !== undefined) killGroup(child.pid, "SIGKILL"); // orphans left in the group
      resolve({ label, out, timedOut, ...result });
    };
    const expire = (why) => {
      if (timedOut || settled) return;
      timedOut = true;
      const msg = `\n${label}: ${why}; killing its process group\n`;
      out += msg;
      write(msg);
      if (child.pid !== undefined) killGroup(child.pid, "SIGKILL");
    };
    // (a timer longer than 2^31 - 1 ms would fire at once)
    const overall = setTimeout(
      () => expire(`TIMED OUT after ${Math.round(timeoutMs / 1000)} s`),
      Math.min(timeoutMs, 2 ** 31 - 1),
    );
    const onAbort = () => expire(`ended: ${options.signal.reason}`);
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
    child.on("error", (error) => finish({ code: null, signal: null, error }));
    if (child.pid !== undefined) options.onStart?.(child.pid);
    // 'close' comes when the child exited and both pipes ended: the usual, quick path.
    child.on("close", (code, signal) => finish({ code, signal }));
    // 'exit' comes when the child exited, whoever still holds its pipes: stop waiting after the grace.
    child.on("exit", (code, signal) => {
      graceTimer = setTimeout(() => finish({ code, signal }), graceMs);
    });
  });
}
