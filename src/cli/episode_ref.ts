/**
 * How the CLI reads an episode argument: a full id, `last` (the newest
 * episode), a unique id prefix (like git and docker: `ep_01K9RB`, or without
 * `ep_`), or a path to an episode directory. A directory that holds neither
 * `state.json` nor `events.jsonl` is refused: it is not an episode.
 *
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { isAbsolute, join, sep } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import { listEpisodes } from "../read/list.ts";
import { episodeIdProblem } from "../store/ids.ts";
import {
  ARTIFACTS,
  type EpisodeLocation,
  episodesDir,
  locateEpisode,
  resolveRoot,
  type RootOptions,
} from "../store/layout.ts";
import { usageError } from "./errors.ts";

/** The word that names the newest episode wherever an id is accepted. */
export const LAST = "last";

/** Most candidates listed in an "ambiguous prefix" error. */
const MAX_CANDIDATES = 10;

function isPathLike(ref: string): boolean {
  return ref.includes("/") || ref.includes(sep) || ref === "." || ref === ".." || isAbsolute(ref);
}

/**
 * The episode id (or the path, unchanged) an argument names: an exact id as
 * is, `last` as the newest episode, a unique prefix as its full id. An
 * ambiguous prefix is a usage error (exit 2) listing the candidates; no match
 * is "not found" (exit 1).
 *
 * @example
 * ```ts
 * import { resolveEpisodeRef } from "./episode_ref.ts";
 * resolveEpisodeRef("last", { root: ".noema" }); // "ep_01K9…" (the newest)
 * ```
 */
export function resolveEpisodeRef(ref: string, options: RootOptions = {}): string {
  if (isPathLike(ref)) return ref;
  const parent = episodesDir(resolveRoot(options));
  if (existsSync(join(parent, ref))) return ref;
  if (ref === LAST) {
    const newest = listEpisodes({ ...options, limit: 1 })[0];
    if (!newest) throw new NoemaError("not_found", `no episodes in ${parent}`, { exitCode: EXIT.ERROR });
    return newest.episode_id;
  }
  if (ref === "" || !existsSync(parent)) return ref;
  const want = ref.toUpperCase();
  const matches = readdirSync(parent, { withFileTypes: true })
    .filter((d) => d.isDirectory() && !episodeIdProblem(d.name))
    .map((d) => d.name)
    .filter((name) => {
      const up = name.toUpperCase();
      return up.startsWith(want) || up.startsWith(`EP_${want}`);
    })
    .sort();
  if (matches.length === 1) return matches[0];
  if (matches.length > 1) {
    const shown = matches.slice(0, MAX_CANDIDATES).join(", ");
    const more = matches.length > MAX_CANDIDATES ? ` and ${matches.length - MAX_CANDIDATES} more` : "";
    throw usageError(`episode prefix "${ref}" is ambiguous: ${matches.length} episodes match (${shown}${more})`);
  }
  return ref;
}

/**
 * Locates the episode an argument names (see {@link resolveEpisodeRef}) and
 * checks that its directory is an episode: it holds `state.json` or
 * `events.jsonl`. Anything else is `not an episode directory` (exit 1).
 *
 * @example
 * ```ts
 * import { locateEpisodeRef } from "./episode_ref.ts";
 * const { id, dir } = locateEpisodeRef("ep_01K9RB", { root: ".noema" });
 * ```
 */
export function locateEpisodeRef(ref: string, options: RootOptions = {}): EpisodeLocation {
  const loc = locateEpisode(resolveEpisodeRef(ref, options), options);
  if (!existsSync(join(loc.dir, ARTIFACTS.state)) && !existsSync(join(loc.dir, ARTIFACTS.events))) {
    throw new NoemaError(
      "not_episode",
      `not an episode directory: ${loc.dir} (no ${ARTIFACTS.state} or ${ARTIFACTS.events})`,
      { exitCode: EXIT.ERROR },
    );
  }
  return loc;
}
