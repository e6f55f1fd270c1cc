/**
 * Ids and paths taken from URLs, kept inside the root: an episode id must be
 * a plain id (no `/`, no `..`, no encoded slash once decoded), the episode
 * directory and every component of a raw file's path must not be a symbolic
 * link, and a raw file must be a regular file, opened without following links.
 *
 * @module
 */
import { closeSync, fstatSync, lstatSync, openSync, readSync } from "node:fs";
import { constants } from "node:fs";
import { join } from "node:path";
import { NoemaError } from "../errors.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";
import { O_NOFOLLOW, refuseSymlinks } from "../store/nofollow.ts";

/** An error a request caused, with the HTTP status it answers. */
export class HttpError extends Error {
  /** The HTTP status (4xx). */
  readonly status: 400 | 401 | 403 | 404 | 405 | 409 | 413;
  /** A short machine-readable code. */
  readonly code: string;
  /**
   * @example
   * ```ts
   * import { HttpError } from "./paths.ts";
   * throw new HttpError(404, "not_found", "episode ep_1 not found");
   * ```
   */
  constructor(status: HttpError["status"], code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/**
 * The directory of episode `id` under `root`, after checking the id and that
 * neither `episodes/` nor the episode directory is a symbolic link. Throws an
 * {@link HttpError}: 400 for a malformed id, 404 when there is no such episode,
 * 403 for a link.
 *
 * @example
 * ```ts
 * import { episodeDirIn } from "./paths.ts";
 * episodeDirIn(".noema", "ep_01K9RBBMXXRSFWR49SXFGF4SPR"); // ".noema/episodes/ep_01K9…"
 * ```
 */
export function episodeDirIn(root: string, id: string): string {
  const problem = episodeIdProblem(id);
  if (problem !== null) throw new HttpError(400, "invalid_id", `invalid episode id ${JSON.stringify(id)}: ${problem}`);
  const dir = join(episodesDir(root), id);
  const st = lstatSync(dir, { throwIfNoEntry: false });
  if (st === undefined) throw new HttpError(404, "not_found", `episode ${id} not found`);
  try {
    refuseSymlinks(dir, root, "read");
  } catch (e) {
    if (e instanceof NoemaError) throw new HttpError(403, "unsafe_path", `episode ${id}: a symbolic link; refused`);
    throw e;
  }
  if (!st.isDirectory()) throw new HttpError(404, "not_found", `episode ${id} is not a directory`);
  return dir;
}

/** One segment of a raw file's path: a plain file or folder name. */
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

/**
 * The path of a raw file of an episode from the URL segments after
 * `/files/` (each decoded on its own: an encoded slash stays inside a
 * segment and is refused), after checking every segment is a plain name and
 * no component is a symbolic link.
 *
 * @example
 * ```ts
 * import { rawFilePath } from "./paths.ts";
 * rawFilePath("/r/episodes/ep_1", ["approvals", "chk_1.json"]); // "/r/episodes/ep_1/approvals/chk_1.json"
 * ```
 */
export function rawFilePath(dir: string, segments: readonly string[]): string {
  if (segments.length === 0 || segments.length > 8) throw new HttpError(400, "invalid_path", "no such file path");
  for (const s of segments) {
    if (!SEGMENT.test(s) || s.includes("..")) {
      throw new HttpError(400, "invalid_path", `invalid file name ${JSON.stringify(s)}`);
    }
  }
  const path = join(dir, ...segments);
  try {
    refuseSymlinks(path, dir, "read");
  } catch (e) {
    if (e instanceof NoemaError) {
      throw new HttpError(403, "unsafe_path", `${segments.join("/")}: a symbolic link; refused`);
    }
    throw e;
  }
  return path;
}

/** The most bytes of one raw file served. */
export const RAW_LIMIT = 64 * 1024 * 1024;

/**
 * Reads a regular file without following a link at its last component
 * (`O_NOFOLLOW`); a directory, FIFO or device, a missing file, or one over
 * {@link RAW_LIMIT} is an {@link HttpError}.
 *
 * @example
 * ```ts
 * import { readRegularFile } from "./paths.ts";
 * const bytes = readRegularFile("/r/episodes/ep_1/state.json");
 * ```
 */
export function readRegularFile(path: string): Uint8Array {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | O_NOFOLLOW | (constants.O_NONBLOCK ?? 0));
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "ENOENT" || code === "ENOTDIR") throw new HttpError(404, "not_found", "no such file");
    if (code === "ELOOP") throw new HttpError(403, "unsafe_path", "a symbolic link; refused");
    throw new HttpError(403, "unreadable", "the file cannot be read");
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new HttpError(404, "not_a_file", "not a regular file");
    if (st.size > RAW_LIMIT) {
      throw new HttpError(413, "too_large", `the file holds ${st.size} bytes; too large to serve`);
    }
    const buf = new Uint8Array(st.size);
    let at = 0;
    while (at < buf.length) {
      const n = readSync(fd, buf, at, buf.length - at, at);
      if (n === 0) break;
      at += n;
    }
    return buf.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}
