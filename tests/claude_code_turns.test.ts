// The real Claude Code (node_modules/.bin/claude) governed by noema, offline against a scripted Anthropic
// Messages server on 127.0.0.1: its final answer as run / view / report show it, a turn whose calls surround one
// that needs approval, reject --resume's record, and an interrupt while a call runs.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import process from "node:process";
import { assertSound, bash, type ClaudeSession, claudeSessions, noemaCli } from "./helpers/claude_session.ts";
import { tempDir } from "./helpers/tmp.ts";
import { writeAgentPolicies } from "./helpers/policies.ts";
import { acts, events } from "./helpers/agent_episode.ts";

const tmp = tempDir("noema-claude-turns-");
after(() => tmp.cleanup());
const policyDir = writeAgentPolicies(join(tmp.path, "policies"));
const gate = ["--policy", join(policyDir, "gate.ts")];
/** Asks a human about any call whose input mentions "secret". */
const secretGate = join(policyDir, "secret-gate.ts");
writeFileSync(
  secretGate,
  `export default { name: "SecretGate", version: "1.0", api: "1.0", advise(s) {
    return JSON.stringify(s.action.input).includes("secret")
      ? { kind: "veto", advice: "secrets need a human", requires_approval: true } : undefined; } };`,
);

const session = claudeSessions(tmp.path);
type Session = ClaudeSession;

const lastJson = (text: string) => JSON.parse(text.trim().split("\n").pop()!);
const planStatuses = (dir: string) =>
  JSON.parse(readFileSync(join(dir, "state.json"), "utf8")).plan.steps.map((s: { status: string }) => s.status);
const exists = (s: Session, file: string) => existsSync(join(s.box.workspace, file));

/** Real processes on a machine that may be loaded: far more than they need, far less than forever. */
const TIMEOUT_MS = 90_000;

/** Whether no process runs a command line holding `pattern`, waiting for it up to 60 s (a bound for hangs only). */
async function gone(pattern: string): Promise<boolean> {
  for (const t0 = Date.now(); Date.now() - t0 < 60_000; await new Promise((r) => setTimeout(r, 100))) {
    if (spawnSync("pgrep", ["-f", pattern]).status === 1) return true;
  }
  return false;
}

describe("noema run --using claude-code: answers, turns, approvals, interrupts (real Claude Code)", () => {
  test("claude's final answer is the run's answer: run --json and text, view and report show it", {
    timeout: TIMEOUT_MS,
  }, async () => {
    const s = await session([{ text: "The answer is 42." }, { text: "Still 42." }]);
    try {
      const r = await s.run("what is the answer", ["--json"]);
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.equal(out.answer, "The answer is 42.");
      const text = await s.run("again");
      assert.equal(text.code, 0, text.stderr);
      assert.match(text.stdout, /^ {2}Still 42\.$/m);
      const view = await s.cmd(["view", out.episode_id, "--json"]);
      assert.equal(JSON.parse(view.stdout).answer, "The answer is 42.");
      const page = join(s.box.workspace, "page.html");
      const report = await s.cmd(["report", out.episode_id, "--output", page]);
      assert.equal(report.code, 0, report.stderr);
      assert.match(readFileSync(page, "utf8"), /<h3>Answer<\/h3>[\s\S]*The answer is 42\./);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("a turn's calls around one that needs approval: the later one is held back with a reason; approve --resume", {
    timeout: TIMEOUT_MS,
  }, async () => {
    const s = await session([
      {
        tools: [
          bash("toolu_m1", "echo one > one.txt"),
          bash("toolu_m2", "echo deployed > deploy.txt"),
          bash("toolu_m3", "echo three > three.txt"),
        ],
      },
      { tools: [bash("toolu_m4", "echo three > three.txt")] },
      { text: "All three done." },
    ]);
    try {
      const r = await s.run("three things", [...gate, "--json"]);
      assert.equal(r.code, 4, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.equal(out.pending.step_id, "step-2");
      assert.deepEqual([exists(s, "one.txt"), exists(s, "deploy.txt"), exists(s, "three.txt")], [true, false, false]);
      const paused = events(out.episode_dir);
      assert.equal(paused.at(-1).event_type, "run.checkpoint", "the checkpoint is the last event while paused");
      const approved = await s.cmd(["approve", out.episode_id, "--resume", "--json"]);
      assert.equal(approved.code, 0, approved.stderr);
      assert.equal(lastJson(approved.stdout).status, "ok");
      assert.deepEqual([exists(s, "deploy.txt"), exists(s, "three.txt")], [true, true]);
      const held = s.server.toolResults().get("toolu_m3");
      assert.ok(held?.is_error, "the held-back call did not run");
      assert.match(held!.content, /not run: the episode is waiting for a human to approve Bash \(step-2\)/);
      assert.doesNotMatch(held!.content, /hook error: \[|paused, waiting for approval/);
      const done = acts(out.episode_dir).map((a) => [a.payload.input.command, a.payload.step_status]);
      assert.deepEqual(done, [
        ["echo one > one.txt", "done"],
        ["echo deployed > deploy.txt", "done"],
        ["echo three > three.txt", "done"],
      ]);
      assert.deepEqual(planStatuses(out.episode_dir), ["done", "done", "done"]);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("reject --resume: the call ends vetoed, run.resume records who decided, the approval is consumed", {
    timeout: TIMEOUT_MS,
  }, async () => {
    const s = await session([{ tools: [bash("toolu_r1", "echo deployed > deploy.txt")] }, { text: "Not deployed." }]);
    try {
      const r = await s.run("deploy", [...gate, "--json"]);
      assert.equal(r.code, 4, r.stderr);
      const out = JSON.parse(r.stdout);
      const rejected = await s.cmd(["reject", out.episode_id, "--resume", "--note", "not during the freeze", "--json"]);
      assert.equal(rejected.code, 0, rejected.stderr);
      assert.equal(lastJson(rejected.stdout).answer, "Not deployed.");
      assert.equal(exists(s, "deploy.txt"), false);
      assert.match(s.server.toolResults().get("toolu_r1")?.content ?? "", /Rejected by .+: not during the freeze/);
      const log = events(out.episode_dir);
      const resume = log.find((e) => e.event_type === "run.resume");
      assert.equal(resume?.payload.approval.decision, "rejected");
      assert.equal(resume.payload.approval.note, "not during the freeze");
      assert.notEqual(resume.payload.approval.by, "unknown");
      const [act] = acts(out.episode_dir);
      assert.equal(act.payload.step_status, "vetoed");
      assert.deepEqual(planStatuses(out.episode_dir), ["vetoed"]);
      const approvalFile = join(out.episode_dir, "approvals", `${out.checkpoint_id}.json`);
      assert.equal(JSON.parse(readFileSync(approvalFile, "utf8")).consumed_by, resume.id);
      const view = await s.cmd(["view", out.episode_id]);
      assert.match(view.stdout, /Rejected by \S+: not during the freeze/);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("parallel calls (Read) of a turn, one needs approval: the episode pauses after those that ran; approve works", {
    timeout: TIMEOUT_MS,
  }, async () => {
    // Claude Code runs Read calls concurrently: each one's hooks may come before or after the deferred one's.
    for (let round = 0; round < 3; round++) {
      const read = (ws: string, id: string, f: string) => ({ id, name: "Read", input: { file_path: join(ws, f) } });
      const t = await session((ws) => [
        {
          tools: [
            read(ws, `toolu_q${round}a`, "a.txt"),
            read(ws, `toolu_q${round}s`, "secret.txt"),
            read(ws, `toolu_q${round}c`, "c.txt"),
          ],
        },
        { text: "Read them." },
      ]);
      try {
        for (const f of ["a.txt", "secret.txt", "c.txt"]) writeFileSync(join(t.box.workspace, f), `${f} content\n`);
        const task = "read the three files";
        const r = await t.run(task, ["--policy", secretGate, "--json"]);
        assert.equal(r.code, 4, r.stderr + r.stdout);
        const out = JSON.parse(r.stdout);
        assert.equal(events(out.episode_dir).at(-1).event_type, "run.checkpoint", "the checkpoint is the last event");
        const approved = await t.cmd(["approve", out.episode_id, "--resume", "--json"]);
        assert.equal(approved.code, 0, approved.stderr);
        const results = t.server.toolResults();
        assert.match(results.get(`toolu_q${round}s`)?.content ?? "", /secret\.txt content/);
        const ran = acts(out.episode_dir).filter((a) => a.payload.result_status === "ok").map((a) => a.payload.input);
        for (const id of ["a", "c"]) {
          const result = results.get(`toolu_q${round}${id}`)!;
          const recorded = ran.some((input) => String(input.file_path).endsWith(`${id}.txt`));
          // Each other call either ran before the pause (and is recorded) or was held back (and said so).
          if (result.is_error) assert.match(result.content, /not run: the episode is waiting for a human/);
          assert.equal(recorded, !result.is_error, `${id}.txt: recorded exactly when it ran`);
        }
        await assertSound(t, out.episode_dir);
      } finally {
        await t.server.close();
      }
    }
  });

  test("interactive (a hook without --print): a call claude asks its user about does not stop the session", {
    timeout: TIMEOUT_MS,
  }, async () => {
    const s = await session([]);
    try {
      // What an interactive claude sends: its user answers the `ask` in claude's own prompt, so noema must not wait.
      const hook = async (payload: Record<string, unknown>) => {
        const event = { session_id: "sess-1", cwd: s.box.workspace, ...payload };
        const args = ["hook", "claude-code", "--root", s.box.root, ...gate];
        const r = await noemaCli(args, { ...s.env, NOEMA_HOOK_SERVER: "0" }, s.box.workspace, {
          input: JSON.stringify(event),
        });
        assert.equal(r.code, 0, r.stderr);
        return r.stdout.trim() === "" ? null : JSON.parse(r.stdout).hookSpecificOutput;
      };
      const tool = (name: string, id: string, command: string, extra = {}) => ({
        hook_event_name: name,
        tool_name: "Bash",
        tool_input: { command },
        tool_use_id: id,
        ...extra,
      });
      await hook({ hook_event_name: "UserPromptSubmit", prompt: "deploy, then list" });
      assert.equal((await hook(tool("PreToolUse", "toolu_i1", "echo deploy")))?.permissionDecision, "ask");
      await hook(tool("PostToolUse", "toolu_i1", "echo deploy", { tool_response: "deploy" })); // the user said yes
      assert.equal(await hook(tool("PreToolUse", "toolu_i2", "ls")), null, "the next call is governed as usual");
      await hook(tool("PostToolUse", "toolu_i2", "ls", { tool_response: "a.txt" }));
      await hook({ hook_event_name: "Stop", last_assistant_message: "Deployed and listed." });
      const [entry] = readdirSync(join(s.box.root, "episodes"));
      const dir = join(s.box.root, "episodes", entry);
      assert.ok(!events(dir).some((e) => e.event_type === "run.checkpoint"), "no checkpoint nobody would decide");
      assert.deepEqual(acts(dir).map((a) => [a.payload.input.command, a.payload.result_status]), [
        ["echo deploy", "ok"],
        ["ls", "ok"],
      ]);
      await assertSound(s, dir);
    } finally {
      await s.server.close();
    }
  });

  test("SIGTERM while a call runs: exit 130, the call is stopped and recorded as failed, the episode complete", {
    timeout: TIMEOUT_MS,
  }, async () => {
    // A sleep no other test runs (its command line is looked for below), far longer than the test waits.
    const slow = "touch started.txt; perl -e 'select(undef, undef, undef, 240.5)'; echo late > late.txt";
    const s = await session([{ tools: [bash("toolu_s1", slow)] }, { text: "Slept." }]);
    try {
      let pid = 0;
      const t0 = Date.now();
      const done = s.run("wait a while", ["--json"], (p) => (pid = p));
      // The command is running once it has touched started.txt.
      while (!exists(s, "started.txt")) {
        if (Date.now() - t0 > 30_000) assert.fail("the call never started");
        await new Promise((r) => setTimeout(r, 50));
      }
      process.kill(pid, "SIGTERM");
      const r = await done;
      assert.equal(r.code, 130, r.stderr + r.stdout);
      // The call was stopped, not waited for (it would have written late.txt) nor left running (an orphan sleeping on).
      assert.equal(exists(s, "late.txt"), false);
      assert.ok(await gone("undef, 240.5)"), "the interrupted command's process is gone");
      const out = JSON.parse(r.stdout);
      assert.equal(out.error.type, "Aborted");
      const [act, ...more] = acts(out.episode_dir);
      assert.equal(more.length, 0);
      assert.equal(act?.payload.result_status, "error", "the interrupted call is recorded, as failed");
      assert.equal(act.payload.step_status, "failed");
      assert.equal(act.payload.error.type, "Aborted");
      assert.deepEqual(planStatuses(out.episode_dir), ["failed"]);
      assert.ok(existsSync(join(out.episode_dir, "manifest.json")));
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(exists(s, "late.txt"), false);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });
});
