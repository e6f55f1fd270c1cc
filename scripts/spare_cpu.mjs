// When `npm test` (scripts/test.mjs) starts a test file beyond its usual number at once: while the machine's CPU has
// been idle. Many of the slowest files spend most of their time waiting (a PostgreSQL restart, a lease that runs out,
// a process at idle priority), and they start first: with three files per core running, a 2-core machine stayed ~35%
// idle through the first two minutes of the suite. One more file starts each time a look at the CPU finds it at
// least SPARE_IDLE idle since the last look, up to SPARE_PER_CORE files per core. A busy machine (another program, or
// the suite's own files) finds no spare CPU, and the suite runs its usual number at once.
// The CPU's times come from os.cpus(), which Node, Deno and Bun give on Linux and macOS alike.
import { cpus } from "node:os";

/** The share of the machine's CPU time that must have been idle since the last look to start one more file. */
export const SPARE_IDLE = 0.35;
/** At most this many files per core run at once, spare CPU or not. */
export const SPARE_PER_CORE = 5;

/** The idle and the total CPU time of all the machine's cores so far (ms). */
export function cpuTimes(list = cpus()) {
  let idle = 0, total = 0;
  for (const { times } of list) {
    idle += times.idle;
    total += times.user + times.nice + times.sys + times.idle + times.irq;
  }
  return { idle, total };
}

/**
 * A function that answers, at each call, the share of the CPU time that was idle since its last call (or since it
 * was made): 0 when no time passed or the times are not known.
 */
export function idleSince(read = cpuTimes) {
  let last = read();
  return () => {
    const now = read();
    const total = now.total - last.total, idle = now.idle - last.idle;
    last = now;
    return total > 0 ? Math.min(1, Math.max(0, idle / total)) : 0;
  };
}

/** Whether to start one more file now: `running` at once, of at most `max`, with `idle` the CPU's idle share. */
export function startSpare(running, max, idle) {
  return running < max && idle >= SPARE_IDLE;
}
