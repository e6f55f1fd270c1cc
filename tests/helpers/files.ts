/**
 * Reading back everything a test wrote under a directory: every path (not
 * following symlinks), and where any of some strings (secrets, pieces of
 * them) is found in a file's name or contents.
 *
 * @module
 */
import { lstatSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * Every path under `dir`, depth first; symlinks are listed, never followed.
 *
 * @example
 * ```ts
 * import { walk } from "./helpers/files.ts";
 * walk(".noema").filter((p) => p.endsWith("manifest.json"));
 * ```
 */
export function walk(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    out.push(p);
    if (lstatSync(p).isDirectory()) out.push(...walk(p));
  }
  return out;
}

/**
 * Each place under `root` that holds one of `needles`: a path (relative to
 * `root`) whose name contains it, or a regular file whose bytes (read as
 * latin1) contain it. Empty when none is found.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { foundUnder } from "./helpers/files.ts";
 * assert.deepEqual(foundUnder(".noema", ["s3cr3t"]), []);
 * ```
 */
export function foundUnder(root: string, needles: readonly string[]): string[] {
  const found: string[] = [];
  for (const path of walk(root)) {
    const rel = path.slice(root.length + 1);
    for (const p of needles) if (rel.includes(p)) found.push(`path ${rel} holds ${JSON.stringify(p)}`);
    if (!lstatSync(path).isFile()) continue;
    const text = readFileSync(path, "latin1");
    for (const p of needles) if (text.includes(p)) found.push(`${rel} holds ${JSON.stringify(p)}`);
  }
  return found;
}

/**
 * An episode directory's files by relative path, their bytes as latin1 text
 * (the lock and its claim files, `lock.*`, left out: they belong to a writer, not the record, and are never
 * published; a process trying the lock at that moment leaves one for an instant), to compare
 * a pulled copy with its original.
 *
 * @example
 * ```ts
 * import { tree } from "./files.ts";
 * // assert.deepEqual(tree(pulledDir), tree(originalDir));
 * ```
 */
export function tree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name !== "lock" && !e.name.startsWith("lock.")) out.set(relative(dir, p), readFileSync(p, "latin1"));
    }
  };
  walk(dir);
  return out;
}
