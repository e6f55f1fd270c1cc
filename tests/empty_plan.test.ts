// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
/**
 * An empty plan (a task file whose `steps` is `[]`) tells one story in every
 * artifact: the run succeeded at nothing. `state.json` says `ok` with no
 * error, `summary.json` says `adapter_result: "skipped"` (the adapter never
 * ran), `outcome: "success_unverified"` and `metrics.success: 1`, the
 * `terminate` event agrees, `--json` and the exit code (0) too, and the
 * episode validates. With assertions, the verification decides, as for any
 * run: a failed one makes every artifact say error.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-empty-plan-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const task = tmp.file("empty.json", JSON.stringify({ task: "nothing to do", steps: [] }));

function artifacts(id: string) {
  const dir = join(root, "episodes", id);
  const read = (f: string) => JSON.parse(readFileSync(join(dir, f), "utf8"));
  const events = readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  return { dir, state: read("state.json"), summary: read("summary.json"), events };
}

test("an empty plan succeeds: state, summary, terminate event, --json and exit code agree", () => {
  const r = cli(["run", task, "--root", root, "--episode-id", "empty", "--json"]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const out = JSON.parse(r.stdout);
  assert.equal(out.status, "ok");
  assert.equal(out.outcome, "success_unverified");
  assert.equal(out.error, null);
  assert.equal(out.message, "The plan has no steps: nothing to do.");

  const { dir, state, summary, events } = artifacts("empty");
  assert.equal(state.outcomes.status, "ok");
  assert.equal(state.outcomes.error, null);
  assert.deepEqual(state.plan.steps, []);
  assert.equal(summary.adapter_result, "skipped", "the adapter never ran");
  assert.equal(summary.outcome, "success_unverified");
  assert.equal(summary.metrics.success, 1);
  const terminate = events.find((e: any) => e.phase === "terminate");
  assert.equal(terminate.payload.status, "ok");
  assert.equal(terminate.payload.outcome, "success_unverified");
  const reflect = events.find((e: any) => e.phase === "reflect");
  assert.equal(reflect.payload.success, true);
  const v = cli(["validate", dir]);
  assert.equal(v.code, 0, v.stdout + v.stderr);
});

test("an empty plan whose assertion fails is an error in every artifact", () => {
  const r = cli([
    "run",
    task,
    "--root",
    root,
    "--episode-id",
    "empty-verified",
    "--workspace",
    tmp.path,
    "--verify-file-exists",
    "absent.txt",
  ]);
  assert.equal(r.code, 1, r.stderr + r.stdout);
  const { dir, state, summary } = artifacts("empty-verified");
  assert.equal(state.outcomes.status, "error");
  assert.equal(state.outcomes.error.type, "VerificationFailed");
  assert.equal(summary.outcome, "goal_not_achieved");
  assert.equal(summary.metrics.success, 0);
  const v = cli(["validate", dir]);
  assert.equal(v.code, 0, v.stdout + v.stderr);
});
