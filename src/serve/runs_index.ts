/**
 * Every run of a root as list entries, for a view that must see them all
 * (sorted by a column, filtered by adapter, policy or outcome): the entries
 * of sealed runs (terminal, with their manifest: their files no longer
 * change) are kept in memory, so a second sort of 100,000 runs reads the
 * episodes directory and nothing else of them. A run still going (or
 * crashed, or paused) is read again each time. A served root also keeps
 * them, with their facts, in its runs cache (`runs_cache.ts`), so the first
 * such view of a restarted server reads no sealed run either.
 *
 * @module
 */
import { sep } from "node:path";
import { readdirSync, statSync } from "node:fs";
import { type EpisodeEntry, type ListOptions, matchesFilters, readEpisodeEntry } from "../read/list.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";
import { ulidTime } from "../store/ulid.ts";
import { keepFacts, keptFacts, runFacts } from "./run_facts.ts";
import { openRunsCache, runsScanned, takeCachedRun, writesRunsCache } from "./runs_cache.ts";
import { type CachedRun, manifestSig } from "./runs_cache_file.ts";

/** Sealed runs: the entry, and the identity of the manifest it was read with. */
const sealed = new Map<string, { e: EpisodeEntry; sig: string }>();
/** Sealed entries kept. */
const KEEP = 250_000;

function keep(dir: string, e: EpisodeEntry, sig: string): EpisodeEntry {
  sealed.set(dir, { e, sig });
  if (sealed.size > KEEP) sealed.delete(sealed.keys().next().value!);
  return e;
}

/** A cached record as the entry {@link readEpisodeEntry} gives (the same keys in the same order). */
function entryFrom(dir: string, r: CachedRun): EpisodeEntry {
  const c = r.entry;
  const e: EpisodeEntry = {
    episode_id: c.episode_id,
    episode_dir: dir,
    lifecycle: c.lifecycle,
    status: c.status,
    task: c.task,
    started_at: c.started_at,
    tags: c.tags,
    run_state: c.run_state,
  };
  if (c.outcome !== undefined) e.outcome = c.outcome;
  if (c.would_veto_count !== undefined) e.would_veto_count = c.would_veto_count;
  return e;
}

function install(dir: string, r: CachedRun): void {
  if (sealed.has(dir)) return;
  keep(dir, entryFrom(dir, r), r.sig);
  keepFacts(dir, r.facts);
}

function entryOf(root: string, name: string, dir: string, read: { n: number }): EpisodeEntry {
  const hit = sealed.get(dir);
  if (hit) return hit.e;
  const cached = takeCachedRun(root, name, dir);
  if (cached !== null) {
    install(dir, cached);
    return sealed.get(dir)!.e;
  }
  const sig = manifestSig(dir);
  const e = readEpisodeEntry(name, dir);
  if (e.run_state !== "terminal" || sig === null) return e;
  read.n++;
  // Its facts too, for the cache; both kept only when the manifest did not change while they were read.
  if (writesRunsCache(root)) runFacts(e);
  return manifestSig(dir) === sig ? keep(dir, e, sig) : e;
}

/** The sealed runs of `root` kept in memory, with their facts, as the cache writes them. */
function* recordsOf(root: string): Iterable<CachedRun> {
  const prefix = episodesDir(root) + sep;
  for (const [dir, { e, sig }] of sealed) {
    if (!dir.startsWith(prefix) || e.status === "unreadable") continue;
    const facts = keptFacts(dir);
    if (facts !== undefined) yield { id: e.episode_id, sig, entry: e, facts };
  }
}

/**
 * Keeps the runs cache of `root` (see `runs_cache.ts`) for the views of this
 * process: read back now in the background, written after views that read
 * runs unless `write` is false (`--read-only`).
 *
 * @example
 * ```ts
 * import { keepRunsCache } from "./runs_index.ts";
 * keepRunsCache("/w/.noema", { write: true, log: console.error });
 * ```
 */
export function keepRunsCache(root: string, opts: { write: boolean; log: (m: string) => void }): void {
  openRunsCache(root, { ...opts, install, records: () => recordsOf(root) });
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
  // Paths by concatenation (a checked id is one plain component): path.join over 100,000 names costs ~100 ms.
  const base = parent + sep;
  const keyed: { name: string; t: number }[] = [];
  for (const d of dirents) {
    if (!d.isDirectory()) continue;
    const name = d.name;
    // `ep_<ULID>` is an acceptable id by its pattern alone; other names are checked.
    const t = name.startsWith("ep_") ? ulidTime(name.slice(3)) : null;
    if (t === null && episodeIdProblem(name)) continue;
    keyed.push({ name, t: t ?? statSync(base + name).mtimeMs });
  }
  keyed.sort((a, b) => b.t - a.t || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  if (f.order === "oldest") keyed.reverse();
  const out: EpisodeEntry[] = [];
  let allSealed = true;
  const read = { n: 0 };
  for (const k of keyed) {
    const dir = base + k.name;
    const e = entryOf(root, k.name, dir, read);
    allSealed &&= sealed.get(dir)?.e === e;
    if (matchesFilters(e, f, k.t)) out.push(e);
  }
  runsScanned(root, read.n > 0);
  return { entries: out, sealed: allSealed };
}
