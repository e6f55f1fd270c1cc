/**
 * Setting aside the damaged end of an append-only log before appending to it
 * again: the bytes from an offset to the end move to a sibling file, and the
 * log is cut back to the offset. Nothing is lost, memory stays bounded (one
 * chunk), and a sparse tail stays sparse (runs of zero bytes are skipped, not
 * written), so a 2 GB hole costs neither memory nor disk.
 *
 * @module
 */
import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, writeSync } from "node:fs";
import { Buffer } from "node:buffer";
import { basename, dirname, join } from "node:path";
import { FILE_MODE, fsyncDir } from "./atomic.ts";
import { episodeRoot, O_NOFOLLOW, refuseSymlinks, symlinkError } from "./nofollow.ts";

/** The size of a chunk copied at a time. */
const CHUNK = 1 << 20;
/** A chunk of zeros to compare with: one native comparison per chunk, not a loop over its bytes. */
let zeros: Buffer | undefined;

/** Whether the first `n` bytes of `buf` are all zero (a hole of a sparse file reads as zeros). */
function isZero(buf: Buffer, n: number): boolean {
  zeros ??= Buffer.alloc(CHUNK);
  return buf.compare(zeros, 0, n, 0, n) === 0;
}

/**
 * Moves the bytes of `path` from `offset` to its end into
 * `<path>.torn-<offset>` (created exclusively, never through a symlink), then
 * truncates `path` to `offset`. Returns the new file's name.
 *
 * @example
 * ```ts
 * import { setAsideTail } from "./set_aside.ts";
 * setAsideTail(".noema/episodes/ep_1/events.jsonl", 4096); // "events.jsonl.torn-4096"
 * ```
 */
export function setAsideTail(path: string, offset: number): string {
  const name = `${basename(path)}.torn-${offset}`;
  const target = join(dirname(path), name);
  const root = episodeRoot(dirname(path)); // the log is in an episode directory
  refuseSymlinks(path, root);
  refuseSymlinks(target, root);
  let src: number | undefined, dst: number | undefined;
  try {
    src = openSync(path, constants.O_RDWR | O_NOFOLLOW);
    dst = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, FILE_MODE);
  } catch (e) {
    if (src !== undefined) closeSync(src);
    throw symlinkError(e, path);
  }
  try {
    const size = fstatSync(src).size;
    const buf = Buffer.allocUnsafe(CHUNK);
    for (let pos = offset; pos < size;) {
      const n = readSync(src, buf, 0, Math.min(buf.length, size - pos), pos);
      if (n === 0) break;
      if (!isZero(buf, n)) {
        let off = 0;
        while (off < n) off += writeSync(dst, buf, off, n - off, pos - offset + off);
      }
      pos += n;
    }
    ftruncateSync(dst, Math.max(0, size - offset)); // the length, holes included
    fsyncSync(dst);
    ftruncateSync(src, offset);
    fsyncSync(src);
  } finally {
    closeSync(dst);
    closeSync(src);
  }
  fsyncDir(dirname(path));
  return name;
}
