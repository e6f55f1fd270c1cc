/**
 * Which episode an agent session is recorded in: one small JSON file per
 * session under `<root>/sessions/<agent>/`, written atomically. The first
 * hook process of a session claims it by creating the file exclusively, so
 * concurrent hooks of one session agree on one episode.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { EXIT, NoemaError } from "../errors.ts";
import { writeFileAtomic, writeJsonAtomic } from "../store/atomic.ts";
import { sha256 } from "../store/hash.ts";

/** One session's entry. */
export const SessionEntry = v.looseObject({
  schema_version: v.literal("session/1.0"),
  agent: v.string(),
  session_id: v.string(),
  episode_id: v.string(),
  created_at: v.string(),
});
/** One session's entry. */
export type SessionEntry = v.InferOutput<typeof SessionEntry>;

function entryPath(root: string, agent: string, session: string): string {
  const safe = /^[A-Za-z0-9_-]{1,100}$/.test(session) ? session : `h_${sha256(session).slice(-32)}`;
  return join(root, "sessions", agent, `${safe}.json`);
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
  const path = entryPath(root, agent, session);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return null;
    throw e;
  }
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
  return r.output;
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
    session_id: session,
    episode_id: episodeId,
    created_at: new Date().toISOString(),
  };
  if (options.replace) {
    writeJsonAtomic(path, entry, { root });
    return entry;
  }
  try {
    writeFileAtomic(path, JSON.stringify(entry, null, 2) + "\n", { exclusive: true, root });
    return entry;
  } catch (e) {
    if ((e as { code?: string }).code !== "EEXIST") throw e;
    return sessionEpisode(root, agent, session)!;
  }
}
