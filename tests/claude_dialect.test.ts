// Dialect unit tests with payloads recorded from real Claude Code 2.1.330 runs (tests/fixtures/claude/).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { claudeCode } from "../src/agents/claude_code/dialect.ts";
import type { Decision } from "../src/agents/core.ts";
import { commandOf } from "../src/agents/display.ts";
import type { PreToolEvent } from "../src/agents/event.ts";
import { boundedOutput, toRecordedResult } from "../src/agents/tool_result.ts";
import { decision, fixturesIn } from "./helpers/dialect.ts";

const fixture = fixturesIn("claude");
const unattended = { print: true, grant: false };
const interactive = { print: false, grant: false };

describe("claude-code dialect: recorded payloads", () => {
  test("PreToolUse (Bash) becomes a pre_tool event with the call id", () => {
    const e = claudeCode.parse(fixture("PreToolUse_Bash"));
    assert.equal(e?.kind, "pre_tool");
    const pre = e as PreToolEvent;
    assert.equal(pre.tool, "Bash");
    assert.equal(pre.call_id, "toolu_2_0");
    assert.deepEqual(pre.input, { command: "false", description: "fail" });
    assert.equal(pre.session_id, "c2a97e91-bf96-4da0-933d-f689bf19befb");
    assert.equal(pre.cwd, "/tmp/cc/work");
  });
  test("PostToolUse keeps the tool response and duration; PostToolUseFailure is an error", () => {
    const ok = claudeCode.parse(fixture("PostToolUse_Bash"));
    assert.equal(ok?.kind, "post_tool");
    if (ok?.kind !== "post_tool") return;
    assert.equal(ok.status, "ok");
    assert.equal((ok.output as { stdout: string }).stdout, "hi");
    assert.equal(ok.duration_ms, 47);
    const r = toRecordedResult(ok);
    assert.equal(r.status, "ok");
    assert.equal(r.outcome, "hi");
    assert.equal(r.duration_ms, 47);
    const failed = claudeCode.parse(fixture("PostToolUseFailure_Bash"));
    assert.ok(failed?.kind === "post_tool");
    assert.equal(failed.status, "error");
    assert.equal(failed.error, "Exit code 1");
    assert.deepEqual(toRecordedResult(failed).error, { type: "ToolError", message: "Exit code 1" });
  });
  test("a Write call's result names the file", () => {
    const e = claudeCode.parse(fixture("PostToolUse_Write"));
    assert.ok(e?.kind === "post_tool");
    assert.equal(toRecordedResult(e).outcome, "create /tmp/cc/work/b.txt");
  });
  test("prompt, session start, stop and session end", () => {
    const p = claudeCode.parse(fixture("UserPromptSubmit"));
    assert.ok(p?.kind === "prompt");
    assert.equal(p.prompt, "do the thing");
    assert.equal(claudeCode.parse(fixture("SessionStart"))?.kind, "session_start");
    const stop = claudeCode.parse(fixture("Stop"));
    assert.ok(stop?.kind === "stop");
    assert.equal(stop.message, "finished");
    const end = claudeCode.parse(fixture("SessionEnd"));
    assert.ok(end?.kind === "session_end");
    assert.equal(end.message, "other");
  });
  test("other events are ignored; malformed payloads are errors naming the field (exit 2)", () => {
    assert.equal(claudeCode.parse({ ...fixture("Stop"), hook_event_name: "PreCompact" }), null);
    const { tool_use_id: _t, ...noId } = fixture("PreToolUse_Bash");
    assert.throws(() => claudeCode.parse(noId), (e: Error & { exitCode?: number }) => {
      assert.match(e.message, /claude-code PreToolUse: tool_use_id/);
      assert.equal(e.exitCode, 2);
      return true;
    });
    assert.throws(() => claudeCode.parse([1, 2]), /hook_event_name/);
    assert.throws(() => claudeCode.parse({ ...fixture("PreToolUse_Bash"), tool_input: "ls" }), /tool_input/);
  });
});

describe("claude-code dialect: answers", () => {
  const pre = claudeCode.parse(fixture("PreToolUse_Bash")) as PreToolEvent;
  const out = (d: Decision, ctx = unattended) => {
    const a = claudeCode.answer(pre, d, ctx);
    assert.equal(a.exitCode, 0);
    return a.stdout === null ? null : JSON.parse(a.stdout).hookSpecificOutput;
  };
  test("veto → deny with the reason and the policy", () => {
    assert.deepEqual(out(decision({ verdict: "deny", reason: "no network", policy_id: "net-guard" })), {
      hookEventName: "PreToolUse",
      permissionDecision: "deny",
      permissionDecisionReason: "noema (net-guard): no network",
    });
  });
  test("intervention → allow with updatedInput (and hints as additionalContext)", () => {
    const o = out(decision({ verdict: "patch", input: { command: "ls -la" }, policy_id: "p", hints: ["be careful"] }));
    assert.equal(o.permissionDecision, "allow");
    assert.deepEqual(o.updatedInput, { command: "ls -la" });
    assert.equal(o.additionalContext, "noema: be careful");
  });
  test("hint only → additionalContext, no decision", () => {
    assert.deepEqual(out(decision({ hints: ["run the tests after"] })), {
      hookEventName: "PreToolUse",
      additionalContext: "noema: run the tests after",
    });
  });
  test("approval → defer in print mode, ask interactively", () => {
    const d = decision({ verdict: "ask", reason: "deploys need approval", policy_id: "gate", checkpoint_id: "chk_1" });
    assert.equal(out(d).permissionDecision, "defer");
    assert.equal(out(d, interactive).permissionDecision, "ask");
    assert.equal(out(d).permissionDecisionReason, "noema (gate): deploys need approval");
  });
  test("no opinion → no output; with grant → allow", () => {
    assert.equal(out(decision({})), null);
    assert.deepEqual(out(decision({}), { print: true, grant: true }), {
      hookEventName: "PreToolUse",
      permissionDecision: "allow",
    });
  });
});

describe("display and output limits", () => {
  test("command display: the shell command as is, else what the call works on", () => {
    assert.equal(commandOf({ command: "npm test\n  --watch" }), "npm test\n  --watch");
    assert.equal(commandOf({ command: ["bash", "-lc", "git push"] }), "bash -lc 'git push'");
    assert.equal(commandOf({ file_path: "/w/a.txt", content: "x" }), "/w/a.txt");
    assert.equal(commandOf({ sql: "select 1" }), "select 1");
    assert.equal(commandOf({ a: "x".repeat(500) }).length, 200);
  });
  test("a silent command's outcome says so", () => {
    const e = claudeCode.parse({ ...fixture("PostToolUse_Bash"), tool_response: { stdout: "", stderr: "" } });
    assert.ok(e?.kind === "post_tool");
    assert.equal(toRecordedResult(e).outcome, "ok (no output)");
  });
  test("outputs over the limit are kept truncated", () => {
    assert.deepEqual(boundedOutput({ stdout: "abc" }, 100), { stdout: "abc" });
    const big = boundedOutput({ stdout: "y".repeat(50) }, 10) as { truncated: boolean; text: string; bytes: number };
    assert.equal(big.truncated, true);
    assert.equal(big.text, "y".repeat(10));
    assert.equal(big.bytes, 63);
  });
});
