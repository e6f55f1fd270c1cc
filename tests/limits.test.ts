/**
 * Whatever noema writes, noema reads: the intake limits (task, tool input,
 * tool output, plan) and the line limit the writer keeps to, through the real
 * CLI. The tests lower the limits with `NOEMA_MAX_LINE_BYTES` and
 * `NOEMA_MAX_PLAN_STEPS` so their inputs stay small.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { JsonlAppender, LineTooLongError, readLines } from "../src/store/jsonl.ts";
import { boundedValue } from "../src/store/limits.ts";
import { sessionEpisode } from "../src/store/session_index.ts";
import process from "node:process";
import { runChild } from "./helpers/child.ts";
import { cli, cliCommand } from "./helpers/cli.ts";
import { startOpenAiServer, toolMessages } from "./helpers/openai_server.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-limits-");
after(() => tmp.cleanup());

/** 64 KiB lines: task, tool input and kept tool output 4 KiB, plan and kept action values 16 KiB. */
const SMALL = { NOEMA_MAX_LINE_BYTES: String(64 << 10) };

let n = 0;
function fresh(): string {
  return join(tmp.path, `root${++n}`);
}

function taskFile(value: unknown): string {
  const path = join(tmp.path, `task${++n}.json`);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

function onlyEpisode(root: string): string {
  const [id] = readdirSync(join(root, "episodes"));
  return join(root, "episodes", id);
}

// deno-lint-ignore no-explicit-any
function events(dir: string): Record<string, any>[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trimEnd().split("\n").map((l) => JSON.parse(l));
}

describe("the task", () => {
  test("a task over the limit (1 MiB) is a usage error and nothing is written", () => {
    const root = fresh();
    const file = taskFile({ task: "x".repeat((1 << 20) + 1) });
    const r = cli(["run", file, "--root", root]);
    assert.equal(r.code, 2, r.stderr);
    assert.ok(
      r.stderr.startsWith(`noema: ${file}: task: the task of 1048577 bytes is over noema's limit of 1048576 bytes`),
      `the task file is named: ${r.stderr}`,
    );
    assert.equal(r.stderr.trim().split("\n").length, 1);
    assert.equal(existsSync(root), false, "nothing is written");
    // Given on the command line, the task is refused the same way (no file to name).
    const arg = cli(["run", "x".repeat(5000), "--root", root], { env: SMALL });
    assert.equal(arg.code, 2, arg.stderr);
    assert.match(arg.stderr, /^noema: the task of 5000 bytes is over noema's limit of 4096 bytes/);
    assert.equal(existsSync(root), false, "nothing is written");
  });

  test("a task file larger than the line limit is refused before it is read, nothing written", () => {
    const root = fresh();
    const file = taskFile({ task: "small", tags: { pad: "p".repeat(70_000) } });
    const r = cli(["run", file, "--root", root], { env: SMALL });
    assert.equal(r.code, 2, r.stderr);
    assert.equal(
      r.stderr,
      `noema: ${file}: ${statSync(file).size} bytes, over noema's limit of 65536 bytes (NOEMA_MAX_LINE_BYTES)\n`,
    );
    assert.equal(existsSync(root), false);
  });

  test("a task at the limit is written and reads back", () => {
    const root = fresh();
    const task = "t".repeat(4096);
    const r = cli(["run", taskFile({ task }), "--root", root, "-q"], { env: SMALL });
    assert.equal(r.code, 0, r.stderr);
    const v = cli(["validate", r.stdout.trim(), "--root", root], { env: SMALL });
    assert.equal(v.code, 0, v.stdout + v.stderr);
    assert.equal(events(onlyEpisode(root))[0].payload.task, task);
  });
});

describe("the plan", () => {
  test("more steps than the limit is a usage error and nothing is written", () => {
    const root = fresh();
    const steps = Array.from({ length: 6 }, (_, i) => `act:step ${i}`);
    const r = cli(["run", taskFile({ task: "six", steps }), "--root", root], { env: { NOEMA_MAX_PLAN_STEPS: "5" } });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /6 steps, over noema's limit of 5 steps per plan \(NOEMA_MAX_PLAN_STEPS\)/);
    assert.equal(existsSync(root), false);
  });

  test("a plan larger than its byte limit is a usage error and nothing is written", () => {
    const root = fresh();
    const steps = Array.from({ length: 40 }, (_, i) => `act:${String(i).repeat(500)}`);
    const r = cli(["run", taskFile({ task: "big steps", steps }), "--root", root], { env: SMALL });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /over noema's limit of 16384 bytes per plan/);
    assert.equal(existsSync(root), false);
  });

  test("a plan at the step limit is written, validates, and view shows it", () => {
    const root = fresh();
    const steps = Array.from({ length: 5 }, (_, i) => `act:step ${i}`);
    const env = { ...SMALL, NOEMA_MAX_PLAN_STEPS: "5" };
    const r = cli(["run", taskFile({ task: "five", steps }), "--root", root, "-q"], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(cli(["validate", r.stdout.trim(), "--root", root], { env }).code, 0);
    const view = cli(["view", r.stdout.trim(), "--root", root], { env });
    assert.equal(view.code, 0, view.stderr);
    assert.doesNotMatch(view.stdout, /no plan event/);
    assert.match(view.stdout, /step 4/);
  });
});

describe("tool outputs", () => {
  test("an output over the limit is kept as its size, digest and excerpt; the episode reads back", () => {
    const root = fresh();
    const outputs = Array.from({ length: 6 }, (_, i) => `o${i}`.repeat(3000)); // 6000 bytes each
    const file = taskFile({
      task: "big outputs",
      using: "scripted",
      adapter: { results: outputs.map((output) => ({ status: "ok", output })) },
      steps: outputs.map((_, i) => `act:s${i}`),
    });
    const r = cli(["run", file, "--root", root, "-q"], { env: SMALL });
    assert.equal(r.code, 0, r.stderr);
    const dir = onlyEpisode(root);
    const acts = events(dir).filter((e) => e.phase === "act");
    assert.equal(acts.length, 6);
    acts.forEach((e, i) => {
      const o = e.payload.output;
      assert.equal(o.truncated, true);
      assert.equal(o.bytes, 6000);
      assert.equal(o.sha256, `sha256:${createHash("sha256").update(outputs[i]).digest("hex")}`);
      assert.equal(o.excerpt, outputs[i].slice(0, 2000));
    });
    const v = cli(["validate", dir], { env: SMALL });
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });

  test("state.json keeps action values whole up to their budget, then digests: the last projection fits a line", () => {
    const root = fresh();
    // 3000 bytes each: under the 4 KiB output limit, over the 16 KiB budget of state.json after five.
    const outputs = Array.from({ length: 12 }, (_, i) => `${i % 10}`.repeat(3000));
    const file = taskFile({
      task: "many outputs",
      using: "scripted",
      adapter: { results: outputs.map((output) => ({ status: "ok", output })) },
      steps: outputs.map((_, i) => `act:s${i}`),
    });
    const r = cli(["run", file, "--root", root, "-q"], { env: SMALL });
    assert.equal(r.code, 0, r.stderr);
    const dir = onlyEpisode(root);
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
    const kept = state.outcomes.actions.map((a: { output: unknown }) => typeof a.output === "string");
    assert.deepEqual(kept, [true, true, true, true, true, false, false, false, false, false, false, false]);
    assert.equal(
      state.outcomes.actions[11].output.sha256,
      `sha256:${createHash("sha256").update(outputs[11]).digest("hex")}`,
    );
    assert.equal(
      events(dir).filter((e) => e.phase === "act")[11].payload.output,
      outputs[11],
      "the act event keeps it",
    );
    for (const l of readLines(join(dir, "events.jsonl"))) assert.ok(l.bytes <= 64 << 10, `line ${l.line}: ${l.bytes}`);
    assert.equal(cli(["validate", dir], { env: SMALL }).code, 0);
  });
});

describe("JSON artifacts", () => {
  test("one over 16 lines (planted, sparse) is reported too large by every reader, never read", () => {
    const root = fresh();
    const run = cli(["run", "hello", "--root", root, "-q"]);
    assert.equal(run.code, 0, run.stderr);
    const dir = onlyEpisode(root), id = run.stdout.trim();
    // With 64 KiB lines the limit is 1 MiB: a 4 MiB file with one unfinished string is over it (and sparse).
    const env = { NOEMA_MAX_LINE_BYTES: String(64 * 1024) };
    const plant = (name: string) => {
      writeFileSync(join(dir, name), '{"a":"');
      truncateSync(join(dir, name), 4 << 20);
    };
    const saved = readFileSync(join(dir, "state.json"));
    plant("state.json");
    const tooLarge = /state\.json: 4194304 bytes, over noema's limit of 1048576 bytes for a JSON artifact/;
    const list = cli(["list", "--root", root], { env });
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, tooLarge);
    const v = cli(["validate", id, "--root", root], { env });
    assert.equal(v.code, 1);
    assert.match(v.stdout, /state\.json: file\.json: 4194304 bytes, over noema's limit of 1048576 bytes/);
    writeFileSync(join(dir, "state.json"), saved);
    plant("summary.json");
    const summary = cli(["summary", id, "--root", root], { env });
    assert.equal(summary.code, 1);
    assert.match(summary.stderr, /summary\.json: 4194304 bytes, over noema's limit of 1048576 bytes/);
  });
});

describe("tool inputs (hook)", () => {
  test("a call whose input is over the limit is refused (exit 2); the episode stays valid", () => {
    const root = fresh();
    const call = (id: string, command: string) =>
      JSON.stringify({
        session_id: "s-limits",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command },
        tool_use_id: id,
        cwd: tmp.path,
      });
    const env = { ...SMALL, NOEMA_HOOK_SERVER: "0" };
    const big = cli(["hook", "claude-code", "--root", root], { env, input: call("t1", `echo ${"y".repeat(5000)}`) });
    assert.equal(big.code, 2, big.stderr);
    assert.match(big.stderr, /the Bash call's input of 5019 bytes is over noema's limit of 4096 bytes/);
    const small = cli(["hook", "claude-code", "--root", root], { env, input: call("t2", "echo ok") });
    assert.equal(small.code, 0, small.stderr);
    const dir = onlyEpisode(root);
    const proposed = events(dir).filter((e) => e.phase === "action_candidate");
    assert.equal(proposed.length, 1, "only the call within the limit is proposed");
    assert.match(JSON.stringify(proposed[0].payload), /echo ok/);
    assert.equal(cli(["validate", dir], { env }).code, 0);
  });
});

describe("an oversized first call (hook)", () => {
  test("refused before anything is created: no episode, no session entry; the next call starts the episode", () => {
    const root = fresh();
    const env = { ...SMALL, NOEMA_HOOK_SERVER: "0" };
    const call = (id: string, command: string) =>
      JSON.stringify({
        session_id: "s-first-big",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command },
        tool_use_id: id,
        cwd: tmp.path,
      });
    const big = cli(["hook", "claude-code", "--root", root], { env, input: call("t1", `echo ${"y".repeat(5000)}`) });
    assert.equal(big.code, 2, big.stderr);
    assert.equal(big.stdout, "");
    assert.match(big.stderr, /^noema: the Bash call's input of 5019 bytes is over noema's limit of 4096 bytes/);
    const entries = (sub: string) =>
      existsSync(join(root, sub)) ? readdirSync(join(root, sub), { recursive: true }) : [];
    assert.deepEqual(entries("episodes"), [], "no episode directory");
    assert.deepEqual(entries("sessions").filter((n) => String(n).endsWith(".json")), [], "no session entry");
    const small = cli(["hook", "claude-code", "--root", root], { env, input: call("t2", "echo ok") });
    assert.equal(small.code, 0, small.stderr);
    assert.equal(cli(["validate", onlyEpisode(root)], { env }).code, 0);
  });
});

describe("a call whose input holds a lone surrogate (hook)", () => {
  test("refused (exit 2) naming the field, before anything is created; later calls are proposed", () => {
    const root = fresh();
    const env = { NOEMA_HOOK_SERVER: "0" };
    const call = (id: string, command: string) =>
      JSON.stringify({
        session_id: "s-lone",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command },
        tool_use_id: id,
        cwd: tmp.path,
      });
    const lone = call("t1", "echo \ud800");
    assert.match(lone, /\\ud800/, "sent as the escape an agent's JSON would carry");
    const first = cli(["hook", "claude-code", "--root", root], { env, input: lone });
    assert.equal(first.code, 2, first.stderr);
    assert.equal(first.stdout, "");
    assert.match(
      first.stderr,
      /^noema: the Bash call's input\.command: a string holds a lone UTF-16 surrogate, which is not text/,
    );
    assert.equal(existsSync(join(root, "episodes")) && readdirSync(join(root, "episodes")).length > 0, false);
    assert.equal(cli(["hook", "claude-code", "--root", root], { env, input: call("t2", "echo ok") }).code, 0);
    const again = cli(["hook", "claude-code", "--root", root], { env, input: call("t3", "echo \udfff") });
    assert.equal(again.code, 2, again.stderr);
    const dir = onlyEpisode(root);
    const proposed = events(dir).filter((e) => e.phase === "action_candidate");
    assert.deepEqual(proposed.map((e) => e.payload.payload.input.command), ["echo ok"]);
    assert.equal(cli(["validate", dir], { env }).code, 0);
  });
});

describe("an agent's plan (hook)", () => {
  test("the call past the step limit is refused (exit 2); the episode finishes and validates", () => {
    const root = fresh();
    const env = { NOEMA_HOOK_SERVER: "0", NOEMA_MAX_PLAN_STEPS: "2" };
    const hook = (event: Record<string, unknown>) =>
      cli(["hook", "claude-code", "--root", root], {
        env,
        input: JSON.stringify({ session_id: "s-plan", cwd: tmp.path, ...event }),
      });
    const pre = (id: string) =>
      hook({
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: `echo ${id}` },
        tool_use_id: id,
      });
    assert.equal(pre("t1").code, 0);
    assert.equal(pre("t2").code, 0);
    const third = pre("t3");
    assert.equal(third.code, 2, third.stderr);
    assert.match(third.stderr, /the plan holds 2 steps, noema's limit \(NOEMA_MAX_PLAN_STEPS\)/);
    assert.equal(hook({ hook_event_name: "Stop" }).code, 0);
    const dir = onlyEpisode(root);
    assert.ok(existsSync(join(dir, "manifest.json")), "sealed");
    assert.equal(cli(["validate", dir], { env }).code, 0);
    const plan = cli(["plan", dir, "--json"], { env });
    assert.equal(JSON.parse(plan.stdout).steps.length, 2, plan.stdout);
  });
});

describe("tool inputs (LLM agent)", () => {
  test("a call whose input is over the limit fails closed: the model reads why; the episode stays valid", async () => {
    const root = fresh();
    const server = await startOpenAiServer([
      { tool_calls: [{ id: "t1", name: "shell", arguments: JSON.stringify({ command: `echo ${"y".repeat(5000)}` }) }] },
      { text: "done" },
    ]);
    try {
      const file = taskFile({
        task: "one big call",
        using: "llm",
        workspace: tmp.path,
        adapter: { provider: "openai-compatible", base_url: server.url, model: "scripted", api_key_env: "LIMITS_KEY" },
      });
      const [cmd, ...argv] = [...cliCommand(), "run", file, "--root", root, "--json"];
      const env = { ...process.env, ...SMALL, LIMITS_KEY: "sk-limits", NO_COLOR: "1", NOEMA_ROOT: undefined };
      const r = await runChild(cmd, argv, { cwd: tmp.path, env, timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const told = toolMessages(server.requests[1]).get("t1") ?? "";
      assert.match(told, /the shell call's input of 50\d\d bytes is over noema's limit of 4096 bytes/);
      const dir = onlyEpisode(root);
      assert.equal(events(dir).filter((e) => e.phase === "action_candidate").length, 0, "nothing proposed");
      assert.equal(cli(["validate", dir], { env: SMALL }).code, 0);
    } finally {
      await server.close();
    }
  });
});

describe("the prompt (hook)", () => {
  test("a first prompt over the task limit is refused (exit 2) and the session's next call still works", () => {
    const root = fresh();
    const env = { ...SMALL, NOEMA_HOOK_SERVER: "0" };
    const base = { session_id: "s-prompt", cwd: tmp.path };
    const prompt = JSON.stringify({ ...base, hook_event_name: "UserPromptSubmit", prompt: "p".repeat(5000) });
    const refused = cli(["hook", "claude-code", "--root", root], { env, input: prompt });
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /the task of 5000 bytes is over noema's limit of 4096 bytes/);
    const call = JSON.stringify({
      ...base,
      hook_event_name: "PreToolUse",
      tool_name: "Bash",
      tool_input: { command: "ls" },
      tool_use_id: "t1",
    });
    // The refused prompt claimed no session: a claim would point at an episode that was never created, which the
    // next call waits 5 s for before it creates it.
    assert.equal(sessionEpisode(root, "claude-code", "s-prompt"), null, "the refused prompt claimed the session");
    const next = cli(["hook", "claude-code", "--root", root], { env, input: call });
    assert.equal(next.code, 0, next.stderr);
    assert.equal(cli(["validate", onlyEpisode(root)], { env }).code, 0);
  });
});

describe("the writer keeps to the reader's line limit", () => {
  test("a line over the limit is refused and nothing is written", () => {
    const path = join(tmp.path, "limit.jsonl");
    const out = new JsonlAppender(path, { maxLineBytes: 100 });
    out.append({ ok: "x".repeat(50) });
    assert.throws(() => out.append({ big: "é".repeat(60) }), (e) => e instanceof LineTooLongError && e.bytes === 130);
    out.close();
    assert.equal(statSync(path).size, JSON.stringify({ ok: "x".repeat(50) }).length + 1);
    assert.deepEqual([...readLines(path, { maxLineBytes: 100 })].map((l) => l.tooLong ?? false), [false]);
  });
});

/** Runs the CLI under /usr/bin/time; returns its exit code, output and peak RSS in MB. */
function measured(args: string[]): { code: number | null; out: string; rssMb: number } {
  const [cmd, ...rest] = cliCommand();
  const r = spawnSync("/usr/bin/time", ["-f", "RSS_KB=%M", cmd, ...rest, ...args], { encoding: "utf8" });
  const m = /RSS_KB=(\d+)/.exec(r.stderr);
  assert.ok(m, r.stderr);
  return { code: r.status, out: r.stdout + r.stderr, rssMb: Number(m[1]) / 1024 };
}

describe("validate reads what noema writes in bounded memory", { skip: !existsSync("/usr/bin/time") }, () => {
  test("the largest plan noema writes by default (5,000 steps) validates in < 128 MB", { timeout: 120_000 }, () => {
    const root = fresh();
    const steps = Array.from({ length: 5000 }, (_, i) => `act:step ${i}`);
    const r = cli(["run", taskFile({ task: "5,000 steps", steps }), "--root", root, "-q"], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr);
    const v = measured(["validate", r.stdout.trim(), "--root", root]);
    assert.equal(v.code, 0, v.out);
    assert.ok(v.rssMb < 128, `validate peaked at ${v.rssMb.toFixed(0)} MB`); // before: 190 MB
  });

  test("a 12 MB event line (under the 16 MiB line limit) is read, in < 64 MB + 4× the line", () => {
    const path = join(tmp.path, "long-events.jsonl");
    const event = (id: string, note: string) =>
      JSON.stringify({
        id,
        timestamp: "2026-11-26T00:00:00.000Z",
        episode_id: "ep_long",
        phase: "observe",
        payload: { note },
        evidence_ids: [],
      }) + "\n";
    writeFileSync(path, event("ev_1", "short") + event("ev_2", "x".repeat(12_000_000)) + event("ev_3", "short"));
    const v = measured(["validate", path]);
    assert.equal(v.code, 0, v.out);
    assert.ok(v.rssMb < 64 + 4 * 12, `validate peaked at ${v.rssMb.toFixed(0)} MB`);
  });
});

describe("lines longer than a chunk are decoded as they are read", () => {
  test("multi-byte characters across chunks, CRLF, a BOM, invalid UTF-8, an unterminated last line", () => {
    const path = join(tmp.path, "long.jsonl");
    const long = "é€😀x".repeat(40); // 2-, 3- and 4-byte characters, cut at every chunk boundary
    const bytes = Buffer.concat([
      Buffer.from(`\uFEFF${long}\r\n`),
      Buffer.from("short\n"),
      Buffer.from(long.slice(0, 50)),
      Buffer.from([0xff]),
      Buffer.from(`${long}\n`),
      Buffer.from(long),
    ]);
    writeFileSync(path, bytes);
    for (const chunkSize of [7, 16, 64]) {
      const ls = [...readLines(path, { chunkSize })];
      assert.deepEqual(ls.map((l) => [l.line, l.text, l.terminated]), [
        [1, `\uFEFF${long}`, true],
        [2, "short", true],
        [3, null, true],
        [4, long, false],
      ], `chunk ${chunkSize}`);
      assert.deepEqual(ls.map((l) => l.offset), [
        0,
        Buffer.byteLength(`\uFEFF${long}\r\n`),
        ls[2].offset,
        ls[3].offset,
      ]);
      assert.equal(ls[3].offset + ls[3].bytes, bytes.length);
      assert.equal(ls[0].bytes, Buffer.byteLength(`\uFEFF${long}\r`));
    }
    const limited = [...readLines(path, { chunkSize: 16, maxLineBytes: 100 })];
    assert.deepEqual(limited.map((l) => l.tooLong ?? false), [true, false, true, true]);
  });
});

/** `d` nested arrays: `[[…]]`. */
function nested(d: number): unknown {
  let v: unknown = [];
  for (let i = 1; i < d; i++) v = [v];
  return v;
}

describe("nesting: no accepted input makes an artifact deeper than the reader's 256 levels", () => {
  test("a step's inputs nested past 251 levels is a usage error naming the field; nothing written", () => {
    const root = fresh();
    // inputs (1) + deep (251 arrays): 252 levels; the task file itself nests 255, under the file limit.
    const file = taskFile({ task: "deep", steps: [{ kind: "act", description: "d", inputs: { deep: nested(251) } }] });
    const r = cli(["run", file, "--root", root, "--using", "command", "--", "true"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /steps\[0\]\.inputs: nested deeper than noema's limit of 251 levels/);
    assert.equal(existsSync(root), false);
  });

  test("inputs nested 251 levels are written and every artifact reads back (state, events, validate)", () => {
    const root = fresh();
    const file = taskFile({ task: "deep", steps: [{ kind: "act", description: "d", inputs: { deep: nested(250) } }] });
    const r = cli(["run", file, "--root", root, "--episode-id", "deep", "--using", "command", "--", "true"]);
    assert.equal(r.code, 0, r.stderr);
    for (const args of [["state", "deep", "--json"], ["events", "deep", "--json"], ["validate", "deep"]]) {
      const read = cli([...args, "--root", root]);
      assert.equal(read.code, 0, `${args.join(" ")}: ${read.stderr}`);
    }
  });

  test("a hook call whose input nests past 251 levels is refused (exit 2); the episode stays readable", () => {
    const root = fresh();
    const call = (id: string, input: unknown) =>
      JSON.stringify({
        session_id: "s-deep",
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: input,
        tool_use_id: id,
        cwd: tmp.path,
      });
    const env = { NOEMA_HOOK_SERVER: "0" };
    const small = cli(["hook", "claude-code", "--root", root], { env, input: call("t1", { command: "echo ok" }) });
    assert.equal(small.code, 0, small.stderr);
    // The hook's stdin nests 254 levels (its own limit is 256); the input alone 253.
    const deep = cli(["hook", "claude-code", "--root", root], {
      env,
      input: call("t2", { command: "echo deep", deep: nested(252) }),
    });
    assert.equal(deep.code, 2, deep.stderr);
    assert.match(deep.stderr, /the Bash call's input: nested deeper than noema's limit of 251 levels/);
    const dir = onlyEpisode(root);
    assert.equal(cli(["state", dir, "--json"], { env }).code, 0);
    assert.equal(cli(["validate", dir], { env }).code, 0);
  });
});

test("boundedValue given the value's JSON text returns what it returns on its own", () => {
  const values: unknown[] = [
    { a: 1 },
    "x".repeat(50),
    ["é".repeat(40)],
    { s: "\ud83d\ude00".repeat(30) },
    nested(300),
    null,
    3,
  ];
  for (const value of values) {
    for (const max of [8, 64, 4096]) {
      assert.deepEqual(boundedValue(value, max, 10, JSON.stringify(value)), boundedValue(value, max, 10));
    }
  }
});
