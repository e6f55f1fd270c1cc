/**
 * Atomic, durable file writes: a temp file in the same directory, fsync,
 * rename over the target, fsync of the directory. A reader sees the old file
 * or the new one, never a partial one.
 *
 * Nothing is written through a symbolic link: with `root`, a symlink at any
 * component of the path below the root (a planted `episodes -> /elsewhere`,
 * `approvals -> /elsewhere`) is refused with an error naming it (see
 * `refuseSymlinks` in `./nofollow.ts`).
 *
 * @module
 */
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import process from "node:process";
import { mkdirBelow, refuseSymlinks } from "./nofollow.ts";
import { killSelf } from "./self_kill.ts";
import { diskFull } from "./disk_full.ts";

/** Owner-only permissions for artifact files. */
export const FILE_MODE = 0o600;
/** Owner-only permissions for artifact directories. */
export const DIR_MODE = 0o700;

let counter = 0;

export { O_NOFOLLOW, refuseSymlinks, symlinkError } from "./nofollow.ts";

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

/** Options of {@link writeFileAtomic}. */
export interface WriteOptions {
  /** Fail (EEXIST) when the file already exists. @default {false} */
  exclusive?: boolean;
  /** fsync the file and its directory. @default {true} */
  durable?: boolean;
  /**
   * With `durable`, also fsync the directory after the rename. Off for a staged file (`stageFile`): its temp name
   * need not survive a power loss, and `commitStaged` syncs the directory once its final renames are done.
   * @default {true}
   */
  syncDirectory?: boolean;
  /** The root the path lies below: no component below it may be a symlink. @default {only the file and its directory are checked} */
  root?: string;
}

/**
 * Writes a whole file atomically and durably, creating parent directories
 * (mode 0700) as needed. The file gets mode 0600. With `exclusive`, the write
 * fails (EEXIST) when the file already exists. `durable: false` skips the
 * fsyncs (still atomic for readers and against a crashed process, not against
 * a power loss), for intermediate state rewritten after every action. With
 * `root`, a symlink at any component below the root is refused, and missing
 * directories are created one at a time below it (see `mkdirBelow`); without
 * it (a file the user named), a symlinked target or directory is refused.
 *
 * @example
 * ```ts
 * import { writeFileAtomic } from "noema";
 * writeFileAtomic("/tmp/x/out.txt", "hello\n");
 * ```
 */
export function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: WriteOptions = {},
): void {
  const durable = options.durable !== false;
  const dir = dirname(path);
  if (options.root !== undefined) {
    mkdirBelow(dir, options.root); // every directory below the root checked, or created and checked
    refuseSymlinks(path);
  } else {
    refuseSymlinks(path);
    mkdirSync(dir, { recursive: true, mode: DIR_MODE });
    refuseSymlinks(path); // a link planted while the directory was created
  }
  const tmp = `${path}.tmp-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const fd = openSync(tmp, "wx", FILE_MODE);
  try {
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off, bytes.length - off);
    if (durable) fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw diskFull(e, path);
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
  if (durable && options.syncDirectory !== false) fsyncDir(dir);
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
export function writeJsonAtomic(path: string, value: unknown, options: WriteOptions = {}): void {
  writeFileAtomic(path, JSON.stringify(value, null, 2) + "\n", options);
}

/** A file written by {@link stageFile}, waiting for {@link commitStaged} to rename it into place. */
export interface StagedFile {
  /** The final path. */
  path: string;
  /** The temp file holding its whole content (fsynced). */
  tmp: string;
}

/**
 * Writes a whole file next to `path` under a temp name, atomically and
 * durably through {@link writeFileAtomic} (with its options and its guards),
 * without renaming it into place: {@link commitStaged} renames several such
 * files in one tight sequence, so a crash leaves the window between them as
 * short as the file system allows.
 *
 * @example
 * ```ts
 * import { commitStaged, stageFile } from "./atomic.ts";
 * commitStaged([stageFile("/tmp/x/a.json", "{}\n"), stageFile("/tmp/x/b.json", "{}\n")]);
 * ```
 */
export function stageFile(
  path: string,
  data: string,
  options: Omit<NonNullable<Parameters<typeof writeFileAtomic>[2]>, "exclusive" | "durable" | "syncDirectory"> = {},
): StagedFile {
  const tmp = `${path}.tmp-staged-${process.pid}-${Date.now().toString(36)}-${(counter++).toString(36)}`;
  // Its content is synced; the directory is synced once by commitStaged, after the renames that make it visible.
  writeFileAtomic(tmp, data, { ...options, durable: true, syncDirectory: false });
  return { path, tmp };
}

/**
 * Renames staged files into place in the order given, then fsyncs their
 * directories. Fault injection for tests: with `NOEMA_TEST_KILL_BEFORE_RENAME`
 * set to a file's base name, the process kills itself (SIGKILL) just before
 * renaming that file.
 *
 * @example
 * ```ts
 * import { commitStaged, stageFile } from "./atomic.ts";
 * commitStaged([stageFile("/tmp/x/summary.json", "{}\n")]);
 * ```
 */
export function commitStaged(files: readonly StagedFile[]): void {
  const killAt = process.env.NOEMA_TEST_KILL_BEFORE_RENAME;
  for (const f of files) {
    refuseSymlinks(f.path);
    if (killAt !== undefined && killAt === f.path.slice(f.path.lastIndexOf("/") + 1)) killSelf();
    renameSync(f.tmp, f.path);
  }
  for (const dir of new Set(files.map((f) => dirname(f.path)))) fsyncDir(dir);
}

/**
 * Removes staged files that will not be committed (after an error).
 *
 * @example
 * ```ts
 * import { discardStaged, stageFile } from "./atomic.ts";
 * discardStaged([stageFile("/tmp/x/a.json", "{}\n")]);
 * ```
 */
export function discardStaged(files: readonly StagedFile[]): void {
  for (const f of files) rmSync(f.tmp, { force: true });
}
