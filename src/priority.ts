/**
 * Background work yields to the run: the threads that export or publish a
 * run while it goes, and the processes that finish that work after it, run
 * at a lower CPU priority, so on a busy machine the run's own thread goes
 * first.
 *
 * Two Linux details matter:
 * - a thread's priority is set through its thread id (`/proc/thread-self`);
 * - with the kernel's autogroups (`/proc/sys/kernel/sched_autogroup_enabled`,
 *   on by default), CPU time is first shared between sessions, and a nice
 *   value only ranks processes within one session. A detached process (its
 *   own session) at nice 10 still gets as much CPU as the whole run, so its
 *   session's autogroup is lowered too (`/proc/<pid>/autogroup`).
 *
 * Where none of this is possible (not Linux, not allowed), the work runs at
 * the run's priority: nothing fails.
 *
 * @module
 */
import { existsSync, readFileSync, readlinkSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { setPriority } from "node:os";
import process from "node:process";

/**
 * The nice value background work runs at.
 *
 * @default {10}
 */
export const BACKGROUND_NICE = 10;

/**
 * Lowers the priority of the calling thread (call it first thing in a
 * worker thread, before it loads anything heavy). With `idle`, the thread
 * also goes to Linux's idle scheduling class (`SCHED_IDLE`, set with
 * util-linux's `chrt` where it is installed): it runs only on CPU time
 * nothing else wants, and yields at once when the run's threads wake (a nice
 * value alone still lets it delay them by a few milliseconds at each wake-up,
 * which adds up over thousands of them). Meant for work that may wait, such
 * as a live export whose rest is handed over at the run's end.
 *
 * @example
 * ```ts
 * import { lowerThisThread } from "./priority.ts";
 * lowerThisThread(); // in a worker: the run's thread goes first
 * const tid = lowerThisThread(10, true); // and only on CPU time nothing else wants
 * ```
 */
export function lowerThisThread(nice: number = BACKGROUND_NICE, idle = false): number | null {
  try {
    const tid = Number(readlinkSync("/proc/thread-self").split("/").pop());
    if (!Number.isInteger(tid) || tid <= 0) return null;
    setPriority(tid, nice);
    if (idle) toClass("--idle", ["--pid", "0", String(tid)]);
    return tid;
  } catch {
    return null; // not Linux, or not allowed: the thread runs at the run's priority
  }
}

/**
 * Takes a thread that {@link lowerThisThread} put in the idle class back to
 * the normal class (at its lower nice value): for the end of a run, when
 * what it does is waited for, and a machine busy with other work must not
 * starve it.
 *
 * @example
 * ```ts
 * import { unidleThread } from "./priority.ts";
 * // tid: what lowerThisThread() returned in the worker
 * unidleThread(12345);
 * ```
 */
export function unidleThread(tid: number | null): void {
  if (tid !== null) toClass("--other", ["--pid", "0", String(tid)]);
}

/**
 * Lowers the priority of a process this one started detached (in a session
 * of its own): its nice value and, unless `group` is false, its session's
 * autogroup. A lowered autogroup gets a few percent of the CPU beside other
 * sessions' work: right for work that goes on beside a run, too little for a
 * short job that must end soon after one.
 *
 * @example
 * ```ts
 * import { spawn } from "node:child_process";
 * import { lowerProcess } from "./priority.ts";
 * const child = spawn("sleep", ["1"], { detached: true, stdio: "ignore" });
 * lowerProcess(child.pid);
 * ```
 */
export function lowerProcess(pid: number | undefined, nice: number = BACKGROUND_NICE, group = true): void {
  if (pid === undefined) return;
  try {
    setPriority(pid, nice);
  } catch {
    // not allowed here: it runs at this process's priority
  }
  if (!group) return;
  try {
    const group = (p: string) => readFileSync(`/proc/${p}/autogroup`, "utf8").split(" ")[0];
    // Only a group of its own: lowering this process's group would lower the run itself.
    if (group(String(pid)) !== group("self")) writeFileSync(`/proc/${pid}/autogroup`, String(nice));
  } catch {
    // no autogroups (not Linux, or turned off), or the process is gone
  }
}

/** Where util-linux's `chrt` is, or null (not Linux, or not installed). */
function chrtPath(): string | null {
  if (process.platform !== "linux") return null;
  return ["/usr/bin/chrt", "/bin/chrt"].find((p) => existsSync(p)) ?? null;
}

/**
 * The command line that starts `argv` in Linux's idle scheduling class
 * (`SCHED_IDLE`), every thread of it included, through util-linux's `chrt`
 * where it is installed and allowed (a shell tries it first: where it is
 * refused, `argv` runs as it is); else `argv` as it is. Meant for a
 * background process that must cost a run nothing while it goes (see
 * {@link unidleThisProcess} for when it is waited for). The process keeps
 * the pid the spawn reports (the shell and `chrt` exec it).
 *
 * @example
 * ```ts
 * import { idleCommand } from "./priority.ts";
 * idleCommand(["noema", "__otel-live"]); // ["/bin/sh", "-c", "… chrt --idle 0 …", "sh", "noema", "__otel-live"] on Linux
 * ```
 */
export function idleCommand(argv: readonly string[]): string[] {
  const chrt = chrtPath();
  if (chrt === null || !existsSync("/bin/sh")) return [...argv];
  const script = `${chrt} --idle 0 true 2>/dev/null && exec ${chrt} --idle 0 "$@"; exec "$@"`;
  return ["/bin/sh", "-c", script, "sh", ...argv];
}

/**
 * Takes every thread of this process back to the normal scheduling class
 * (their nice values unchanged), its session's autogroup at the default,
 * nice 0 (where allowed: raising it from nice 19 may not be): for a process started with
 * {@link idleCommand}, or idled since, once it is waited for, so a machine
 * busy with other work does not starve it.
 *
 * @example
 * ```ts
 * import { unidleThisProcess } from "./priority.ts";
 * unidleThisProcess();
 * ```
 */
export function unidleThisProcess(): void {
  unidleProcess(process.pid);
}

/**
 * {@link unidleThisProcess} for another process (of the same user): what a
 * run does to its publishing process before it asks it to finish, so that in
 * the idle class on a busy machine it is not too starved to even read the
 * request, or to exit once killed.
 *
 * @example
 * ```ts
 * import { unidleProcess } from "./priority.ts";
 * unidleProcess(12345);
 * ```
 */
export function unidleProcess(pid: number): void {
  toClass("--other", ["--all-tasks", "--pid", "0", String(pid)]);
  // Its session's autogroup back at the default (where allowed: up from nice 19 needs the privilege to raise it). At
  // nice 10 a session gets a few percent of the CPU beside other sessions' work, and a run's tail, waited for by whoever
  // follows the run, took minutes to publish; its threads stay at nice 10 within it.
  setAutogroup(pid, 0);
}

/**
 * The nice value of the autogroup of a process in the idle class (see
 * {@link idleThisProcess}): the lowest. A session's autogroup competes with
 * the run's as a whole, at its own weight, whatever class its threads are in.
 *
 * @default {19}
 */
export const IDLE_AUTOGROUP_NICE = 19;

/**
 * Puts every thread of this process in the idle scheduling class
 * (`SCHED_IDLE`, through util-linux's `chrt`), and its session's autogroup
 * at nice 19: for a detached process that first did what must be prompt
 * (connecting, a first write) and then works on CPU time the run does not
 * want. Threads it starts later inherit the class. Not Linux, no `chrt`, not
 * allowed: as it was.
 *
 * @example
 * ```ts
 * import { idleThisProcess, unidleThisProcess } from "./priority.ts";
 * idleThisProcess(); // the run goes first
 * unidleThisProcess(); // waited for now
 * ```
 */
export function idleThisProcess(): void {
  toClass("--idle", ["--all-tasks", "--pid", "0", String(process.pid)]);
  setAutogroup(process.pid, IDLE_AUTOGROUP_NICE);
}

/** Sets a process's autogroup nice value where there are autogroups, and it is allowed (raising it back may not be). */
function setAutogroup(pid: number, nice: number): void {
  try {
    writeFileSync(`/proc/${pid}/autogroup`, String(nice));
  } catch {
    // no autogroups (not Linux, or turned off), or not allowed
  }
}

/**
 * `chrt --idle …` or `chrt --other …` (the normal class), nice values
 * unchanged (not Linux, no chrt, not allowed: as it was).
 */
function toClass(cls: "--idle" | "--other", target: readonly string[]): void {
  const chrt = chrtPath();
  if (chrt === null) return;
  try {
    spawnSync(chrt, [cls, ...target], { stdio: "ignore", timeout: 2000 });
  } catch {
    // not allowed: it stays where it was
  }
}
