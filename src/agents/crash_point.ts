/**
 * Fault injection for the hook path: `NOEMA_HOOK_CRASH_AT=<point>` makes the
 * hook process SIGKILL itself when it reaches that point (`claimed`,
 * `opened`, `decided`, `recorded`, `finishing`), so tests can check that a
 * crash at any point leaves the next call working. Unset (always, outside
 * tests), a point costs one environment lookup.
 *
 * @module
 */
import process from "node:process";
import { killSelf } from "../plugins/exit_guard.ts";

/** The named points of the hook path. */
export type CrashPointName = "claimed" | "opened" | "decided" | "recorded" | "finishing";

/**
 * Kills this process when `NOEMA_HOOK_CRASH_AT` names `point`.
 *
 * @example
 * ```ts
 * import { crashPoint } from "./crash_point.ts";
 * crashPoint("claimed"); // nothing happens unless NOEMA_HOOK_CRASH_AT=claimed
 * ```
 */
export function crashPoint(point: CrashPointName): void {
  if (process.env.NOEMA_HOOK_CRASH_AT === point) killSelf();
}
