/**
 * The paths a file rule is checked against for one path a call names: the
 * path as written, made absolute against the call's cwd (`..`, `.` and `//`
 * folded, `/proc/self/root`, `/proc/thread-self/root` and `/proc/<pid>/root`
 * prefixes removed), and the path the system would open: each existing
 * component resolved as the kernel does, so a symlink to a denied file, or
 * `link/../x` through a symlinked folder, counts as the file it reaches. The
 * part below the deepest existing folder is appended as written.
 *
 * @module
 */
import { realpathSync } from "node:fs";
import { resolve, sep } from "node:path";

const PROC_ROOT = /^\/proc\/(?:self|thread-self|\d+)\/root(?=\/|$)/;

/**
 * A path made absolute and folded, without `/proc/…/root` prefixes.
 *
 * @example
 * ```ts
 * import { lexicalPath } from "./resolve_path.ts";
 * lexicalPath("/proc/self/root//etc/../etc/shadow", "/w"); // "/etc/shadow"
 * ```
 */
export function lexicalPath(path: string, cwd: string): string {
  let p = resolve(cwd, path);
  while (PROC_ROOT.test(p)) p = resolve("/", `.${p.replace(PROC_ROOT, "")}`);
  return p;
}

/** The real path of `path`, or null when it does not exist (or cannot be read). */
function real(path: string): string | null {
  try {
    return realpathSync(path);
  } catch {
    return null;
  }
}

/** Walks the components as the kernel does: a symlink is followed before a later `..`. */
function kernelPath(path: string, cwd: string): string {
  const start = path.startsWith("/") ? "/" : (real(cwd) ?? resolve(cwd));
  const parts = path.split("/");
  let at = start, exists = true;
  for (let k = 0; k < parts.length; k++) {
    const part = parts[k];
    if (part === "" || part === ".") continue;
    if (part === "..") {
      at = resolve(at, "..");
      continue;
    }
    const next = at === sep ? `/${part}` : `${at}/${part}`;
    const found = exists ? real(next) : null;
    if (found === null) {
      exists = false;
      at = next;
    } else at = found;
  }
  return lexicalPath(at, "/");
}

/**
 * The absolute paths a rule is matched against for a path a call names (the folded spelling and the real one).
 *
 * @example
 * ```ts
 * import { resolvedPaths } from "./resolve_path.ts";
 * resolvedPaths("../w/./.env", "/w/sub"); // ["/w/.env"] (plus where symlinks lead, when they exist)
 * ```
 */
export function resolvedPaths(path: string, cwd: string): string[] {
  const lexical = lexicalPath(path, cwd);
  const kernel = kernelPath(path, cwd);
  return kernel === lexical ? [lexical] : [lexical, kernel];
}
