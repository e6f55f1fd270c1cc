// The decider an approval names (`by`, `authenticated_as: "os_user"`) is the OS account running noema, as the
// system knows it: the environment cannot choose it.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { type AdapterPlugin, EXIT, run, type RunOptions } from "noema";
import { tempDir } from "./helpers/tmp.ts";
import { cli, REPO } from "./helpers/cli.ts";
import { osUserName } from "../src/runtime/os_user.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const json = (dir: string, name: string) => JSON.parse(readFileSync(join(dir, name), "utf8"));
const recording: AdapterPlugin = { name: "recording", create: () => ({ act: () => ({ status: "ok" }) }) };
/** Characters that must never reach a terminal raw from a recorded value: ESC, BEL, a bidi override. */
const RAW = "\x1b\x07\u202e";
const reviewPlan: RunOptions["steps"] = [
  { kind: "review", description: "a human checks the change", inputs: { change: "rename" } },
  { kind: "act", description: "apply", inputs: { command: "apply" } },
];

test("the OS user a decision names is the system's, never $USER's (real CLI child)", async () => {
  // Found by an audit: under Bun (the shipped binary's runtime), os.userInfo() gives $USER, so
  // `USER=ana noema approve` recorded by: "ana", authenticated_as: "os_user", whoever ran it.
  const r = await run("change with review", { root, using: recording, steps: reviewPlan });
  assert.equal(r.exit_code, EXIT.PAUSED);
  const forged = "mallory-not-an-account";
  const out = cli(["--root", root, "approve", r.episode_id, "--json"], {
    env: { USER: forged, LOGNAME: forged, USERNAME: forged },
  });
  assert.equal(out.code, 0, out.stderr);
  const record = json(r.episode_dir, `approvals/${r.checkpoint_id}.json`);
  assert.equal(record.authenticated_as, "os_user");
  assert.notEqual(record.by, forged);
  assert.equal(record.by, osUserName());
  const saved = process.env.USER;
  process.env.USER = forged;
  try {
    assert.notEqual(osUserName(), forged);
  } finally {
    if (saved === undefined) delete process.env.USER;
    else process.env.USER = saved;
  }
});

test("a claimed name with control characters and a newline reaches no terminal as such (real CLI children)", async () => {
  // Found by an audit: `noema reject --by $'ev\e]0;x\a\e[31mil\nnoema: approved by root'` made the next decider's
  // `noema approve` print the escapes raw (retitling and recolouring their terminal) and a forged line of noema's
  // own ("noema: approved by root") under its "already rejected" error.
  const r = await run("change with review", { root, using: recording, steps: reviewPlan });
  assert.equal(r.exit_code, EXIT.PAUSED);
  const hostile = "ev\x1b]0;x\x07\x1b[31mil\u202e\nnoema: approved by root";
  const first = cli(["--root", root, "reject", r.episode_id, "--by", hostile]);
  assert.equal(first.code, 0, first.stderr);
  assert.ok(
    ![...RAW].some((ch) => first.stdout.includes(ch)),
    `the decider's own echo is neutralized: ${first.stdout}`,
  );
  assert.equal(first.stdout.trimEnd().split("\n").length, 1, first.stdout);
  const second = cli(["--root", root, "approve", r.episode_id]);
  assert.equal(second.code, EXIT.CONSUMED, second.stderr);
  assert.ok(
    ![...RAW].some((ch) => second.stderr.includes(ch)),
    `no raw escape reaches the next decider: ${second.stderr}`,
  );
  assert.deepEqual(second.stderr.trimEnd().split("\n").length, 1, `one line, no forged one: ${second.stderr}`);
  assert.match(second.stderr, /^noema: checkpoint chk_\w+ was already rejected by \S+ \(claimed: ev\\x1b\]0;x\\x07/);
});

test("a rejection's note prints as one line where the run's result is shown: it cannot forge a line of noema's", () => {
  // Found by an audit: `noema reject <ep> --note $'no\nnoema: approved by root'` then `noema resume` printed the
  // note's second line as a line of its own, under the run's result.
  // A policy's ask (the approval gate), as a user runs it: the result names the rejection.
  const task = join(tmp.path, "deploy.jsonc");
  writeFileSync(
    task,
    JSON.stringify({
      task: "deploy held",
      using: "shell",
      policies: [join(REPO, "plugins", "policies", "approval-gate.ts")],
      steps: [{ kind: "act", description: "Deploy it", inputs: { command: "echo deploy" } }],
    }),
  );
  const paused = cli(["--root", root, "run", task, "--workspace", tmp.path, "-q"]);
  assert.equal(paused.code, EXIT.PAUSED, paused.stderr);
  const r = { episode_id: paused.stdout.trim() };
  const decided = cli(["--root", root, "reject", r.episode_id, "--note", "no\nnoema: approved by root"]);
  assert.equal(decided.code, 0, decided.stderr);
  const resumed = cli(["--root", root, "resume", r.episode_id]);
  assert.equal(resumed.code, EXIT.VETOED, resumed.stderr);
  const lines = `${resumed.stdout}\n${resumed.stderr}`.split("\n");
  assert.ok(!lines.some((l) => l.startsWith("noema: approved")), `${resumed.stdout}${resumed.stderr}`);
  assert.ok(lines.some((l) => /rejected by \S+: no noema: approved by root$/.test(l)), resumed.stdout);
});
