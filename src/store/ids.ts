/**
 * Episode ids: `ep_<ULID>`, which sort by creation time, and the rules for
 * ids chosen by users.
 *
 * @module
 */
import { monotonicUlid } from "./ulid.ts";
import { EXIT, NoemaError } from "../errors.ts";

const nextUlid = monotonicUlid();

/**
 * A new time-sortable episode id, `ep_` followed by a ULID. Ids made later
 * (even within the same millisecond) sort after earlier ones.
 *
 * @example
 * ```ts
 * import { newEpisodeId } from "noema";
 * newEpisodeId(); // "ep_01K9RBBMXXRSFWR49SXFGF4SPR"
 * ```
 */
export function newEpisodeId(now: number = Date.now()): string {
  return `ep_${nextUlid(now)}`;
}

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Why an id is not acceptable as a directory name under the episodes root, or
 * `null` when it is. Ids may use letters, digits, `.`, `_` and `-`, must start
 * with a letter or digit, must not contain `..`, and are at most 128 chars.
 *
 * @example
 * ```ts
 * import { episodeIdProblem } from "noema";
 * episodeIdProblem("../etc"); // "must not contain '..'"
 * ```
 */
export function episodeIdProblem(id: string): string | null {
  if (id.length === 0) return "must not be empty";
  if (id.length > 128) return "must be at most 128 characters";
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(id)) return "must not contain control characters";
  if (id.includes("/") || id.includes("\\")) return "must not contain path separators";
  if (id.includes("..")) return "must not contain '..'";
  if (!ID_PATTERN.test(id)) return "may only use letters, digits, '.', '_' and '-', starting with a letter or digit";
  return null;
}

/**
 * Throws a usage error when an id is not acceptable (see {@link episodeIdProblem}).
 *
 * @example
 * ```ts
 * import { assertEpisodeId } from "noema";
 * assertEpisodeId("ep_01K9RBBMXXRSFWR49SXFGF4SPR");
 * ```
 */
export function assertEpisodeId(id: string, what = "episode id"): void {
  const problem = episodeIdProblem(id);
  if (problem) {
    throw new NoemaError("invalid_id", `invalid ${what} ${JSON.stringify(id)}: ${problem}`, { exitCode: EXIT.USAGE });
  }
}
