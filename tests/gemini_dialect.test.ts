// Gemini CLI dialect unit tests with payloads recorded from a real @google/gemini-cli 0.61.0 run
// (tests/fixtures/agents/gemini/, captured by a hook that dumped its stdin while `gemini -p` talked to a scripted
// Gemini API server).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Decision } from "../src/agents/core.ts";
import type { PostToolEvent, PreToolEvent } from "../src/agents/event.ts";
import { gemini, GEMINI_APPROVAL_NOTE, geminiCallId } from "../src/agents/gemini/dialect.ts";
import { toRecordedResult } from "../src/agents/tool_result.ts";
import { tempDir } from "./helpers/tmp.ts";
import { decision, fixturesIn } from "./helpers/dialect.ts";

const tmp = tempDir("noema-gemini-dialect-");
after(() => tmp.cleanup());
const fixture = fixturesIn("agents/gemini");
const SESSION = "10c789e3-48c5-430a-98f5-3cd41bb00217";
const pre = () => gemini.parse(fixture("BeforeTool_shell")) as PreToolEvent;
const answer = (d: Decision, context = { print: false, grant: false }) => {
  const a = gemini.answer(pre(), d, context);
  assert.equal(a.exitCode, 0);
  return a.stdout === null ? null : JSON.parse(a.stdout);
};

describe("gemini dialect: recorded payloads", () => {
  test("SessionStart, BeforeAgent, AfterAgent and SessionEnd", () => {
    assert.equal(gemini.parse(fixture("SessionStart"))?.kind, "session_start");
    const prompt = gemini.parse(fixture("BeforeAgent"));
    assert.ok(prompt?.kind === "prompt");
    assert.equal(prompt.prompt, "go");
    const stop = gemini.parse(fixture("AfterAgent"));
    assert.ok(stop?.kind === "stop");
    assert.equal(stop.message, "Done.");
    const end = gemini.parse(fixture("SessionEnd"));
    assert.ok(end?.kind === "session_end");
    assert.equal(end.message, "exit");
    assert.equal(end.session_id, SESSION);
  });
  test("BeforeTool and AfterTool of one call share a call id made from session, tool and input", () => {
    const before = pre();
    assert.equal(before.kind, "pre_tool");
    assert.equal(before.tool, "run_shell_command");
    assert.deepEqual(before.input, { command: "echo hi-gemini", description: "say hi" });
    assert.equal(before.call_id, geminiCallId(SESSION, "run_shell_command", before.input));
    const done = gemini.parse(fixture("AfterTool_shell"));
    assert.ok(done?.kind === "post_tool");
    assert.equal(done.call_id, before.call_id);
    assert.equal(done.status, "ok");
    assert.match(String(toRecordedResult(done).outcome), /hi-gemini/);
    const other = gemini.parse(fixture("BeforeTool_shell_failed")) as PreToolEvent;
    assert.notEqual(other.call_id, before.call_id);
  });
  test("AfterTool: a tool error is an error result; a failing command is not (its exit code is in the text)", () => {
    const missing = gemini.parse(fixture("AfterTool_read_file_error"));
    assert.ok(missing?.kind === "post_tool");
    assert.equal(missing.status, "error");
    assert.equal(missing.error, "File not found: /tmp/probe/gws/missing.txt");
    const failed = gemini.parse(fixture("AfterTool_shell_failed"));
    assert.ok(failed?.kind === "post_tool");
    assert.equal(failed.status, "ok");
    assert.match(JSON.stringify(failed.output), /Exit Code: 3/);
    const wrote = gemini.parse(fixture("AfterTool_write_file"));
    assert.ok(wrote?.kind === "post_tool");
    assert.deepEqual(wrote.input, { file_path: "notes.txt", content: "hello\n" });
  });
  test("events noema does not act on are ignored; a bad payload names the field", () => {
    assert.equal(gemini.parse({ ...fixture("BeforeTool_shell"), hook_event_name: "BeforeModel" }), null);
    assert.throws(
      () => gemini.parse({ ...fixture("BeforeTool_shell"), tool_input: "ls" }),
      /gemini BeforeTool: tool_input/,
    );
  });
});

describe("gemini dialect: answers", () => {
  test("deny with the reason the model receives", () => {
    assert.deepEqual(answer(decision({ verdict: "deny", reason: "no", policy_id: "P" })), {
      decision: "deny",
      reason: "noema (P): no",
    });
  });
  test("an approval: ask when a person is there, deny saying so when Gemini runs unattended", () => {
    const d = decision({ verdict: "ask", reason: "deploys need a human", policy_id: "Gate" });
    assert.deepEqual(answer(d), {
      decision: "ask",
      reason: "noema (Gate): deploys need a human",
      systemMessage: "noema (Gate): deploys need a human",
    });
    assert.deepEqual(answer(d, { print: true, grant: false }), {
      decision: "deny",
      reason: `noema (Gate): deploys need a human (${GEMINI_APPROVAL_NOTE})`,
    });
  });
  test("a rewrite is allow with hookSpecificOutput.tool_input; hints are a systemMessage", () => {
    assert.deepEqual(answer(decision({ verdict: "patch", input: { command: "ls" }, hints: ["h"] })), {
      decision: "allow",
      reason: "noema: input rewritten",
      hookSpecificOutput: { hookEventName: "BeforeTool", tool_input: { command: "ls" } },
      systemMessage: "noema: h",
    });
    assert.deepEqual(answer(decision({ hints: ["mind the tests"] })), { systemMessage: "noema: mind the tests" });
  });
  test("a plain allow prints nothing, granting or not", () => {
    assert.equal(answer(decision({})), null);
    assert.equal(answer(decision({}), { print: true, grant: true }), null);
  });
  test("a rewritten call's AfterTool is mapped back to the call noema decided, once", () => {
    const root = join(tmp.path, "root");
    const before = pre();
    const rewritten = { command: "echo governed" };
    const a = gemini.answer(before, decision({ verdict: "patch", input: rewritten }), { print: false, grant: false });
    gemini.answered!(root, before, a);
    const afterRewrite = {
      ...gemini.parse({ ...fixture("AfterTool_shell"), tool_input: rewritten }),
    } as PostToolEvent;
    assert.notEqual(afterRewrite.call_id, before.call_id);
    assert.equal(gemini.callOf!(root, afterRewrite), before.call_id);
    assert.equal(gemini.callOf!(root, afterRewrite), afterRewrite.call_id, "the entry is used once");
    assert.equal(existsSync(join(root, "sessions", "gemini", "rewrites")), true);
    const plain = gemini.parse(fixture("AfterTool_shell")) as PostToolEvent;
    gemini.answered!(root, before, gemini.answer(before, decision({}), { print: false, grant: false }));
    assert.equal(gemini.callOf!(root, plain), plain.call_id);
  });
});
