/**
 * Live publishing, over a files store: a run that ends far ahead of its
 * publisher hands the rest over at once instead of spending its flush wait
 * on what cannot be sent in time (a 10,000-step run writes megabytes of
 * events in a second); publishing from a worker thread, so the run's own
 * thread only posts kicks.
 */
import assert from "node:assert/strict";
import { appendFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { LivePublisher } from "../src/shared_store/live.ts";
import { BackgroundLivePublisher } from "../src/shared_store/live_background.ts";
import { LIVE_PUBLISH_COMMAND } from "../src/shared_store/live_process.ts";
import { acquireLock, processGone } from "../src/store/lock.ts";
import { serveLivePublishing } from "../src/shared_store/live_serve.ts";
import { clearPending, handedOffTo, markHandedOff, markPending, pendingIds } from "../src/shared_store/pending.ts";
import { noemaArgv } from "../src/agents/noema_command.ts";
import type { BackgroundProcess } from "../src/channels.ts";
import { childEnv } from "../src/plugins/process.ts";
import { openSharedStore } from "../src/shared_store/open.ts";
import { type SharedStore, StoreTimeoutError } from "../src/shared_store/shared_store.ts";
import { EpisodePublisher, PublishAbandonedError } from "../src/shared_store/publish.ts";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

/**
 * A finished `noema run "Say hello"` under `root`, without a store: its id and directory. `running`: without its
 * summary and manifest, as while it runs, for tests that append lines to it (lines appended to a sealed episode are
 * not its manifest's: the publisher refuses to call such a copy ended).
 */
function helloEpisode(root: string, { running = false } = {}): { id: string; dir: string } {
  const r = cli(["--root", root, "run", "Say hello", "--json"], { cwd: root, env: { NOEMA_STORE: "" } });
  assert.equal(r.code, 0, r.stderr);
  const id = JSON.parse(r.stdout).episode_id as string;
  const dir = join(root, "episodes", id);
  if (running) { for (const f of ["manifest.json", "summary.json"]) rmSync(join(dir, f)); }
  return { id, dir };
}

test("a run that ends megabytes ahead of its publisher hands the rest over without waiting for it", async () => {
  const t = tempDir();
  try {
    const { id, dir } = helloEpisode(t.path, { running: true });
    const store = await openSharedStore(pathToFileURL(join(t.path, "store")).href);
    try {
      await store.migrate();
      const publisher = new EpisodePublisher(store, dir, id);
      await publisher.publish();
      const stored = await store.lineCount(id, "events.jsonl");
      assert.ok(stored > 0);
      // 4 MB more lines than the publisher has sent: more than a 100 ms flush wait can send.
      const line = JSON.stringify({ pad: "x".repeat(1000) }) + "\n";
      appendFileSync(join(dir, "events.jsonl"), line.repeat(4000));
      assert.ok(publisher.backlogBytes() >= 4_000_000);
      const live = new LivePublisher(publisher);
      assert.equal(await live.finish(100), false, "handed over");
      assert.equal(live.failed, null, "not a store failure");
      assert.equal(await store.lineCount(id, "events.jsonl"), stored, "nothing sent: the hand-over sends it");
      // A small backlog is still published within the wait.
      const small = new EpisodePublisher(store, dir, id);
      await small.publish();
      appendFileSync(join(dir, "events.jsonl"), line);
      assert.equal(await new LivePublisher(small).finish(10_000), true);
      assert.equal(await store.lineCount(id, "events.jsonl"), stored + 4001);
    } finally {
      await store.close();
    }
  } finally {
    t.cleanup();
  }
});

test("a run that stops writing has its last state published without another kick (paused, or an agent thinking)", async () => {
  const t = tempDir();
  try {
    const { id, dir } = helloEpisode(t.path);
    for (const f of ["manifest.json", "summary.json"]) rmSync(join(dir, f)); // as while it runs
    const store = await openSharedStore(pathToFileURL(join(t.path, "store")).href);
    try {
      await store.migrate();
      const live = new LivePublisher(new EpisodePublisher(store, dir, id), { intervalMs: 10, filesIntervalMs: 300 });
      live.kick(); // the first publish sends the files too
      await until(async () => (await store.lineCount(id, "events.jsonl")) > 0);
      // Then a step: a line and a new state, kicked at once (within the files interval: lines only), then nothing.
      const state = readFileSync(join(dir, "state.json"), "utf8").replace(/\n?$/, "\n\n");
      writeFileSync(join(dir, "state.json"), state);
      appendFileSync(join(dir, "events.jsonl"), JSON.stringify({ pad: "a step" }) + "\n");
      live.kick();
      const stored = async () => new TextDecoder().decode((await store.readFile(id, "state.json")) ?? new Uint8Array());
      await until(async () => (await stored()) === state);
      assert.equal(await live.finish(5_000), true);
    } finally {
      await store.close();
    }
  } finally {
    t.cleanup();
  }
});

/**
 * Waits until `f` holds (every 20 ms), at most `ms`: a bound for hangs, not a goal (a publishing process started from
 * source beside a busy machine's other work took more than 10 s to send its first lines).
 */
async function until(f: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Deno type-checks a worker's modules as it starts it under `deno test` (not under `deno run`): on a loaded machine
// that takes tens of seconds, hence the long deadlines.
test(
  "publishing from a worker thread: it watches the files, everything stored at finish; a store that cannot be reached is said once",
  {
    timeout: 300_000,
  },
  async () => {
    const t = tempDir();
    try {
      const { id, dir } = helloEpisode(t.path, { running: true });
      const url = pathToFileURL(join(t.path, "store")).href;
      const store = await openSharedStore(url);
      try {
        await store.migrate();
        const said: Error[] = [];
        const live = BackgroundLivePublisher.start({ url, from: "test", dir, episodeId: id, host: "host-w" }, {
          onUnavailable: (e) => said.push(e),
        });
        assert.ok(live, "a worker thread starts here");
        assert.equal(live.pid, null, "a thread, not a process");
        appendFileSync(join(dir, "events.jsonl"), JSON.stringify({ more: 1 }) + "\n");
        assert.equal(await live.finish(120_000), true);
        assert.equal(said.length, 0, said.map((e) => e.message).join());
        const local = readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter(Boolean);
        assert.equal(await store.lineCount(id, "events.jsonl"), local.length);
        assert.equal((await store.get(id))?.host, "host-w");

        const gone = pathToFileURL(join(t.path, "no-such-store")).href;
        const down = BackgroundLivePublisher.start({ url: gone, from: "test", dir, episodeId: id, host: "host-w" }, {
          onUnavailable: (e) => said.push(e),
        })!;
        assert.equal(await down.finish(120_000), false);
        assert.equal(said.length, 1, "said once");
        assert.match(said[0].message, /no such directory/);
        assert.equal(down.failed, said[0]);
      } finally {
        await store.close();
      }
    } finally {
      t.cleanup();
    }
  },
);

test("a stored catalog row that says running for an episode sealed here is brought up to date by the next publisher", async () => {
  const t = tempDir();
  try {
    const { id, dir } = helloEpisode(t.path);
    const store = await openSharedStore(pathToFileURL(join(t.path, "store")).href);
    try {
      await store.migrate();
      const first = new EpisodePublisher(store, dir, id);
      await first.publish();
      // As a publish that listed the files while the run was sealing leaves it: every file stored, the row running.
      const token = await store.acquireLease(id, { host: first.host, pid: process.pid });
      await store.upsertCatalog({ ...first.catalogRow(), run_state: "running" }, token);
      await store.releaseLease(id, token);
      assert.equal((await store.get(id))?.run_state, "running");
      const next = await new EpisodePublisher(store, dir, id).publish();
      assert.deepEqual(next, { lines: 0, files: 0 }, "nothing else to send");
      assert.equal((await store.get(id))?.run_state, "terminal");
    } finally {
      await store.close();
    }
  } finally {
    t.cleanup();
  }
});

/** How a test starts `noema __store-live`, as a run does. */
const storeLiveProcess = (): BackgroundProcess => ({
  argv: [...noemaArgv(), LIVE_PUBLISH_COMMAND],
  env: childEnv(process.env),
  priority: "self",
});

/** Runs `f` on a finished hello episode under a temporary root, with a files store at `<root>/store`, migrated. */
async function withHelloAndStore(
  f: (c: { root: string; id: string; dir: string; url: string; store: SharedStore }) => Promise<void>,
): Promise<void> {
  const t = tempDir();
  try {
    const { id, dir } = helloEpisode(t.path, { running: true });
    const url = pathToFileURL(join(t.path, "store")).href;
    const store = await openSharedStore(url);
    try {
      await store.migrate();
      await f({ root: t.path, id, dir, url, store });
    } finally {
      await store.close();
    }
  } finally {
    t.cleanup();
  }
}

for (const where of ["thread", "process"] as const) {
  test(`a run busy in its own thread (no turn of its event loop) is still published from beside it (${where})`, {
    timeout: 300_000,
  }, () =>
    withHelloAndStore(async ({ root, id, dir, url }) => {
      const live = BackgroundLivePublisher.start({ url, from: "test", dir, episodeId: id, host: "host-w" }, {
        onUnavailable: () => {},
        ...(where === "process" ? { process: storeLiveProcess() } : {}),
      })!;
      assert.equal(live.pid === null, where === "thread");
      // The files store's index of the stream grows as lines are stored: watched without yielding to the event loop.
      const index = join(root, "store", "episodes", id, "lines", "events.jsonl", "index");
      const end = Date.now() + 120_000;
      let stored = false;
      while (!stored && Date.now() < end) {
        appendFileSync(join(dir, "events.jsonl"), JSON.stringify({ busy: Date.now() }) + "\n");
        const wait = Date.now() + 20;
        while (Date.now() < wait) { /* the run's own work */ }
        stored = existsSync(index) && statSync(index).size > 0;
      }
      assert.ok(stored, `the ${where} published while this thread never yielded`);
      await live.finish(120_000);
    }));
}

test("a run's publishing process goes on alone after the run: it publishes the rest, clears the marker, and exits", {
  timeout: 300_000,
}, () =>
  withHelloAndStore(async ({ root, id, dir, url, store }) => {
    const live = BackgroundLivePublisher.start({ url, from: "test", dir, episodeId: id, host: "host-p" }, {
      onUnavailable: (e) => assert.fail(e.message),
      process: storeLiveProcess(),
    })!;
    assert.ok(live.pid !== null, "a process starts here");
    markHandedOff(root, id, live.pid!); // as the run marks it
    await until(async () => (await store.lineCount(id, "events.jsonl")) > 0); // it runs, and the store answers
    // 8 MB more than it has sent: more than a 100 ms wait is meant to send, so the run is told at once to leave it.
    // The store's write lock, held meanwhile, keeps the process from sending any of it before the run has its answer:
    // on a fast machine it could otherwise send it all first, and the run would rightly be told "all published".
    // The process takes that lock for each of its writes, and may be in one now (on a slow machine, still sending the
    // episode's first lines): the test waits for its turn, as any writer does (the bound only catches a hang).
    const lock = acquireLock(join(root, "store", "episodes", id), "a test: the store is busy", { waitMs: 120_000 });
    let finished: boolean;
    try {
      const line = JSON.stringify({ pad: "x".repeat(1000) }) + "\n";
      appendFileSync(join(dir, "events.jsonl"), line.repeat(8000));
      finished = await live.finish(100);
    } finally {
      lock.release();
    }
    // false: the run's wait (100 ms) ended before the rest was sent, and the run was not kept for it.
    assert.equal(finished, false, "not all published within the run's wait");
    assert.ok(live.continuesAlone, "the process goes on");
    assert.equal(live.failed, null);
    const local = readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter(Boolean).length;
    await until(async () => (await store.lineCount(id, "events.jsonl")) === local, 120_000);
    await until(() => Promise.resolve(!pendingIds(root).includes(id)), 30_000);
    await until(() => Promise.resolve(!processAlive(live.pid!)), 30_000);
    assert.equal(handedOffTo(root, id), null);
  }));

test("a publishing process killed before the run has seen it end does not go on alone: the run hands its tail over", {
  timeout: 300_000,
}, () =>
  withHelloAndStore(async ({ id, dir, url, store }) => {
    const live = BackgroundLivePublisher.start({ url, from: "test", dir, episodeId: id, host: "host-k" }, {
      onUnavailable: () => {},
      process: storeLiveProcess(),
    })!;
    assert.ok(live.pid !== null, "a process starts here");
    await until(async () => (await store.lineCount(id, "events.jsonl")) > 0); // it runs, and the store answers
    // (Not asked to finish yet, it is not said to go on alone either: only a process heard from after the run asked is.)
    assert.equal(live.continuesAlone, false, "never asked to finish, never heard");
    process.kill(live.pid!, "SIGKILL");
    // A run busy in its own thread: its event loop does not turn, so the process's end is not seen as an event; the
    // system knows it all the same (a zombie once it has died). Before, this said "goes on alone", and the run left its
    // tail to a dead process: nobody published it (a shared_store test waited 180 s for it, under load).
    const end = Date.now() + 60_000;
    while (!processGone(live.pid!) && Date.now() < end) { /* busy, no turn of the event loop */ }
    assert.equal(live.continuesAlone, false, "a dead process does not go on alone");
    await live.finish(100);
  }));

test("a run that writes nothing for a while still renews its lease, and so finds a store that stopped answering", () =>
  withHelloAndStore(async ({ id, dir, store }) => {
    // The store as a cut link leaves it for a lease renewal: no answer within the bound (what PostgresStore then says).
    let cut = false, renewals = 0;
    const cutLink = new Proxy(store, {
      get(target, key) {
        if (key === "acquireLease") {
          return (...a: Parameters<SharedStore["acquireLease"]>) => {
            renewals++;
            return cut ? Promise.reject(new StoreTimeoutError("the test's store", 15)) : target.acquireLease(...a);
          };
        }
        const v = Reflect.get(target, key);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const failures: Error[] = [];
    const live = new LivePublisher(new EpisodePublisher(cutLink, dir, id), {
      heartbeatMs: 50,
      onUnavailable: (e) => failures.push(e),
    });
    try {
      live.kick(); // the run's last write; from here on it writes nothing (a long step)
      await until(() => Promise.resolve(renewals >= 3), 60_000);
      assert.equal(failures.length, 0, String(failures[0]));
      cut = true;
      await until(() => Promise.resolve(failures.length > 0), 60_000);
      assert.ok(failures[0] instanceof StoreTimeoutError, String(failures[0]));
      assert.equal(live.failed, failures[0], "said once, and publishing stops");
      const after = renewals;
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(renewals, after, "no renewal after the failure");
    } finally {
      await live.finish(100);
    }
  }));

test("a publisher no longer wanted never takes the lease: nothing is sent, and it says why", () =>
  withHelloAndStore(async ({ id, dir, store }) => {
    const p = new EpisodePublisher(store, dir, id, { abandoned: () => true });
    await assert.rejects(p.publish(), (e) => e instanceof PublishAbandonedError && /given up/.test(e.message));
    assert.equal(await store.lineCount(id, "events.jsonl"), 0, "nothing sent");
    // The lease is free for the one that publishes it now (a resume's claim).
    const token = await store.acquireLease(id, { host: "host-r", pid: process.pid });
    await store.releaseLease(id, token);
  }));

test(
  "a run's publishing process whose run died before asking it to finish does not take the lease (a resume may have it)",
  {
    timeout: 300_000,
  },
  () =>
    withHelloAndStore(async ({ id, dir, url, store }) => {
      // A run that is gone: a child process that ended (and was reaped).
      const gone = spawnSync(process.execPath, ["-e", "0"]).pid;
      assert.ok(gone !== undefined && processGone(gone));
      const failures: string[] = [];
      const live = BackgroundLivePublisher.start(
        { url, from: "test", dir, episodeId: id, host: "host-g", adoptPid: gone },
        { onUnavailable: (e) => failures.push(e.message), process: storeLiveProcess() },
      )!;
      assert.ok(live.pid !== null, "a process starts here");
      try {
        // Its stdin stays open here (as under a starved process that has not yet read that its run died).
        await until(() => Promise.resolve(failures.length > 0), 120_000);
        assert.match(failures[0], /given up: the run it published for is gone/);
        assert.equal(await store.lineCount(id, "events.jsonl"), 0, "nothing published for a run that is gone");
      } finally {
        await live.finish(100);
      }
    }),
);

test("the publishing side tells a run that ended far ahead of it not to wait (alone), then publishes the rest", () =>
  withHelloAndStore(async ({ id, dir, url, store }) => {
    const start = { url, from: "test", dir, episodeId: id, host: "host-s" };
    const finish = JSON.stringify({ type: "finish", deadlineMs: 100, firstWriteWaitMs: 3000 });
    const said: string[] = [];
    const server = serveLivePublishing(start, (m) => said.push(m.type), { deadlineOf: () => 600_000 });
    await until(() => Promise.resolve(said.includes("published")));
    const line = JSON.stringify({ pad: "x".repeat(1000) }) + "\n";
    appendFileSync(join(dir, "events.jsonl"), line.repeat(8000)); // 8 MB: more than 100 ms can send (2 MB)
    server.take(finish);
    assert.deepEqual(await server.done, { ok: true, failed: false }, "all of it, on its own deadline");
    assert.deepEqual(said.slice(-2), ["alone", "finished"]);
    const local = readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter(Boolean).length;
    assert.equal(await store.lineCount(id, "events.jsonl"), local);
    // A small rest is just finished: no "alone".
    appendFileSync(join(dir, "events.jsonl"), line);
    const small: string[] = [];
    const again = serveLivePublishing(start, (m) => small.push(m.type), { deadlineOf: () => 600_000 });
    await until(() => Promise.resolve(small.includes("published")));
    again.take(finish);
    assert.deepEqual(await again.done, { ok: true, failed: false });
    assert.ok(!small.includes("alone"), small.join());
  }));

test("a publishing process leaves a marker that names another process (a resume since handed the episode anew)", () => {
  const t = tempDir();
  try {
    const id = "ep_marked";
    markHandedOff(t.path, id, 4242);
    clearPending(t.path, id, { by: 4243 });
    assert.deepEqual(pendingIds(t.path), [id], "another process's marker stays");
    clearPending(t.path, id, { by: 4242 });
    assert.deepEqual(pendingIds(t.path), []);
    markPending(t.path, id); // names no process (a hook call marked it): published now, so cleared
    clearPending(t.path, id, { by: 4242 });
    assert.deepEqual(pendingIds(t.path), []);
  } finally {
    t.cleanup();
  }
});

/** Whether process `pid` is alive (not a zombie). */
function processAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

test("a live publish sends about its byte budget of lines, the next one the rest (a fast run is not chased)", async () => {
  const t = tempDir();
  try {
    const { id, dir } = helloEpisode(t.path, { running: true });
    const store = await openSharedStore(pathToFileURL(join(t.path, "store")).href);
    try {
      await store.migrate();
      const publisher = new EpisodePublisher(store, dir, id);
      await publisher.publish();
      const before = await store.lineCount(id, "events.jsonl");
      const line = JSON.stringify({ pad: "x".repeat(1000) }) + "\n";
      appendFileSync(join(dir, "events.jsonl"), line.repeat(1000)); // about 1 MB
      await publisher.publish({ linesOnly: true, maxLineBytes: 100_000 });
      const some = await store.lineCount(id, "events.jsonl") - before;
      assert.ok(some > 0 && some <= Math.ceil(100_000 / line.length), `${some} lines sent`);
      await publisher.publish();
      assert.equal(await store.lineCount(id, "events.jsonl"), before + 1000);
    } finally {
      await store.close();
    }
  } finally {
    t.cleanup();
  }
});
