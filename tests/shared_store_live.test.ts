/**
 * Live publishing at the end of a run ({@link LivePublisher.finish}), over a
 * files store: a run that ends far ahead of its publisher hands the rest
 * over at once instead of spending its flush wait on what cannot be sent in
 * time (a 10,000-step run writes megabytes of events in a second).
 */
import assert from "node:assert/strict";
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { test } from "node:test";
import { LivePublisher } from "../src/shared_store/live.ts";
import { openSharedStore } from "../src/shared_store/open.ts";
import { EpisodePublisher } from "../src/shared_store/publish.ts";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

test("a run that ends megabytes ahead of its publisher hands the rest over without waiting for it", async () => {
  const t = tempDir();
  try {
    const r = cli(["--root", t.path, "run", "Say hello", "--json"], { cwd: t.path, env: { NOEMA_STORE: "" } });
    assert.equal(r.code, 0, r.stderr);
    const id = JSON.parse(r.stdout).episode_id as string;
    const dir = join(t.path, "episodes", id);
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
