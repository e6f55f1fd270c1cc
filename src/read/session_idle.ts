/**
 * Whether a run that has not ended and has no live writer is an agent
 * session between two hook calls (`idle`) rather than a crash: an episode
 * that agent hooks record (its start event names the session by the digest
 * of its id), that is still the session's episode (the session index points
 * at it, so its next hook call continues it), and whose session is held by a
 * live process (the agent; see `store/session_holder.ts`).
 *
 * @module
 */
import { existsSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { holderAlive } from "../store/session_holder.ts";
import { entryByDigest } from "../store/session_index.ts";
import { readLines } from "../store/jsonl.ts";
import { ARTIFACTS } from "../store/layout.ts";

/** The start event's agent (`using`) and session digest, when it records an agent session. */
function sessionOf(dir: string): { agent: string; sha256: string } | null {
  try {
    // The start event is the first line; a short read for it (64 KiB chunks, not the reader's default 1 MiB).
    for (
      const l of readLines(join(dir, ARTIFACTS.events), { maxLineBytes: 2 << 20, chunkSize: 64 << 10, noFollow: true })
    ) {
      const start = l.text === null ? null : JSON.parse(l.text);
      const settings = start?.phase === "start" ? start.payload?.settings : null;
      const agent = settings?.using, sha256 = settings?.adapter?.session_sha256;
      return typeof agent === "string" && typeof sha256 === "string" ? { agent, sha256 } : null;
    }
  } catch {
    // unreadable: not known to be a session
  }
  return null;
}

/**
 * Whether the episode at `dir` (not terminal, no live lock holder) is an
 * agent session waiting for its next hook call (see the module doc).
 *
 * @example
 * ```ts
 * import { sessionIdle } from "./session_idle.ts";
 * sessionIdle(".noema/episodes/ep_1"); // false: not a hook session's episode
 * ```
 */
export function sessionIdle(dir: string): boolean {
  const root = dirname(dirname(dir));
  if (!existsSync(join(root, "sessions"))) return false; // no agent session was ever recorded under this root
  const session = sessionOf(dir);
  if (session === null) return false;
  const entry = entryByDigest(root, session.agent, session.sha256);
  if (entry === null || entry.episode_id !== basename(dir) || entry.holder === undefined) return false;
  return holderAlive(entry.holder);
}
