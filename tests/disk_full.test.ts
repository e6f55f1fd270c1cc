/**
 * A full disk while noema writes, on a real file system that runs out of
 * space (a small tmpfs; skipped where mounting one is not allowed): the error
 * says so, with its own exit code, and a log is never left with a torn last
 * line.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { EXIT } from "../src/errors.ts";
import { writeFileAtomic } from "../src/store/atomic.ts";
import { DiskFullError } from "../src/store/disk_full.ts";
import { JsonlAppender } from "../src/store/jsonl.ts";
import { fillUp, mountTmpfs } from "./helpers/tmpfs.ts";
import { cli } from "./helpers/cli.ts";

/** Runs `body` on a fresh 1 MiB tmpfs (skipping, with the reason, where none can be mounted). */
async function onTmpfs(t: { skip(why: string): void }, body: (dir: string, grow: () => void) => void | Promise<void>) {
  const fs = mountTmpfs(1 << 20);
  if (typeof fs === "string") return t.skip(fs);
  try {
    await body(fs.dir, () => fs.resize(8 << 20));
  } finally {
    fs.unmount();
  }
}

test("an append that finds the disk full throws DiskFullError (exit 11) naming the file, and leaves no torn line", async (t) => {
  await onTmpfs(t, (dir) => {
    const path = join(dir, "events.jsonl");
    const log = new JsonlAppender(path);
    log.append({ id: "e1" });
    fillUp(join(dir, "filler"), 8192); // room for part of the next line only
    const before = readFileSync(path);
    const err = (() => {
      try {
        log.append({ id: "e2", text: "x".repeat(40_000) });
      } catch (e) {
        return e;
      }
    })();
    assert.ok(err instanceof DiskFullError, String(err));
    assert.equal(err.exitCode, EXIT.DISK_FULL);
    assert.match(err.message, /events\.jsonl: no space left on the device \(ENOSPC\)/);
    assert.deepEqual(readFileSync(path), before, "nothing of the line that did not fit");
    log.close();
  });
});

test("a buffered log on a full disk keeps its whole lines written and the rest for later: once there is room, every line once, in order", async (t) => {
  await onTmpfs(t, (dir, grow) => {
    const path = join(dir, "events.jsonl");
    const log = new JsonlAppender(path, { buffered: true });
    fillUp(join(dir, "filler"), 8192);
    const lines = Array.from({ length: 12 }, (_, i) => ({ id: `e${i}`, text: "y".repeat(1500) }));
    for (const l of lines) log.append(l);
    assert.throws(() => log.flush(), DiskFullError);
    const text = readFileSync(path, "utf8");
    assert.ok(text === "" || text.endsWith("\n"), "only whole lines are left on disk");
    grow();
    log.close();
    const written = readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l).id);
    assert.deepEqual(written, lines.map((l) => l.id));
  });
});

test("an atomic write that finds the disk full throws DiskFullError and leaves neither a partial file nor its temporary", async (t) => {
  await onTmpfs(t, (dir) => {
    const path = join(dir, "state.json");
    writeFileSync(path, "{}\n");
    fillUp(join(dir, "filler"), 4096);
    assert.throws(() => writeFileAtomic(path, "z".repeat(100_000)), DiskFullError);
    assert.equal(readFileSync(path, "utf8"), "{}\n", "the old file is whole");
    assert.deepEqual(readdirSync(dir).sort(), ["filler", "state.json"]);
    assert.ok(existsSync(path) && statSync(path).size === 3);
  });
});

test("a run whose episode cannot even be created on a full disk: exit 11, says nothing was recorded, leaves no staging", async (t) => {
  // Found by a break-it run: the message promised "its episode resumable; … noema resume ep_… continues it" for an
  // episode that did not exist, and the staging directory was left behind.
  await onTmpfs(t, (dir) => {
    const root = join(dir, "root");
    for (const leave of [0, 4096]) {
      fillUp(join(dir, "filler"), leave);
      const r = cli(["--root", root, "run", "hello", "--json"]);
      assert.equal(r.code, EXIT.DISK_FULL, r.stderr);
      assert.match(r.stderr, /no space left on the device/);
      assert.match(r.stderr, /before its episode was recorded \(nothing was written to resume\)/, r.stderr);
      assert.doesNotMatch(r.stderr, /resumable|noema resume/);
      const left = existsSync(join(root, "episodes")) ? readdirSync(join(root, "episodes")) : [];
      assert.deepEqual(left.filter((n) => n !== ".runs-cache.json"), [], `leave ${leave}: nothing left behind`);
    }
  });
});
