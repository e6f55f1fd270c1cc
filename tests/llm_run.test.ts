/**
 * `noema run` with `using: "llm"` end to end, through the CLI: a task file
 * with provider openai-compatible pointing at the scripted server, a policy
 * file, a workspace. Every tool call is in the act step with its verdict, the
 * veto reaches the model, an escape is refused, the answer is recorded, the
 * episode validates, and `noema run --replay ID` reproduces it with the
 * server stopped (and reports a divergence when a new policy changes what the
 * model would be sent).
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { checkSummary } from "../src/schema/summary.ts";
import { cliCommand, REPO } from "./helpers/cli.ts";
import { startOpenAiServer, toolMessages } from "./helpers/openai_server.ts";
import { tempDir } from "./helpers/tmp.ts";
import { osUserName } from "../src/runtime/os_user.ts";
import { type ChildResult, runChild } from "./helpers/child.ts";

const tmp = tempDir("noema-llm-run-");
const ANSWER = "The greeting now says hello noema.";
after(() => tmp.cleanup());

function run(args: string[], onSpawn?: (pid: number) => void): Promise<ChildResult> {
  const [cmd, ...argv] = [...cliCommand(), ...args];
  const env = { ...process.env, NO_COLOR: "1" } as Record<string, string>;
  delete env.NOEMA_ROOT;
  delete env.NOEMA_SIGNING_KEY;
  return runChild(cmd, argv, { cwd: REPO, env, timeoutMs: 60_000, onSpawn });
}

/**
 * Whether the episode core is present: then each tool call is its own act
 * step (with direction, action candidate and governance events); without it
 * the agent runs in one act step that lists the calls in its output.
 */
const CORE = existsSync(join(REPO, "src", "runtime", "core", "episode_core.ts"));

/** Each governed call as `tool:allowed|vetoed`, from either shape. */
function calls(dir: string): string[] {
  if (!CORE) {
    const out = agentAct(dir).payload.output as { tool_calls: { tool: string; verdict: string }[] };
    return out.tool_calls.map((c) => `${c.tool}:${c.verdict === "deny" ? "vetoed" : "allowed"}`);
  }
  const evs = events(dir);
  const toolOf = new Map(
    evs.filter((e) => e.phase === "action_candidate").map((e) => [
      e.payload.action_candidate_id,
      (e.payload.payload as { tool: string }).tool,
    ]),
  );
  return evs.filter((e) => e.phase === "governance").map((e) =>
    `${toolOf.get(e.payload.action_candidate_id)}:${e.payload.decision === "veto" ? "vetoed" : "allowed"}`
  );
}

/** The error the agent ended with (type and message), from either shape. */
function agentError(dir: string): string {
  if (!CORE) {
    const e = agentAct(dir).payload.error as { type: string; message: string };
    return `${e.type}: ${e.message}`;
  }
  return readFileSync(join(dir, "events.jsonl"), "utf8");
}

/** The act event of the agent's act step (the one whose output has tool_calls). */
function agentAct(dir: string) {
  return events(dir).find((e) =>
    e.phase === "act" && typeof e.payload.output === "object" && e.payload.output !== null &&
    "tool_calls" in e.payload.output
  )!;
}

/** `noema validate DIR` passes. */
async function validates(dir: string): Promise<void> {
  const v = await run(["validate", dir]);
  assert.equal(v.code, 0, v.stdout + v.stderr);
}

function events(dir: string): { phase: string; payload: Record<string, unknown> }[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

describe("noema run --using llm", () => {
  const root = join(tmp.path, "root"), ws = join(tmp.path, "ws");
  mkdirSync(ws);
  const original = "export const greeting = 'hello world';\n";
  writeFileSync(join(ws, "app.ts"), original);
  writeFileSync(join(tmp.path, "outside.txt"), "OUTSIDE SECRET\n");
  const policy = tmp.file(
    "no-rm.ts",
    `export default { name: "NoRm", version: "1.0", advise(s) {
      if (String(s.action.input.command ?? "").includes("rm -rf")) return { kind: "veto", advice: "no rm -rf in this repo" };
    } };\n`,
  );
  /** Writes need a human's approval. */
  const gate = tmp.file(
    "gate.ts",
    `export default { name: "Gate", version: "1.0", advise(s) {
      if (s.action.tool === "write_file") return { kind: "veto", advice: "writes need a human", requires_approval: true };
    } };\n`,
  );
  /** `noema run TASK --json` with the scripted model at `url`, in `workspace`, under {@link gate}. */
  const gated = (task: string, url: string, workspace = ws) =>
    run([
      ...["run", task, "--model", "openai-compatible:m", "--base-url", url, "--workspace", workspace],
      ...["--policy", gate, "--root", root, "--json"],
    ]);
  const strict = tmp.file(
    "no-read.ts",
    `export default { name: "NoRead", version: "1.0", advise(s) {
      if (s.action.tool === "read_file") return { kind: "veto", advice: "reading is off" };
    } };\n`,
  );
  let episode = "";

  it("runs a governed multi-turn loop and records it", async () => {
    const server = await startOpenAiServer([
      {
        tool_calls: [
          { id: "t1", name: "read_file", arguments: '{"path":"app.ts"}' },
          { id: "t2", name: "shell", arguments: '{"command":"rm -rf build"}' },
          { id: "t3", name: "read_file", arguments: '{"path":"../outside.txt"}' },
        ],
      },
      {
        tool_calls: [{
          id: "t4",
          name: "edit_file",
          arguments: '{"path":"app.ts","old_string":"hello world","new_string":"hello noema"}',
        }],
      },
      { tool_calls: [{ id: "t5", name: "shell", arguments: '{"command":"cat app.ts"}' }] },
      { text: ANSWER },
    ]);
    const task = tmp.file(
      "task.jsonc",
      JSON.stringify({
        task: "Make the greeting say hello noema",
        using: "llm",
        workspace: ws,
        policies: [policy],
        adapter: {
          provider: "openai-compatible",
          base_url: server.url,
          model: "scripted",
          api_key_env: "SCRIPTED_KEY",
        },
      }),
    );
    process.env.SCRIPTED_KEY = "sk-test-secret-value-123";
    try {
      const r = await run(["run", task, "--root", root, "--json"]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const out = JSON.parse(r.stdout);
      episode = out.episode_id;
      const dir = out.episode_dir;
      assert.equal(out.message, ANSWER, "--json has the final answer");
      assert.equal(server.requests.length, 4);
      assert.match(String(server.headers[0].authorization), /sk-test-secret-value-123/);
      const second = toolMessages(server.requests[1]);
      assert.match(second.get("t2")!, /no rm -rf in this repo/);
      assert.match(second.get("t3")!, /outside the workspace/);
      assert.doesNotMatch(JSON.stringify(server.requests), /OUTSIDE SECRET/);
      assert.deepEqual(calls(dir), [
        "read_file:allowed",
        "shell:vetoed",
        "read_file:allowed",
        "edit_file:allowed",
        "shell:allowed",
      ]);
      if (!CORE) {
        const output = agentAct(dir).payload.output as { tool_calls: { status: string }[]; answer: string };
        assert.deepEqual(output.tool_calls.map((c) => c.status), ["ok", "skipped", "error", "ok", "ok"]);
        assert.equal(output.answer, ANSWER);
        const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
        assert.ok(
          state.memory.facts.some((f: { key: string; value: unknown }) => f.key === "llm.answer" && f.value === ANSWER),
        );
      }
      assert.match(readFileSync(join(dir, "events.jsonl"), "utf8"), new RegExp(ANSWER));
      // Token usage is in the summary metrics (4 scripted responses of 11 input and 7 output tokens each).
      const summary = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
      const { models, ...tokens } = summary.metrics.tokens;
      assert.deepEqual(tokens, { input: 44, output: 28, total: 72, model_calls: 4, cache_write: 0, cache_read: 0 });
      // Per model, priced with the same function as a Claude Code transcript's turns: an unknown model has no price.
      const [model] = Object.keys(models);
      assert.equal(models[model].model_calls, 4);
      assert.equal(summary.metrics.cost.usd, null);
      assert.match(summary.metrics.cost.reason, new RegExp(`no price for "${model}"`));
      // Each call's step plans the call's tool, which its action records: every planned tool was used.
      assert.equal(summary.insight.metrics.tool_coverage, 1);
      const planned = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")).plan.steps;
      assert.deepEqual(planned.map((s: { inputs?: { tool?: string } }) => s.inputs?.tool), [
        "read_file",
        "shell",
        "read_file",
        "edit_file",
        "shell",
      ]);
      assert.equal(existsSync(join(dir, "llm", "usage.json")), false);
      assert.deepEqual(checkSummary(summary), []);
      const bad = checkSummary({ ...summary, metrics: { ...summary.metrics, tokens: { input: -1, output: 0 } } });
      assert.deepEqual(bad.map((p) => p.path).sort(), ["metrics.tokens.input", "metrics.tokens.total"]);
      const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
      assert.ok(
        manifest.files.some((f: { name: string; kind: string }) => f.name === "model.jsonl" && f.kind === "model"),
      );
      const log = readFileSync(join(dir, "model.jsonl"), "utf8");
      assert.equal(log.trim().split("\n").length, 4);
      const everything = readFileSync(join(dir, "events.jsonl"), "utf8") + log;
      assert.doesNotMatch(everything, /sk-test-secret-value-123/);
      assert.equal(readFileSync(join(ws, "app.ts"), "utf8"), "export const greeting = 'hello noema';\n");
      await validates(dir);
    } finally {
      delete process.env.SCRIPTED_KEY;
      await server.close();
    }
  });

  it("shows the final answer: under the result line of run, and in view", async () => {
    assert.ok(episode);
    writeFileSync(join(ws, "app.ts"), original);
    const r = await run(["run", "--replay", episode, "--root", root]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const lines = r.stdout.trimEnd().split("\n");
    assert.match(lines[0], /^ep_\S+ {2}ok {2}outcome=/);
    assert.equal(lines[1], `  ${ANSWER}`);
    assert.match(lines[2], /^ {2}view: noema view ep_/);
    const v = await run(["view", episode, "--root", root]);
    assert.equal(v.code, 0, v.stderr);
    assert.match(v.stdout, new RegExp(`\nAnswer\n  ${ANSWER}\n`));
    assert.doesNotMatch(v.stdout, /^ {2}message /m, "the answer is not repeated as the message line");
    assert.match(v.stdout, /^ {2}tokens +input 44 · output 28 · total 72 · 4 model calls$/m);
    const j = await run(["view", episode, "--root", root, "--json"]);
    assert.equal(JSON.parse(j.stdout).message, ANSWER);
    assert.equal(JSON.parse(j.stdout).answer, ANSWER);

    // A failed verification replaces the run's message, not the answer: both are shown.
    writeFileSync(join(ws, "app.ts"), original);
    const f = await run(["run", "--replay", episode, "--root", root, "--verify-command", "false", "--json"]);
    assert.equal(f.code, 1, f.stderr);
    const out = JSON.parse(f.stdout);
    assert.equal(out.answer, ANSWER);
    assert.match(out.message, /^Verification failed: /);
    const terminate = events(out.episode_dir).find((e) => e.phase === "terminate")!;
    assert.equal(terminate.payload.answer, ANSWER);
    const fv = await run(["view", out.episode_id, "--root", root]);
    assert.match(fv.stdout, new RegExp(`\nAnswer\n  ${ANSWER}\n`));
    assert.match(fv.stdout, /^ {2}message +Verification failed: /m);
  });

  it("a model that ends saying nothing: no answer shown, the message says so", async () => {
    const server = await startOpenAiServer([{ text: "  \n" }]);
    try {
      const args = ["--model", "openai-compatible:m", "--base-url", server.url, "--workspace", ws, "--root", root];
      const r = await run(["run", "say nothing", ...args]);
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const lines = r.stdout.trimEnd().split("\n");
      assert.match(lines[0], /^ep_\S+ {2}ok {2}outcome=/);
      assert.match(lines[1], /^ {2}view: noema view ep_/, "no blank answer line");
      const id = lines[0].split(" ")[0];
      const j = JSON.parse((await run(["view", id, "--root", root, "--json"])).stdout);
      assert.equal(j.answer, null);
      assert.equal(j.message, "The model ended without a final answer.");
      const v = await run(["view", id, "--root", root]);
      assert.doesNotMatch(v.stdout, /\nAnswer\n/);
      assert.match(v.stdout, /^ {2}message +The model ended without a final answer\.$/m);
    } finally {
      await server.close();
    }
  });

  it("--replay reproduces the episode with the server stopped", async () => {
    assert.ok(episode);
    writeFileSync(join(ws, "app.ts"), original);
    const r = await run(["run", "--replay", episode, "--root", root, "--json"]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const out = JSON.parse(r.stdout);
    assert.notEqual(out.episode_id, episode);
    const evs = events(out.episode_dir);
    assert.equal((evs[0].payload.tags as Record<string, unknown>).replay_of, episode);
    assert.match(readFileSync(join(out.episode_dir, "events.jsonl"), "utf8"), new RegExp(ANSWER));
    assert.deepEqual(calls(out.episode_dir), calls(join(root, "episodes", episode)));
    assert.equal(readFileSync(join(ws, "app.ts"), "utf8"), "export const greeting = 'hello noema';\n");
  });

  it("--replay stops with a divergence report when a new policy changes what the model is sent", async () => {
    writeFileSync(join(ws, "app.ts"), original);
    const r = await run(["run", "--replay", episode, "--root", root, "--policy", strict, "--json"]);
    assert.equal(r.code, 1, r.stderr + r.stdout);
    const out = JSON.parse(r.stdout);
    const error = agentError(out.episode_dir);
    assert.match(error, /ReplayDivergence/);
    assert.match(error, /model turn 2/);
    assert.match(error, /reading is off/);
  });

  it("--replay --dry-run executes no tool: recorded results, fresh verdicts, the workspace untouched (23.12)", async () => {
    assert.ok(episode);
    writeFileSync(join(ws, "app.ts"), original);
    // The recorded policies: the same calls and verdicts, the same answer; the edit_file call did not run.
    const same = await run(["run", "--replay", episode, "--dry-run", "--root", root, "--json"]);
    assert.equal(same.code, 0, same.stderr + same.stdout);
    assert.match(same.stderr, /dry run: the policies are consulted, no tool is executed/);
    const out = JSON.parse(same.stdout);
    assert.equal(out.answer, ANSWER);
    assert.deepEqual(calls(out.episode_dir), calls(join(root, "episodes", episode)));
    const tags = events(out.episode_dir)[0].payload.tags as Record<string, unknown>;
    assert.equal(tags.replay_of, episode);
    assert.equal(tags.replay_dry_run, "true");
    assert.equal(readFileSync(join(ws, "app.ts"), "utf8"), original, "the recorded edit was not executed");
    await validates(out.episode_dir);
    // What if a policy had refused `cat`? Its verdict is recorded; the replay diverges after it; nothing ran.
    const noCat = tmp.file(
      "no-cat.ts",
      `export default { name: "NoCat", version: "1.0", advise(s) {
        if (String(s.action.input.command ?? "").startsWith("cat ")) return { kind: "veto", advice: "no cat" };
      } };\n`,
    );
    const what = await run([
      ...["run", "--replay", episode, "--dry-run", "--policy", policy, "--policy", noCat, "--root", root, "--json"],
    ]);
    assert.equal(what.code, 1, what.stderr + what.stdout);
    const w = JSON.parse(what.stdout);
    assert.deepEqual(calls(w.episode_dir), [
      "read_file:allowed",
      "shell:vetoed",
      "read_file:allowed",
      "edit_file:allowed",
      "shell:vetoed",
    ]);
    assert.match(agentError(w.episode_dir), /ReplayDivergence[^]*model turn 4[^]*no cat/);
    assert.equal(readFileSync(join(ws, "app.ts"), "utf8"), original, "the dry run changed nothing");
    // --dry-run belongs to --replay.
    const alone = await run(["run", "hello", "--dry-run", "--root", root]);
    assert.equal(alone.code, 2, alone.stderr);
    assert.match(alone.stderr, /--dry-run goes with --replay EPISODE/);
  });

  it("an unreachable model server ends the run as an adapter error with complete, valid artifacts", async () => {
    const task = tmp.file(
      "down.jsonc",
      JSON.stringify({
        task: "anything",
        using: "llm",
        workspace: ws,
        adapter: { base_url: "http://127.0.0.1:9/v1", model: "m", max_retries: 0 },
      }),
    );
    const r = await run(["run", task, "--root", root, "--json"]);
    assert.equal(r.code, 1, r.stderr + r.stdout);
    const out = JSON.parse(r.stdout);
    const summary = JSON.parse(readFileSync(join(out.episode_dir, "summary.json"), "utf8"));
    assert.equal(summary.adapter_result, "error");
    assert.match(agentError(out.episode_dir), /LlmUnreachable[^]*127\.0\.0\.1:9/);
    const v = await run(["validate", out.episode_dir]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });

  it("--model without --using llm is a usage error; a bad adapter field is named", async () => {
    const a = await run(["run", "t", "--using", "shell", "--model", "ollama:x", "--root", root]);
    assert.equal(a.code, 2);
    assert.match(a.stderr, /--model and --base-url need --using llm/);
    const bad = tmp.file(
      "bad.jsonc",
      JSON.stringify({ task: "t", using: "llm", adapter: { model: "m", base_url: "http://x/v1", max_turns: 0 } }),
    );
    const c = await run(["run", bad, "--root", root]);
    assert.equal(c.code, 2);
    assert.match(c.stderr, /adapter\.max_turns/);
    assert.equal(c.stderr.trim().split("\n").length, 1, c.stderr);
    const d = await run(["run", "t", "--using", "llm", "--root", root]);
    assert.equal(d.code, 2);
    assert.equal(d.stderr.trim(), "noema: adapter.model: is required (e.g. --model ollama:qwen2.5-coder)");
    // A provider's missing API key is a usage error before anything is written, not a crashed episode.
    const fresh = join(tmp.path, "no-key-root");
    const [cmd, ...argv] = [...cliCommand(), "run", "t", "--model", "openai:gpt-4o", "--root", fresh];
    const env = { ...process.env, NO_COLOR: "1" } as Record<string, string>;
    delete env.OPENAI_API_KEY;
    delete env.NOEMA_ROOT;
    const k = await runChild(cmd, argv, { cwd: REPO, env, timeoutMs: 60_000 });
    assert.equal(k.code, 2, k.stderr);
    assert.equal(
      k.stderr.trim(),
      "noema: adapter.api_key_env: OPENAI_API_KEY is not set (the openai provider needs an API key)",
    );
    assert.equal(existsSync(fresh), false, "nothing is written");
  });

  it("requires_approval pauses the episode (exit 4); approve --resume runs the call and continues the same conversation", async () => {
    const server = await startOpenAiServer([
      { tool_calls: [{ id: "g1", name: "list_dir", arguments: "{}" }] },
      { tool_calls: [{ id: "g2", name: "write_file", arguments: '{"path":"approved.txt","content":"yes"}' }] },
      { text: "wrote approved.txt" },
    ]);
    try {
      const r = await gated("write a file", server.url);
      assert.equal(r.code, 4, r.stderr + r.stdout);
      const paused = JSON.parse(r.stdout);
      assert.equal(paused.status, "pending");
      assert.equal(paused.pending.reason, "writes need a human");
      assert.equal(existsSync(join(ws, "approved.txt")), false);
      assert.ok(existsSync(join(paused.episode_dir, "llm", "conversation.json")));
      const a = await run(["approve", paused.episode_id, "--resume", "--root", root, "--json"]);
      assert.equal(a.code, 0, a.stderr + a.stdout);
      assert.equal(readFileSync(join(ws, "approved.txt"), "utf8"), "yes");
      assert.equal(server.requests.length, 3);
      const third = toolMessages(server.requests[2]);
      assert.ok(third.has("g1") && third.has("g2"), "the resumed request carries the whole conversation");
      assert.match(readFileSync(join(paused.episode_dir, "events.jsonl"), "utf8"), /wrote approved\.txt/);
      const acts = events(paused.episode_dir).filter((e) => e.phase === "act").map((e) => e.payload.tool);
      assert.deepEqual(acts, ["list_dir", "write_file"]);
      await validates(paused.episode_dir);
    } finally {
      await server.close();
    }
  });

  it(
    "a run paused for approval numbers its model turns on; its replay pauses at the same call and goes on from there",
    {
      timeout: 60_000,
    },
    async () => {
      const gate = tmp.file(
        "gate-replay.ts",
        `export default { name: "Gate", version: "1.0", advise(s) {
        if (s.action.tool === "write_file") return { kind: "veto", advice: "writes need a human", requires_approval: true };
      } };\n`,
      );
      const server = await startOpenAiServer([
        { tool_calls: [{ id: "p1", name: "list_dir", arguments: "{}" }] },
        { tool_calls: [{ id: "p2", name: "write_file", arguments: '{"path":"paused.txt","content":"yes"}' }] },
        { tool_calls: [{ id: "p3", name: "read_file", arguments: '{"path":"paused.txt"}' }] },
        { text: "wrote and read paused.txt" },
      ]);
      const turnsOf = (dir: string) =>
        readFileSync(join(dir, "model.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l).turn);
      const args = ["--workspace", ws, "--policy", gate, "--root", root, "--json"];
      let source: string;
      try {
        const r = await run([
          "run",
          "write and read",
          "--model",
          "openai-compatible:m",
          "--base-url",
          server.url,
          ...args,
        ]);
        assert.equal(r.code, 4, r.stderr + r.stdout);
        source = JSON.parse(r.stdout).episode_dir;
        const a = await run(["approve", JSON.parse(r.stdout).episode_id, "--resume", "--root", root, "--json"]);
        assert.equal(a.code, 0, a.stderr + a.stdout);
        assert.equal(server.requests.length, 4);
      } finally {
        await server.close();
      }
      assert.deepEqual(turnsOf(source), [1, 2, 3, 4]);
      // The replay, with the server stopped: the policy pauses it at the same call; approved, it goes on with turn 3.
      rmSync(join(ws, "paused.txt"));
      const replay = await run(["run", "--replay", source, ...args]);
      assert.equal(replay.code, 4, replay.stderr + replay.stdout);
      const paused = JSON.parse(replay.stdout);
      const done = await run(["approve", paused.episode_id, "--resume", "--root", root, "--json"]);
      assert.equal(done.code, 0, done.stderr + done.stdout);
      assert.equal(JSON.parse(done.stdout).answer, "wrote and read paused.txt");
      assert.equal(readFileSync(join(ws, "paused.txt"), "utf8"), "yes");
      assert.deepEqual(turnsOf(paused.episode_dir), [1, 2, 3, 4]);
      const acts = events(paused.episode_dir).filter((e) => e.phase === "act").map((e) => e.payload.tool);
      assert.deepEqual(acts, ["list_dir", "write_file", "read_file"]);
    },
  );

  it("Ctrl-C while a shell call runs stops the command; the call is recorded as failed, the run as interrupted (130)", {
    timeout: 60_000,
  }, async () => {
    // The command names this process (the same file may run under the other runtime at the same time).
    const sleep = `sleep 240.${process.pid}`;
    const server = await startOpenAiServer([
      { tool_calls: [{ id: "s1", name: "shell", arguments: JSON.stringify({ command: sleep }) }] },
      { text: "slept" },
    ]);
    const sigRoot = join(tmp.path, "sigint-root");
    try {
      let pid = 0;
      const t0 = Date.now();
      const done = run([
        "run",
        "wait",
        ...["--model", "openai-compatible:m", "--base-url", server.url, "--workspace", ws, "--root", sigRoot, "--json"],
      ], (p) => (pid = p));
      // The decision is on disk before the call runs: once the governance event is there, `sleep 30` is starting.
      const governed = () => {
        const dir = join(sigRoot, "episodes");
        if (!existsSync(dir)) return false;
        return readdirSync(dir).some((d) => {
          const f = join(dir, d, "events.jsonl");
          return existsSync(f) && readFileSync(f, "utf8").includes('"phase":"governance"');
        });
      };
      while (!governed()) {
        if (Date.now() - t0 > 30_000) assert.fail("the call was never governed");
        await new Promise((r) => setTimeout(r, 50));
      }
      await new Promise((r) => setTimeout(r, 500));
      process.kill(pid, "SIGINT");
      const r = await done;
      assert.equal(r.code, 130, r.stderr + r.stdout);
      // The command was stopped, not waited for (4 minutes) nor left running.
      for (const t1 = Date.now(); spawnSync("pgrep", ["-f", sleep]).status !== 1;) {
        if (Date.now() - t1 > 30_000) assert.fail("the interrupted command still runs");
        await new Promise((r) => setTimeout(r, 100));
      }
      const out = JSON.parse(r.stdout);
      assert.deepEqual(out.error, { type: "Aborted", message: "the run was interrupted" });
      const act = events(out.episode_dir).filter((e) => e.phase === "act");
      assert.equal(act.length, 1);
      assert.equal(act[0].payload.result_status, "error");
      assert.equal(act[0].payload.step_status, "failed");
      assert.equal((act[0].payload.error as { type: string }).type, "Aborted");
      await validates(out.episode_dir);
    } finally {
      await server.close();
    }
  });

  it("a pause holds back the later calls of its turn: not proposed, not run, the model told to call them again", {
    timeout: 60_000,
  }, async () => {
    const heldWs = join(tmp.path, "held-ws");
    mkdirSync(heldWs);
    const server = await startOpenAiServer([
      {
        tool_calls: [
          { id: "h1", name: "write_file", arguments: '{"path":"one.txt","content":"1"}' },
          { id: "h2", name: "write_file", arguments: '{"path":"two.txt","content":"2"}' },
          { id: "h3", name: "list_dir", arguments: "{}" },
        ],
      },
      { tool_calls: [{ id: "h4", name: "write_file", arguments: '{"path":"two.txt","content":"2"}' }] },
      { text: "wrote both" },
    ]);
    try {
      const r = await gated("write two files", server.url, heldWs);
      assert.equal(r.code, 4, r.stderr + r.stdout);
      const paused = JSON.parse(r.stdout);
      assert.equal(paused.status, "pending");
      const first = await run(["approve", paused.episode_id, "--resume", "--root", root, "--json"]);
      assert.equal(first.code, 4, first.stderr + first.stdout);
      assert.equal(readFileSync(join(heldWs, "one.txt"), "utf8"), "1");
      assert.equal(existsSync(join(heldWs, "two.txt")), false);
      const told = toolMessages(server.requests[1]);
      for (const id of ["h2", "h3"]) {
        assert.match(told.get(id)!, /not run: the episode is waiting for a human to approve write_file \(step-1\)/);
      }
      const second = await run(["approve", paused.episode_id, "--resume", "--root", root, "--json"]);
      assert.equal(second.code, 0, second.stderr + second.stdout);
      assert.equal(JSON.parse(second.stdout).answer, "wrote both");
      assert.equal(readFileSync(join(heldWs, "two.txt"), "utf8"), "2");
      const acts = events(paused.episode_dir).filter((e) => e.phase === "act").map((e) => e.payload.input_excerpt);
      assert.equal(acts.length, 2, "the held calls were neither proposed nor run");
      const state = JSON.parse(readFileSync(join(paused.episode_dir, "state.json"), "utf8"));
      assert.deepEqual(state.plan.steps.map((s: { status: string }) => s.status), ["done", "done"]);
      await validates(paused.episode_dir);
    } finally {
      await server.close();
    }
  });

  it("the calls of a turn decided before the one that asks run first; then the episode pauses, its checkpoint last", {
    timeout: 60_000,
  }, async () => {
    const afterWs = join(tmp.path, "after-ws");
    mkdirSync(afterWs);
    writeFileSync(join(afterWs, "seen.txt"), "seen\n");
    const server = await startOpenAiServer([
      {
        tool_calls: [
          { id: "f1", name: "read_file", arguments: '{"path":"seen.txt"}' },
          { id: "f2", name: "write_file", arguments: '{"path":"after.txt","content":"a"}' },
          { id: "f3", name: "list_dir", arguments: "{}" },
        ],
      },
      { text: "read, wrote, and will list later" },
    ]);
    try {
      const r = await gated("read then write", server.url, afterWs);
      assert.equal(r.code, 4, r.stderr + r.stdout);
      const paused = JSON.parse(r.stdout);
      const evs = events(paused.episode_dir);
      assert.equal(evs.at(-1)!.phase, "runtime");
      assert.equal((evs.at(-1) as { event_type?: string }).event_type, "run.checkpoint");
      assert.deepEqual(evs.filter((e) => e.phase === "act").map((e) => e.payload.tool), ["read_file"]);
      const done = await run(["approve", paused.episode_id, "--resume", "--root", root, "--json"]);
      assert.equal(done.code, 0, done.stderr + done.stdout);
      assert.equal(readFileSync(join(afterWs, "after.txt"), "utf8"), "a");
      const told = toolMessages(server.requests[1]);
      assert.match(told.get("f1")!, /seen/);
      assert.match(told.get("f2")!, /wrote 1 bytes/);
      assert.match(told.get("f3")!, /not run: the episode is waiting for a human to approve write_file \(step-2\)/);
      const state = JSON.parse(readFileSync(join(paused.episode_dir, "state.json"), "utf8"));
      assert.deepEqual(state.plan.steps.map((s: { status: string }) => s.status), ["done", "done"]);
      await validates(paused.episode_dir);
    } finally {
      await server.close();
    }
  });

  it("--continue picks up the conversation a failure stopped, in a new episode; a finished one is refused", {
    timeout: 60_000,
  }, async () => {
    const server = await startOpenAiServer([
      { tool_calls: [{ id: "n1", name: "list_dir", arguments: "{}" }] },
      { status: 503, body: { error: { message: "overloaded" } } },
      { text: "listed, after the outage" },
    ]);
    try {
      const adapter = { provider: "openai-compatible", base_url: server.url, model: "m", max_retries: 0 };
      const file = tmp.file(
        "continue.jsonc",
        JSON.stringify({ task: "list it", using: "llm", workspace: ws, adapter }),
      );
      const r = await run(["run", file, "--root", root, "--json"]);
      assert.equal(r.code, 1, r.stderr + r.stdout);
      const failed = JSON.parse(r.stdout);
      assert.equal(failed.error.type, "LlmServerError");
      const c = await run(["run", "--continue", failed.episode_id, "--root", root, "--json"]);
      assert.equal(c.code, 0, c.stderr + c.stdout);
      const out = JSON.parse(c.stdout);
      assert.notEqual(out.episode_id, failed.episode_id);
      assert.equal(out.answer, "listed, after the outage");
      // The continued conversation: the task and the list_dir call with its result, sent again as they were.
      assert.ok(toolMessages(server.requests[2]).has("n1"), JSON.stringify(server.requests[2]));
      assert.deepEqual(server.requests[2].messages, server.requests[1].messages);
      const start = events(out.episode_dir)[0];
      assert.equal((start.payload.tags as Record<string, unknown>).continues, failed.episode_id);
      assert.equal(start.payload.task, "list it");
      await validates(out.episode_dir);
      const again = await run(["run", "--continue", out.episode_id, "--root", root]);
      assert.equal(again.code, 2, again.stderr);
      assert.match(again.stderr, /--continue .*: it ended ok; only a run that a failure stopped .* can be continued/);
    } finally {
      await server.close();
    }
  });

  it(
    "a crashed (SIGKILLed) run: resume says how to end it, --abort seals it aborted with the crash, --continue picks it up",
    {
      timeout: 90_000,
    },
    async () => {
      const server = await startOpenAiServer([
        { tool_calls: [{ id: "k1", name: "list_dir", arguments: "{}" }] },
        { hang: true },
        { text: "listed, after the crash" },
      ]);
      try {
        const adapter = { provider: "openai-compatible", base_url: server.url, model: "m", max_retries: 0 };
        const file = tmp.file("crash.jsonc", JSON.stringify({ task: "list it", using: "llm", workspace: ws, adapter }));
        let pid = 0;
        const running = run(["run", file, "--root", root, "--episode-id", "ep_llm_crashed", "--json"], (p) => pid = p);
        for (let i = 0; i < 600 && server.requests.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
        assert.equal(server.requests.length, 2, "the run waits on its second model call");
        process.kill(pid, "SIGKILL");
        await running;
        const dir = join(root, "episodes", "ep_llm_crashed");
        const events0 = readFileSync(join(dir, "events.jsonl"), "utf8");
        const r = await run(["resume", "ep_llm_crashed", "--root", root]);
        assert.equal(r.code, 6, r.stderr + r.stdout);
        assert.match(r.stderr, /stopped without ending .*noema resume ep_llm_crashed --abort.*noema run --continue/s);
        assert.equal(readFileSync(join(dir, "events.jsonl"), "utf8"), events0, "a refused resume writes nothing");
        const a = await run(["resume", "ep_llm_crashed", "--abort", "--root", root, "--json"]);
        assert.equal(a.code, 1, a.stderr + a.stdout);
        const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
        assert.equal(state.outcomes.status, "aborted");
        assert.equal(state.outcomes.error.type, "Aborted");
        assert.match(state.outcomes.error.message, /stopped without ending \(noema was killed or crashed\)/);
        await validates(dir);
        const c = await run(["run", "--continue", "ep_llm_crashed", "--root", root, "--json"]);
        assert.equal(c.code, 0, c.stderr + c.stdout);
        assert.equal(JSON.parse(c.stdout).answer, "listed, after the crash");
      } finally {
        await server.close();
      }
    },
  );

  it("--continue of a run stopped before its first model call (an MCP server down) starts it again from the task", async () => {
    const adapter = {
      base_url: "http://127.0.0.1:9/v1",
      model: "m",
      mcp_servers: { gone: { command: "/nonexistent/mcp-server" } },
    };
    const file = tmp.file(
      "mcp-gone.jsonc",
      JSON.stringify({ task: "use the tool", using: "llm", workspace: ws, adapter }),
    );
    const r = await run(["run", file, "--root", root, "--json"]);
    assert.equal(r.code, 1, r.stderr + r.stdout);
    const failed = JSON.parse(r.stdout);
    assert.equal(failed.error.type, "McpUnreachable");
    assert.equal(existsSync(join(failed.episode_dir, "llm", "conversation.json")), false);
    const human = await run(["run", file, "--root", root]);
    assert.match(human.stdout, /^ {2}continue: noema run --continue ep_\S+$/m, "run says how to pick it up");
    const c = await run(["run", "--continue", failed.episode_id, "--root", root, "--json"]);
    assert.equal(c.code, 1, c.stderr + c.stdout);
    const out = JSON.parse(c.stdout);
    assert.equal(out.error.type, "McpUnreachable", "the server is still down: the same end, in a new episode");
    const start = events(out.episode_dir)[0];
    assert.equal((start.payload.tags as Record<string, unknown>).continues, failed.episode_id);
    assert.equal(start.payload.task, "use the tool");
  });

  it("reject --resume records the rejected call as vetoed; the model reads who rejected it and why", async () => {
    const server = await startOpenAiServer([
      { tool_calls: [{ id: "j1", name: "write_file", arguments: '{"path":"rejected.txt","content":"no"}' }] },
      { text: "left it alone" },
    ]);
    try {
      const r = await gated("write a file", server.url);
      assert.equal(r.code, 4, r.stderr + r.stdout);
      const paused = JSON.parse(r.stdout);
      const j = await run([
        "reject",
        paused.episode_id,
        "--resume",
        "--by",
        "ana",
        "--note",
        "not in this repo",
        "--root",
        root,
        "--json",
      ]);
      assert.equal(j.code, 0, j.stderr + j.stdout);
      assert.equal(existsSync(join(ws, "rejected.txt")), false);
      assert.equal(
        toolMessages(server.requests[1]).get("j1"),
        `Rejected by ${osUserName()} (claimed: ana): not in this repo`,
      );
      const evs = events(paused.episode_dir);
      const resumed = evs.filter((e) => e.phase === "runtime" && e.payload.kind === "run.resume");
      assert.equal(resumed.length, 1);
      assert.equal((resumed[0].payload.approval as { decision: string }).decision, "rejected");
      const act = evs.filter((e) => e.phase === "act");
      assert.equal(act.length, 1);
      assert.equal(act[0].payload.step_status, "vetoed");
      assert.match(String(act[0].payload.outcome), /Rejected by \S+ \(claimed: ana\): not in this repo/);
      const state = JSON.parse(readFileSync(join(paused.episode_dir, "state.json"), "utf8"));
      assert.deepEqual(state.plan.steps.map((s: { status: string }) => s.status), ["vetoed"]);
      await validates(paused.episode_dir);
    } finally {
      await server.close();
    }
  });
  it("--replay of a damaged model.jsonl is a usage error naming the file and line; nothing is written", async () => {
    assert.ok(episode);
    const root2 = join(tmp.path, "damaged-root");
    cpSync(join(root, "episodes", episode), join(root2, "episodes", episode), { recursive: true });
    const log = join(root2, "episodes", episode, "model.jsonl");
    const lines = readFileSync(log, "utf8").split("\n");
    lines[1] = "{not json";
    writeFileSync(log, lines.join("\n"));
    const r = await run(["run", "--replay", episode, "--root", root2]);
    assert.equal(r.code, 2, r.stdout);
    const message = r.stderr.trim();
    assert.ok(message.startsWith(`noema: ${log}:2: invalid JSON: `), message);
    assert.ok(message.endsWith(": a damaged model log cannot be replayed"), message);
    assert.deepEqual(readdirSync(join(root2, "episodes")), [episode], "no new episode");
  });
});
