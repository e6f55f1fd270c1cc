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
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
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

/** The real path of `path`, or null when it does not exist (no exception on the common miss: they are slow). */
function real(path: string, memo?: Map<string, string | null>): string | null {
  const known = memo?.get(path);
  if (known !== undefined) return known;
  let found: string | null = null;
  try {
    if (existsSync(path)) found = realpathSync.native(path);
  } catch { /* unreadable: as missing */ }
  memo?.set(path, found);
  return found;
}

/** Walks the components as the kernel does: a symlink is followed before a later `..`, a dangling one too. */
function kernelPath(full: string, memo?: Map<string, string | null>, hops = 0): string {
  // An existing path: realpath(3) follows symlinks before `..` as the kernel does.
  const whole = real(full, memo);
  if (whole !== null) return lexicalPath(whole, "/");
  let at = "/", exists = true;
  for (const part of full.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      at = resolve(at, "..");
      continue;
    }
    const next = at === sep ? `/${part}` : `${at}/${part}`;
    const found = exists ? real(next, memo) : null;
    if (found !== null) {
      at = found;
      continue;
    }
    // A dangling symlink: writing through it creates its target.
    const link = exists && hops < 40 ? lstatSync(next, { throwIfNoEntry: false }) : undefined;
    at = link?.isSymbolicLink() ? kernelPath(resolve(at, readlinkSync(next)), memo, hops + 1) : next;
    exists = false;
  }
  return lexicalPath(at, "/");
}

/**
 * The absolute paths a rule is matched against for a path a call names (the folded spelling and the real one).
 * `memo` keeps what the file system said for the rest of one decision (never longer: it changes).
 *
 * @example
 * ```ts
 * import { resolvedPaths } from "./resolve_path.ts";
 * resolvedPaths("./../.env", "/w/sub"); // ["/w/.env"] (plus where symlinks lead, when they exist)
 * ```
 */
export function resolvedPaths(path: string, cwd: string, memo?: Map<string, string | null>): string[] {
  const lexical = lexicalPath(path, cwd);
  const kernel = kernelPath(path.startsWith("/") ? path : `${resolve(cwd)}/${path}`, memo);
  // Servers and file systems may take a Unicode-equivalent spelling for the same file (server-filesystem looks
  // a missing name up by its NFC form): every spelling counts in NFC too.
  return [...new Set([lexical, kernel].flatMap((p) => [p, p.normalize("NFC")]))];
}
