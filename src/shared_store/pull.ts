/**
 * Materialising an episode from the shared store as a local directory,
 * byte-identical to the one that was published: every stream line and file
 * as it was written, so the manifest's digests and signature verify. The
 * directory is built under a temporary name and renamed into place, so a
 * reader never sees half of it.
 *
 * @module
 */
import { closeSync, constants, existsSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { DIR_MODE, FILE_MODE, fsyncDir } from "../store/atomic.ts";
import { mkdirBelow, O_NOFOLLOW } from "../store/nofollow.ts";
import { assertEpisodeId } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";
import type { SharedStore } from "./shared_store.ts";

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
}

/**
 * Writes `<root>/episodes/<id>/` from the store. Refuses (exit 1) when the
 * episode is not in the store, and when a local directory already exists.
 *
 * @example
 * ```ts
 * import { pullEpisode } from "./pull.ts";
 * await pullEpisode(store, "ep_01J…", ".noema");
 * ```
 */
export async function pullEpisode(store: SharedStore, id: string, root: string): Promise<PullResult> {
  assertEpisodeId(id);
  const parent = episodesDir(root);
  const dest = join(parent, id);
  if (existsSync(dest)) {
    throw new NoemaError("exists", `${dest} already exists; remove it to pull ${id} again`, { exitCode: EXIT.ERROR });
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
    let lines = 0;
    for (const s of streams) lines += await writeStream(store, id, s.stream, join(tmp, safeName(s.stream)), tmp);
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
    renameSync(tmp, dest);
    fsyncDir(parent);
    return { episode_dir: dest, files: files.length + streams.length, lines };
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}
