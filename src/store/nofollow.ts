/**
 * Never through a symbolic link below the root: the one check every writer
 * of noema calls before it creates, writes, appends to or renames anything
 * under the root (`episodes/`, `state/`, `sessions/` and all below them).
 *
 * The root itself (`--root`, `NOEMA_ROOT`, `./.noema`) is where the user
 * pointed noema: it may be a symbolic link (`.noema -> /data/noema`), and so
 * may any directory above it. Every component below it — `episodes`,
 * `episodes/<id>`, `approvals`, `state`, `state/policies`, `sessions`, the
 * file itself — must be a real directory or file, or not exist yet. A
 * cloned repository whose `.noema/episodes` is a link to elsewhere is
 * refused with an error naming the link (exit 1), and nothing is written.
 *
 * A check on a path and then its use leave a window in which a link could be
 * planted; the final component is in any case opened with `O_NOFOLLOW` or
 * replaced by `rename` (which never follows it), and directories are created
 * one at a time, each checked right after it was made.
 *
 * @module
 */
import { constants, existsSync, lstatSync, mkdirSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";

/** Owner-only permissions for directories noema creates. */
const DIR_MODE = 0o700;

/**
 * `O_NOFOLLOW` where the platform has it (open fails with ELOOP on a
 * symlink), else 0 (then {@link refuseSymlinks} is the only guard).
 */
export const O_NOFOLLOW: number = constants.O_NOFOLLOW ?? 0;

/** What a refused path was going to be used for (named in the error). */
export type PathUse = "write" | "read";

function refused(path: string, use: PathUse): NoemaError {
  return new NoemaError("unsafe_path", `is a symbolic link; refusing to ${use} through it`, {
    file: path,
    exitCode: EXIT.ERROR,
  });
}

/**
 * The root an episode directory belongs to: two levels up
 * (`<root>/episodes/<id>`, a staging `<root>/episodes/.tmp-<id>-<pid>` too).
 *
 * @example
 * ```ts
 * import { episodeRoot } from "./nofollow.ts";
 * episodeRoot("/w/.noema/episodes/ep_1"); // "/w/.noema"
 * ```
 */
export function episodeRoot(episodeDir: string): string {
  return dirname(dirname(resolve(episodeDir)));
}

/** The components of `path` strictly below `root`, outermost first (`path` itself last). */
function componentsBelow(root: string, path: string): string[] {
  const base = resolve(root), abs = resolve(path);
  const rel = relative(base, abs);
  if (rel === "") return [];
  if (rel.startsWith("..") || isAbsolute(rel)) {
    throw new NoemaError("unsafe_path", `is outside the root ${base}; refusing to write there`, {
      file: abs,
      exitCode: EXIT.ERROR,
    });
  }
  const out: string[] = [];
  let at = base;
  for (const part of rel.split(sep)) out.push(at = join(at, part));
  return out;
}

/** Whether `p` is a symbolic link; false when nothing is there. */
function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Throws a {@link NoemaError} (`unsafe_path`, exit 1, naming the link) when
 * any component of `path` below `root` is a symbolic link, `path` itself
 * included; components that do not exist yet pass. Without `root` (a file the
 * user named, such as a report), only `path` and its directory are checked.
 * `use` words the error (`write` or `read`).
 *
 * @example
 * ```ts
 * import { refuseSymlinks } from "./nofollow.ts";
 * refuseSymlinks(".noema/episodes/ep_1/approvals/chk_1.json", ".noema");
 * ```
 */
export function refuseSymlinks(path: string, root?: string, use: PathUse = "write"): void {
  const parts = root === undefined ? [dirname(path), path] : componentsBelow(root, path);
  for (const p of parts) if (isLink(p)) throw refused(p, use);
}

/**
 * Creates `dir` and its missing parents below `root` (mode 0700) one at a
 * time, refusing (see {@link refuseSymlinks}) a symbolic link at any
 * component below `root`, whether it was there before or planted meanwhile.
 * The root and its parents are created as with `mkdir -p`.
 *
 * @example
 * ```ts
 * import { mkdirBelow } from "./nofollow.ts";
 * mkdirBelow("/tmp/r/state/policies", "/tmp/r");
 * ```
 */
export function mkdirBelow(dir: string, root: string): void {
  const parts = componentsBelow(root, dir);
  if (!existsSync(root)) mkdirSync(root, { recursive: true, mode: DIR_MODE });
  for (const p of parts) {
    const st = lstatSync(p, { throwIfNoEntry: false });
    if (st?.isSymbolicLink()) throw refused(p, "write");
    if (st !== undefined) continue; // a real entry (not a directory: the write itself fails, naming it)
    try {
      mkdirSync(p, { mode: DIR_MODE });
    } catch (e) {
      if ((e as { code?: string }).code !== "EEXIST") throw e;
    }
    if (isLink(p)) throw refused(p, "write"); // planted meanwhile
  }
}

/**
 * Explains an ELOOP from an `O_NOFOLLOW` open as a refused symlink; other
 * errors pass through.
 *
 * @example
 * ```ts
 * import { symlinkError } from "./nofollow.ts";
 * symlinkError(Object.assign(new Error("loop"), { code: "ELOOP" }), "/r/x"); // a NoemaError naming /r/x
 * ```
 */
export function symlinkError(e: unknown, path: string, use: PathUse = "write"): unknown {
  if ((e as { code?: string }).code !== "ELOOP") return e;
  return refused(path, use);
}

/**
 * Whether anything is at `path`, a dangling symlink included (`existsSync`
 * follows links, so it says no for one).
 *
 * @example
 * ```ts
 * import { lexists } from "./nofollow.ts";
 * lexists(".noema/episodes/ep_1"); // true for a directory, a file or any link
 * ```
 */
export function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
