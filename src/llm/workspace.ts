/**
 * Workspace confinement for the LLM's file tools: a path the model gives is
 * resolved inside the workspace, and refused when it leaves it, through `..`,
 * an absolute path, or a symlink anywhere on the way (checked on real paths,
 * so nothing outside is ever read, listed or written).
 *
 * @module
 */
import { existsSync, lstatSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

/** A path the model gave that leaves the workspace. */
export class WorkspaceEscapeError extends Error {
  constructor(path: string, why: string) {
    super(`path ${JSON.stringify(path)} is outside the workspace (${why}); only paths inside it are allowed`);
    this.name = "WorkspaceEscape";
  }
}

function inside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/**
 * Resolves `path` (relative to the workspace, or absolute inside it) to an
 * absolute path whose real location is inside the workspace. For a path that
 * does not exist yet (a file to write), its nearest existing ancestor must be
 * inside. With `write`, the path itself is returned (its parent resolved), so
 * an atomic write replaces a symlink there instead of writing through it.
 * Throws {@link WorkspaceEscapeError} otherwise.
 *
 * @example
 * ```ts
 * import { confinePath } from "noema";
 * confinePath("/tmp", "a/b.txt"); // "/tmp/a/b.txt"
 * ```
 */
export function confinePath(workspace: string, path: string, options: { write?: boolean } = {}): string {
  if (typeof path !== "string" || path === "") throw new WorkspaceEscapeError(String(path), "empty path");
  if (path.includes("\0")) throw new WorkspaceEscapeError(path, "NUL byte");
  const root = realpathSync(workspace);
  const target = resolve(root, path);
  if (!inside(root, target)) throw new WorkspaceEscapeError(path, "it resolves outside");
  // The deepest existing ancestor (or the target itself) must really be inside.
  let probe = target;
  while (!existsSync(probe)) {
    let isLink = false;
    try {
      isLink = lstatSync(probe).isSymbolicLink(); // a dangling symlink: never follow it
    } catch {
      // does not exist at all
    }
    if (isLink) throw new WorkspaceEscapeError(path, "a dangling symlink");
    const up = dirname(probe);
    if (up === probe) break;
    probe = up;
  }
  const real = realpathSync(probe);
  if (!inside(root, real)) throw new WorkspaceEscapeError(path, "a symlink points outside");
  if (options.write && probe === target) {
    // A write replaces the file (or a symlink) at the path itself: never write through a link.
    const parent = realpathSync(dirname(target));
    if (!inside(root, parent)) throw new WorkspaceEscapeError(path, "a symlink points outside");
    return join(parent, basename(target));
  }
  return probe === target ? real : join(real, relative(probe, target));
}

/** The path relative to the workspace, for display (POSIX separators). */
export function workspaceRelative(workspace: string, abs: string): string {
  return relative(realpathSync(workspace), abs).split(sep).join("/") || ".";
}
