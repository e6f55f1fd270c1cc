/**
 * Which episode an agent session is recorded in: one small JSON file per
 * session under `<root>/sessions/<agent>/`, written atomically. The first
 * hook process of a session claims it by creating the file exclusively, so
 * concurrent hooks of one session agree on one episode.
 *
 * A session id may carry a secret (a token in it): the file is named by a
 * digest of the id (`s_<sha256>.json`), and the entry keeps the id masked
 * (its first 4 characters) with its digest. Files named by the id itself (older
 * versions) are still read, and removed once the session is claimed again.
 *
 * @module
 */
import { closeSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import * as v from "valibot";
import { EXIT, NoemaError } from "../errors.ts";
import { refuseSymlinks, writeFileAtomic, writeJsonAtomic } from "./atomic.ts";
import { sha256 } from "./hash.ts";
import { openRegularFile } from "./regular_file.ts";
import { holderAfterCall, holderUnchanged, SessionHolder } from "./session_holder.ts";

/** One session's entry. */
export const SessionEntry = v.looseObject({
  schema_version: v.literal("session/1.0"),
  agent: v.string(),
  session_id: v.string(),
  episode_id: v.string(),
  created_at: v.string(),
  /** sha256 of the session id (the id itself is stored masked). */
  session_sha256: v.optional(v.string()),
  /** The process that claimed the session (to tell a claim whose process died before creating its episode). */
  pid: v.optional(v.number()),
  /** The process holding the session between its hook calls (the agent; see `session_holder.ts`). */
  holder: v.optional(SessionHolder),
});
/** One session's entry. */
export type SessionEntry = v.InferOutput<typeof SessionEntry>;

/**
 * The name a session's files take under `<root>/sessions/<agent>/`: a digest
 * of its id (which may carry a secret), never the id.
 *
 * @example
 * ```ts
 * import { sessionKey } from "./session_index.ts";
 * sessionKey("a07059c2-1111-2222"); // "s_…" (40 hex digits)
 * ```
 */
export function sessionKey(session: string): string {
  return `s_${sha256(session).replace(/^sha256:/, "").slice(0, 40)}`;
}

function entryPath(root: string, agent: string, session: string): string {
  return join(root, "sessions", agent, `${sessionKey(session)}.json`);
}

/** Where versions before 0.x kept a session's entry: named by the id itself. */
function legacyPath(root: string, agent: string, session: string): string {
  const safe = /^[A-Za-z0-9_-]{1,100}$/.test(session) ? session : `h_${sha256(session).slice(-32)}`;
  return join(root, "sessions", agent, `${safe}.json`);
}

/**
 * A session id as stored: its first 4 characters, the rest masked.
 *
 * @example
 * ```ts
 * import { maskSessionId } from "./session_index.ts";
 * maskSessionId("a07059c2-1111-2222"); // "a070…(18)"
 * ```
 */
export function maskSessionId(session: string): string {
  return `${session.slice(0, 4)}…(${session.length})`;
}

/**
 * How a session is named where noema stores it (the session file, the
 * episode's start event): the id masked, and its digest to match it.
 *
 * @example
 * ```ts
 * import { storedSession } from "./session_index.ts";
 * storedSession("a07059c2-1111-2222"); // { session_id: "a070…(18)", session_sha256: "…" }
 * ```
 */
export function storedSession(session: string): { session_id: string; session_sha256: string } {
  return { session_id: maskSessionId(session), session_sha256: sha256(session) };
}

function readEntryText(root: string, agent: string, session: string): { path: string; text: string } | null {
  for (const path of [entryPath(root, agent, session), legacyPath(root, agent, session)]) {
    refuseSymlinks(path, root, "read"); // a planted link would point the session at an episode of its choosing
    let fd: number;
    try {
      fd = openRegularFile(path, path, { noFollow: true }); // a FIFO would block the hook for ever
    } catch (e) {
      if ((e as { code?: string }).code !== "ENOENT") throw e;
      continue;
    }
    try {
      return { path, text: readFileSync(fd, "utf8") };
    } finally {
      closeSync(fd);
    }
  }
  return null;
}

/**
 * The episode a session is recorded in, or `null` when the session has none yet.
 *
 * @example
 * ```ts
 * import { sessionEpisode } from "./session_index.ts";
 * sessionEpisode("/w/.noema", "claude-code", "a07059c2-…")?.episode_id;
 * ```
 */
export function sessionEpisode(root: string, agent: string, session: string): SessionEntry | null {
  const found = readEntryText(root, agent, session);
  if (found === null) return null;
  const { path, text } = found;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new NoemaError("bad_json", (e as Error).message, { file: path, exitCode: EXIT.USAGE });
  }
  const r = v.safeParse(SessionEntry, value);
  if (!r.success) {
    throw new NoemaError("bad_session", `${v.getDotPath(r.issues[0]) ?? "entry"}: ${r.issues[0].message}`, {
      file: path,
      exitCode: EXIT.USAGE,
    });
  }
  if (path === entryPath(root, agent, session)) return r.output;
  // Named by the id in clear (an older version): moved to its digest name, the id masked.
  const moved = { ...r.output, session_id: maskSessionId(session), session_sha256: sha256(session) };
  try {
    writeFileAtomic(entryPath(root, agent, session), JSON.stringify(moved, null, 2) + "\n", { exclusive: true, root });
  } catch (e) {
    if ((e as { code?: string }).code !== "EEXIST") throw e; // moved by another process meanwhile
  }
  removeLegacy(root, agent, session);
  return sessionEpisode(root, agent, session);
}

/**
 * Claims a session for `episodeId`: the entry is created exclusively, and
 * `replace` (for a session whose episode has ended) overwrites it
 * atomically. Returns the entry that holds: ours, or the one another process
 * created first.
 *
 * @example
 * ```ts
 * import { claimSession } from "./session_index.ts";
 * const entry = claimSession("/w/.noema", "claude-code", "a07059c2-…", "ep_01K…");
 * ```
 */
export function claimSession(
  root: string,
  agent: string,
  session: string,
  episodeId: string,
  options: { replace?: boolean } = {},
): SessionEntry {
  const path = entryPath(root, agent, session);
  const entry: SessionEntry = {
    schema_version: "session/1.0",
    agent,
    session_id: maskSessionId(session),
    session_sha256: sha256(session),
    episode_id: episodeId,
    created_at: new Date().toISOString(),
    pid: process.pid,
    holder: holderAfterCall(null),
  };
  if (options.replace) {
    writeJsonAtomic(path, entry, { root });
    removeLegacy(root, agent, session);
    return entry;
  }
  const legacy = sessionEpisode(root, agent, session); // an older version's entry moves to its digest name
  if (legacy !== null) return legacy;
  try {
    writeFileAtomic(path, JSON.stringify(entry, null, 2) + "\n", { exclusive: true, root });
    return entry;
  } catch (e) {
    if ((e as { code?: string }).code !== "EEXIST") throw e;
    return sessionEpisode(root, agent, session)!;
  }
}

/**
 * Records which process holds the session (see `session_holder.ts`) after
 * a hook call of it, when that changed: at its second call, and when the
 * agent was started again for the same session. Best effort (a read-only
 * root keeps what it has).
 *
 * @example
 * ```ts
 * import { noteHolder, sessionEpisode } from "./session_index.ts";
 * const entry = sessionEpisode("/w/.noema", "claude-code", "a07059c2-…");
 * if (entry) noteHolder("/w/.noema", "claude-code", "a07059c2-…", entry);
 * ```
 */
export function noteHolder(root: string, agent: string, session: string, entry: SessionEntry): void {
  const holder = holderAfterCall(entry.holder);
  if (holderUnchanged(entry.holder, holder)) return;
  try {
    writeJsonAtomic(entryPath(root, agent, session), { ...entry, holder }, { root });
  } catch {
    // not recorded: the session reads as it did
  }
}

/**
 * The entry of the session whose id has the digest `sessionSha256` (as the
 * episode's start event records it), or null when there is none or it
 * cannot be read.
 *
 * @example
 * ```ts
 * import { entryByDigest } from "./session_index.ts";
 * entryByDigest("/w/.noema", "claude-code", "sha256:e8bc…"); // null: no such session
 * ```
 */
export function entryByDigest(root: string, agent: string, sessionSha256: string): SessionEntry | null {
  const hex = sessionSha256.replace(/^sha256:/, "");
  if (!/^[0-9a-f]{64}$/.test(hex) || !/^[a-z0-9-]{1,40}$/.test(agent)) return null;
  const path = join(root, "sessions", agent, `s_${hex.slice(0, 40)}.json`);
  try {
    refuseSymlinks(path, root, "read");
    const fd = openRegularFile(path, path, { noFollow: true });
    try {
      const r = v.safeParse(SessionEntry, JSON.parse(readFileSync(fd, "utf8")));
      return r.success ? r.output : null;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

/** Removes an entry an older version named by the session id (it shows the id in clear). */
function removeLegacy(root: string, agent: string, session: string): void {
  const legacy = legacyPath(root, agent, session);
  if (legacy === entryPath(root, agent, session)) return;
  try {
    unlinkSync(legacy);
  } catch {
    // none
  }
}

/**
 * Whether the process that claimed a session may still be creating its
 * episode: alive, or not known (an entry without a pid).
 *
 * @example
 * ```ts
 * import { claimantAlive } from "./session_index.ts";
 * claimantAlive({ pid: 1 } as never); // true
 * ```
 */
export function claimantAlive(entry: SessionEntry): boolean {
  if (entry.pid === undefined || entry.pid === process.pid) return entry.pid === undefined;
  try {
    process.kill(entry.pid, 0);
    return true;
  } catch (e) {
    return (e as { code?: string }).code === "EPERM";
  }
}
