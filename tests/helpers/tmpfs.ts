/**
 * A small tmpfs for tests of a full disk: a real file system that runs out of
 * space, mounted on a temporary directory (root only: `mount -t tmpfs`).
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A mounted tmpfs. */
export interface Tmpfs {
  /** Where it is mounted. */
  dir: string;
  /** Changes its size (a full one given room again, as freeing space would). */
  resize(bytes: number): void;
  /** Unmounts it and removes the directory. */
  unmount(): void;
}

/**
 * Mounts a tmpfs of `bytes` bytes on a new temporary directory; a string saying why when it cannot (not root, no
 * mount rights in this container), for the test to skip with it.
 *
 * @example
 * ```ts
 * import { mountTmpfs } from "./helpers/tmpfs.ts";
 * const fs = mountTmpfs(2 << 20);
 * if (typeof fs === "string") t.skip(fs); else fs.unmount();
 * ```
 */
export function mountTmpfs(bytes: number): Tmpfs | string {
  const dir = mkdtempSync(join(tmpdir(), "noema-full-"));
  const mount = (args: string[]) => spawnSync("mount", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  const r = mount(["-t", "tmpfs", "-o", `size=${bytes}`, "tmpfs", dir]);
  if (r.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return `cannot mount a tmpfs here (${(r.stderr || String(r.error)).trim()})`;
  }
  return {
    dir,
    resize(size) {
      const again = mount(["-o", `remount,size=${size}`, dir]);
      if (again.status !== 0) throw new Error(`remount ${dir}: ${again.stderr}`);
    },
    unmount() {
      spawnSync("umount", ["-l", dir], { stdio: "ignore" });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Fills the file system holding `dir` with `file` until a write fails, then frees `leave` bytes of it: what is
 * free afterwards is about `leave`.
 *
 * @example
 * ```ts
 * import { fillUp } from "./helpers/tmpfs.ts";
 * fillUp(fs.dir + "/filler", 8192); // 8 KiB left
 * ```
 */
export function fillUp(file: string, leave: number): void {
  const fd = openSync(file, "w");
  const chunk = new Uint8Array(4096).fill(120);
  let size = 0;
  try {
    for (;;) size += writeSync(fd, chunk);
  } catch { /* full */ }
  closeSync(fd);
  spawnSync("truncate", ["-s", String(Math.max(0, size - leave)), file]);
}
