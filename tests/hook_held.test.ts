/**
 * A hook session whose episode paused for a call (Claude Code's `defer`,
 * `--print`; or a `--wait` whose waiting hook is gone) never stays held
 * back for good: the agent goes on, and what it does ends the pause. The
 * held call's own result (its user let it run) is recorded; a decision made
 * with `noema approve|reject` while no hook waits is applied at the next
 * call; another call's result (a call run beside it) is recorded between a
 * `run.resume` and a new checkpoint, so the held call still waits to be
 * decided; the session's end records the held call as not run. Each episode validates under the `noema` profile,
 * strictly: before, a result recorded while paused was left out of
 * `state.json` (an invalid episode), and every later call was refused
 * "waiting for a human…" with no way to decide it.
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { describe, test } from "node:test";
import { runChild } from "./helpers/child.ts";
import { cli, hookCommand, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const GATE = join(REPO, "plugins/policies/approval-gate.ts");
const [NOEMA, ...PRE] = hookCommand();

type Event = Record<string, unknown>;

/** A Claude Code session's hook calls, each a process of its own, in a project of its own. */
function session(dir: string) {
  const root = join(dir, ".noema");
  const env = { ...process.env, NOEMA_HOOK_SERVER: "0", NOEMA_STORE: undefined, NO_COLOR: "1" };
  /** One hook call; `crashAt` kills the hook at that point (`NOEMA_HOOK_CRASH_AT`), as the agent's timeout would. */
  const call = async (payload: Event, crashAt?: string) => {
    const r = await runChild(NOEMA, [...PRE, "hook", "claude-code", "--root", root, "--policy", GATE, "--print"], {
      cwd: dir,
      input: JSON.stringify({ session_id: "s-held", cwd: dir, ...payload }),
      env: crashAt ? { ...env, NOEMA_HOOK_CRASH_AT: crashAt } : env,
      timeoutMs: 120_000,
    });
    if (crashAt) {
      assert.notEqual(r.code, 0, "killed at " + crashAt);
      return {};
    }
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim() === "" ? {} : JSON.parse(r.stdout).hookSpecificOutput ?? {};
  };
  const bash = (kind: string, id: string, command: string, extra: Event = {}) =>
    call({ hook_event_name: kind, tool_name: "Bash", tool_input: { command }, tool_use_id: id, ...extra });
  const ran = (id: string, command: string, stdout: string, crashAt?: string) =>
    call({
      hook_event_name: "PostToolUse",
      tool_name: "Bash",
      tool_input: { command },
      tool_use_id: id,
      tool_response: { stdout },
    }, crashAt);
  const noema = (...args: string[]) => cli(["--root", root, ...args], { env: { NOEMA_STORE: undefined } });
  /** The episode's events, as `[phase or event_type, step_id, the rest]`. */
  const events = () => {
    const [id] = readdirSync(join(root, "episodes"));
    return readFileSync(join(root, "episodes", id, "events.jsonl"), "utf8").trim().split("\n").map((l) => {
      const e = JSON.parse(l);
      return { kind: e.event_type ?? e.phase, step: e.payload.step_id, payload: e.payload };
    });
  };
  return { call, bash, ran, noema, events };
}

/**
 * The session's first prompt and its held call: `./deploy.sh`, deferred (the episode paused at a checkpoint); `before`
 * runs first (calls let through beside it).
 */
async function held(dir: string, before: (s: ReturnType<typeof session>) => Promise<unknown> = async () => {}) {
  const s = session(dir);
  await s.call({ hook_event_name: "UserPromptSubmit", prompt: "build and deploy" });
  await before(s);
  const asked = await s.bash("PreToolUse", "t1", "./deploy.sh");
  assert.equal(asked.permissionDecision, "defer");
  assert.ok(s.events().some((e) => e.kind === "run.checkpoint"));
  return s;
}

/** Validates the ended session's episode strictly (noema profile) and returns `state.json`'s actions by step. */
function validated(s: ReturnType<typeof session>) {
  const v = s.noema("validate", "last", "--profile", "noema", "--strict");
  assert.equal(v.code, 0, v.stdout + v.stderr);
  const state = JSON.parse(s.noema("state", "last").stdout);
  return new Map((state.outcomes.actions as { step_id: string; result_status: string }[]).map((a) => [a.step_id, a]));
}

describe("a hook session held for a call goes on once the agent does", () => {
  test("the held call's own result (its user let it run) ends the pause; it and the next calls are recorded", async () => {
    const dir = tempDir();
    try {
      const s = await held(dir.path);
      await s.ran("t1", "./deploy.sh", "deployed");
      const next = await s.bash("PreToolUse", "t2", "echo next");
      assert.notEqual(next.permissionDecision, "deny", "the next call is governed, not held back");
      await s.ran("t2", "echo next", "next");
      await s.call({ hook_event_name: "Stop" });
      const kinds = s.events().map((e) => e.kind);
      const resume = s.events().find((e) => e.kind === "run.resume")!;
      assert.equal(resume.payload.approval, null);
      assert.match(resume.payload.reason, /reported the call's result while it waited/);
      assert.ok(kinds.indexOf("run.resume") < kinds.indexOf("act"), "the pause ends before the result is recorded");
      const actions = validated(s);
      assert.equal(actions.get("step-1")?.result_status, "ok");
      assert.equal(actions.get("step-2")?.result_status, "ok");
    } finally {
      dir.cleanup();
    }
  });

  for (const decision of ["approve", "reject"] as const) {
    test(`${decision === "approve" ? "approved" : "rejected"} while no hook waits: applied at the agent's next call, which is governed`, async () => {
      const dir = tempDir();
      try {
        const s = await held(dir.path);
        const d = s.noema(decision, "last", "--note", "seen");
        assert.equal(d.code, 0, d.stderr);
        const next = await s.bash("PreToolUse", "t2", "echo next");
        assert.notEqual(next.permissionDecision, "deny", JSON.stringify(next));
        await s.ran("t2", "echo next", "next");
        await s.call({ hook_event_name: "Stop" });
        const resume = s.events().find((e) => e.kind === "run.resume")!;
        assert.equal(resume.payload.approval.decision, decision === "approve" ? "approved" : "rejected");
        assert.equal(resume.payload.approval.note, "seen");
        const actions = validated(s);
        // Approved but never called again: not run; rejected: vetoed. Neither ran.
        assert.equal(actions.get("step-1")?.result_status, "skipped");
        const plan = JSON.parse(s.noema("state", "last").stdout).plan.steps;
        assert.equal(plan[0].status, decision === "approve" ? "skipped" : "vetoed");
        assert.equal(actions.get("step-2")?.result_status, "ok");
      } finally {
        dir.cleanup();
      }
    });
  }

  test("a call run beside it: its result is recorded, and the held call waits again, to be approved and made", async () => {
    // Found by an audit: that result ended the pause for good (the checkpoint no longer the last event), and the call
    // could never be approved.
    const dir = tempDir();
    try {
      const s = await held(dir.path, async (s) => {
        assert.notEqual((await s.bash("PreToolUse", "t0", "ls")).permissionDecision, "deny");
      });
      // Held back while it waits: neither proposed nor run.
      const refused = await s.bash("PreToolUse", "t2", "echo next");
      assert.equal(refused.permissionDecision, "deny");
      assert.match(refused.permissionDecisionReason, /waiting for a human to approve Bash \(step-2\)/);
      await s.ran("t0", "ls", "a b");
      const waiting = s.noema("list", "--json");
      assert.equal(JSON.parse(waiting.stdout)[0].run_state, "waiting_for_approval");
      const d = s.noema("approve", "last", "--note", "ok");
      assert.equal(d.code, 0, "the call waits again at a new checkpoint: " + d.stderr);
      assert.notEqual((await s.bash("PreToolUse", "t1", "./deploy.sh")).permissionDecision, "deny");
      assert.notEqual(JSON.parse(s.noema("list", "--json").stdout)[0].run_state, "waiting_for_approval");
      await s.ran("t1", "./deploy.sh", "deployed");
      await s.call({ hook_event_name: "Stop" });
      const kinds = s.events().map((e) => e.kind);
      const resumes = s.events().filter((e) => e.kind === "run.resume");
      assert.match(resumes[0].payload.reason, /another call's result came while it waited .* waits again/);
      assert.equal(resumes[1].payload.approval.decision, "approved");
      assert.equal(kinds.filter((k) => k === "run.checkpoint").length, 2);
      const actions = validated(s);
      assert.equal(actions.get("step-1")?.result_status, "ok");
      assert.equal(actions.get("step-2")?.result_status, "ok");
    } finally {
      dir.cleanup();
    }
  });

  test("a result recorded by a hook killed right after (no state written): the next calls go on, step ids unique", async () => {
    // Found by an audit: the next process took the held call's pause for ended, and reused the unreviewed step's id.
    const dir = tempDir();
    try {
      const s = await held(dir.path);
      await s.ran("t3", "ls", "a b", "recorded");
      assert.equal((await s.bash("PreToolUse", "t2", "echo next")).permissionDecision, "deny", "still held");
      assert.equal(s.noema("approve", "last").code, 0);
      assert.notEqual((await s.bash("PreToolUse", "t1", "./deploy.sh")).permissionDecision, "deny");
      await s.ran("t1", "./deploy.sh", "deployed");
      await s.bash("PreToolUse", "t4", "echo next");
      await s.ran("t4", "echo next", "next");
      await s.call({ hook_event_name: "Stop" });
      const actions = validated(s);
      assert.deepEqual([...actions.keys()].sort(), ["step-1", "step-2", "step-3"]);
      for (const a of actions.values()) assert.equal(a.result_status, "ok");
    } finally {
      dir.cleanup();
    }
  });

  test("a call reusing the held call's id with another command: refused and recorded; the held call still waits", async () => {
    const dir = tempDir();
    try {
      const s = await held(dir.path);
      const reused = await s.bash("PreToolUse", "t1", "echo other");
      assert.equal(reused.permissionDecision, "deny");
      assert.equal(s.noema("approve", "last").code, 0, "it waits again, at a new checkpoint");
      await s.call({ hook_event_name: "Stop" });
      const resume = s.events().find((e) => e.kind === "run.resume")!;
      assert.match(resume.payload.reason, /reusing another call's id was refused/);
      validated(s);
    } finally {
      dir.cleanup();
    }
  });

  test("the session ends while its call is held: the pause ends and the call is recorded as not run", async () => {
    const dir = tempDir();
    try {
      const s = await held(dir.path);
      await s.call({ hook_event_name: "Stop" });
      const events = s.events();
      const resume = events.findIndex((e) => e.kind === "run.resume");
      assert.ok(resume > 0);
      assert.match(events[resume].payload.reason, /ended while the call waited/);
      assert.ok(resume < events.findIndex((e) => e.kind === "terminate"));
      assert.equal(validated(s).get("step-1")?.result_status, "skipped");
    } finally {
      dir.cleanup();
    }
  });

  test("the session ends with a call let through still running and the held call approved: both recorded as not run", async () => {
    // Found by an audit: the held call, approved meanwhile, was left pending in the finished episode.
    const dir = tempDir();
    try {
      const s = await held(dir.path, (s) => s.bash("PreToolUse", "t0", "ls"));
      assert.equal(s.noema("approve", "last").code, 0);
      await s.call({ hook_event_name: "Stop" });
      const actions = validated(s);
      assert.equal(actions.get("step-1")?.result_status, "skipped");
      assert.equal(actions.get("step-2")?.result_status, "skipped");
      const plan = JSON.parse(s.noema("state", "last").stdout).plan.steps;
      assert.deepEqual(plan.map((x: { status: string }) => x.status), ["skipped", "skipped"]);
    } finally {
      dir.cleanup();
    }
  });

  test("rejected, and its result came anyway: the run.resume says it ran though it was rejected", async () => {
    const dir = tempDir();
    try {
      const s = await held(dir.path);
      assert.equal(s.noema("reject", "last", "--note", "no").code, 0);
      await s.ran("t1", "./deploy.sh", "deployed");
      await s.call({ hook_event_name: "Stop" });
      const resume = s.events().find((e) => e.kind === "run.resume")!;
      assert.equal(resume.payload.approval.decision, "rejected");
      assert.match(resume.payload.reason, /result though it was rejected/);
      assert.equal(validated(s).get("step-1")?.result_status, "ok");
    } finally {
      dir.cleanup();
    }
  });
});
