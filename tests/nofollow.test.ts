/**
 * No write through a symlink inside an episode (issue 12 §4): a symlinked
 * `events.jsonl` or `approvals/` in a crashed or paused episode makes
 * `resume`/`approve` refuse with an error naming the path, and nothing is
 * written outside. Staging directories of killed runs do not pile up.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { type AdapterPlugin, approve, EXIT, NoemaError, run } from "noema";
import { writeFileAtomic } from "../src/store/atomic.ts";
import { JsonlAppender } from "../src/store/jsonl.ts";
import { procStat } from "../src/store/lock.ts";
import { cli } from "./helpers/cli.ts";
import { crashedRun } from "./helpers/race.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-nofollow-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const outside = join(tmp.path, "outside");
mkdirSync(outside);

const unsafe = (path: string) => (e: unknown) =>
  e instanceof NoemaError && e.code === "unsafe_path" && e.message.includes(path) && /symbolic link/.test(e.message);

describe("store writers refuse symlinks", () => {
  test("JsonlAppender: a symlinked file or directory", () => {
    const dir = join(tmp.path, "w1");
    mkdirSync(dir);
    writeFileSync(join(outside, "log.jsonl"), "");
    symlinkSync(join(outside, "log.jsonl"), join(dir, "events.jsonl"));
    assert.throws(() => new JsonlAppender(join(dir, "events.jsonl")), unsafe(join(dir, "events.jsonl")));
    symlinkSync(outside, join(dir, "sub"));
    assert.throws(() => new JsonlAppender(join(dir, "sub", "x.jsonl")), unsafe(join(dir, "sub")));
    assert.equal(readFileSync(join(outside, "log.jsonl"), "utf8"), "");
    assert.ok(!existsSync(join(outside, "x.jsonl")));
  });

  test("writeFileAtomic: a symlinked directory (approvals -> elsewhere) or target", () => {
    const dir = join(tmp.path, "w2");
    mkdirSync(dir);
    const elsewhere = join(outside, "approvals");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(dir, "approvals"));
    const target = join(dir, "approvals", "chk_1.json");
    assert.throws(() => writeFileAtomic(target, "{}", { exclusive: true }), unsafe(join(dir, "approvals")));
    assert.deepEqual(readdirSync(elsewhere), []);
    symlinkSync(join(outside, "state.json"), join(dir, "state.json"));
    assert.throws(() => writeFileAtomic(join(dir, "state.json"), "{}"), unsafe(join(dir, "state.json")));
    assert.ok(!existsSync(join(outside, "state.json")));
  });
});

describe("episodes with planted symlinks", () => {
  test("a crashed run whose events.jsonl is a symlink: resume and resume --abort refuse, the outside file is untouched", async () => {
    const work = join(tmp.path, "crash");
    mkdirSync(work);
    const dir = await crashedRun(root, work, "ep_linked_events");
    const events = join(dir, "events.jsonl");
    const planted = join(outside, "events.jsonl");
    copyFileSync(events, planted);
    rmSync(events);
    symlinkSync(planted, events);
    rmSync(join(dir, "lock"), { force: true });
    const before = readFileSync(planted);
    for (const extra of [[], ["--abort"]]) {
      const r = cli(["resume", "ep_linked_events", "--root", root, ...extra]);
      assert.equal(r.code, EXIT.ERROR, r.stderr);
      assert.match(r.stderr, /events\.jsonl: is a symbolic link/);
    }
    assert.deepEqual(readFileSync(planted), before, "nothing appended outside");
    assert.ok(!existsSync(join(dir, "summary.json")));
    assert.ok(!existsSync(join(dir, "manifest.json")));
  });

  test("a paused run whose approvals/ is a symlink: approve refuses, nothing is written outside", async () => {
    const adapter: AdapterPlugin = { name: "ok", create: () => ({ act: () => ({ status: "ok" }) }) };
    const r = await run("review first", { root, using: adapter, steps: ["review:check", "act:work"] });
    assert.equal(r.exit_code, EXIT.PAUSED);
    const elsewhere = join(outside, "approvals-target");
    mkdirSync(elsewhere);
    symlinkSync(elsewhere, join(r.episode_dir, "approvals"));
    assert.throws(() => approve(r.episode_id, { root }), unsafe(join(r.episode_dir, "approvals")));
    const c = cli(["approve", r.episode_id, "--root", root]);
    assert.notEqual(c.code, 0);
    assert.match(c.stderr, /approvals: is a symbolic link/);
    assert.deepEqual(readdirSync(elsewhere), []);
    // A symlinked events.jsonl in a paused run: approve refuses too (the decision would rest on an outside file).
    rmSync(join(r.episode_dir, "approvals"));
    const events = join(r.episode_dir, "events.jsonl");
    copyFileSync(events, join(outside, "paused-events.jsonl"));
    rmSync(events);
    symlinkSync(join(outside, "paused-events.jsonl"), events);
    assert.throws(() => approve(r.episode_id, { root }), unsafe(events));
  });
});

describe("staging directories of killed runs", () => {
  test("the next run removes those whose owner is dead or that never got a lock; a live one stays", () => {
    const r2 = join(tmp.path, "root2");
    const episodes = join(r2, "episodes");
    const stage = (name: string, lock: Record<string, unknown> | null) => {
      mkdirSync(join(episodes, name), { recursive: true });
      writeFileSync(join(episodes, name, "events.jsonl"), "{}\n");
      if (lock) writeFileSync(join(episodes, name, "lock"), JSON.stringify({ host: hostname(), ...lock }));
    };
    stage(".tmp-ep_dead-1", { pid: 2 ** 22 + 7, purpose: "run" }); // no such pid
    stage(".tmp-ep_live-2", { pid: process.pid, start_ticks: procStat(process.pid)?.startTicks, purpose: "run" });
    stage(".tmp-ep_nolock_old-3", null);
    const hourAgo = Date.now() / 1000 - 3600;
    utimesSync(join(episodes, ".tmp-ep_nolock_old-3"), hourAgo, hourAgo);
    stage(".tmp-ep_nolock_new-4", null);
    const r = cli(["run", "hello", "--root", r2, "-q"]);
    assert.equal(r.code, 0, r.stderr);
    const left = readdirSync(episodes).filter((n) => n.startsWith(".tmp-")).sort();
    assert.deepEqual(left, [".tmp-ep_live-2", ".tmp-ep_nolock_new-4"]);
  });
});
