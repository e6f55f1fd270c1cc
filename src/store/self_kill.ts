/**
 * The one way noema's own code may kill its own process with SIGKILL: fault
 * injection for the crash tests (`NOEMA_TEST_KILL_BEFORE_RENAME`,
 * `NOEMA_HOOK_CRASH_AT`). It holds `process.kill` as it was when this module
 * was first evaluated, before the exit guard (`plugins/exit_guard.ts`, which
 * imports this file) replaced it to stop plugins from ending the process.
 *
 * @module
 */
import process from "node:process";

const originalKill = process.kill.bind(process);

/**
 * Kills this process with SIGKILL at once (no exit handlers run).
 *
 * @example
 * ```ts
 * import { killSelf } from "./self_kill.ts";
 * if (process.env.MY_FAULT === "here") killSelf();
 * ```
 */
export function killSelf(): never {
  originalKill(process.pid, "SIGKILL");
  throw new Error("unreachable: SIGKILL did not end the process");
}
