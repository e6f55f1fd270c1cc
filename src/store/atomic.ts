/**
 * Atomic, durable file writes: a temp file in the same directory, fsync,
 * rename over the target, fsync of the directory. A reader sees the old file
 * or the new one, never a partial one.
 *
 * @module
 */
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import process from "node:process";

/** Owner-only permissions for artifact files. */
export const FILE_MODE = 0o600;
/** Owner-only permissions for artifact directories. */
export const DIR_MODE = 0o700;

let counter = 0;

/**
 * Fsyncs a directory so a rename or a new entry in it survives a crash.
 * Silently does nothing where directories cannot be opened (Windows).
 *
 * @example
 * ```ts
 * import { fsyncDir } from "./atomic.ts";
 * fsyncDir(".");
 * ```
 */
export function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // not supported on this platform; the rename itself is still atomic
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Writes a whole file atomically and durably, creating parent directories
 * (mode 0700) as needed. The file gets mode 0600. With `exclusive`, the write
 * fails (EEXIST) when the file already exists.
 *
 * @example
 * ```ts
 * import { writeFileAtomic } from "noema";
 * writeFileAtomic("/tmp/x/out.txt", "hello\n");
 * ```
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, options: { exclusive?: boolean } = {}): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: DIR_MODE });
  const tmp = `${path}.tmp-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const fd = openSync(tmp, "wx", FILE_MODE);
  try {
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw e;
  }
  closeSync(fd);
  try {
    // exclusive: link() fails when the target exists, so only one writer can create it.
    if (options.exclusive) {
      linkSync(tmp, path);
      rmSync(tmp, { force: true });
    } else {
      renameSync(tmp, path);
    }
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  fsyncDir(dir);
}

/**
 * Writes a value as pretty JSON (2-space indent, final newline) atomically.
 *
 * @example
 * ```ts
 * import { writeJsonAtomic } from "noema";
 * writeJsonAtomic("/tmp/x/state.json", { version: "1.0" });
 * ```
 */
export function writeJsonAtomic(path: string, value: unknown): void {
  writeFileAtomic(path, JSON.stringify(value, null, 2) + "\n");
}
