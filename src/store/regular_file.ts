/**
 * Opening an artifact for reading only when it is a regular file. An episode
 * directory may hold a planted directory, FIFO or symlink to a device where
 * an artifact should be: opening a FIFO blocks until a writer appears, and
 * `/dev/zero` never ends, so readers check what they opened before reading.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, type Stats } from "node:fs";
import { join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import { O_NOFOLLOW, symlinkError } from "./nofollow.ts";

// O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer (no effect on regular files).
const O_NONBLOCK: number = constants.O_NONBLOCK ?? 0;

function kindOf(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSocket()) return "a socket";
  return "not a file";
}

/** Options of {@link openRegularFile} and `readJsonFile`. */
export interface ReadOptions {
  /** Refuse (`unsafe_path`) a symbolic link at `path` instead of following it. @default {false} */
  noFollow?: boolean;
}

/**
 * The first `size` bytes of the file open at `fd`, read by position (the
 * descriptor's own position is left alone, so what was hashed or checked
 * through it can be read again); fewer when the file is shorter now.
 *
 * @example
 * ```ts
 * import { closeSync, fstatSync } from "node:fs";
 * import { openRegularFile, readFromStart } from "./regular_file.ts";
 * const fd = openRegularFile("/etc/hostname");
 * const bytes = readFromStart(fd, fstatSync(fd).size);
 * closeSync(fd);
 * ```
 */
export function readFromStart(fd: number, size: number): Buffer {
  const bytes = Buffer.allocUnsafe(size);
  let off = 0;
  for (let n = 1; off < size && n > 0; off += n) n = readSync(fd, bytes, off, size - off, off);
  return bytes.subarray(0, off);
}

/**
 * Opens `path` read-only and returns its descriptor, or throws a
 * {@link NoemaError} naming `label` when it is not a regular file (after
 * symlinks are followed). Other open errors (`ENOENT`, `EACCES`) are thrown
 * as they are. The caller closes the descriptor.
 *
 * @example
 * ```ts
 * import { closeSync } from "node:fs";
 * import { openRegularFile } from "./regular_file.ts";
 * const fd = openRegularFile("/etc/hostname");
 * closeSync(fd);
 * ```
 */
export function openRegularFile(path: string, label: string = path, options: ReadOptions = {}): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | O_NONBLOCK | (options.noFollow ? O_NOFOLLOW : 0));
  } catch (e) {
    throw symlinkError(e, label, "read");
  }
  let st: Stats;
  try {
    st = fstatSync(fd);
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  if (!st.isFile()) {
    closeSync(fd);
    throw new NoemaError("not_regular", `not a regular file (${kindOf(st)})`, { file: label });
  }
  return fd;
}

/** A file's identity: its device and inode (as `fstatSync(fd, { bigint: true })` gives them). */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
}

/**
 * A read-only descriptor of its own on a file another descriptor has open (`fd`): opened through
 * `/proc/self/fd/<fd>` (the open file itself, wherever a rename moved it), else by `path` with `O_NOFOLLOW`, and
 * kept only when it is that same regular file (`same`: its device and inode). Undefined when neither way gives it
 * (no `/proc`, the path renamed or replaced). For work beside a writer that must not touch the writer's own
 * descriptor (a background flush, a hash on another thread).
 *
 * @example
 * ```ts
 * import { fstatSync, openSync } from "node:fs";
 * import { openSameFile } from "./regular_file.ts";
 * const fd = openSync("/tmp/log.jsonl", "a");
 * const own = openSameFile(fd, "/tmp/log.jsonl", fstatSync(fd, { bigint: true })); // another fd, same file
 * ```
 */
export function openSameFile(fd: number, path: string | null, same: FileIdentity): number | undefined {
  const ro = constants.O_RDONLY | O_NONBLOCK;
  const ways: [string, number][] = [[`/proc/self/fd/${fd}`, ro]];
  if (path !== null) ways.push([path, ro | O_NOFOLLOW]);
  for (const [where, flags] of ways) {
    let own: number | undefined;
    try {
      own = openSync(where, flags);
      const st = fstatSync(own, { bigint: true });
      if (st.isFile() && st.dev === same.dev && st.ino === same.ino) return own;
    } catch {
      // no /proc, or the path renamed or replaced: try the next way
    }
    if (own !== undefined) closeSync(own);
  }
  return undefined;
}

/** The artifact files of an episode directory that must be regular files when present. */
const ARTIFACT_FILES = ["events.jsonl", "learn.jsonl", "state.json", "summary.json", "manifest.json", "core.json"];

/**
 * Refuses (a {@link NoemaError}, exit code 1, naming the entry) an episode
 * directory where an artifact file is not a regular file (a FIFO, a device,
 * a directory), or that holds a FIFO, socket or device: opening a FIFO would
 * block for ever. Checked with `lstat`, before anything is opened (symbolic
 * links are left to the symlink guard).
 *
 * @example
 * ```ts
 * import { refuseIrregularArtifacts } from "./regular_file.ts";
 * refuseIrregularArtifacts(".noema/episodes/ep_1");
 * ```
 */
export function refuseIrregularArtifacts(dir: string): void {
  for (const name of readdirSync(dir)) {
    let st: Stats;
    try {
      st = lstatSync(join(dir, name));
    } catch {
      continue; // gone meanwhile
    }
    if (st.isFile() || st.isSymbolicLink() || (st.isDirectory() && !ARTIFACT_FILES.includes(name))) continue;
    throw new NoemaError("not_regular", `not a regular file (${kindOf(st)}); refusing to open this episode`, {
      file: join(dir, name),
      exitCode: EXIT.ERROR,
    });
  }
}
