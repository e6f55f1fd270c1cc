/**
 * Where things live: the root (`--root`, `NOEMA_ROOT`, default `./.noema`),
 * `episodes/<episode_id>/` under it, and the artifact names inside an episode.
 *
 * @module
 */
import { existsSync, lstatSync, readdirSync, realpathSync, statSync } from "node:fs";
import { basename, isAbsolute, join, relative, resolve, sep } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { assertEpisodeId } from "./ids.ts";

/** Artifact file names inside an episode directory. */
export const ARTIFACTS = {
  events: "events.jsonl",
  learn: "learn.jsonl",
  state: "state.json",
  summary: "summary.json",
  manifest: "manifest.json",
} as const;

/** Options naming the root directory. */
export interface RootOptions {
  /**
   * The root directory holding `episodes/`.
   * @default {`$NOEMA_ROOT`, else `./.noema`}
   */
  root?: string;
}

/**
 * The absolute root directory: `options.root`, else `$NOEMA_ROOT`, else
 * `./.noema`. Point it at a `.noesis` directory to read runs written by the
 * reference system.
 *
 * @example
 * ```ts
 * import { resolveRoot } from "noema";
 * resolveRoot({ root: "/tmp/runs" }); // "/tmp/runs"
 * ```
 */
export function resolveRoot(options: RootOptions = {}): string {
  return resolve(options.root ?? (process.env.NOEMA_ROOT || ".noema"));
}

/**
 * The `episodes/` directory under a root.
 *
 * @example
 * ```ts
 * import { episodesDir } from "noema";
 * episodesDir("/tmp/runs"); // "/tmp/runs/episodes"
 * ```
 */
export function episodesDir(root: string): string {
  return join(root, "episodes");
}

/** An episode located on disk. */
export interface EpisodeLocation {
  /** The episode id (the directory name). */
  id: string;
  /** Absolute path of the episode directory. */
  dir: string;
}

function looksLikePath(ref: string): boolean {
  return ref.includes("/") || ref.includes(sep) || ref === "." || ref === ".." || isAbsolute(ref);
}

/**
 * Whether `child` is `parent` or lies under it (by their paths, as given: resolve them first).
 *
 * @example
 * ```ts
 * import { isInside } from "./layout.ts";
 * isInside("/w", "/w/sub"); // true
 * isInside("/w", "/wx"); // false
 * ```
 */
export function isInside(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Finds an existing episode by id (under the root's `episodes/`) or by a path
 * to an episode directory (any argument containing a `/`). Refuses ids that
 * could escape the root and episode directories that are symlinks leading
 * outside it.
 *
 * @example
 * ```ts
 * import { locateEpisode } from "noema";
 * const { dir } = locateEpisode("ep_01K9RBBMXXRSFWR49SXFGF4SPR", { root: ".noema" });
 * ```
 */
export function locateEpisode(ref: string, options: RootOptions = {}): EpisodeLocation {
  if (looksLikePath(ref)) {
    const dir = resolve(ref);
    if (!existsSync(dir) || !statSync(dir).isDirectory()) {
      throw new NoemaError("not_found", `episode directory not found: ${ref}`, { exitCode: EXIT.ERROR });
    }
    return { id: basename(dir), dir };
  }
  assertEpisodeId(ref);
  const root = resolveRoot(options);
  const parent = episodesDir(root);
  const dir = join(parent, ref);
  let stat;
  try {
    stat = lstatSync(dir);
  } catch {
    throw new NoemaError("not_found", `episode ${ref} not found in ${parent}`, { exitCode: EXIT.ERROR });
  }
  if (stat.isSymbolicLink()) {
    const target = realpathSync(dir);
    if (!isInside(realpathSync(parent), target)) {
      throw new NoemaError("unsafe_path", `episode ${ref} is a symlink to ${target}, outside ${parent}; refused`, {
        exitCode: EXIT.ERROR,
      });
    }
  }
  if (!statSync(dir).isDirectory()) {
    throw new NoemaError("not_found", `episode ${ref} in ${parent} is not a directory`, { exitCode: EXIT.ERROR });
  }
  return { id: ref, dir };
}

/**
 * The directory a new episode would use, after checking the id.
 *
 * @example
 * ```ts
 * import { episodeDirFor } from "noema";
 * episodeDirFor("ep_1", "/tmp/runs"); // "/tmp/runs/episodes/ep_1"
 * ```
 */
export function episodeDirFor(id: string, root: string): string {
  assertEpisodeId(id);
  return join(episodesDir(root), id);
}

/**
 * Refuses (a {@link NoemaError}, exit code 1, naming the entry) an episode
 * directory holding a symbolic link anywhere among its entries, at any depth
 * (a planted `events.jsonl -> /elsewhere`, `approvals -> /elsewhere` or
 * `approvals/chk_1.json -> /etc/passwd`), or a FIFO, socket or device: recovering or
 * sealing such a run would write through it or seal it in; publishing it would send what it leads to. Called
 * before anything is written (or sent).
 *
 * @param refusing what is refused, for the message. @default {"write to"}
 *
 * @example
 * ```ts
 * import { refuseSymlinkedArtifacts } from "./layout.ts";
 * refuseSymlinkedArtifacts(".noema/episodes/ep_1");
 * refuseSymlinkedArtifacts(".noema/episodes/ep_1", "publish");
 * ```
 */
export function refuseSymlinkedArtifacts(dir: string, refusing = "write to"): void {
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, d.name);
    if (d.isSymbolicLink()) {
      throw new NoemaError(
        "unsafe_path",
        `is a symbolic link inside the episode; refusing to ${refusing} this episode (artifacts are regular files)`,
        { file: path, exitCode: EXIT.ERROR },
      );
    }
    if (d.isDirectory()) refuseSymlinkedArtifacts(path, refusing);
    else if (!d.isFile()) {
      // A FIFO, socket or device: never an artifact (verify would call a sealed episode holding one tampered).
      throw new NoemaError(
        "unsafe_path",
        `is not a regular file (a FIFO, socket or device) inside the episode; refusing to ${refusing} this episode`,
        { file: path, exitCode: EXIT.ERROR },
      );
    }
  }
}
