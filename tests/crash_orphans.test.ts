// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
/**
 * An action's program never outlives noema unsupervised: a `command` run
 * whose program appends its pid to a file every 250 ms is SIGKILLed (noema
 * alone); the program must die with it, or, when it escaped its supervisor,
 * `resume` must stop it before running the step again. Either way the file
 * never holds lines of two copies at once.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { runProcess, validate } from "../mod.ts";
import { orphanTrial } from "./helpers/crash.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-orphans-");
after(() => tmp.cleanup());

function events(episode: string): Record<string, any>[] {
  return readFileSync(join(episode, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

describe("a killed run's program", { skip: process.platform !== "linux" }, () => {
  test("dies with noema; resume records the interrupted attempt and runs the step again", {
    timeout: 120_000,
  }, async () => {
    const t = await orphanTrial(tmp.path, "dies");
    assert.notEqual(t.pgid, null, "the action.process event records the process group before the program runs");
    assert.equal(t.orphansAfterKill, 0, "no process of the action outlives noema");
    assert.equal(t.interleaved, false, `two copies wrote at once: ${t.pids.join(" ")}`);
    assert.equal(t.status, "ok");
    assert.equal(new Set(t.pids).size, 2, "the step ran again after the crash (at-least-once)");
    const ev = events(t.episode);
    const acts = ev.filter((e) => e.phase === "act" && e.payload.step_id === "step-2");
    assert.deepEqual(acts.map((e) => e.payload.outcome), ["interrupted", "exit 0"]);
    assert.equal(acts[0].payload.error.type, "Interrupted");
    assert.equal(acts[0].payload.step_status, "failed");
    assert.equal(ev.filter((e) => e.event_type === "action.process_stopped").length, 0, "nothing was left to stop");
    assert.equal(validate(t.episode).valid, true, JSON.stringify(validate(t.episode).problems));
  });

  test("that escaped its supervisor is stopped by resume (TERM, recorded) before the step runs again", {
    timeout: 120_000,
  }, async () => {
    const t = await orphanTrial(tmp.path, "escaped", { escape: true });
    assert.ok(t.orphansAfterKill > 0, "the escaped program outlived noema (the situation under test)");
    assert.equal(t.orphansAfterResume, 0);
    assert.equal(t.interleaved, false, `two copies wrote at once: ${t.pids.join(" ")}`);
    assert.equal(t.status, "ok");
    const ev = events(t.episode);
    const stopped = ev.filter((e) => e.event_type === "action.process_stopped");
    assert.equal(stopped.length, 1);
    assert.equal(stopped[0].payload.pgid, t.pgid);
    assert.equal(stopped[0].payload.status, "stopped");
    assert.equal(stopped[0].payload.signals[0], "SIGTERM");
    assert.equal(validate(t.episode).valid, true, JSON.stringify(validate(t.episode).problems));
  });

  test("with --no-retry (retry: false), the interrupted step fails and the run ends error", {
    timeout: 120_000,
  }, async () => {
    const t = await orphanTrial(tmp.path, "noretry", { escape: true, retry: false });
    assert.equal(t.orphansAfterResume, 0);
    assert.equal(t.status, "error");
    assert.equal(new Set(t.pids).size, 1, "the program did not run again");
    const state = JSON.parse(readFileSync(join(t.episode, "state.json"), "utf8"));
    assert.equal(state.outcomes.error.type, "Interrupted");
    assert.equal(state.plan.steps.find((s: { id: string }) => s.id === "step-2").status, "failed");
    assert.equal(validate(t.episode).valid, true, JSON.stringify(validate(t.episode).problems));
  });
});

describe("a program that leaves a process behind holding its output", { skip: process.platform !== "linux" }, () => {
  const pids: string[] = [];
  after(() => {
    for (const pid of pids) {
      try {
        process.kill(Number(pid), "SIGKILL");
      } catch { /* gone */ }
    }
  });

  test(
    "ends when the program ends: its result and output are kept, the pipes let go",
    { timeout: 120_000 },
    async () => {
      // Found by a break-it run: `setsid daemon &` (out of the program's group, so no signal of ours reaches it) kept
      // stdout open, and the run never ended, not on its timeout, not on SIGTERM.
      const dir = tmp.path;
      const pidFile = join(dir, "daemon.pid");
      const r = await runProcess({
        shell: `setsid sh -c 'echo $$ > ${pidFile}; exec sleep 300' & echo forked; exit 3`,
        cwd: dir,
        timeoutMs: 600_000, // the bound is the test's: what ends it is the program's own end
      });
      pids.push(readFileSync(pidFile, "utf8").trim());
      assert.equal(r.exit_code, 3);
      assert.equal(r.timed_out, false);
      assert.match(r.stdout, /forked/);
    },
  );
});
