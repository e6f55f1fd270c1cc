// The real Codex CLI (node_modules/.bin/codex, codex-cli 0.169.0) governed by `noema hook codex`, offline: a scripted
// Responses API server on 127.0.0.1 plays the model (a `model_providers` entry with `wire_api = "responses"`), and
// noema's hook is registered in a fresh CODEX_HOME's hooks.json.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { CODEX_APPROVAL_NOTE, CODEX_EVENTS } from "../src/agents/codex/dialect.ts";
import { validate } from "../src/validate/validate.ts";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { type ResponsesTurn, startResponsesServer } from "./helpers/responses_server.ts";
import { tempDir } from "./helpers/tmp.ts";
import { runChild } from "./helpers/child.ts";
import { writeAgentPolicies } from "./helpers/policies.ts";
import { acts, assertFinished, events } from "./helpers/agent_episode.ts";

const tmp = tempDir("noema-codex-");
after(() => tmp.cleanup());
const CODEX = join(REPO, "node_modules", ".bin", "codex");
const HAVE_CODEX = (() => {
  try {
    return existsSync(CODEX) && readdirSync(join(REPO, "node_modules", "@openai")).some((d) => d.startsWith("codex-"));
  } catch {
    return false;
  }
})();
const skip = HAVE_CODEX ? false : "the codex binary for this platform is not installed (node_modules/@openai/codex-*)";

const policyDir = writeAgentPolicies(join(tmp.path, "policies"));

const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
let n = 0;

/** A fresh HOME (with CODEX_HOME holding config.toml and hooks.json), workspace and root for one test. */
function sandbox(baseUrl: string, policy: string | null) {
  const base = join(tmp.path, `t${++n}`);
  const dirs = {
    home: join(base, "home"),
    codexHome: join(base, "home", ".codex"),
    workspace: join(base, "ws"),
    // The hook's resident servers (Bun) listen here; the directory's removal at cleanup stops them.
    servers: join(base, "servers"),
  };
  for (const [k, d] of Object.entries(dirs)) if (k !== "servers") mkdirSync(d, { recursive: true }); // servers: 0700 by noema
  const root = join(base, "root");
  writeFileSync(
    join(dirs.codexHome, "config.toml"),
    [
      `model = "gpt-test"`,
      `model_provider = "scripted"`,
      `check_for_update_on_startup = false`,
      `[model_providers.scripted]`,
      `name = "scripted"`,
      `base_url = ${JSON.stringify(baseUrl)}`,
      `wire_api = "responses"`,
      `env_key = "SCRIPTED_API_KEY"`,
      ``,
    ].join("\n"),
  );
  if (policy === null) return { ...dirs, root: join(dirs.workspace, ".noema") }; // noema install-hooks registers it
  const hook = [...cliCommand(), "hook", "codex", "--root", root, "--policy", join(policyDir, policy)]
    .map(quote).join(" ");
  const command = `NOEMA_HOOK_SERVER_DIR=${quote(dirs.servers)} ${hook}`;
  const handler = { hooks: [{ type: "command", command, timeout: 60 }] };
  const hooks = Object.fromEntries(CODEX_EVENTS.map((e) => [e, [handler]]));
  writeFileSync(join(dirs.codexHome, "hooks.json"), JSON.stringify({ hooks }, null, 2));
  return { ...dirs, root };
}

/** Runs `codex exec` on `task` against the scripted model. */
function codexExec(box: ReturnType<typeof sandbox>, task: string) {
  const args = [
    "exec",
    "--skip-git-repo-check",
    "--dangerously-bypass-hook-trust",
    "--sandbox",
    "workspace-write",
    "--json",
    "-C",
    box.workspace,
    task,
  ];
  return runChild(CODEX, args, {
    cwd: box.workspace,
    timeoutMs: 90_000,
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: box.home,
      CODEX_HOME: box.codexHome,
      SCRIPTED_API_KEY: "test",
      NO_COLOR: "1",
      NOEMA_ROOT: "",
      NOEMA_HOOK_SERVER_DIR: box.servers,
    },
  });
}

async function session(
  script: ResponsesTurn[],
  policy: string | null,
  task: string,
  install?: (box: ReturnType<typeof sandbox>) => void,
) {
  const server = await startResponsesServer(script);
  try {
    const box = sandbox(server.url, policy);
    install?.(box);
    const r = await codexExec(box, task);
    assert.equal(r.code, 0, `codex exec: ${r.stderr}\n${r.stdout}`);
    const sessions = readdirSync(join(box.root, "sessions", "codex"));
    assert.equal(sessions.length, 1, `one codex session is indexed: ${sessions}`);
    const entry = JSON.parse(readFileSync(join(box.root, "sessions", "codex", sessions[0]), "utf8"));
    const dir = join(box.root, "episodes", entry.episode_id);
    return { server, box, dir, run: r };
  } finally {
    await server.close();
  }
}

const call = (call_id: string, cmd: string) => ({ call_id, arguments: { cmd } });

/** Real processes on a machine that may be loaded: far more than they need, far less than forever. */
const REAL_AGENT_TIMEOUT_MS = 90_000;

describe("noema hook codex (real Codex CLI, scripted model)", { skip }, () => {
  test("an allowed call runs and is recorded with its output; the episode validates and finishes", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await session(
      [{ calls: [call("call_a1", "echo hello-from-codex")] }, { text: "Done." }],
      "no-forbidden.ts",
      "say hello",
    );
    const [act] = acts(s.dir);
    assert.equal(act.payload.result_status, "ok");
    assert.equal(act.payload.input.command, "echo hello-from-codex");
    assert.match(JSON.stringify(act.payload.output), /hello-from-codex/);
    assert.match(s.server.toolOutputs().get("call_a1") ?? "", /hello-from-codex/);
    const summary = assertFinished(s.dir);
    assert.equal(summary.task, "say hello", "the prompt (UserPromptSubmit) is the episode's task");
  });

  test(
    "a vetoed call does not run, and the model receives noema's reason",
    { timeout: REAL_AGENT_TIMEOUT_MS },
    async () => {
      const s = await session(
        [{ calls: [call("call_v1", "touch forbidden.txt")] }, { text: "Understood." }],
        "no-forbidden.ts",
        "touch the forbidden file",
      );
      assert.equal(existsSync(join(s.box.workspace, "forbidden.txt")), false, "the vetoed command must not run");
      assert.match(
        s.server.toolOutputs().get("call_v1") ?? "",
        /blocked by PreToolUse hook: noema \(NoForbidden[^)]*\): forbidden files stay untouched/,
      );
      assert.ok(events(s.dir).some((e) => e.phase === "governance" && e.payload.decision === "veto"));
      assert.deepEqual(acts(s.dir).map((a) => a.payload.step_status), ["vetoed"]);
      assertFinished(s.dir);
    },
  );

  test("review: a block withholds the result (the model gets the reason); a redaction cannot, recorded as seen", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    writeFileSync(
      join(policyDir, "review-block.ts"),
      `export default { name: "Tripwire", version: "1.0", review(s) {
        if (s.result.excerpt.includes("INJECTED")) return { kind: "block", advice: "the output carries instructions" };
        if (s.result.excerpt.includes("SECRET")) return { kind: "redact", patterns: ["SECRET\\w*"], advice: "masked" };
      } };`,
    );
    const s = await session(
      [{ calls: [call("call_r1", "echo INJECTED-words"), call("call_r2", "echo SECRETvalue")] }, { text: "Done." }],
      "review-block.ts",
      "check the outputs",
    );
    const told = s.server.toolOutputs();
    assert.match(
      told.get("call_r1") ?? "",
      /noema \(Tripwire@1\.0\) withheld this result: the output carries instructions/,
    );
    assert.ok(!(told.get("call_r1") ?? "").includes("INJECTED-words"), "Codex gives the reason in place of the output");
    const reviews = events(s.dir).filter((e) => e.phase === "governance" && e.payload.stage === "review");
    const byDecision = Object.fromEntries(reviews.map((e) => [e.payload.decision, e.payload.agent_saw]));
    assert.deepEqual(byDecision, { block: "blocked", redact: "original" });
    assert.match(told.get("call_r2") ?? "", /SECRETvalue/, "Codex cannot replace a result: the model saw it");
    assertFinished(s.dir);
  });

  test(
    "an intervention rewrites the command that actually runs (updatedInput)",
    { timeout: REAL_AGENT_TIMEOUT_MS },
    async () => {
      const s = await session(
        [{ calls: [call("call_i1", "echo original > said.txt")] }, { text: "Done." }],
        "rewrite.ts",
        "write a file",
      );
      assert.equal(readFileSync(join(s.box.workspace, "said.txt"), "utf8").trim(), "governed");
      const [act] = acts(s.dir);
      assert.equal(act.payload.input.command, "echo governed > said.txt");
      assert.equal(act.payload.result_status, "ok");
      assertFinished(s.dir);
    },
  );

  test("a call that needs approval is blocked (Codex cannot ask) and the model is told why", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const s = await session(
      [{ calls: [call("call_d1", "echo deployed > deploy.txt")] }, { text: "Waiting for approval." }],
      "gate.ts",
      "deploy",
    );
    assert.equal(existsSync(join(s.box.workspace, "deploy.txt")), false, "the call must not run");
    const told = s.server.toolOutputs().get("call_d1") ?? "";
    assert.match(told, /deploys need a human/);
    assert.ok(told.includes(CODEX_APPROVAL_NOTE), told);
    assert.deepEqual(validate(s.dir).problems, []);
  });

  test("after a call blocked for approval, the session goes on: the next call runs; the blocked one is vetoed", {
    timeout: REAL_AGENT_TIMEOUT_MS,
    skip,
  }, async () => {
    const s = await session(
      [
        { calls: [call("call_g1", "echo deployed > deploy.txt")] },
        { calls: [call("call_g2", "echo after > after.txt")] },
        { text: "Deploy waits; the rest is done." },
      ],
      "gate.ts",
      "deploy, then the rest",
    );
    assert.equal(existsSync(join(s.box.workspace, "deploy.txt")), false, "the call must not run");
    assert.equal(readFileSync(join(s.box.workspace, "after.txt"), "utf8").trim(), "after");
    assert.doesNotMatch(s.server.toolOutputs().get("call_g2") ?? "", /waiting for a human|blocked/);
    const steps = acts(s.dir).map((a) => [a.payload.input.command, a.payload.step_status]);
    assert.deepEqual(steps, [["echo deployed > deploy.txt", "vetoed"], ["echo after > after.txt", "done"]]);
    assert.ok(!events(s.dir).some((e) => e.event_type === "run.checkpoint"), "no checkpoint nobody can decide");
    assertFinished(s.dir);
  });

  test("noema install-hooks codex --user registers a hook the real Codex runs; --uninstall removes it", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    let hooksFile = "";
    const s = await session(
      [{ calls: [call("call_u1", "touch forbidden.txt")] }, { text: "Understood." }],
      null,
      "touch it",
      (box) => {
        const env = { HOME: box.home, CODEX_HOME: box.codexHome };
        const args = ["install-hooks", "codex", "--user", "--policy", join(policyDir, "no-forbidden.ts")];
        const r = cli(args, { env });
        assert.equal(r.code, 0, r.stderr);
        hooksFile = join(box.codexHome, "hooks.json");
        assert.match(r.stdout, /noema hook codex registered for UserPromptSubmit, PreToolUse, PostToolUse, Stop/);
        assert.match(cli(args, { env }).stdout, /already installed/);
      },
    );
    assert.equal(existsSync(join(s.box.workspace, "forbidden.txt")), false);
    assert.match(s.server.toolOutputs().get("call_u1") ?? "", /forbidden files stay untouched/);
    assertFinished(s.dir);
    const env = { HOME: s.box.home, CODEX_HOME: s.box.codexHome };
    const r = cli(["install-hooks", "codex", "--user", "--uninstall"], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(existsSync(hooksFile), false, "a hooks file holding only noema's hooks is removed with them");
  });
});
