/**
 * The process an action started, as the event log records it
 * (`action.process`), and stopping it when it survived noema: `resume` of a
 * crashed run stops a surviving process group before it runs the step
 * again, so no two copies of an action's program run side by side.
 *
 * A process is identified by its pid plus its start time in clock ticks
 * since boot (`/proc/<pid>/stat`, field 22) and the boot id, so a pid the
 * system has reused is never signalled. Without `/proc` (not Linux) the
 * identity is unknown and nothing is signalled.
 *
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import process from "node:process";

/** The identity of a process: pid, start time and boot, as recorded in an `action.process` event. */
export interface ProcessIdentity {
  pid: number;
  /** Its own process group (the same number), or null when it ran in noema's group (a terminal program). */
  pgid: number | null;
  /** Start time in clock ticks since boot (decimal string), or null when unknown. */
  start_ticks: string | null;
  /** `/proc/sys/kernel/random/boot_id`, or null when unknown. */
  boot_id: string | null;
}

/** One process's `/proc/<pid>/stat`: its process group and start time, or null when it is gone (or a zombie). */
function procStat(pid: number): { pgrp: number; start: bigint } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ")".
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") return null;
    return { pgrp: Number(fields[2]), start: BigInt(fields[19]) };
  } catch {
    return null;
  }
}

function bootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return null;
  }
}

/**
 * The identity of a running process (see the module doc).
 *
 * @example
 * ```ts
 * import { processIdentity } from "noema";
 * processIdentity(process.pid, null); // { pid, pgid: null, start_ticks: "123456", boot_id: "…" }
 * ```
 */
export function processIdentity(pid: number, pgid: number | null): ProcessIdentity {
  const stat = procStat(pid);
  return { pid, pgid, start_ticks: stat ? String(stat.start) : null, boot_id: stat ? bootId() : null };
}

/**
 * The pids still alive of a recorded process: the members of its process
 * group started no earlier than it (a group id is not reused while any
 * member lives), or the process itself when it had no group of its own.
 * Empty when the identity cannot be checked or the system rebooted.
 *
 * @example
 * ```ts
 * import { processIdentity, survivors } from "noema";
 * survivors(processIdentity(1234, 1234)); // [1234, 1240]
 * ```
 */
export function survivors(id: ProcessIdentity): number[] {
  if (id.start_ticks === null || id.boot_id === null || bootId() !== id.boot_id) return [];
  const start = BigInt(id.start_ticks);
  if (id.pgid === null) {
    const stat = procStat(id.pid);
    return stat !== null && stat.start === start ? [id.pid] : [];
  }
  const leader = procStat(id.pgid);
  // The leader's pid now names another process: that is not the recorded group.
  if (leader !== null && leader.start !== start) return [];
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const stat = procStat(Number(name));
    if (stat !== null && stat.pgrp === id.pgid && stat.start >= start) out.push(Number(name));
  }
  return out;
}

/** What {@link stopSurvivors} did. */
export interface StopReport {
  /** The pids found alive. */
  found: number[];
  /** Signals sent, in order (`SIGTERM`, then `SIGKILL` when it did not end). */
  signals: string[];
  /** Pids still alive at the end (empty unless SIGKILL could not end them). */
  remaining: number[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitGone(id: ProcessIdentity, ms: number): Promise<number[]> {
  const until = Date.now() + ms;
  let alive = survivors(id);
  while (alive.length > 0 && Date.now() < until) {
    await sleep(50);
    alive = survivors(id);
  }
  return alive;
}

/**
 * Stops what survives of a recorded process (its group, or the process
 * alone): SIGTERM, then SIGKILL after `graceMs`. Signals nothing when
 * nothing of it is alive or its identity cannot be checked.
 *
 * @example
 * ```ts
 * import { stopSurvivors } from "noema";
 * const r = await stopSurvivors({ pid: 1234, pgid: 1234, start_ticks: "99", boot_id: "…" });
 * console.log(r.found, r.signals); // [1234] ["SIGTERM"]
 * ```
 */
export async function stopSurvivors(id: ProcessIdentity, graceMs = 3000): Promise<StopReport> {
  const found = survivors(id);
  const report: StopReport = { found, signals: [], remaining: [] };
  if (found.length === 0) return report;
  const target = id.pgid === null ? id.pid : -id.pgid;
  for (const signal of ["SIGTERM", "SIGKILL"] as const) {
    try {
      process.kill(target, signal);
    } catch {
      // gone meanwhile
    }
    report.signals.push(signal);
    report.remaining = await waitGone(id, graceMs);
    if (report.remaining.length === 0) break;
  }
  return report;
}
