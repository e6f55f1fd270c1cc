/**
 * A hook session whose episode paused for a call (Claude Code's `defer`,
 * `--print`; or a `--wait` whose waiting hook is gone) never stays held
 * back for good: the agent goes on, and what it does ends the pause. The
 * held call's own result (its user let it run) is recorded; a decision made
 * with `noema approve|reject` while no hook waits is applied at the next
 * call; another call's result ends the pause (the checkpoint no longer the
 * last event, no decision could be made on it); the session's end records the
 * held call as not run. Each episode validates under the `noema` profile,
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
  const call = async (payload: Event) => {
    const r = await runChild(NOEMA, [...PRE, "hook", "claude-code", "--root", root, "--policy", GATE, "--print"], {
      cwd: dir,
      input: JSON.stringify({ session_id: "s-held", cwd: dir, ...payload }),
      env,
      timeoutMs: 120_000,
    });
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.trim() === "" ? {} : JSON.parse(r.stdout).hookSpecificOutput ?? {};
  };
  const bash = (kind: string, id: string, command: string, extra: Event = {}) =>
    call({ hook_event_name: kind, tool_name: "Bash", tool_input: { command }, tool_use_id: id, ...extra });
  const ran = (id: string, command: string, stdout: string) =>
    bash("PostToolUse", id, command, { tool_response: { stdout } });
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

/** The session's first prompt and its held call: `./deploy.sh`, deferred (the episode paused at a checkpoint). */
async function held(dir: string) {
  const s = session(dir);
  await s.call({ hook_event_name: "UserPromptSubmit", prompt: "build and deploy" });
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

  test("another call's result ends the pause (no decision could be made after it); the held call is not run", async () => {
    const dir = tempDir();
    try {
      const s = await held(dir.path);
      // Held back while it waits: neither proposed nor run.
      const refused = await s.bash("PreToolUse", "t2", "echo next");
      assert.equal(refused.permissionDecision, "deny");
      assert.match(refused.permissionDecisionReason, /waiting for a human to approve Bash \(step-1\)/);
      // A result of a call whose PreToolUse noema never answered (its hook killed): it ran.
      await s.ran("t3", "ls", "a b");
      const d = s.noema("approve", "last");
      assert.equal(d.code, 6, "the episode waits no more: " + d.stderr);
      await s.call({ hook_event_name: "Stop" });
      const resume = s.events().find((e) => e.kind === "run.resume")!;
      assert.match(resume.payload.reason, /another call's result came while it waited/);
      const actions = validated(s);
      assert.equal(actions.get("step-1")?.result_status, "skipped");
      assert.equal(actions.get("step-2")?.result_status, "ok");
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
});
