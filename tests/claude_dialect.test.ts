// Dialect unit tests with payloads recorded from real Claude Code 2.1.330 runs (tests/fixtures/claude/).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { claudeCode } from "../src/agents/claude_code/dialect.ts";
import { codex } from "../src/agents/codex/dialect.ts";
import { gemini, geminiCallId } from "../src/agents/gemini/dialect.ts";
import type { Decision } from "../src/agents/core.ts";
import { commandOf } from "../src/agents/display.ts";
import type { PreToolEvent } from "../src/agents/event.ts";
import { boundedOutput, toRecordedResult } from "../src/agents/tool_result.ts";
import { REPO } from "./helpers/cli.ts";

const fixture = (name: string) =>
  JSON.parse(readFileSync(join(REPO, "tests", "fixtures", "claude", `${name}.json`), "utf8"));
const decision = (over: Partial<Decision>): Decision => ({
  verdict: "allow",
  step_id: "s1",
  action_candidate_id: "ac_1",
  input: {},
  reason: null,
  policy_id: null,
  hints: [],
  ...over,
});
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

describe("codex dialect", () => {
  const payload = {
    session_id: "019a-codex",
    transcript_path: "/h/.codex/sessions/x.jsonl",
    cwd: "/w",
    hook_event_name: "PreToolUse",
    model: "gpt-5",
    permission_mode: "default",
    tool_name: "Bash",
    tool_input: { command: "git push" },
    tool_use_id: "call_1",
  };
  test("parses PreToolUse and PostToolUse; PermissionRequest is ignored", () => {
    const e = codex.parse(payload);
    assert.ok(e?.kind === "pre_tool");
    assert.equal(e.call_id, "call_1");
    const post = codex.parse({ ...payload, hook_event_name: "PostToolUse", tool_response: "pushed" });
    assert.ok(post?.kind === "post_tool");
    assert.equal(post.output, "pushed");
    assert.equal(codex.parse({ ...payload, hook_event_name: "PermissionRequest" }), null);
  });
  test("answers hold only fields Codex knows; an approval is ask (no defer)", () => {
    const e = codex.parse(payload) as PreToolEvent;
    const known = new Set([
      "hookEventName",
      "permissionDecision",
      "permissionDecisionReason",
      "updatedInput",
      "additionalContext",
    ]);
    for (
      const d of [
        decision({ verdict: "deny", reason: "no" }),
        decision({ verdict: "ask", reason: "wait" }),
        decision({ verdict: "patch", input: { command: "git push --dry-run" }, hints: ["h"] }),
      ]
    ) {
      const a = codex.answer(e, d, unattended);
      const parsed = JSON.parse(a.stdout!);
      assert.deepEqual(Object.keys(parsed), ["hookSpecificOutput"]);
      for (const k of Object.keys(parsed.hookSpecificOutput)) assert.ok(known.has(k), k);
      assert.notEqual(parsed.hookSpecificOutput.permissionDecision, "defer");
    }
    assert.equal(codex.answer(e, decision({}), unattended).stdout, null);
  });
});

describe("gemini dialect", () => {
  const before = {
    session_id: "g1",
    transcript_path: "/h/.gemini/tmp/x.json",
    cwd: "/w",
    hook_event_name: "BeforeTool",
    timestamp: "2026-11-23T10:00:00Z",
    tool_name: "run_shell_command",
    tool_input: { command: "rm -r build" },
  };
  test("BeforeTool and AfterTool of one call share a call id", () => {
    const e = gemini.parse(before);
    assert.ok(e?.kind === "pre_tool");
    const after = gemini.parse({ ...before, hook_event_name: "AfterTool", tool_response: { llmContent: "removed" } });
    assert.ok(after?.kind === "post_tool");
    assert.equal(after.call_id, e.call_id);
    assert.equal(e.call_id, geminiCallId("g1", "run_shell_command", { command: "rm -r build" }));
    assert.equal(toRecordedResult(after).outcome, "removed");
    const failed = gemini.parse({
      ...before,
      hook_event_name: "AfterTool",
      tool_response: { error: { message: "exit 1" } },
    });
    assert.ok(failed?.kind === "post_tool");
    assert.equal(failed.status, "error");
    assert.equal(gemini.parse({ ...before, hook_event_name: "BeforeModel" }), null);
    assert.equal(gemini.parse({ ...before, hook_event_name: "BeforeAgent", prompt: "go" })?.kind, "prompt");
  });
  test("decisions: deny with reason, rewritten input as tool_input, hints as additionalContext", () => {
    const e = gemini.parse(before) as PreToolEvent;
    assert.deepEqual(JSON.parse(gemini.answer(e, decision({ verdict: "deny", reason: "no" }), unattended).stdout!), {
      decision: "deny",
      reason: "noema: no",
    });
    const patched = JSON.parse(
      gemini.answer(e, decision({ verdict: "patch", input: { command: "ls" }, hints: ["h"] }), unattended).stdout!,
    );
    assert.equal(patched.decision, "allow");
    assert.deepEqual(patched.hookSpecificOutput, {
      hookEventName: "BeforeTool",
      tool_input: { command: "ls" },
      additionalContext: "noema: h",
    });
    assert.equal(gemini.answer(e, decision({}), unattended).stdout, null);
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
