// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
/**
 * The sealing window: the terminal state.json and summary.json are staged;
 * state.json is renamed into place, then its last `run.state_projection` is
 * logged, then manifest.json is staged and summary.json and manifest.json are
 * renamed. A SIGKILL injected before each rename
 * (`NOEMA_TEST_KILL_BEFORE_RENAME`) leaves an episode that `list`, `view` and
 * `summary` call "crashed while sealing", pointing to `noema resume`, which
 * completes the seal into a valid episode. Killed before the state's rename,
 * the episode is valid as it is: no projection describes a state.json that is
 * not in place.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-sealing-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");

describe("a run killed while sealing", () => {
  for (const file of ["summary.json", "state.json", "manifest.json"]) {
    test(`killed before the ${file} rename: readers say "crashed while sealing"; resume completes it`, () => {
      const id = `seal-${file.replace(".json", "")}`;
      const killed = cli(["run", "seal me", "--using", "command", "--root", root, "--episode-id", id, "--", "true"], {
        env: { NOEMA_TEST_KILL_BEFORE_RENAME: file },
      });
      assert.equal(killed.code, null, `killed by the injected SIGKILL: ${killed.stderr}`);
      const dir = join(root, "episodes", id);
      assert.equal(existsSync(join(dir, "manifest.json")), false);
      const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
      // Before the state rename the state is not terminal; after it, it names a manifest that is not there yet.
      assert.equal(typeof state.links.manifest === "string", file !== "state.json");

      const list = cli(["list", "--root", root, "--json"]);
      assert.equal(list.code, 0, list.stderr);
      const entry = JSON.parse(list.stdout).find((e: any) => e.episode_id === id);
      assert.equal(entry.run_state, "crashed_while_sealing", JSON.stringify(entry));
      assert.match(cli(["list", "--root", root]).stdout, new RegExp(`${id}.*crashed while sealing`));
      const only = cli(["list", "--root", root, "--status", "crashed_while_sealing", "--quiet"]);
      assert.equal(only.code, 0, only.stderr);
      assert.ok(only.stdout.split("\n").includes(id), only.stdout);

      const view = cli(["view", id, "--root", root]);
      assert.equal(view.code, 0, view.stderr);
      assert.match(view.stdout, /crashed while sealing/);
      assert.match(view.stdout, new RegExp(`noema resume ${id}`));
      assert.equal(JSON.parse(cli(["view", id, "--root", root, "--json"]).stdout).run_state, "crashed_while_sealing");

      const summary = cli(["summary", id, "--root", root]);
      if (existsSync(join(dir, "summary.json"))) assert.equal(summary.code, 0, summary.stderr);
      else assert.equal(summary.code, 1, summary.stderr);
      assert.match(summary.stderr, new RegExp(`crashed while sealing.*noema resume ${id}`));

      const resumed = cli(["resume", id, "--root", root]);
      assert.equal(resumed.code, 0, resumed.stderr + resumed.stdout);
      assert.equal(existsSync(join(dir, "manifest.json")), true);
      const v = cli(["validate", dir]);
      assert.equal(v.code, 0, v.stdout + v.stderr);
      const after = JSON.parse(cli(["list", "--root", root, "--json"]).stdout).find((e: any) => e.episode_id === id);
      assert.equal(after.run_state, "terminal");
      assert.equal(after.status, "ok");
      assert.equal(cli(["summary", id, "--root", root]).stderr, "");
    });
  }
  test("killed before the state.json rename: the last projection is not written yet, and the episode validates", () => {
    const id = "seal-before-state";
    const killed = cli(["run", "seal me", "--using", "command", "--root", root, "--episode-id", id, "--", "true"], {
      env: { NOEMA_TEST_KILL_BEFORE_RENAME: "state.json" },
    });
    assert.equal(killed.code, null, `killed by the injected SIGKILL: ${killed.stderr}`);
    const dir = join(root, "episodes", id);
    const events = readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.ok(events.some((e: any) => e.phase === "terminate"), "the run ended before it was killed");
    const last = events.findLast((e: any) => e.event_type === "run.state_projection");
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
    assert.deepEqual(last.payload.links, state.links, "the last projection describes the state.json in place");
    assert.equal(last.payload.status, state.outcomes.status);
    const v = cli(["validate", dir]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });
  test("a log whose last write was cut just before its newline: resume ends that line before it appends (none lost)", () => {
    const id = "seal-no-newline";
    const killed = cli(["run", "seal me", "--using", "command", "--root", root, "--episode-id", id, "--", "true"], {
      env: { NOEMA_TEST_KILL_BEFORE_RENAME: "summary.json" },
    });
    assert.equal(killed.code, null, `killed by the injected SIGKILL: ${killed.stderr}`);
    const log = join(root, "episodes", id, "events.jsonl");
    const text = readFileSync(log, "utf8");
    writeFileSync(log, text.slice(0, -1)); // the last line whole, its newline never written
    const lines = text.trim().split("\n").length;
    const resumed = cli(["resume", id, "--root", root]);
    assert.equal(resumed.code, 0, resumed.stderr + resumed.stdout);
    const after = readFileSync(log, "utf8");
    assert.ok(after.startsWith(text), "the old line ended, nothing of it changed");
    const events = after.trim().split("\n").map((l) => JSON.parse(l)); // every line parses: none glued to another
    assert.ok(events.length > lines);
    const v = cli(["validate", join(root, "episodes", id)]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });
  test("killed before the summary.json rename after learning proposed: the sealed summary counts the proposals", () => {
    // Found by an audit: the repair rebuilt the counters from the log without the learn event's, and the summary
    // said 0 proposals against the learn event's 1 (the contract's trace.learn_proposals).
    const id = "seal-learned";
    const task = join(tmp.path, `${id}.json`);
    writeFileSync(
      task,
      JSON.stringify({ task: "deploy", steps: [{ kind: "act", description: "deploy", inputs: {} }] }),
    );
    const gate = join(REPO, "plugins/policies/approval-gate.ts");
    const paused = cli([
      "run",
      task,
      "--root",
      root,
      "--episode-id",
      id,
      "--policy",
      gate,
      "--using",
      "command",
      "--",
      "echo",
      "deploy",
    ]);
    assert.equal(paused.code, 4, paused.stderr);
    const killed = cli(["approve", id, "--root", root, "--resume"], {
      env: { NOEMA_TEST_KILL_BEFORE_RENAME: "summary.json" },
    });
    assert.equal(killed.code, null, `killed by the injected SIGKILL: ${killed.stderr}`);
    const dir = join(root, "episodes", id);
    const learned = readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l))
      .find((e: any) => e.phase === "learn");
    assert.ok(learned.payload.proposal_count > 0, "the run proposed something to learn");
    const resumed = cli(["resume", id, "--root", root]);
    assert.equal(resumed.code, 0, resumed.stderr + resumed.stdout);
    const v = cli(["validate", dir]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
    const summary = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
    assert.equal(summary.metrics.learn_proposals, learned.payload.proposal_count);
  });
  for (const file of ["summary.json", "state.json", "manifest.json"]) {
    test(`a resumed run killed before the ${file} rename: the repaired seal agrees with the resume's plan event`, () => {
      // The resume's plan event (planner:resume) is the latest: the state sealed by the repair must say so.
      const id = `reseal-${file.replace(".json", "")}`;
      const task = join(tmp.path, `${id}.json`);
      writeFileSync(task, JSON.stringify({ task: "review, then seal", steps: ["detect:look", "review:check it"] }));
      assert.equal(cli(["run", task, "--root", root, "--episode-id", id]).code, 4, "paused for approval");
      const approved = cli(["approve", id, "--root", root]);
      assert.equal(approved.code, 0, approved.stderr + approved.stdout);
      const killed = cli(["resume", id, "--root", root], { env: { NOEMA_TEST_KILL_BEFORE_RENAME: file } });
      assert.equal(killed.code, null, `killed by the injected SIGKILL: ${killed.stderr}`);
      const resumed = cli(["resume", id, "--root", root]);
      assert.equal(resumed.code, 0, resumed.stderr + resumed.stdout);
      const v = cli(["validate", join(root, "episodes", id)]);
      assert.equal(v.code, 0, v.stdout + v.stderr);
      const state = JSON.parse(readFileSync(join(root, "episodes", id, "state.json"), "utf8"));
      assert.equal(state.plan.source, "planner:resume");
    });
  }
});
