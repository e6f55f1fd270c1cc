/**
 * Only noema ends its own process. The CLI's commands that load plugins,
 * `noema hook` and the policy worker guard the ways a plugin could end the process behind
 * noema's back: `process.exit`, `process.reallyExit`, `process.abort` and a
 * signal sent to this process (`process.kill(process.pid, …)`) throw
 * instead, so the plugin's call fails like any plugin error (a policy that
 * fails is a deny: fail closed) and the episode goes on and is sealed.
 * noema's own exits go through {@link exitProcess}.
 *
 * @module
 */
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import "../store/self_kill.ts"; // evaluated first: it keeps the real process.kill for fault injection
import { procStat } from "../store/lock.ts";

type ExitFn = (code?: number | string | null) => never;

const originalExit: ExitFn = process.exit.bind(process) as ExitFn;
const originalReallyExit = (process as unknown as { reallyExit?: unknown }).reallyExit;
let guarded = false;

const deno = (globalThis as { Deno?: { exit?: unknown } }).Deno;
const originalDenoExit = deno?.exit;

/**
 * Exits for real: `process.exit` calls `process.reallyExit` (Bun) or
 * `Deno.exit` (Deno), which the guard replaced: they are put back first.
 */
function realExit(code: number): never {
  if (originalReallyExit !== undefined) (process as unknown as { reallyExit: unknown }).reallyExit = originalReallyExit;
  if (deno && originalDenoExit !== undefined) {
    try {
      Object.defineProperty(deno, "exit", { value: originalDenoExit, configurable: true, writable: true });
    } catch {
      // as replaced
    }
  }
  return originalExit(code);
}

function refuse(what: string): never {
  throw new NoemaError(
    "exit_refused",
    `${what} refused: only noema ends its process (a plugin tried to end it)`,
    { exitCode: EXIT.USAGE },
  );
}

/**
 * Makes `process.exit`, `process.reallyExit`, `process.abort` and signals
 * to this process throw (idempotent). {@link exitProcess} still exits.
 *
 * @example
 * ```ts
 * import { guardExits } from "./exit_guard.ts";
 * guardExits();
 * try {
 *   process.exit(0);
 * } catch (e) {
 *   console.log((e as Error).message); // "process.exit(0) refused: …"
 * }
 * ```
 */
export function guardExits(): void {
  if (guarded) return;
  guarded = true;
  const p = process as unknown as Record<string, unknown>;
  p.exit = (code?: unknown) => refuse(`process.exit(${code === undefined ? "" : String(code)})`);
  if (typeof p.reallyExit === "function") p.reallyExit = () => refuse("process.reallyExit()");
  p.abort = () => refuse("process.abort()");
  const realKill = process.kill.bind(process);
  const group = procStat(process.pid)?.pgrp ?? null; // this process's group (Linux), null where it cannot be read
  p.kill = (pid: number, signal?: string | number) => {
    // As process.kill reads it (a numeric string is a pid: found by a break-it run), and every target that holds
    // this process: itself, its group (0, -pid, -pgid) and every process it may signal (-1).
    const n = Number(pid);
    const own = n === process.pid || n === 0 || n === -1 || n === -process.pid || (group !== null && n === -group);
    if (own && signal !== 0) refuse(`process.kill(${pid}, ${JSON.stringify(signal ?? "SIGTERM")})`);
    return realKill(pid, signal);
  };
  if (deno && typeof deno.exit === "function") {
    try {
      Object.defineProperty(deno, "exit", { value: () => refuse("Deno.exit()"), configurable: true });
    } catch {
      // not replaceable in this Deno: the hook's exit listener still decides the code
    }
  }
}

/**
 * Ends the process with `code` (noema's own exits; works when guarded).
 *
 * @example
 * ```ts
 * import { exitProcess } from "./exit_guard.ts";
 * // exitProcess(130);
 * ```
 */
export function exitProcess(code: number): never {
  return realExit(code);
}

export { killSelf } from "../store/self_kill.ts";

/** The code a hook process ends with: 2 (blocked) until the hook answered. */
let hookCode: 0 | 2 = 2;
let hookHeld = false;

/**
 * For `noema hook`: whatever ends the process (a plugin's exit, an uncaught
 * error, an unexpected return), it exits 2 with a reason on stderr unless
 * {@link hookAnswered} was called; then with the answer's code.
 *
 * @example
 * ```ts
 * import { holdHookExit, hookAnswered } from "./exit_guard.ts";
 * holdHookExit();
 * // … print the answer …
 * hookAnswered(0);
 * ```
 */
export function holdHookExit(): void {
  if (hookHeld) return;
  hookHeld = true;
  guardExits();
  process.on("exit", () => {
    if (hookCode === 2 && process.exitCode !== 2) {
      try {
        process.stderr.write("noema: the hook ended before answering (the call is blocked)\n");
      } catch {
        // stderr gone: the exit code still blocks
      }
    }
    process.exitCode = hookCode;
  });
  // An error nobody catches (a plugin's timer that throws) must not end the hook with 1, which agents run as allow.
  const uncaught = (e: unknown) => {
    try {
      process.stderr.write(`noema: ${(e as Error)?.message ?? String(e)} (the call is blocked)\n`);
    } catch {
      // as above
    }
    realExit(hookCode);
  };
  process.on("uncaughtException", uncaught);
  process.on("unhandledRejection", uncaught);
}

/**
 * The hook printed its answer: the process now exits with `code`.
 *
 * @example
 * ```ts
 * import { hookAnswered } from "./exit_guard.ts";
 * hookAnswered(0);
 * ```
 */
export function hookAnswered(code: 0 | 2): void {
  hookCode = code;
}
