/**
 * Opening an artifact for reading only when it is a regular file. An episode
 * directory may hold a planted directory, FIFO or symlink to a device where
 * an artifact should be: opening a FIFO blocks until a writer appears, and
 * `/dev/zero` never ends, so readers check what they opened before reading.
 *
 * @module
 */
import { closeSync, constants, fstatSync, openSync, type Stats } from "node:fs";
import { NoemaError } from "../errors.ts";
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
