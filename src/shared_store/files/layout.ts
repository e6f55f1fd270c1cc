/**
 * Where the files backend of the shared store keeps things, below its
 * directory (a team's shared file system, e.g. NFS):
 *
 * ```
 * <dir>/noema-store.json                  the schema version
 * <dir>/episodes/<id>/catalog.json        the catalog row
 * <dir>/episodes/<id>/stored_at           empty; its mtime, the directory's clock, is when the row was first stored
 * <dir>/episodes/<id>/lease.json          the writer's lease and fencing token
 * <dir>/episodes/<id>/lock                the short write lock (src/store/lock.ts)
 * <dir>/episodes/<id>/lines/<stream>/data  the stream's lines, each with its newline
 * <dir>/episodes/<id>/lines/<stream>/index each line's end offset in data (8 bytes, big-endian)
 * <dir>/episodes/<id>/files/<encoded name> a whole artifact file
 * <dir>/episodes/<id>/decisions/<encoded checkpoint>.json  a decision, created exclusively
 * ```
 *
 * Every name that comes from a caller is checked here, so nothing is ever
 * read or written outside the directory.
 *
 * @module
 */
import { join } from "node:path";
import { NoemaError } from "../../errors.ts";
import { assertEpisodeId, episodeIdProblem } from "../../store/ids.ts";

/**
 * The empty file created with an episode's first catalog row: its mtime, set
 * by the shared directory's file system, is the row's `stored_at`.
 */
export const STORED_AT_FILE = "stored_at";

/** The schema version file's name. */
export const VERSION_FILE = "noema-store.json";

/**
 * The directory of an episode in the store; throws a usage error for an id
 * that is not a safe directory name.
 *
 * @example
 * ```ts
 * import { episodePath } from "./layout.ts";
 * episodePath("/mnt/noema", "ep_1"); // "/mnt/noema/episodes/ep_1"
 * ```
 */
export function episodePath(dir: string, episodeId: string): string {
  assertEpisodeId(episodeId);
  return join(dir, "episodes", episodeId);
}

/**
 * The directory holding a stream's `data` and `index`; a stream name is a
 * plain file name (`events.jsonl`).
 *
 * @example
 * ```ts
 * import { streamPath } from "./layout.ts";
 * streamPath("/mnt/noema/episodes/ep_1", "events.jsonl"); // ".../lines/events.jsonl"
 * ```
 */
export function streamPath(episodeDir: string, stream: string): string {
  const problem = episodeIdProblem(stream);
  if (problem) throw new NoemaError("bad_store_name", `invalid stream name ${JSON.stringify(stream)}: ${problem}`);
  return join(episodeDir, "lines", stream);
}

/**
 * A stored name (`checkpoints/c1.json`) as one flat file name: percent-encoded,
 * dots included, so a stored name never holds a `.` and never collides with
 * the temporary files of an atomic write (which do). Throws for a name that
 * would leave the episode directory.
 *
 * @example
 * ```ts
 * import { encodeName } from "./layout.ts";
 * encodeName("checkpoints/c1.json"); // "checkpoints%2Fc1%2Ejson"
 * ```
 */
export function encodeName(name: string): string {
  // deno-lint-ignore no-control-regex
  const bad = name.length === 0 || name.length > 200 || /[\u0000-\u001f\u007f]/.test(name) ||
    name.startsWith("/") || name.split("/").some((p) => p === "" || p === "." || p === "..");
  if (bad) throw new NoemaError("bad_store_name", `invalid stored file name ${JSON.stringify(name)}`);
  return encodeURIComponent(name).replace(/[.!'()*~]/g, (c) => "%" + c.charCodeAt(0).toString(16).toUpperCase());
}

/**
 * The name {@link encodeName} encoded, or null for an entry that is not a
 * stored name (a temporary file of an atomic write).
 *
 * @example
 * ```ts
 * import { decodeName } from "./layout.ts";
 * decodeName("checkpoints%2Fc1%2Ejson"); // "checkpoints/c1.json"
 * ```
 */
export function decodeName(entry: string): string | null {
  if (entry.includes(".")) return null;
  try {
    return decodeURIComponent(entry);
  } catch {
    return null;
  }
}
