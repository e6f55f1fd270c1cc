// The real Claude Code (node_modules/.bin/claude, 2.1.330) governed by noema, offline: a scripted Anthropic
// Messages server on 127.0.0.1 plays the model; noema run --using claude-code registers noema's hook.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Turn } from "./helpers/anthropic_server.ts";
import { assertSound, bash, claudeSessions, noemaCli } from "./helpers/claude_session.ts";
import { tempDir } from "./helpers/tmp.ts";
import { writeAgentPolicies } from "./helpers/policies.ts";
import { acts, events } from "./helpers/agent_episode.ts";

const tmp = tempDir("noema-claude-");
after(() => tmp.cleanup());

const policyDir = writeAgentPolicies(join(tmp.path, "policies"));
const policy = (name: string) => ["--policy", join(policyDir, name)];

const base = claudeSessions(tmp.path);
/** A session whose `run` prints JSON. */
const session = async (script: Turn[]) => {
  const s = await base(script);
  return { ...s, run: (task: string, extra: string[] = []) => s.run(task, ["--json", ...extra]) };
};

/** Real processes on a machine that may be loaded: far more than they need, far less than forever. */
const REAL_AGENT_TIMEOUT_MS = 60_000;

describe("noema run --using claude-code (real Claude Code, scripted model)", () => {
  test("an allowed call runs and is recorded with its output; the episode validates and verifies", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await session([{ text: "Checking", tools: [bash("toolu_a1", "echo hello-from-claude")] }, {
      text: "Done.",
    }]);
    try {
      const r = await s.run("say hello", policy("no-forbidden.ts"));
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.match(out.episode_id, /^ep_/);
      assert.equal(out.status, "ok");
      const [act] = acts(out.episode_dir);
      assert.equal(act.payload.result_status, "ok");
      assert.match(JSON.stringify(act.payload.output), /hello-from-claude/);
      assert.equal(s.server.toolResults().get("toolu_a1")?.content, "hello-from-claude");
      const summary = JSON.parse(readFileSync(join(out.episode_dir, "summary.json"), "utf8"));
      assert.equal(summary.adapter_result, "success");
      const view = await s.cmd(["view", out.episode_id]);
      assert.equal(view.code, 0, view.stderr);
      assert.match(view.stdout, /echo hello-from-claude/);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test(
    "a vetoed call does not run, and the model receives noema's reason",
    { timeout: REAL_AGENT_TIMEOUT_MS },
    async () => {
      const s = await session([{ tools: [bash("toolu_v1", "touch forbidden.txt")] }, { text: "Understood." }]);
      try {
        const r = await s.run("touch the forbidden file", policy("no-forbidden.ts"));
        const out = JSON.parse(r.stdout);
        assert.equal(existsSync(join(s.box.workspace, "forbidden.txt")), false, "the vetoed command must not run");
        const result = s.server.toolResults().get("toolu_v1");
        assert.ok(result?.is_error, "a denied call is an error tool result");
        assert.match(result!.content, /NoForbidden.*forbidden files stay untouched/);
        assert.equal(r.code, 0, r.stderr);
        const gov = events(out.episode_dir).filter((e) => e.phase === "governance");
        assert.ok(gov.some((e) => e.payload.decision === "veto"), "the veto is recorded");
        assert.deepEqual(acts(out.episode_dir).map((a) => a.payload.step_status), ["vetoed"]);
        await assertSound(s, out.episode_dir);
      } finally {
        await s.server.close();
      }
    },
  );

  test("an intervention rewrites the command that actually runs", { timeout: REAL_AGENT_TIMEOUT_MS }, async () => {
    const s = await session([{ tools: [bash("toolu_i1", "echo original > said.txt")] }, { text: "Done." }]);
    try {
      const r = await s.run("write a file", policy("rewrite.ts"));
      assert.equal(r.code, 0, r.stderr);
      assert.equal(readFileSync(join(s.box.workspace, "said.txt"), "utf8").trim(), "governed");
      const out = JSON.parse(r.stdout);
      const [act] = acts(out.episode_dir);
      assert.equal(act.payload.input.command, "echo governed > said.txt");
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("a call Claude Code's own permission rules deny is a step that did not run, saying so", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await session([{ text: "Touching", tools: [bash("toolu_d1", "touch denied.txt")] }, { text: "Done." }]);
    try {
      // The user's own rule: Claude Code refuses the call whatever noema's hook answered.
      mkdirSync(join(s.box.home, ".claude"), { recursive: true });
      writeFileSync(
        join(s.box.home, ".claude", "settings.json"),
        JSON.stringify({ permissions: { deny: ["Bash(touch:*)"] } }),
      );
      const r = await s.run("touch a file", policy("no-forbidden.ts"));
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.equal(existsSync(join(s.box.workspace, "denied.txt")), false, "claude did not run it");
      const state = JSON.parse(readFileSync(join(out.episode_dir, "state.json"), "utf8"));
      assert.deepEqual(state.plan.steps.map((x: { status: string }) => x.status), ["skipped"]);
      const [act] = acts(out.episode_dir);
      assert.equal(act.payload.result_status, "skipped");
      assert.match(act.payload.error.message, /denied by Claude Code's own permission rules/);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("two tool calls in one turn are both recorded", { timeout: REAL_AGENT_TIMEOUT_MS }, async () => {
    const s = await session([
      { tools: [bash("toolu_p1", "echo one"), bash("toolu_p2", "echo two")] },
      { text: "Both done." },
    ]);
    try {
      const r = await s.run("two at once", policy("no-forbidden.ts"));
      assert.equal(r.code, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      const outputs = acts(out.episode_dir).map((a) => JSON.stringify(a.payload.output)).join(" ");
      assert.match(outputs, /one/);
      assert.match(outputs, /two/);
      assert.equal(acts(out.episode_dir).length, 2);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("approval: the deferred call pauses the episode (exit 4); approve --resume runs it", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await session([{ tools: [bash("toolu_d1", "echo deployed > deploy.txt")] }, { text: "Deployed." }]);
    try {
      const r = await s.run("deploy", policy("gate.ts"));
      assert.equal(r.code, 4, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.equal(out.status, "pending");
      assert.equal(existsSync(join(s.box.workspace, "deploy.txt")), false);
      const approved = await s.cmd(["approve", out.episode_id, "--resume", "--json"]);
      assert.equal(approved.code, 0, approved.stderr);
      assert.equal(readFileSync(join(s.box.workspace, "deploy.txt"), "utf8").trim(), "deployed");
      assert.equal(JSON.parse(approved.stdout.trim().split("\n").pop()!).status, "ok");
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("approval: reject --resume denies the call and the model receives the reason", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await session([{ tools: [bash("toolu_r1", "echo deployed > deploy.txt")] }, { text: "Not deployed." }]);
    try {
      const r = await s.run("deploy", policy("gate.ts"));
      assert.equal(r.code, 4, r.stderr);
      const out = JSON.parse(r.stdout);
      const rejected = await s.cmd(["reject", out.episode_id, "--resume", "--note", "not during the freeze"]);
      assert.ok([0, 3].includes(rejected.code!), rejected.stderr);
      assert.equal(existsSync(join(s.box.workspace, "deploy.txt")), false);
      const result = s.server.toolResults().get("toolu_r1");
      assert.ok(result?.is_error);
      assert.match(result!.content, /not during the freeze/);
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test(
    "a policy that throws fails closed: the call is denied and does not run",
    { timeout: REAL_AGENT_TIMEOUT_MS },
    async () => {
      const s = await session([{ tools: [bash("toolu_t1", "echo boom > boom.txt")] }, { text: "Stopped." }]);
      try {
        const r = await s.run("explode", policy("throws.ts"));
        const out = JSON.parse(r.stdout);
        assert.equal(existsSync(join(s.box.workspace, "boom.txt")), false);
        const result = s.server.toolResults().get("toolu_t1");
        assert.ok(result?.is_error);
        assert.match(result!.content, /Throws@1\.0 failed.*policy bug.*fail_closed blocks the action/);
        await assertSound(s, out.episode_dir);
      } finally {
        await s.server.close();
      }
    },
  );

  test("a claude that cannot log in: the episode's error and the CLI say Claude Code's own reason", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await base([{ text: "never asked" }]);
    try {
      // No API key and an empty HOME: Claude Code has no credentials (the model server stays local all the same).
      const env = { ...s.env, ANTHROPIC_API_KEY: "" };
      const args = ["run", "say hi", "--using", "claude-code", "--workspace", s.box.workspace, "--root", s.box.root];
      const r = await noemaCli(args, env, s.box.workspace);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stdout + r.stderr,
        /ClaudeExit: claude exited 1 \(api_error\): Not logged in · Please run \/login/,
      );
      const json = await noemaCli([...args, "--json"], env, s.box.workspace);
      const out = JSON.parse(json.stdout);
      assert.match(out.error.message, /Not logged in · Please run \/login/);
      const state = JSON.parse(readFileSync(join(out.episode_dir, "state.json"), "utf8"));
      assert.deepEqual(state.outcomes.error, out.error, "the episode records the same reason");
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("a model server that refuses the key (401): the episode's error and the CLI say Claude Code's own reason", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const refused = { status: 401, type: "authentication_error", message: "invalid x-api-key" };
    const s = await base([{ error: refused }]);
    try {
      const args = ["run", "say hi", "--using", "claude-code", "--workspace", s.box.workspace, "--root", s.box.root];
      // Claude Code retries a refused request 10 times, backing off for minutes: here it gives up at the first.
      const r = await noemaCli([...args, "--json"], { ...s.env, CLAUDE_CODE_MAX_RETRIES: "0" }, s.box.workspace);
      assert.equal(r.code, 1, r.stderr);
      const out = JSON.parse(r.stdout);
      assert.ok(s.server.mainRequests().length > 0, "claude asked the model server");
      // Claude Code's own words for it, as its result says them, not just an exit code.
      assert.match(out.error.message, /^claude exited 1 \(api_error\): Invalid API key · Fix external API key$/);
      const state = JSON.parse(readFileSync(join(out.episode_dir, "state.json"), "utf8"));
      assert.deepEqual(state.outcomes.error, out.error, "the episode records the same reason");
      await assertSound(s, out.episode_dir);
    } finally {
      await s.server.close();
    }
  });

  test("garbage on the hook's stdin blocks the call (exit 2)", { timeout: REAL_AGENT_TIMEOUT_MS }, async () => {
    const s = await session([]);
    try {
      const r = await noemaCli(["hook", "claude-code", "--root", s.box.root], s.env, s.box.workspace, {
        input: "{not json",
      });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /^noema: stdin: not JSON/);
      assert.equal(r.stdout, "");
    } finally {
      await s.server.close();
    }
  });
});
