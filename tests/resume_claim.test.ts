/**
 * A resume right after its run was killed: the run's publishing process (which the episode's pending marker names)
 * may still hold the episode's lease in the shared store while it exits, and in the idle class on a busy machine that
 * may take minutes. `noema resume` waits for that process while it lives, says so once, and resumes when it has gone.
 * Against a real files store, with a real process standing in for the publisher.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { publishingHost } from "../src/shared_store/host.ts";
import { openSharedStore } from "../src/shared_store/open.ts";
import { markHandedOff } from "../src/shared_store/pending.ts";
import { processGone } from "../src/store/lock.ts";
import { runChild } from "./helpers/child.ts";
import { cli, cliCommand } from "./helpers/cli.ts";
import { deployTask, until } from "./helpers/episode_trees.ts";
import { tempDir } from "./helpers/tmp.ts";

test("resume waits for the run's publishing process to let the episode go, says so, then resumes", async () => {
  const t = tempDir("noema-resume-claim-");
  const holder = spawn("sleep", ["600"], { stdio: "ignore" });
  try {
    const id = "ep_claim_wait";
    const env = { NOEMA_STORE: pathToFileURL(join(t.path, "store")).href };
    const ran = join(t.path, "ran");
    assert.equal(cli(["store", "init", "--store", env.NOEMA_STORE]).code, 0);
    const paused = cli(["--root", t.path, "run", deployTask(t.path, ran), "--episode-id", id, "--json"], {
      env,
      cwd: t.path,
    });
    assert.equal(paused.code, 4, paused.stderr);
    const marker = join(t.path, "state", "publish-pending", id);
    assert.ok(await until(() => !existsSync(marker)), "the paused run is published");
    const approved = cli(["--root", t.path, "approve", id, "--by", "ana"], { env });
    assert.equal(approved.code, 0, approved.stderr);

    // The run's publishing process, still exiting: the marker names it, and it holds the lease.
    const pid = holder.pid!;
    markHandedOff(t.path, id, pid);
    const store = await openSharedStore(env.NOEMA_STORE);
    try {
      await store.acquireLease(id, { host: publishingHost(), pid }, { ownerGone: (p) => processGone(p) });
    } finally {
      await store.close();
    }

    let stderr = "";
    const [cmd, ...args] = cliCommand();
    const resumed = runChild(cmd, [...args, "--root", t.path, "resume", id, "--json"], {
      env: { ...process.env, ...env },
      cwd: t.path,
      timeoutMs: 300_000,
      onStderr: (c) => stderr += c,
    });
    let ended = false;
    void resumed.then(() => ended = true);
    // Bounds for hangs only. Before the wait, the resume was refused (exit 10) after 30 s, saying nothing meanwhile.
    assert.ok(await until(() => ended || /waiting for it/.test(stderr), 120_000), "the resume says it waits");
    assert.equal(ended, false, `the resume waits: ${stderr}`);
    assert.match(
      stderr,
      new RegExp(`${id} is held by the process publishing its last run \\(pid ${pid}, this host\\)`),
    );
    assert.equal(existsSync(ran), false, "nothing ran while it waited");
    holder.kill("SIGKILL");
    const r = await resumed;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).status, "ok", r.stdout);
    assert.equal(readFileSync(ran, "utf8"), "deployed\n", "the approved step ran once");
    assert.equal(stderr.match(/waiting for it/g)?.length, 1, `said once: ${stderr}`);
  } finally {
    holder.kill("SIGKILL");
    t.cleanup();
  }
});
