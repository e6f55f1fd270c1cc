/**
 * Every run of a root as list entries, for a view that must see them all
 * (sorted by a column, filtered by adapter, policy or outcome): the entries
 * of sealed runs (terminal, with their manifest: their files no longer
 * change) are kept in memory, so a second sort of 100,000 runs reads the
 * episodes directory and nothing else of them. A run still going (or
 * crashed, or paused) is read again each time.
 *
 * @module
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { type EpisodeEntry, type ListOptions, matchesFilters, readEpisodeEntry } from "../read/list.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";
import { ulidTime } from "../store/ulid.ts";

const sealed = new Map<string, EpisodeEntry>();
/** Sealed entries kept. */
const KEEP = 250_000;

function entryOf(name: string, dir: string): EpisodeEntry {
  const hit = sealed.get(dir);
  if (hit) return hit;
  const e = readEpisodeEntry(name, dir);
  if (e.run_state === "terminal" && existsSync(join(dir, "manifest.json"))) {
    sealed.set(dir, e);
    if (sealed.size > KEEP) sealed.delete(sealed.keys().next().value!);
  }
  return e;
}

/**
 * Every run of `root` that passes the filters of `f` (status, since, tags,
 * task), ordered as `noema list` orders them (`f.order`), and whether every
 * run of the root is sealed (then the answer changes only when a run is
 * added or removed: when the episodes directory changes).
 *
 * @example
 * ```ts
 * import { allRuns } from "./runs_index.ts";
 * allRuns(".noema", { status: ["vetoed"] }).entries.length;
 * ```
 */
export function allRuns(root: string, f: ListOptions): { entries: EpisodeEntry[]; sealed: boolean } {
  const parent = episodesDir(root);
  let dirents;
  try {
    dirents = readdirSync(parent, { withFileTypes: true });
  } catch {
    return { entries: [], sealed: false };
  }
  const keyed: { name: string; t: number }[] = [];
  for (const d of dirents) {
    if (!d.isDirectory() || episodeIdProblem(d.name)) continue;
    const t = d.name.startsWith("ep_") ? ulidTime(d.name.slice(3)) : null;
    keyed.push({ name: d.name, t: t ?? statSync(join(parent, d.name)).mtimeMs });
  }
  keyed.sort((a, b) => b.t - a.t || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  if (f.order === "oldest") keyed.reverse();
  const out: EpisodeEntry[] = [];
  let allSealed = true;
  for (const k of keyed) {
    const dir = join(parent, k.name);
    const e = entryOf(k.name, dir);
    allSealed &&= sealed.get(dir) === e;
    if (matchesFilters(e, f, k.t)) out.push(e);
  }
  return { entries: out, sealed: allSealed };
}
