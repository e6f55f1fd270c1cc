/**
 * Whether one file access (see `file_access.ts`) falls under a file rule's
 * absolute glob, failing closed: a path matches when any of its spellings does
 * (as written, folded, or where its symlinks lead); a glob argument when it
 * could name a file the rule covers; a folder read or written whole when it
 * holds one now (or is too large to look through); a path only known when the
 * command runs always does. Deny and ask rules match a path in any letter case
 * (`cat .ENV` reads `.env` on a case-insensitive file system, macOS's and
 * Windows' default); allow rules only as written.
 *
 * @module
 */
import { readdirSync, realpathSync, statSync } from "node:fs";
import picomatch from "picomatch";
import type { FileAccess } from "./file_access.ts";
import { escapeGlob, globsOverlap } from "./glob_overlap.ts";
import { resolvedPaths } from "./resolve_path.ts";

/** How many entries a folder read whole may hold before noema stops looking and fails closed. */
export const MAX_TREE_ENTRIES = 20_000;

const GLOB_CHARS = /[*?[\]{}]/;
const testers = new Map<string, (p: string) => boolean>();

/**
 * The test of a rule glob: the glob itself, what a folder it names holds, and where its path really is; in any
 * letter case when `anyCase`.
 */
function tester(glob: string, anyCase = false): (p: string) => boolean {
  const key = anyCase ? `i:${glob}` : `s:${glob}`;
  let t = testers.get(key);
  if (t === undefined) {
    const nfc = glob.normalize("NFC");
    const globs = nfc === glob ? [glob, `${glob}/**`] : [glob, `${glob}/**`, nfc, `${nfc}/**`];
    if (!GLOB_CHARS.test(glob)) {
      try {
        const real = escapeGlob(realpathSync(glob));
        globs.push(real, `${real}/**`);
      } catch { /* it does not exist (yet): its spelling is what counts */ }
    }
    t = picomatch(globs, { dot: true, nocase: anyCase });
    if (testers.size > 2000) testers.clear();
    testers.set(key, t);
  }
  return t;
}

/**
 * Whether a path (absolute, or relative to `cwd`) matches a rule glob in any of its spellings (and, with
 * `anyCase`, in any letter case: for deny and ask rules).
 *
 * @example
 * ```ts
 * import { pathUnderRule } from "./file_rules.ts";
 * pathUnderRule("/proc/self/root/w/.env", "/w/.env", "/"); // true
 * pathUnderRule("/w/.ENV", "/w/.env", "/", true); // true
 * ```
 */
export function pathUnderRule(path: string, glob: string, cwd: string, anyCase = false): boolean {
  const test = tester(glob, anyCase);
  return resolvedPaths(path, cwd).some((p) => test(p));
}

/** Whether two globs may name one path, in any letter case. */
function overlapAnyCase(a: string, b: string): boolean {
  return globsOverlap(a, b) || globsOverlap(a.toLowerCase(), b.toLowerCase());
}

/** The first path under `dir` the rule covers, "" when there are too many to look through, null when none. */
function heldIn(dir: string, glob: string): string | null {
  const test = tester(glob, true);
  const stack = [dir];
  let seen = 0;
  while (stack.length > 0) {
    const at = stack.pop()!;
    let entries;
    try {
      entries = readdirSync(at, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = at === "/" ? `/${e.name}` : `${at}/${e.name}`;
      if (++seen > MAX_TREE_ENTRIES) return "";
      if (test(p)) return p;
      if (e.isDirectory()) stack.push(p);
    }
  }
  return null;
}

/** The glob with its literal folder part resolved (`link/*.env` where `link` is a symlink). */
function globSpellings(glob: string): string[] {
  const at = glob.search(GLOB_CHARS);
  const dir = glob.slice(0, glob.lastIndexOf("/", at) + 1);
  const real = resolvedPaths(dir, "/").map((d) => `${escapeGlob(d)}/${glob.slice(dir.length)}`);
  return [glob, ...real];
}

/**
 * Whether the access falls under a deny or ask rule's glob (in any letter case): false, or why (null when the path
 * plainly matches).
 *
 * @example
 * ```ts
 * import { accessHit } from "./file_rules.ts";
 * accessHit({ mode: "read", form: "path", path: "/w/.env", by: "cat" }, "/w/.env"); // null
 * accessHit({ mode: "read", form: "unknown", path: "$F", by: "cat" }, "/w/.env"); // 'cat "$F" is only known when it runs'
 * ```
 */
export function accessHit(access: FileAccess, glob: string): string | null | false {
  const what = access.mode === "read" ? "reads" : "writes";
  if (access.form === "unknown") return `${access.by} ${JSON.stringify(access.path)} is only known when it runs`;
  if (access.form === "glob") {
    const hit = globSpellings(access.path).flatMap((g) => access.tree ? [g, `${g}/**`] : [g])
      .some((g) => overlapAnyCase(g, glob) || mayHold(glob) && overlapAnyCase(g, `${glob}/**`));
    return hit ? `${access.by} ${what} ${access.path}, which may name a file the rule covers` : false;
  }
  const spellings = access.spellings ??= resolvedPaths(access.path, "/");
  const test = tester(glob, true);
  if (spellings.some((p) => test(p))) return null;
  // A listing shows the names a folder holds: denied when the rule covers whatever the folder holds (any name in it).
  if (access.names) {
    const covers = spellings.find((dir) => test(`${dir === "/" ? "" : dir}/${ANY_NAME}`));
    return covers === undefined ? false : `${access.by} lists ${covers}, whose every entry the rule covers`;
  }
  if (!access.tree) return false;
  for (const dir of spellings) {
    if (!overlapAnyCase(`${escapeGlob(dir)}/**`, glob)) continue;
    // What a folder write creates (an archive extracted, a folder copied in) is not known: it may be the file.
    if (access.mode === "write" && !access.existing) {
      return `${access.by} writes into ${dir}, and may create a file the rule covers`;
    }
    const held = GLOB_CHARS.test(glob) ? heldIn(dir, glob) : exists(glob) ? glob : null;
    if (held === "") return `${access.by} ${what} ${dir} whole, too large to look through for files the rule covers`;
    if (held !== null) return `${access.by} ${what} ${dir} whole, which holds ${held}`;
  }
  return false;
}

/** A name no file has, standing for any entry of a folder (a rule that matches it matches every entry). */
const ANY_NAME = "\u0001noema-any-entry";

/** Whether a rule's path may be a folder (a glob, a folder, or nothing yet): then it covers what is inside. */
function mayHold(glob: string): boolean {
  if (GLOB_CHARS.test(glob)) return true;
  try {
    return statSync(glob).isDirectory();
  } catch {
    return true;
  }
}

function exists(path: string): boolean {
  try {
    realpathSync(path);
    return true;
  } catch {
    return false;
  }
}
