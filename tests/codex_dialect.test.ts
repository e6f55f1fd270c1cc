// Codex dialect unit tests with payloads recorded from a real codex-cli 0.169.0 run (tests/fixtures/agents/codex/,
// captured by a hook that dumped its stdin while `codex exec` talked to a scripted Responses server).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { codex, CODEX_APPROVAL_NOTE } from "../src/agents/codex/dialect.ts";
import type { Decision } from "../src/agents/core.ts";
import type { PreToolEvent } from "../src/agents/event.ts";
import { toRecordedResult } from "../src/agents/tool_result.ts";
import { decision, fixturesIn } from "./helpers/dialect.ts";

const fixture = fixturesIn("agents/codex");
const SESSION = "01a20a8e-2204-7402-9c41-3ed1edf43e53";
const answer = (d: Decision, context = { print: true, grant: false }) => {
  const a = codex.answer(codex.parse(fixture("PreToolUse_Bash")) as PreToolEvent, d, context);
  assert.equal(a.exitCode, 0);
  return a.stdout === null ? null : JSON.parse(a.stdout);
};

describe("codex dialect: recorded payloads", () => {
  test("SessionStart, UserPromptSubmit and Stop", () => {
    assert.deepEqual(codex.parse(fixture("SessionStart")), {
      kind: "session_start",
      session_id: SESSION,
      cwd: "/tmp/probe/ws",
      name: "SessionStart",
    });
    const prompt = codex.parse(fixture("UserPromptSubmit"));
    assert.ok(prompt?.kind === "prompt");
    assert.equal(prompt.prompt, "say hi");
    const stop = codex.parse(fixture("Stop"));
    assert.ok(stop?.kind === "stop");
    assert.equal(stop.message, "All done.");
  });
  test("PreToolUse: a shell call is tool Bash with {command} and the model's call id", () => {
    const e = codex.parse(fixture("PreToolUse_Bash"));
    assert.ok(e?.kind === "pre_tool");
    assert.equal(e.tool, "Bash");
    assert.equal(e.call_id, "call_a1");
    assert.deepEqual(e.input, { command: "echo hello-from-codex" });
    assert.equal(e.session_id, SESSION);
  });
  test("PostToolUse: tool_response is the output text, also for a failing command", () => {
    const ok = codex.parse(fixture("PostToolUse_Bash"));
    assert.ok(ok?.kind === "post_tool");
    assert.equal(ok.call_id, "call_a1");
    assert.equal(ok.output, "hello-from-codex\n");
    assert.equal(toRecordedResult(ok).outcome, "hello-from-codex");
    const failed = codex.parse(fixture("PostToolUse_Bash_failed"));
    assert.ok(failed?.kind === "post_tool");
    assert.equal(failed.call_id, "call_f1");
    assert.equal(failed.output, "oops\n");
  });
  test("events noema does not act on are ignored; a bad payload names the field", () => {
    assert.equal(codex.parse({ ...fixture("PreToolUse_Bash"), hook_event_name: "PermissionRequest" }), null);
    const { tool_use_id: _drop, ...noId } = fixture("PreToolUse_Bash");
    assert.throws(() => codex.parse(noId), /codex PreToolUse: tool_use_id/);
    assert.throws(() => codex.parse({ session_id: "s" }), /codex hook event: hook_event_name/);
  });
});

describe("codex dialect: answers Codex accepts (anything else makes Codex run the tool)", () => {
  test("deny carries a non-empty reason", () => {
    assert.deepEqual(answer(decision({ verdict: "deny", reason: "no pushes", policy_id: "NoPush" })), {
      hookSpecificOutput: {
        hookEventName: "PreToolUse",
        permissionDecision: "deny",
        permissionDecisionReason: "noema (NoPush): no pushes",
      },
    });
  });
  test("an approval is a deny saying so, attended or not (Codex rejects ask and would run the call)", () => {
    for (const context of [{ print: true, grant: false }, { print: false, grant: false }]) {
      const out = answer(decision({ verdict: "ask", reason: "deploys need a human", policy_id: "Gate" }), context);
      assert.equal(out.hookSpecificOutput.permissionDecision, "deny");
      assert.equal(
        out.hookSpecificOutput.permissionDecisionReason,
        `noema (Gate): deploys need a human (${CODEX_APPROVAL_NOTE})`,
      );
    }
  });
  test("a rewrite is allow with updatedInput; hints go in additionalContext", () => {
    assert.deepEqual(
      answer(decision({ verdict: "patch", input: { command: "git push --dry-run" }, policy_id: "P", hints: ["h"] })),
      {
        hookSpecificOutput: {
          hookEventName: "PreToolUse",
          permissionDecision: "allow",
          permissionDecisionReason: "noema (P): input rewritten",
          updatedInput: { command: "git push --dry-run" },
          additionalContext: "noema: h",
        },
      },
    );
    assert.deepEqual(answer(decision({ hints: ["mind the tests"] })), {
      hookSpecificOutput: { hookEventName: "PreToolUse", additionalContext: "noema: mind the tests" },
    });
  });
  test("a plain allow prints nothing, even when granting (Codex rejects allow without updatedInput)", () => {
    assert.equal(answer(decision({})), null);
    assert.equal(answer(decision({}), { print: true, grant: true }), null);
  });
});
