// Claude Code's PermissionRequest: the wire shapes (a payload recorded from the real 2.1.330), and headless
// approvals that follow noema with the real Claude Code (`claude -p`, noema's hooks installed with --print).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { claudeCode, permissionOutput } from "../src/agents/claude_code/dialect.ts";
import { EpisodeCore } from "../src/runtime/core/episode_core.ts";
import { decision, fixturesIn } from "./helpers/dialect.ts";
import { bash, CLAUDE, claudeSessions, noemaCli } from "./helpers/claude_session.ts";
import { runChild } from "./helpers/child.ts";
import { writeAgentPolicies } from "./helpers/policies.ts";
import { acts } from "./helpers/agent_episode.ts";
import { tempDir } from "./helpers/tmp.ts";
import { findTranscript, transcriptSums } from "./helpers/claude_transcript.ts";

const fixture = fixturesIn("claude");
const print = { print: true, grant: false };
const interactive = { print: false, grant: false };

describe("claude-code dialect: PermissionRequest", () => {
  test("the recorded payload is a permission event naming the call by content", () => {
    const e = claudeCode.parse(fixture("PermissionRequest_Bash"));
    assert.equal(e?.kind, "permission");
    if (e?.kind !== "permission") return;
    assert.equal(e.tool, "Bash");
    assert.deepEqual(e.input, { command: "touch made.txt", description: "touch made.txt" });
    assert.match(e.transcript ?? "", /919308f5-.*\.jsonl$/);
  });

  test("answers: deny with the reason; allow where nobody can be asked or noema is the gate; else no opinion", () => {
    const deny = decision({ verdict: "deny", reason: "no pushes", policy_id: "no-push" });
    assert.deepEqual(permissionOutput(deny, interactive), {
      hookEventName: "PermissionRequest",
      decision: { behavior: "deny", message: "noema (no-push): no pushes" },
    });
    const allow = decision({});
    assert.deepEqual(permissionOutput(allow, print), {
      hookEventName: "PermissionRequest",
      decision: { behavior: "allow" },
    });
    assert.deepEqual(permissionOutput(decision({ verdict: "patch" }), { print: false, grant: true }), {
      hookEventName: "PermissionRequest",
      decision: { behavior: "allow" },
    });
    assert.equal(permissionOutput(allow, interactive), undefined, "interactive: its user is asked, as before");
    const ask = decision({ verdict: "ask", reason: "a human decides", policy_id: "gate" });
    assert.equal(permissionOutput(ask, interactive), undefined);
    assert.deepEqual(permissionOutput(ask, print), {
      hookEventName: "PermissionRequest",
      decision: { behavior: "deny", message: "noema (gate): a human decides" },
    });
    assert.equal(permissionOutput(null, print), undefined, "a call noema did not see proposed: no opinion");
    const answer = claudeCode.answerPermission!(
      claudeCode.parse(fixture("PermissionRequest_Bash")) as never,
      deny,
      print,
    );
    assert.equal(answer.exitCode, 0);
    assert.equal(JSON.parse(answer.stdout!).hookSpecificOutput.decision.behavior, "deny");
  });

  test("PermissionDenied, in the shape 2.1.330 sends it (tool_use_id, reason), is a call Claude Code refused", () => {
    const { permission_suggestions: _p, ...base } = fixture("PermissionRequest_Bash");
    const e = claudeCode.parse({
      ...base,
      hook_event_name: "PermissionDenied",
      tool_use_id: "toolu_9",
      reason: "the classifier blocked it",
    });
    assert.equal(e?.kind, "denied");
    if (e?.kind !== "denied") return;
    assert.equal(e.call_id, "toolu_9");
    assert.match(e.reason, /denied by Claude Code \(auto mode\): the classifier blocked it/);
  });

  test("events noema does not act on are ignored (null: exit 0, no output)", () => {
    for (const name of ["Notification", "PreCompact", "SubagentStop", "SubagentStart", "CwdChanged", "Whatever"]) {
      assert.equal(claudeCode.parse({ ...fixture("Stop"), hook_event_name: name }), null, name);
    }
  });
});

const tmp = tempDir("noema-claude-permission-");
after(() => tmp.cleanup());
const policyDir = writeAgentPolicies(join(tmp.path, "policies"));

describe("EpisodeCore.decisionFor: the call a permission request names by content", () => {
  test("the latest call of that tool and input (as decided) still without a result, else null", async () => {
    const policies = ["no-forbidden.ts", "rewrite.ts"].map((f) => join(policyDir, f));
    const core = await EpisodeCore.open("decide", { root: join(tmp.path, "core"), workspace: tmp.path, policies });
    try {
      await core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "c1" });
      await core.propose({ kind: "tool", tool: "Bash", input: { command: "echo original" }, call_id: "c2" });
      await core.propose({ kind: "tool", tool: "Bash", input: { command: "touch forbidden" }, call_id: "c3" });
      assert.equal(core.decisionFor("Bash", { command: "ls" })?.verdict, "allow");
      assert.equal(core.decisionFor("Read", { command: "ls" }), null, "another tool");
      // A rewritten call asks for permission with its rewritten input.
      assert.equal(core.decisionFor("Bash", { command: "echo governed" })?.verdict, "patch");
      assert.equal(core.decisionFor("Bash", { command: "echo original" }), null);
      assert.equal(core.decisionFor("Bash", { command: "touch forbidden" })?.verdict, "deny");
      await core.record("c1", { status: "ok", output: "a" });
      assert.equal(core.decisionFor("Bash", { command: "ls" }), null, "its result is in: no call waits");
    } finally {
      core.close();
    }
  });
});
const session = claudeSessions(tmp.path);

describe("headless approvals follow noema (real Claude Code, claude -p, hooks installed with --print)", () => {
  test(
    "a call noema allows runs instead of being denied for want of anyone to ask; the episode records it and its tokens",
    {
      timeout: 60_000,
    },
    async () => {
      const s = await session([
        {
          tools: [bash("toolu_r1", "touch made.txt")],
          usage: { input_tokens: 300, output_tokens: 12, cache_creation_input_tokens: 900, cache_read_input_tokens: 0 },
        },
        { text: "Done.", usage: { input_tokens: 20, output_tokens: 3, cache_read_input_tokens: 1200 } },
      ]);
      try {
        const installed = await noemaCli(
          ["install-hooks", "claude-code", "--project", "--print", "--policy", join(policyDir, "no-forbidden.ts")],
          s.env,
          s.box.workspace,
        );
        assert.equal(installed.code, 0, installed.stderr);
        assert.match(installed.stdout, /PermissionRequest/);
        const r = await runChild(CLAUDE, ["-p", "make a file", "--output-format", "json"], {
          cwd: s.box.workspace,
          env: { ...process.env, NOEMA_ROOT: "", ...s.env },
          timeoutMs: 50_000,
        });
        assert.equal(r.code, 0, r.stderr);
        const result = JSON.parse(r.stdout.trim().split("\n").pop()!);
        assert.deepEqual(result.permission_denials, [], "claude -p did not deny the call noema allowed");
        assert.ok(existsSync(join(s.box.workspace, "made.txt")), "the call ran");
        const episodes = join(s.box.workspace, ".noema", "episodes");
        const [id] = readdirSync(episodes);
        const [act] = acts(join(episodes, id));
        assert.equal(act.payload.result_status, "ok");
        assert.equal(act.payload.input.command, "touch made.txt");
        // Installed hooks: the episode finished at Stop, with the transcript's tokens.
        const sums = transcriptSums(findTranscript(s.box.home));
        const tokens = JSON.parse(readFileSync(join(episodes, id, "summary.json"), "utf8")).metrics.tokens;
        assert.deepEqual(
          [tokens.input, tokens.output, tokens.model_calls, tokens.cache_write, tokens.cache_read],
          [sums.input, sums.output, sums.calls, sums.cache_write, sums.cache_read],
        );
        assert.equal(sums.calls, 2);
      } finally {
        await s.server.close();
      }
    },
  );
});
