/**
 * Live publishing, over a files store: a run that ends far ahead of its
 * publisher hands the rest over at once instead of spending its flush wait
 * on what cannot be sent in time (a 10,000-step run writes megabytes of
 * events in a second); publishing from a worker thread, so the run's own
 * thread only posts kicks.
 */
import assert from "node:assert/strict";
import { appendFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { LivePublisher } from "../src/shared_store/live.ts";
import { WorkerLivePublisher } from "../src/shared_store/live_thread.ts";
import { openSharedStore } from "../src/shared_store/open.ts";
import { EpisodePublisher } from "../src/shared_store/publish.ts";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

/** A finished `noema run "Say hello"` under `root`, without a store: its id and directory. */
function helloEpisode(root: string): { id: string; dir: string } {
  const r = cli(["--root", root, "run", "Say hello", "--json"], { cwd: root, env: { NOEMA_STORE: "" } });
  assert.equal(r.code, 0, r.stderr);
  const id = JSON.parse(r.stdout).episode_id as string;
  return { id, dir: join(root, "episodes", id) };
}

test("a run that ends megabytes ahead of its publisher hands the rest over without waiting for it", async () => {
  const t = tempDir();
  try {
    const { id, dir } = helloEpisode(t.path);
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
      await until(async () => (await stored()) === state, 5_000);
      assert.equal(await live.finish(5_000), true);
    } finally {
      await store.close();
    }
  } finally {
    t.cleanup();
  }
});

/** Waits until `f` holds (every 20 ms), at most `ms`. */
async function until(f: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Deno type-checks a worker's modules as it starts it under `deno test` (not under `deno run`): on a loaded machine
// that takes tens of seconds, hence the long deadlines.
test(
  "publishing from a worker thread: kicks from the run's thread, everything stored at finish; a store that cannot be reached is said once",
  {
    timeout: 300_000,
  },
  async () => {
    const t = tempDir();
    try {
      const { id, dir } = helloEpisode(t.path);
      const url = pathToFileURL(join(t.path, "store")).href;
      const store = await openSharedStore(url);
      try {
        await store.migrate();
        const said: Error[] = [];
        const live = WorkerLivePublisher.start({ url, from: "test", dir, episodeId: id, host: "host-w" }, {
          onUnavailable: (e) => said.push(e),
        });
        assert.ok(live, "a worker thread starts here");
        live.kick();
        appendFileSync(join(dir, "events.jsonl"), JSON.stringify({ more: 1 }) + "\n");
        live.kick();
        assert.equal(await live.finish(120_000), true);
        assert.equal(said.length, 0, said.map((e) => e.message).join());
        const local = readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter(Boolean);
        assert.equal(await store.lineCount(id, "events.jsonl"), local.length);
        assert.equal((await store.get(id))?.host, "host-w");

        const gone = pathToFileURL(join(t.path, "no-such-store")).href;
        const down = WorkerLivePublisher.start({ url: gone, from: "test", dir, episodeId: id, host: "host-w" }, {
          onUnavailable: (e) => said.push(e),
        })!;
        down.kick();
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

test("a run busy in its own thread (no turn of its event loop) still has its kicks reach the publishing worker", {
  timeout: 300_000,
}, async () => {
  const t = tempDir();
  try {
    const { id, dir } = helloEpisode(t.path);
    const url = pathToFileURL(join(t.path, "store")).href;
    const store = await openSharedStore(url);
    try {
      await store.migrate();
      const live = WorkerLivePublisher.start({ url, from: "test", dir, episodeId: id, host: "host-w" }, {
        onUnavailable: () => {},
      })!;
      // The files store's index of the stream grows as lines are stored: watched without yielding to the event loop.
      const index = join(t.path, "store", "episodes", id, "lines", "events.jsonl", "index");
      const end = Date.now() + 120_000;
      let stored = false;
      while (!stored && Date.now() < end) {
        appendFileSync(join(dir, "events.jsonl"), JSON.stringify({ busy: Date.now() }) + "\n");
        live.kick();
        const wait = Date.now() + 20;
        while (Date.now() < wait) { /* the run's own work */ }
        stored = existsSync(index) && statSync(index).size > 0;
      }
      assert.ok(stored, "the worker published while this thread never yielded");
      await live.finish(120_000);
    } finally {
      await store.close();
    }
  } finally {
    t.cleanup();
  }
});

test("a live publish sends about its byte budget of lines, the next one the rest (a fast run is not chased)", async () => {
  const t = tempDir();
  try {
    const { id, dir } = helloEpisode(t.path);
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
