/**
 * The worker of `log_digest.ts`: hashes a growing file from its first byte,
 * as far as it is told the file was written, on a thread of its own. It
 * reads the file through a descriptor of its own, opened on
 * `/proc/self/fd/<writer's fd>` (the writer's open file, wherever a rename
 * moved it) and checked to be the same file (device and inode). At the final
 * message it writes the digest (or that it could not) into the shared buffer
 * and wakes the waiting thread; at the last one it closes its descriptor and
 * ends.
 *
 * @module
 */
import { closeSync, readSync } from "node:fs";
import { Buffer } from "node:buffer";
import { parentPort } from "node:worker_threads";
import { nodeCrypto } from "../builtins.ts";
import type { DigestMessage } from "./log_digest.ts";
import { openSameFile } from "./regular_file.ts";

const hash = nodeCrypto().createHash("sha256");
const buf = Buffer.allocUnsafe(1 << 20);
let fd: number | undefined;
let hashed = 0;
let failed = false;

/** Opens the writer's file (checked to be the one named by device and inode). */
function open(m: DigestMessage): number {
  const own = openSameFile(m.fd, null, { dev: BigInt(m.dev), ino: BigInt(m.ino) });
  if (own === undefined) throw new Error("not the writer's file");
  return own;
}

/** Hashes the file up to `end` (a short read: the file is not what was written, the digest is given up). */
function advance(end: number): void {
  while (hashed < end) {
    const n = readSync(fd!, buf, 0, Math.min(buf.length, end - hashed), hashed);
    if (n <= 0) throw new Error("the file is shorter than written");
    hash.update(buf.subarray(0, n));
    hashed += n;
  }
}

/** Writes the outcome into the shared buffer (see `log_digest.ts`) and wakes the waiting thread. */
function answer(sab: SharedArrayBuffer, end: number): void {
  const state = new Int32Array(sab, 0, 1);
  if (!failed && hashed === end) {
    new Uint8Array(sab, 8, 64).set(Buffer.from(hash.digest("hex"), "latin1"));
    Atomics.store(state, 0, 1);
  } else Atomics.store(state, 0, 2);
  Atomics.notify(state, 0);
}

/** Handles one message from the writer. */
function onMessage(m: DigestMessage): void {
  try {
    if (!failed) {
      fd ??= open(m);
      advance(m.end);
    }
  } catch {
    failed = true;
  }
  if (m.answer) answer(m.answer, m.end);
  if (!m.last) return;
  if (fd !== undefined) closeSync(fd);
  fd = undefined;
  failed = true;
  // Nothing more to do: the port stops listening, and the thread, with nothing left to wait for, ends.
  parentPort?.off("message", onMessage);
  if (typeof parentPort?.close === "function") parentPort.close();
}

parentPort?.on("message", onMessage);
