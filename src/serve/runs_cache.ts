/**
 * The runs cache of a served root (the file: `runs_cache_file.ts`), kept in
 * step by the server: read back in the background as soon as the server
 * listens (each record checked against its run's manifest, a few hundred
 * `stat` calls at a time), so a first view sorted by cost over 100,000 runs
 * after a restart reads no run; a view asked for before that is done checks
 * the records it still needs itself. After a view that read runs (sealed
 * since, or changed), the file is written again, soon the first time, then at
 * most every {@link SAVE_EVERY_MS}. A server that cannot write it (read-only
 * root or `--read-only`, a symbolic link in the way) says so once and goes on
 * without: every run is then read once per server, as before.
 *
 * @module
 */
import { join } from "node:path";
import { episodesDir } from "../store/layout.ts";
import {
  type CachedRun,
  manifestSig,
  manifestSigAsync,
  readRunsCache,
  readRunsCacheAsync,
  runsCachePath,
  writeRunsCache,
} from "./runs_cache_file.ts";

/** How a root's cache meets the runs kept in memory (`runs_index.ts`). */
export interface RunsCacheHooks {
  /** Write the file (false: only read it). */
  write: boolean;
  /** Where the server says what it did. */
  log: (message: string) => void;
  /** Keeps a record checked against its manifest as the run's entry and facts. */
  install(dir: string, r: CachedRun): void;
  /** The sealed runs of the root kept in memory, to write. */
  records(): Iterable<CachedRun>;
}

interface RootCache {
  hooks: RunsCacheHooks;
  /** Records read from the file and not yet checked or used, by id; null until the file is read. */
  unchecked: Map<string, CachedRun> | null;
  /** Whether the file no longer says what memory holds. */
  dirty: boolean;
  /** A write is due or under way. */
  busy: boolean;
  /** When the last write ended (ms since epoch), 0 for none. */
  lastSave: number;
  /** It cannot be written: not tried again. */
  broken: boolean;
  /** Settles when the records are read back and checked. */
  ready: Promise<void>;
}

/** The first write after a view that read runs waits this long (more views coalesce). */
const FIRST_SAVE_MS = 100;
/** Later writes (a run sealed since): at most one this often. */
export const SAVE_EVERY_MS = 30_000;
/** Manifests checked at a time while reading the cache back. */
const BATCH = 256;

const roots = new Map<string, RootCache>();

/** Runs `f` in `ms` without keeping the process alive for it (a server that stops does not wait for a write). */
function later(f: () => void, ms: number): void {
  const t: unknown = setTimeout(f, ms);
  if (typeof t === "number") (globalThis as { Deno?: { unrefTimer(id: number): void } }).Deno?.unrefTimer(t);
  else (t as { unref?: () => void }).unref?.();
}

/**
 * Keeps the runs cache of `root` for this process: its records are read back and checked in the background from
 * now on, and the file is written after views that read runs (unless `hooks.write` is false).
 *
 * @example
 * ```ts
 * import { openRunsCache } from "./runs_cache.ts";
 * openRunsCache("/w/.noema", { write: true, log: console.error, install() {}, records: () => [] });
 * ```
 */
export function openRunsCache(root: string, hooks: RunsCacheHooks): void {
  if (roots.has(root)) return;
  const st = { hooks, unchecked: null, dirty: false, busy: false, lastSave: 0, broken: false } as RootCache;
  roots.set(root, st);
  st.ready = new Promise((done) => later(() => warm(root, st).then(done), 0));
}

/**
 * Settles once the runs cache of `root` is read back and checked (at once for a root without one): a view that
 * must see every run waits for it rather than check the records itself, which takes longer.
 *
 * @example
 * ```ts
 * import { runsCacheReady } from "./runs_cache.ts";
 * await runsCacheReady("/w/.noema");
 * ```
 */
export function runsCacheReady(root: string): Promise<void> {
  return roots.get(root)?.ready ?? Promise.resolve();
}

/** Whether `root` has a cache this process writes (then a run read is worth its facts at once). */
export function writesRunsCache(root: string): boolean {
  const st = roots.get(root);
  return st !== undefined && st.hooks.write && !st.broken;
}

async function warm(root: string, st: RootCache): Promise<void> {
  const t0 = performance.now();
  try {
    const got = await readRunsCacheAsync(root);
    st.unchecked ??= got;
    const ids = [...st.unchecked.keys()], parent = episodesDir(root);
    let kept = 0;
    for (let i = 0; i < ids.length; i += BATCH) {
      const batch = ids.slice(i, i + BATCH);
      const sigs = await Promise.all(batch.map((id) => manifestSigAsync(join(parent, id))));
      batch.forEach((id, j) => {
        const r = st.unchecked!.get(id);
        if (r === undefined) return; // a view took it meanwhile
        st.unchecked!.delete(id);
        if (sigs[j] === r.sig) {
          st.hooks.install(join(parent, id), r);
          kept++;
        } else st.dirty = true; // sealed again, edited or gone: read again by the next view
      });
    }
    if (ids.length > 0) {
      const ms = Math.round(performance.now() - t0);
      st.hooks.log(`noema serve: runs cache: ${kept} of ${ids.length} runs read back (${ms} ms)`);
    }
  } catch (e) {
    st.hooks.log(`noema serve: runs cache: not read back (${(e as Error).message}); views read the runs`);
  }
}

/**
 * The cached record of run `id` (in `dir`) when its manifest is still the one it was read with, else null (then it
 * is to be read from its files). Reads the file first if the background has not yet.
 *
 * @example
 * ```ts
 * import { takeCachedRun } from "./runs_cache.ts";
 * takeCachedRun("/w/.noema", "ep_1", "/w/.noema/episodes/ep_1"); // null: not cached, or changed since
 * ```
 */
export function takeCachedRun(root: string, id: string, dir: string): CachedRun | null {
  const st = roots.get(root);
  if (st === undefined) return null;
  st.unchecked ??= readRunsCache(root);
  const r = st.unchecked.get(id);
  if (r === undefined) return null;
  st.unchecked.delete(id);
  if (manifestSig(dir) === r.sig) return r;
  st.dirty = true;
  return null;
}

/**
 * Says a view went over every run of `root` (`readSome`: it read some from their files): records it did not use
 * are of runs gone, and the file is written again when it no longer says what memory holds.
 *
 * @example
 * ```ts
 * import { runsScanned } from "./runs_cache.ts";
 * runsScanned("/w/.noema", true);
 * ```
 */
export function runsScanned(root: string, readSome: boolean): void {
  const st = roots.get(root);
  if (st === undefined) return;
  if (st.unchecked !== null && st.unchecked.size > 0) {
    st.unchecked.clear();
    st.dirty = true;
  }
  if (readSome) st.dirty = true;
  if (st.dirty) schedule(root, st);
}

function schedule(root: string, st: RootCache): void {
  if (!st.hooks.write || st.broken || st.busy) return;
  st.busy = true;
  const wait = st.lastSave === 0 ? FIRST_SAVE_MS : Math.max(0, st.lastSave + SAVE_EVERY_MS - Date.now());
  later(() => void save(root, st), wait);
}

async function save(root: string, st: RootCache): Promise<void> {
  st.dirty = false;
  try {
    await writeRunsCache(root, st.hooks.records());
  } catch (e) {
    st.broken = true;
    st.hooks.log(
      `noema serve: runs cache: ${runsCachePath(root)} not written (${(e as Error).message}); ` +
        "a restarted server reads every run again for its first sorted view",
    );
  } finally {
    st.lastSave = Date.now();
    st.busy = false;
  }
  if (st.dirty) schedule(root, st);
}
