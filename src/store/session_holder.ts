/**
 * Which process holds an agent session between its hook calls, so that an
 * open episode of a live session reads as `idle`, not `crashed` (see
 * `read/list.ts` `runState`).
 *
 * Without a resident hook server nothing of noema runs between two hook
 * calls: the agent CLI (Claude Code, Codex, Gemini CLI) holds the session
 * and starts one `noema hook` per call, often through a shell or a launcher
 * (`sh -c`, `npx`) that ends with the call. Each call records the chain of
 * its ancestors (pid and start time, nearest first; a few levels). The
 * session's **holder** is the nearest ancestor two calls share: the process
 * that starts the hooks, the agent itself, whatever launchers lie between.
 * Until a second call, the first call's ancestors stand in for it.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import process from "node:process";
import * as v from "valibot";

/** One process: its pid and its start time (clock ticks since boot, `/proc/PID/stat` field 22; null off Linux). */
export const ProcessRef = v.object({ pid: v.number(), start_ticks: v.nullable(v.number()) });
/** One process. */
export type ProcessRef = v.InferOutput<typeof ProcessRef>;

/** What a session entry records of the processes behind its hook calls. */
export const SessionHolder = v.object({
  host: v.string(),
  /** The last call's ancestors, nearest first. */
  ancestors: v.array(ProcessRef),
  /** The nearest ancestor two calls shared (the agent), once known. */
  holder: v.nullable(ProcessRef),
});
/** What a session entry records of the processes behind its hook calls. */
export type SessionHolder = v.InferOutput<typeof SessionHolder>;

/** Ancestors recorded per call. */
const LEVELS = 4;

function stat(pid: number): { ppid: number; startTicks: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    const state = f[0];
    if (state === "Z" || state === "X") return null; // ended, not yet reaped
    return { ppid: Number(f[1]), startTicks: Number(f[19]) };
  } catch {
    return null;
  }
}

/**
 * This process's ancestors, nearest first (up to a few, never pid 1).
 *
 * @example
 * ```ts
 * import { ancestors } from "./session_holder.ts";
 * ancestors()[0]?.pid === process.ppid; // true
 * ```
 */
export function ancestors(): ProcessRef[] {
  const out: ProcessRef[] = [];
  let pid = process.ppid;
  while (out.length < LEVELS && Number.isInteger(pid) && pid > 1) {
    const st = stat(pid);
    if (st === null) {
      if (out.length === 0) out.push({ pid, start_ticks: null }); // no /proc: the parent alone
      break;
    }
    out.push({ pid, start_ticks: st.startTicks });
    pid = st.ppid;
  }
  return out;
}

const same = (a: ProcessRef, b: ProcessRef) => a.pid === b.pid && a.start_ticks === b.start_ticks;

/**
 * What a call records: its ancestors, and the holder: the nearest of them
 * that the previous call also had (else the holder known before, when it
 * is still one of them).
 *
 * @example
 * ```ts
 * import { holderAfterCall } from "./session_holder.ts";
 * holderAfterCall(null).holder; // null: a first call
 * ```
 */
export function holderAfterCall(before: SessionHolder | null | undefined): SessionHolder {
  const now = ancestors();
  const shared = before?.host === hostname() ? now.find((p) => before.ancestors.some((q) => same(p, q))) : undefined;
  return { host: hostname(), ancestors: now, holder: shared ?? null };
}

/** Whether `before` already says what {@link holderAfterCall} would (no need to write it again). */
export function holderUnchanged(before: SessionHolder | null | undefined, after: SessionHolder): boolean {
  if (!before || before.holder === null || after.holder === null) return false;
  return same(before.holder, after.holder);
}

function alive(p: ProcessRef): boolean {
  try {
    process.kill(p.pid, 0);
  } catch (e) {
    if ((e as { code?: string }).code !== "EPERM") return false;
  }
  if (p.start_ticks === null) return true;
  const st = stat(p.pid);
  return st !== null && st.startTicks === p.start_ticks; // the same process, not a reuse of its pid
}

/**
 * Whether the process holding a session is alive: its holder, or before a
 * second call any of the first call's ancestors. Another host's session
 * cannot be told: taken as alive (a session is crashed only when its holder
 * is known to be gone).
 *
 * @example
 * ```ts
 * import { hostname } from "node:os";
 * import { holderAlive } from "./session_holder.ts";
 * holderAlive({ host: hostname(), ancestors: [], holder: null }); // false: no process known
 * ```
 */
export function holderAlive(h: SessionHolder): boolean {
  if (h.host !== hostname()) return true;
  return h.holder !== null ? alive(h.holder) : h.ancestors.some(alive);
}
