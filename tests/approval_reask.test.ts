/**
 * A step asked again after its decision (its approved action was interrupted by a crash: resume runs it again, and
 * the policy asks again) waits on a new checkpoint with no decision: `noema view` shows the first ask with its
 * decision and the new one as undecided, never the old decision as the answer to the new ask.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { EXIT } from "noema";
import { StepDecisions } from "../src/read/step_decisions.ts";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-reask-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");

test("a decision answers its own checkpoint: a step's latest checkpoint, undecided, has none", () => {
  const d = new StepDecisions();
  const checkpoint = (id: string) => ({
    phase: "runtime",
    event_type: "run.checkpoint",
    payload: { checkpoint_id: id, pending: { step_id: "step-1" } },
  });
  d.add(checkpoint("chk_1"));
  d.add({
    phase: "runtime",
    event_type: "run.resume",
    payload: { checkpoint_id: "chk_1", approval: { decision: "approved", by: "ana", note: "ok" } },
  });
  assert.equal(d.of("step-1")?.by, "ana");
  d.add(checkpoint("chk_2"));
  assert.equal(d.of("step-1"), undefined, "the step waits again: the decision on chk_1 does not answer chk_2");
  assert.equal(d.onCheckpoint("chk_1")?.decision, "approved");
  assert.deepEqual(d.all().map((x) => x.checkpoint_id), ["chk_1"]);
});

test("noema view of a step asked again after a crash (real processes, a real SIGKILL)", {
  skip: process.platform !== "linux",
  timeout: 180_000,
}, async () => {
  // Found by an audit: the view of such a run said "ask: approved … approved by root (ok)" for the new, undecided
  // ask and "approved by root (ok)" on the waiting step.
  const ran = join(tmp.path, "ran.log");
  const task = join(tmp.path, "deploy.jsonc");
  writeFileSync(
    task,
    JSON.stringify({
      task: "deploy held",
      using: "shell",
      policies: [join(REPO, "plugins", "policies", "approval-gate.ts")],
      steps: [{ kind: "act", description: "Deploy it", inputs: { command: `echo deploy >> '${ran}'; sleep 60` } }],
    }),
  );
  const paused = cli(["--root", root, "run", task, "--workspace", tmp.path, "-q"]);
  assert.equal(paused.code, EXIT.PAUSED, paused.stderr);
  const id = paused.stdout.trim();
  const approved = cli(["--root", root, "approve", id, "--note", "ok"]);
  assert.equal(approved.code, 0, approved.stderr);
  // The approved action starts; noema is killed while it runs.
  const [cmd, ...args] = cliCommand();
  const child = spawn(cmd, [...args, "--root", root, "resume", id], { cwd: REPO, stdio: "ignore" });
  const exited = new Promise((done) => child.on("exit", done));
  for (let waited = 0; !(existsSync(ran) && readFileSync(ran, "utf8") !== "") && waited < 120_000; waited += 50) {
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(existsSync(ran), "the approved action started");
  child.kill("SIGKILL");
  await exited;
  // Recovery runs the step again through the policy, which asks again: a new checkpoint, no decision on it.
  const again = cli(["--root", root, "resume", id]);
  assert.equal(again.code, EXIT.PAUSED, again.stderr + again.stdout);
  const view = JSON.parse(cli(["--root", root, "view", id, "--json"]).stdout);
  const asks = view.verdicts.filter((x: { phase: string; decision: string }) =>
    x.phase === "governance" && x.decision === "veto"
  );
  assert.equal(asks.length, 2);
  assert.notEqual(asks[0].checkpoint_id, null);
  assert.equal(asks[1].checkpoint_id, view.waiting.checkpoint_id);
  assert.deepEqual(view.decisions.map((d: { checkpoint_id: string }) => d.checkpoint_id), [asks[0].checkpoint_id]);
  const text = cli(["--root", root, "view", id]).stdout;
  assert.equal(text.match(/ask: approved/g)?.length, 1, text);
  const stepLine = text.split("\n").find((l) => /step-1 +act +pending/.test(l));
  assert.ok(
    stepLine !== undefined && !/approved by/.test(stepLine),
    `the waiting step claims no decision: ${stepLine}`,
  );
  // End the run so nothing of it is left waiting.
  cli(["--root", root, "resume", id, "--abort"]);
  assert.ok(existsSync(join(root, "episodes", id, "manifest.json")), "the run ended, sealed");
});
