/**
 * Materialising an episode from the shared store as a local directory,
 * byte-identical to the one that was published: every stream line and file
 * as it was written, so the manifest's digests and signature verify. The
 * directory is built under a temporary name and renamed into place, so a
 * reader never sees half of it. A copy pulled while its run was still going
 * is marked so (see `pulled.ts`) and can be pulled again, in place, once the
 * store has more of it.
 *
 * @module
 */
import {
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { DIR_MODE, FILE_MODE, fsyncDir } from "../store/atomic.ts";
import { mkdirBelow, O_NOFOLLOW } from "../store/nofollow.ts";
import { assertEpisodeId } from "../store/ids.ts";
import { ARTIFACTS, episodesDir } from "../store/layout.ts";
import { verifyArtifacts } from "../store/integrity.ts";
import { type SharedStore, StoreCorruptError } from "./shared_store.ts";
import { clearPulled, markPulled, refreshablePull } from "./pulled.ts";

const PAGE = 2000;

/** A stored name that stays inside the episode directory (no `..`, no absolute path). */
function safeName(name: string): string {
  if (name.startsWith("/") || name.split("/").some((p) => p === ".." || p === "" || p === ".")) {
    throw new NoemaError("bad_store_name", `the shared store holds an unsafe file name ${JSON.stringify(name)}`);
  }
  return name;
}

/** Creates a new file under `top` (the fresh temporary directory): no component may be a symlink. */
function createFile(path: string, top: string): number {
  mkdirBelow(dirname(path), top);
  return openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, FILE_MODE);
}

async function writeStream(
  store: SharedStore,
  id: string,
  stream: string,
  path: string,
  top: string,
): Promise<number> {
  const fd = createFile(path, top);
  let seq = 1;
  try {
    for (;;) {
      const lines = await store.readLines(id, stream, seq, PAGE);
      for (const l of lines) {
        writeSync(fd, l);
        writeSync(fd, "\n");
      }
      seq += lines.length;
      if (lines.length < PAGE) break;
    }
  } finally {
    closeSync(fd);
  }
  return seq - 1;
}

/** What {@link pullEpisode} wrote. */
export interface PullResult {
  /** The episode directory. */
  episode_dir: string;
  /** Files written. */
  files: number;
  /** Stream lines written. */
  lines: number;
  /** A copy pulled before was replaced by a newer one (`refresh`). */
  refreshed?: boolean;
  /** A copy pulled before was already as new as the store's (`refresh`): nothing written. */
  unchanged?: boolean;
}

/** Options of {@link pullEpisode}. */
export interface PullOptions {
  /**
   * When the directory exists and is a copy pulled while its run was still going (see `pulled.ts`), pull it again
   * if the store has more of it, instead of refusing. A run of this machine is never replaced. @default {false}
   */
  refresh?: boolean;
}

/**
 * Writes `<root>/episodes/<id>/` from the store. Refuses (exit 1) when the
 * episode is not in the store, and when a local directory already exists
 * (with `refresh`, unless it is a pulled copy of a run still going then).
 *
 * @example
 * ```ts
 * import { pullEpisode } from "./pull.ts";
 * await pullEpisode(store, "ep_01J…", ".noema");
 * ```
 */
export async function pullEpisode(
  store: SharedStore,
  id: string,
  root: string,
  options: PullOptions = {},
): Promise<PullResult> {
  assertEpisodeId(id);
  const parent = episodesDir(root);
  const dest = join(parent, id);
  const there = existsSync(dest);
  const stale = there && options.refresh ? refreshablePull(root, id) : null;
  if (there && stale === null) {
    throw new NoemaError("exists", `${dest} already exists; remove it to pull ${id} again`, { exitCode: EXIT.ERROR });
  }
  // The catalog's state before the lines: a run that goes on meanwhile leaves a copy marked as still going.
  const row = await store.get(id);
  if (stale !== null) {
    const lines = await store.lineCount(id, "events.jsonl");
    if (row?.run_state === stale.run_state && lines === stale.events_lines) {
      return { episode_dir: dest, files: 0, lines: 0, unchanged: true };
    }
  }
  const streams = await store.streams(id);
  const files = await store.listFiles(id);
  if (streams.length === 0 && files.length === 0) {
    throw new NoemaError("not_found", `episode ${id} is not in the shared store ${store.location}`);
  }
  mkdirBelow(parent, root);
  const tmp = join(parent, `.tmp-pull-${id}-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { mode: DIR_MODE });
  try {
    let lines = 0, events = 0;
    for (const s of streams) {
      const n = await writeStream(store, id, s.stream, join(tmp, safeName(s.stream)), tmp);
      // Lines are read in seq order: fewer than the highest seq means the stored stream has a gap.
      if (n !== s.lines) {
        throw new StoreCorruptError(id, s.stream, `the store holds lines up to ${s.lines}, but only ${n} of them`);
      }
      lines += n;
      if (s.stream === "events.jsonl") events = n;
    }
    const written = new Set(streams.map((s) => s.stream));
    for (const f of files.filter((f) => !written.has(f.name))) {
      const bytes = await store.readFile(id, f.name);
      if (bytes === null) continue;
      const fd = createFile(join(tmp, safeName(f.name)), tmp);
      try {
        writeSync(fd, bytes);
      } finally {
        closeSync(fd);
      }
    }
    checkAgainstManifest(id, tmp);
    const copy = {
      run_state: row?.run_state ?? "unknown",
      events_lines: events,
      events_bytes: sizeOf(tmp),
      store: store.location,
    };
    if (stale !== null) {
      replaceCopy(root, id, tmp, dest);
      if (sizeOf(dest) === copy.events_bytes) markPulled(root, id, copy); // else another refresh's copy stands
      return { episode_dir: dest, files: files.length + streams.length, lines, refreshed: true };
    }
    renameSync(tmp, dest);
    fsyncDir(parent);
    markPulled(root, id, copy); // after the copy is in place: a crash before leaves it a plain, local directory
    return { episode_dir: dest, files: files.length + streams.length, lines };
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

/** What the manifest check of a pulled copy counts as a corrupted copy (a missing signature is verify's business). */
const CORRUPT = new Set(["hash_mismatch", "size_mismatch", "missing", "unlisted", "unsafe_path", "bad_manifest"]);

/**
 * A pulled copy of a sealed episode (one with a manifest) must be the episode its manifest lists: every file with
 * its digest and size, nothing more, under its own id. Throws {@link StoreCorruptError} naming the first file that
 * differs; a copy of a run still going (no manifest yet) has nothing to check against.
 */
function checkAgainstManifest(id: string, dir: string): void {
  const manifest = join(dir, ARTIFACTS.manifest);
  if (!existsSync(manifest)) return;
  const report = verifyArtifacts(manifest, { key: null });
  const bad = report.issues.find((i) => i.severity === "error" && CORRUPT.has(i.kind));
  if (bad) throw new StoreCorruptError(id, bad.file, bad.message);
  if (report.episode_id !== id) {
    throw new StoreCorruptError(id, ARTIFACTS.manifest, `it is the manifest of ${JSON.stringify(report.episode_id)}`);
  }
}

/** Bytes of `events.jsonl` in the episode directory `dir` (0 without one). */
function sizeOf(dir: string): number {
  try {
    return statSync(join(dir, "events.jsonl")).size;
  } catch {
    return 0;
  }
}

/**
 * Puts the fresh copy `tmp` in the place of the pulled copy `dest`: the old one is moved aside, the new one renamed
 * in, the old one removed. Another process refreshing the same copy at once wins the race: this one's copy is
 * dropped.
 */
function replaceCopy(root: string, id: string, tmp: string, dest: string): void {
  const old = `${dirname(dest)}/.old-pull-${id}-${process.pid}`;
  clearPulled(root, id); // a crash from here on leaves no marker: the copy is pulled again as missing, or kept
  try {
    renameSync(dest, old);
    renameSync(tmp, dest);
  } catch {
    // another refresh moved it first: its copy stands
  }
  rmSync(old, { recursive: true, force: true });
  rmSync(tmp, { recursive: true, force: true });
  fsyncDir(dirname(dest));
}
