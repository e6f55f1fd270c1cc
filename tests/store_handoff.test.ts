/**
 * The hand-over sync (`noema sync --handoff`, started detached when a run
 * ends with something left to publish) says what it did in
 * `<root>/state/sync-handoff.log`, and tries an unreachable store again
 * within its window instead of giving up at once. Against a real files store
 * and a closed port; the sync is a real detached child process.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { after, describe, test } from "node:test";
import { pathToFileURL } from "node:url";
import { handOff } from "../src/cli/store_publish.ts";
import { HANDOFF_LOG, handoffLogTail } from "../src/shared_store/handoff_log.ts";
import { handedOffTo, markPending } from "../src/shared_store/pending.ts";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-handoff-");
after(() => tmp.cleanup());

/** A new directory under the test's temp dir. */
function dirNamed(name: string): string {
  const dir = join(tmp.path, name);
  mkdirSync(dir);
  return dir;
}

/** Waits (hang bound only) until `check` holds. */
async function until(check: () => boolean, what: string, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`still waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A finished local episode under `root`, marked pending as a run that could not publish leaves it. */
function pendingEpisode(root: string): string {
  const task = join(root, "..", "task.json");
  writeFileSync(
    task,
    JSON.stringify({
      task: "t",
      using: "shell",
      steps: [{ kind: "act", description: "x", inputs: { command: "true" } }],
    }),
  );
  const r = cli(["--root", root, "run", task, "--json"]);
  assert.equal(r.code, 0, r.stderr);
  const id = JSON.parse(r.stdout).episode_id as string;
  markPending(root, id);
  return id;
}

/** A files store initialised under a new directory, and a root beside it holding one episode marked pending. */
function filesStoreWithPending(name: string): { dir: string; root: string; store: string; id: string } {
  const dir = dirNamed(name);
  const root = join(dir, "root");
  const store = pathToFileURL(join(dir, "store")).href;
  assert.equal(cli(["store", "init", "--store", store]).code, 0);
  return { dir, root, store, id: pendingEpisode(root) };
}

describe("the hand-over sync's log", () => {
  test("a hand-over sync publishes the episode, clears its marker and says so in state/sync-handoff.log", async () => {
    const { root, store, id } = filesStoreWithPending("ok");
    handOff(root, id, { url: store, from: "NOEMA_STORE" });
    const marker = join(root, "state", "publish-pending", id);
    assert.ok(handedOffTo(root, id) !== null || !existsSync(marker), "the marker names the sync while it runs");
    await until(() => !existsSync(marker), "the marker to go");
    // The sync writes its line before it exits; the marker goes just before that.
    await until(() => /synced 1 episode to/.test(handoffLogTail(root)), "the sync's line in the log");
    const log = readFileSync(join(root, "state", HANDOFF_LOG), "utf8");
    assert.match(log, new RegExp(`^\\S+Z noema sync --handoff ${id} \\(handed over by pid \\d+\\)\\n`));
    assert.match(log, /synced 1 episode to file:\/\/\S+: \d+ new lines?, \d+ files?\n$/);
  });

  test("store status names the root's pending episodes and what its last hand-over sync said", async () => {
    const { root, store, id } = filesStoreWithPending("status");
    const status = () => {
      const r = cli(["--root", root, "store", "status", "--store", store, "--json"]);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout).local;
    };
    assert.deepEqual(status(), { root, pending: [id], last_handoff: null });
    const human = cli(["--root", root, "store", "status", "--store", store]);
    assert.match(
      human.stdout,
      new RegExp(`^pending   1 episode under \\S+ not yet published: ${id} \\(noema sync`, "m"),
    );
    assert.doesNotMatch(human.stdout, /^handoff/m, "no hand-over yet");
    handOff(root, id, { url: store, from: "NOEMA_STORE" });
    await until(() => /synced 1 episode to/.test(handoffLogTail(root)), "the sync's line in the log");
    const after = status();
    assert.deepEqual(after.pending, []);
    assert.deepEqual(after.last_handoff.episodes, [id]);
    assert.match(after.last_handoff.said, /^synced 1 episode to file:\/\//);
    assert.equal(typeof after.last_handoff.pid, "number");
    assert.match(
      cli(["--root", root, "store", "status", "--store", store]).stdout,
      /^handoff {3}\S+Z ep_\S+: synced 1/m,
    );
  });

  test("an unreachable store: the sync says why and tries again, leaving the episode marked pending", async () => {
    const root = join(dirNamed("down"), "root");
    const id = pendingEpisode(root);
    // Nothing listens on port 1: every try is refused at once.
    handOff(root, id, { url: "postgres://noema@127.0.0.1:1/noema", from: "NOEMA_STORE" });
    const pid = handedOffTo(root, id);
    assert.ok(pid !== null, "handed to a live process");
    try {
      await until(() => (handoffLogTail(root).match(/trying again in 2 s/g) ?? []).length >= 2, "two tries said");
      assert.match(handoffLogTail(root), /127\.0\.0\.1:1/);
      assert.ok(existsSync(join(root, "state", "publish-pending", id)), "still marked pending");
    } finally {
      try {
        process.kill(pid!, "SIGKILL");
      } catch { /* gone */ }
    }
  });

  test("a log that is a symbolic link is never written through: the sync runs without one", async () => {
    const { dir, root, store, id } = filesStoreWithPending("link");
    const target = join(dir, "elsewhere.txt");
    writeFileSync(target, "");
    symlinkSync(target, join(root, "state", HANDOFF_LOG));
    handOff(root, id, { url: store, from: "NOEMA_STORE" });
    await until(() => !existsSync(join(root, "state", "publish-pending", id)), "the marker to go");
    assert.equal(readFileSync(target, "utf8"), "", "nothing written through the link");
  });

  test("reading the log's tail neither follows a link nor waits on a FIFO planted as the log", () => {
    const dir = dirNamed("tail");
    const root = join(dir, "root");
    mkdirSync(join(root, "state"), { recursive: true });
    const log = join(root, "state", HANDOFF_LOG);
    const target = join(dir, "elsewhere.txt");
    writeFileSync(target, "not the log\n");
    symlinkSync(target, log);
    assert.equal(handoffLogTail(root), "", "a link is not followed");
    rmSync(log);
    // A FIFO with no writer: an open that waited for one would never return (only the runner's bound would end it).
    assert.equal(spawnSync("mkfifo", [log]).status, 0);
    assert.equal(handoffLogTail(root), "", "a FIFO is not read");
    rmSync(log);
    writeFileSync(log, "x".repeat(5000) + "the end\n");
    assert.equal(handoffLogTail(root, 8), "the end\n", "the last bytes of a regular file");
  });
});
