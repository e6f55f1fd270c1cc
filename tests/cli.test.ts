/**
 * The `noema` CLI, run as a child process under the runtime running the
 * tests (Bun: `bun src/cli/main.ts`, Deno: `deno run -A src/cli/main.ts`)
 * against episodes written here, in a temp dir.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { CONTRACT_VERSIONS, NOEMA_VERSION } from "noema";
import { cli, IS_DENO, MAIN, REPO } from "./helpers/cli.ts";
import { VERIFICATION_NOT_PROVIDED } from "./helpers/verification.ts";

function lines(text: string): string[] {
  return text.split("\n").filter((l) => l.length > 0);
}

// ---------------------------------------------------------------- fixtures

const TERMINAL_ID = "ep_01K9RBBMXXRSFWR49SXFGF4SPR";
const WAITING_ID = "ep_01K9RCCCCCCCCCCCCCCCCCCCCC";
const DAMAGED_ID = "ep_01K9RAAAAAAAAAAAAAAAAAAAAA";
const T0 = "2025-11-11T10:00:00.000Z";
const t = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

function sha(path: string): { sha256: string; size_bytes: number } {
  const bytes = readFileSync(path);
  return { sha256: `sha256:${createHash("sha256").update(bytes).digest("hex")}`, size_bytes: bytes.length };
}

function event(
  id: string,
  ms: number,
  episode: string,
  phase: string,
  payload: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return { id, timestamp: t(ms), episode_id: episode, agent_id: "noema", phase, payload, evidence_ids: [], ...extra };
}

function writeEpisode(dir: string, files: Record<string, unknown>, events: Record<string, unknown>[]): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "events.jsonl"), events.map((e) => JSON.stringify(e) + "\n").join(""));
  writeFileSync(join(dir, "learn.jsonl"), "");
  for (const [name, value] of Object.entries(files)) {
    writeFileSync(join(dir, name), JSON.stringify(value, null, 2) + "\n");
  }
}

const PLAN_STEPS = [
  { id: "step-1", kind: "detect", description: "Collect relevant context", status: "pending" },
  { id: "step-2", kind: "act", description: "Delete the temp files", status: "pending" },
];

/** A small, valid, finished episode: start, plan, one direction veto, one act, terminate. */
function writeTerminal(root: string): void {
  const id = TERMINAL_ID;
  const dir = join(root, "episodes", id);
  const action = {
    id: "act-1",
    kind: "adapter",
    tool: "adapter:minimal",
    input_excerpt: "Collect relevant context",
    result_status: "ok",
    step_id: "step-1",
    timestamp: t(30),
    duration_ms: 1.5,
  };
  // The vetoed step's act event has its action too (validate's trace.action_missing), without a result_status as
  // its event has none.
  const vetoed = {
    id: "act-2",
    kind: "adapter",
    input_excerpt: "Delete the temp files",
    step_id: "step-2",
    timestamp: t(45),
  };
  const outcomes = {
    status: "vetoed",
    actions: [action, vetoed],
    metrics: { steps_completed: 1, steps_total: 2 },
    artifacts: [],
    error: null,
  };
  const links = { events: "events.jsonl", learn: "learn.jsonl", summary: "summary.json", manifest: "manifest.json" };
  const events = [
    event("e1", 0, id, "start", {
      task: "Clean up the temp files",
      mode: "meta",
      using: "minimal",
      intuition_mode: "interventive",
    }),
    event("e2", 10, id, "plan", { source: "planner:minimal", step_records: PLAN_STEPS }, { caused_by: "e1" }),
    event("e3", 20, id, "direction", {
      policy: "policy:guard",
      kind: "veto",
      status: "applied",
      confidence: 0.9,
      step_id: "step-2",
      reason: null,
    }, { faculty: "direction", caused_by: "e2" }),
    event("e4", 30, id, "act", {
      input_excerpt: "Collect relevant context",
      outcome: "Completed detect step step-1",
      action_id: "act-1",
      kind: "adapter",
      result_status: "ok",
      tool: "adapter:minimal",
      step_id: "step-1",
      step_status: "done",
    }, { caused_by: "e2" }),
    event("e5", 40, id, "governance", {
      decision: "veto",
      rule: "direction.veto",
      message: "vetoed by policy:guard",
      policy_id: "policy:guard",
      enforced: true,
      step_id: "step-2",
    }, { faculty: "governance", caused_by: "e3" }),
    event("e6", 45, id, "act", {
      input_excerpt: "Delete the temp files",
      outcome: "vetoed",
      step_id: "step-2",
      step_status: "vetoed",
    }, { caused_by: "e5" }),
    event("e7", 50, id, "terminate", { status: "vetoed", message: "Action vetoed by governance" }, { caused_by: "e6" }),
    event("e8", 60, id, "runtime", { kind: "run.state_projection", status: "vetoed", outcomes, links }, {
      event_type: "run.state_projection",
      caused_by: "e7",
    }),
  ];
  const state = {
    version: "1.0",
    state_schema_version: "1.0.0",
    episode: { id, started_at: T0, using: "minimal", intuition_mode: "interventive" },
    goal: { task: "Clean up the temp files" },
    beliefs: [],
    // The plan as the events leave it (validate's trace.plan): step-1 done, step-2 vetoed.
    plan: {
      steps: PLAN_STEPS.map((s) => ({ ...s, status: s.id === "step-1" ? "done" : "vetoed" })),
      source: "planner:minimal",
      updated_at: t(10),
    },
    memory: { facts: [] },
    outcomes,
    links,
  };
  const summary = {
    schema_version: "1.3.0",
    episode_id: id,
    task: "Clean up the temp files",
    started_at: T0,
    duration_sec: 0.06,
    adapter_result: "success",
    outcome: "success_unverified",
    verification: VERIFICATION_NOT_PROVIDED,
    flags: { intuition: true, mode: "meta" },
    metrics: { success: 1, plan_count: 1, act_count: 1, reflect_count: 0, veto_count: 1 },
  };
  writeEpisode(dir, { "state.json": state, "summary.json": summary }, events);
  const files = ["events.jsonl", "learn.jsonl", "state.json", "summary.json"].map((name) => ({
    name,
    kind: name.split(".")[0],
    ...sha(join(dir, name)),
  }));
  writeFileSync(
    join(dir, "manifest.json"),
    JSON.stringify({ schema_version: "manifest/1.0", episode_id: id, created_at: t(70), files }, null, 2) + "\n",
  );
}

/** A run paused for approval: no summary, no manifest, status pending. */
function writeWaiting(root: string): void {
  const id = WAITING_ID;
  const dir = join(root, "episodes", id);
  const outcomes = { status: "pending", actions: [], error: null };
  const links = { events: "events.jsonl", learn: "learn.jsonl" };
  writeEpisode(dir, {
    "state.json": {
      version: "1.0",
      state_schema_version: "1.0.0",
      episode: { id, started_at: T0 },
      goal: { task: "Drop the production table" },
      plan: { steps: PLAN_STEPS },
      outcomes,
      links,
    },
  }, [
    event("w1", 0, id, "start", { task: "Drop the production table", mode: "meta", using: "shell" }),
    event("w2", 5, id, "plan", { source: "planner:task", steps: ["detect:Look around", "act:Drop it"] }),
    event("w3", 6, id, "runtime", { kind: "run.state_projection", status: "pending", outcomes, links }, {
      event_type: "run.state_projection",
    }),
    event("w4", 7, id, "runtime", { kind: "run.interrupt", status: "interrupted", reason: "needs approval" }, {
      event_type: "run.interrupt",
    }),
  ]);
}

let tmp = "";
let root = "";

before(() => {
  tmp = mkdtempSync(join(tmpdir(), "noema-cli-test-"));
  root = join(tmp, "root");
  writeTerminal(root);
  writeWaiting(root);
  cpSync(join(root, "episodes", TERMINAL_ID), join(root, "episodes", DAMAGED_ID), { recursive: true });
  appendFileSync(join(root, "episodes", DAMAGED_ID, "events.jsonl"), "{not json\n");
});

after(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// ---------------------------------------------------------------- global

describe("global options", () => {
  test("--version prints noema's and the contract versions", () => {
    const r = cli(["--version"]);
    assert.equal(r.code, 0);
    assert.match(r.stdout, new RegExp(`^noema ${NOEMA_VERSION.replace(/\./g, "\\.")} `));
    for (const part of ["event 1.3.0", "state 1.0/1.0.0", "summary 1.3.0"]) assert.ok(r.stdout.includes(part), part);
    const j = cli(["version", "--json"]);
    assert.deepEqual(JSON.parse(j.stdout), { noema: NOEMA_VERSION, contracts: { ...CONTRACT_VERSIONS } });
  });

  test("--help lists every command and examples; no arguments shows it too", () => {
    const r = cli(["--help"]);
    assert.equal(r.code, 0);
    for (const c of ["list", "view", "state", "summary", "events", "plan", "validate", "schema", "completions"]) {
      assert.match(r.stdout, new RegExp(`^  ${c}\\b`, "m"), c);
    }
    assert.match(r.stdout, /Examples:/);
    assert.equal(cli([]).stdout, r.stdout);
  });

  test("every command's --help has examples", () => {
    for (
      const c of [
        "list",
        "last",
        "view",
        "state",
        "summary",
        "events",
        "plan",
        "validate",
        "schema",
        "prune",
        "policy",
        "policy test",
        "rules",
        "rules test",
        "mcp",
        "mcp pins",
        "completions",
        "version",
      ]
    ) {
      const r = cli([...c.split(" "), "--help"]);
      assert.equal(r.code, 0, c);
      assert.match(r.stdout, /Examples:\n {2}\$ .*noema /, c);
      assert.match(r.stdout, /--root <dir>/, `${c} shows the global options`);
    }
  });

  test("each command is loaded on its own: the index names exactly what each module registers", async () => {
    const { COMMANDS, loadCommands } = await import("../src/cli/commands/index.ts");
    const { buildProgram } = await import("../src/cli/main.ts");
    const { createOutput } = await import("../src/cli/output.ts");
    const ctx = { out: createOutput(), exitCode: 0 as const };
    for (const entry of COMMANDS) {
      const program = buildProgram(ctx, [await entry.load()]);
      const names = program.commands.flatMap((c) => [c.name(), ...c.aliases()]);
      assert.deepEqual(names, [...entry.names], entry.names.join(","));
    }
    assert.equal((await loadCommands("ls")).length, 1, "an alias loads its command alone");
    assert.equal((await loadCommands("completions")).length, COMMANDS.length, "completions lists every command");
    assert.equal((await loadCommands("nope")).length, COMMANDS.length, "an unknown word loads all (for suggestions)");
    const r = cli(["--root", root, "ls", "--limit", "1", "--json"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).length, 1);
  });

  test("docs/cli.md's run options table lists every option of noema run --help", async () => {
    const { COMMANDS } = await import("../src/cli/commands/index.ts");
    const { buildProgram } = await import("../src/cli/main.ts");
    const { createOutput } = await import("../src/cli/output.ts");
    const program = buildProgram(
      { out: createOutput(), exitCode: 0 },
      await Promise.all(COMMANDS.map((c) => c.load())),
    );
    const run = program.commands.find((c) => c.name() === "run")!;
    const docs = readFileSync(join(REPO, "docs", "cli.md"), "utf8");
    const section = docs.slice(
      docs.indexOf("### `noema run <task"),
      docs.indexOf("\n### ", docs.indexOf("### `noema run <task")),
    );
    const table = section.split("\n").filter((l) => l.startsWith("| `")).join("\n");
    const missing = run.options.map((o) => o.long!).filter((long) => !new RegExp(`${long}(?![\\w-])`).test(table));
    assert.deepEqual(missing, []);
  });

  test("every command's description is wrapped to the help width, not left with the source's line breaks", async () => {
    const { COMMANDS } = await import("../src/cli/commands/index.ts");
    const { buildProgram } = await import("../src/cli/main.ts");
    const { createOutput } = await import("../src/cli/output.ts");
    const ctx = { out: createOutput(), exitCode: 0 as const };
    const program = buildProgram(ctx, await Promise.all(COMMANDS.map((c) => c.load())));
    const all = (c: typeof program): (typeof program)[] => [c, ...c.commands.flatMap((x) => all(x as typeof program))];
    for (const cmd of all(program)) {
      cmd.configureHelp({ ...cmd.configureHelp(), helpWidth: 80 });
      const lines = cmd.helpInformation().split("\n");
      const start = lines.findIndex((l) => l.startsWith("Usage:")) + 2;
      const end = lines.findIndex((l, i) => i > start && /^(Arguments|Options|Commands):/.test(l));
      const block = lines.slice(start, end - 1); // the description, paragraphs apart
      block.forEach((line, i) => {
        const lastOfParagraph = i === block.length - 1 || block[i + 1] === "";
        if (line !== "" && !lastOfParagraph) {
          assert.ok(line.length >= 50, `noema ${cmd.name()} --help: a ragged line: "${line}"`);
        }
      });
    }
  });

  test("colour: FORCE_COLOR gives the ANSI styles, NO_COLOR none; a style nested in itself stays on", async () => {
    const colored = cli(["--root", root, "schema"], { env: { NO_COLOR: "", FORCE_COLOR: "1" } });
    assert.equal(colored.code, 0, colored.stderr);
    assert.ok(colored.stdout.includes("\x1b[36mevent\x1b[39m"), "schema names in cyan");
    const plain = cli(["--root", root, "schema"]);
    assert.ok(!plain.stdout.includes("\x1b["), "NO_COLOR: no escape sequence");
    const { createColors } = await import("../src/cli/colors.ts");
    const c = createColors(true);
    assert.equal(c.red("x"), "\x1b[31mx\x1b[39m");
    assert.equal(c.bold(`a${c.bold("b")}c`), "\x1b[1ma\x1b[1mb\x1b[22m\x1b[1mc\x1b[22m");
    assert.equal(c.dim(`a${c.bold("b")}c`), "\x1b[2ma\x1b[1mb\x1b[22m\x1b[2mc\x1b[22m");
    assert.equal(createColors(false).cyan("x"), "x");
  });

  test("usage errors exit 2 with one line naming the problem", () => {
    for (
      const [args, pattern] of [
        [["bogus"], /unknown command 'bogus' \(see 'noema --help'\)/],
        [["help", "nosuch"], /^noema: unknown command 'nosuch' \(see 'noema --help'\)\n$/],
        [
          ["policy", "test", "x.ts", "--command", "ls", "--jason"],
          /unknown option '--jason' \(Did you mean --json\?\) \(see 'noema policy test --help'\)/,
        ],
        [["store", "pull"], /unknown command 'pull' \(see 'noema store --help'\)/],
        [["list", "--jsn"], /unknown option '--jsn'/],
        [["state"], /missing required argument 'episode'/],
        [["list", "--limit", "x"], /--limit/],
        [["list", "--limit", "0"], /positive integer/],
        [["schema", "nope"], /event, state, summary, manifest, learn/],
        [["completions", "tcsh"], /bash, zsh, fish/],
        [["validate", TERMINAL_ID, "--schema", "nope"], /Allowed choices/],
        [["state", "bad id!"], /invalid episode id/],
        // --project's value is optional (install-hooks): a command after it is no project name, not the whole help.
        [["--project", "list"], /--project needs a project name: 'list' is a command \(noema --project NAME list\)/],
      ] as [string[], RegExp][]
    ) {
      const r = cli(["--root", root, ...args]);
      assert.equal(r.code, 2, args.join(" "));
      assert.equal(lines(r.stderr).length, 1, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, /^noema: /);
      assert.match(r.stderr, pattern);
      assert.equal(r.stdout, "");
    }
  });
});

// ---------------------------------------------------------------- state / summary

describe("state and summary", () => {
  test("state prints state.json, compact when piped", () => {
    const r = cli(["--root", root, "state", TERMINAL_ID]);
    assert.equal(r.code, 0);
    assert.equal(lines(r.stdout).length, 1);
    const state = JSON.parse(r.stdout);
    assert.equal(state.episode.id, TERMINAL_ID);
    assert.equal(state.outcomes.status, "vetoed");
  });

  test("--root may follow the command, NOEMA_ROOT works, and so does the default ./.noema", () => {
    assert.equal(cli(["state", TERMINAL_ID, "--root", root]).code, 0);
    const env = cli(["summary", TERMINAL_ID], { env: { NOEMA_ROOT: root } });
    assert.equal(env.code, 0, env.stderr);
    assert.equal(JSON.parse(env.stdout).episode_id, TERMINAL_ID);
    const cwd = join(tmp, "project");
    mkdirSync(join(cwd, ".noema"), { recursive: true });
    cpSync(join(root, "episodes"), join(cwd, ".noema", "episodes"), { recursive: true });
    const r = cli(["list", "--quiet"], { cwd });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(lines(r.stdout).includes(TERMINAL_ID));
  });

  test("an episode directory path works in place of an id", () => {
    const r = cli(["state", join(root, "episodes", WAITING_ID)]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).outcomes.status, "pending");
  });

  test("a missing episode is a one-line error naming it, exit 1", () => {
    for (const c of ["state", "summary", "view", "events", "plan", "validate"]) {
      const r = cli(["--root", root, c, "ep_missing"]);
      assert.equal(r.code, 1, c);
      assert.equal(lines(r.stderr).length, 1, r.stderr);
      assert.match(r.stderr, /^noema: episode ep_missing not found in .*episodes/);
    }
  });

  test("the summary of a run that has not finished is a clear error", () => {
    const r = cli(["--root", root, "summary", WAITING_ID]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`${WAITING_ID} has no summary\\.json: the run is not terminal`));
    assert.equal(r.stdout, "");
  });
});

// ---------------------------------------------------------------- list

describe("list", () => {
  test("--json: entries newest first with their fields", () => {
    const r = cli(["--root", root, "list", "--json"]);
    assert.equal(r.code, 0);
    const entries = JSON.parse(r.stdout) as Record<string, unknown>[];
    assert.deepEqual(entries.map((e) => e.episode_id), [WAITING_ID, TERMINAL_ID, DAMAGED_ID]);
    const [waiting, terminal] = entries;
    assert.equal(waiting.lifecycle, "non-terminal");
    assert.equal(waiting.status, "pending");
    assert.equal("outcome" in waiting, false);
    assert.equal(terminal.outcome, "success_unverified");
    assert.equal(terminal.task, "Clean up the temp files");
    assert.equal(terminal.started_at, T0);
    assert.equal(terminal.episode_dir, join(root, "episodes", TERMINAL_ID));
  });

  test("table: header and one row per episode, waiting runs marked", () => {
    const r = cli(["--root", root, "list", "--limit", "2"]);
    assert.equal(r.code, 0);
    const rows = lines(r.stdout);
    assert.match(rows[0], /^STARTED_AT\s+EPISODE_ID\s+STATUS\s+OUTCOME\s+TASK$/);
    assert.equal(rows.length, 3);
    // Not terminal, no live lock holder, no checkpoint: crashed.
    assert.match(rows[1], new RegExp(`${WAITING_ID}\\s+crashed\\s+-\\s+Drop the production table`));
    assert.match(rows[2], new RegExp(`${TERMINAL_ID}\\s+vetoed\\s+success_unverified\\s+Clean up`));
  });

  test("--quiet prints ids only; an empty root prints nothing on stdout", () => {
    assert.deepEqual(lines(cli(["--root", root, "list", "-q", "-n", "1"]).stdout), [WAITING_ID]);
    const empty = cli(["--root", join(tmp, "nothing-here"), "list"]);
    assert.equal(empty.code, 0);
    assert.equal(empty.stdout, "");
    assert.match(empty.stderr, /no episodes/);
    assert.equal(cli(["--root", join(tmp, "nothing-here"), "list", "--json"]).stdout.trim(), "[]");
  });
});

// ---------------------------------------------------------------- view

describe("view", () => {
  test("--json: one object with the episode, plan, counts, verdicts and paths", () => {
    const r = cli(["--root", root, "view", TERMINAL_ID, "--json"]);
    assert.equal(r.code, 0, r.stderr);
    const v = JSON.parse(r.stdout);
    assert.equal(v.episode_id, TERMINAL_ID);
    assert.equal(v.episode_dir, join(root, "episodes", TERMINAL_ID));
    assert.equal(v.lifecycle, "terminal");
    assert.equal(v.status, "vetoed");
    assert.equal(v.summary.outcome, "success_unverified");
    assert.equal(v.state.goal.task, "Clean up the temp files");
    assert.deepEqual(v.plan.steps.map((s: { status: string }) => s.status), ["done", "vetoed"]);
    assert.deepEqual(v.counts, {
      events: 8,
      by_phase: { start: 1, plan: 1, direction: 1, act: 2, governance: 1, terminate: 1, runtime: 1 },
      actions: 2,
      direction: 1,
      governance: 1,
      vetoes: 1,
      approved: 0,
      rejected: 0,
      would_vetoes: 0,
      policy_failures: 0,
      damaged_lines: 0,
      reviews: { redacted: 0, blocked: 0, hinted: 0 },
    });
    assert.deepEqual(v.verdicts.map((x: { phase: string }) => x.phase), ["direction", "governance"]);
    assert.equal(v.verdicts[0].policy, "policy:guard");
    assert.equal(v.verdicts[1].decision, "veto");
    assert.equal(v.paths.manifest, join(root, "episodes", TERMINAL_ID, "manifest.json"));
    assert.equal(v.timeline.length, 8);
  });

  test("the dashboard shows header, plan marks, verdicts, timeline and artifacts", () => {
    const r = cli(["--root", root, "view", TERMINAL_ID]);
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout;
    assert.match(out, new RegExp(`^Episode ${TERMINAL_ID}  vetoed · success_unverified`));
    assert.match(out, /task\s+Clean up the temp files/);
    assert.match(out, /✓ step-1\s+detect\s+done/);
    assert.match(out, /⊘ step-2\s+act\s+vetoed/);
    assert.match(out, /direction\s+step-2\s+policy:guard\s+veto\s+applied/);
    assert.match(out, /governance\s+step-2\s+direction\.veto\s+veto/);
    assert.match(out, /assertions\s+not provided/);
    assert.match(out, /counts\s+plan 1 · act 1 · reflect 0 · veto 1/);
    assert.match(out, /\+60ms\s+runtime\s+run\.state_projection/);
    assert.match(out, /manifest\s+\S+manifest\.json/);
    assert.ok(!out.includes("\u001b["), "no colour when piped");
  });

  test("a non-terminal run: waiting, summary null, no summary/manifest paths", () => {
    const human = cli(["--root", root, "view", WAITING_ID]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /Episode \S+ {2}crashed/);
    assert.match(
      human.stdout,
      /crashed \(no live process, no checkpoint; noema resume recovers it\): no summary\.json yet — run\.interrupt \(interrupted\): needs approval/,
    );
    assert.match(human.stdout, /○ step-2\s+act\s+pending\s+Drop it/);
    const v = JSON.parse(cli(["--root", root, "view", WAITING_ID, "--json"]).stdout);
    assert.equal(v.lifecycle, "non-terminal");
    assert.equal(v.summary, null);
    assert.equal(v.paths.summary, null);
    assert.equal(v.waiting.event_type, "run.interrupt");
    assert.equal(v.plan.source, "planner:task");
  });

  test("damaged event lines are counted, not fatal", () => {
    const v = JSON.parse(cli(["--root", root, "view", DAMAGED_ID, "--json"]).stdout);
    assert.equal(v.counts.events, 8);
    assert.equal(v.counts.damaged_lines, 1);
    assert.match(v.problems[0], /events\.jsonl:9: invalid JSON/);
  });
});

// ---------------------------------------------------------------- events / plan

describe("events and plan", () => {
  test("events: one human line per event; --json is NDJSON exactly as stored", () => {
    const human = cli(["--root", root, "events", TERMINAL_ID]);
    assert.equal(human.code, 0);
    const hl = lines(human.stdout);
    assert.equal(hl.length, 8);
    assert.match(hl[0], new RegExp(`^\\[${T0.replace(/\./g, "\\.")}\\] start +task="Clean up the temp files"`));
    assert.match(hl[5], /\] act +step_id=step-2 step_status=vetoed outcome=vetoed$/);
    const json = cli(["--root", root, "events", TERMINAL_ID, "--json"]);
    const stored = readFileSync(join(root, "episodes", TERMINAL_ID, "events.jsonl"), "utf8");
    assert.equal(json.stdout, stored);
  });

  test("events --phase filters", () => {
    const r = cli(["--root", root, "events", TERMINAL_ID, "--phase", "act", "--json"]);
    const acts = lines(r.stdout).map((l) => JSON.parse(l));
    assert.equal(acts.length, 2);
    assert.ok(acts.every((e) => e.phase === "act"));
    assert.equal(cli(["--root", root, "events", TERMINAL_ID, "--phase", "nothing"]).stdout, "");
  });

  test("a damaged line: what was read is printed, then an error naming file:line, exit 1", () => {
    const r = cli(["--root", root, "events", DAMAGED_ID, "--json"]);
    assert.equal(r.code, 1);
    assert.equal(lines(r.stdout).length, 8);
    assert.match(r.stderr, /^noema: .*events\.jsonl:9: invalid JSON/);
  });

  test("plan: rebuilt from events, --json has the state.plan shape", () => {
    const r = cli(["--root", root, "plan", TERMINAL_ID, "--json"]);
    assert.equal(r.code, 0);
    const plan = JSON.parse(r.stdout);
    assert.deepEqual(Object.keys(plan).sort(), ["source", "steps", "updated_at"]);
    assert.equal(plan.updated_at, t(10));
    assert.deepEqual(plan.steps.map((s: { id: string; status: string }) => `${s.id}:${s.status}`), [
      "step-1:done",
      "step-2:vetoed",
    ]);
    const legacy = JSON.parse(cli(["--root", root, "plan", WAITING_ID, "--json"]).stdout);
    assert.deepEqual(legacy.steps.map((s: { kind: string }) => s.kind), ["detect", "act"]);
    const human = cli(["--root", root, "plan", TERMINAL_ID]);
    assert.match(human.stdout, /✓ step-1/);
  });

  test("plan: no plan event is a clear error", () => {
    const dir = join(tmp, "noplan");
    writeEpisode(dir, {}, [event("x1", 0, "noplan", "start", { task: "t" })]);
    const r = cli(["plan", dir]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^noema: episode noplan has no plan event in events\.jsonl/);
  });
});

// ---------------------------------------------------------------- validate

describe("validate", () => {
  test("a valid episode: nothing on stdout, 'valid: … (N events)' on stderr, exit 0", () => {
    const r = cli(["--root", root, "validate", TERMINAL_ID]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout, "");
    assert.match(r.stderr, new RegExp(`^valid: .*${TERMINAL_ID} \\(8 events\\)\\n$`));
  });

  test("problems: 'path:line: rule: message' lines, a count on stderr, exit 1", () => {
    const r = cli(["--root", root, "validate", DAMAGED_ID]);
    assert.equal(r.code, 1);
    const problems = lines(r.stdout);
    assert.ok(problems.some((l) => /events\.jsonl:9: jsonl\.json: invalid JSON/.test(l)), r.stdout);
    assert.ok(problems.every((l) => /^\S+?(:\d+)?: [a-z_]+\.[a-z_]+: /.test(l)), r.stdout);
    assert.match(r.stderr, new RegExp(`^${problems.length} problems? in .*${DAMAGED_ID}\\n$`));
  });

  test("--json prints the report; a single file is checked by its name or --schema", () => {
    const r = cli(["--root", root, "validate", DAMAGED_ID, "--json"]);
    assert.equal(r.code, 1);
    const report = JSON.parse(r.stdout);
    assert.equal(report.valid, false);
    assert.ok(report.target.endsWith(DAMAGED_ID), report.target);
    assert.equal(report.lifecycle, "terminal");
    assert.ok(report.problem_count >= 1);
    const file = join(root, "episodes", TERMINAL_ID, "summary.json");
    assert.equal(cli(["validate", file]).code, 0);
    const copy = join(tmp, "exported.jsonl");
    cpSync(join(root, "episodes", TERMINAL_ID, "events.jsonl"), copy);
    assert.equal(cli(["validate", copy]).code, 2, "a file name that says nothing is a usage error");
    const ok = cli(["validate", copy, "--schema", "event"]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stderr, /valid: .*\(8 events\)/);
  });
});

// ---------------------------------------------------------------- schema / completions

describe("schema and completions", () => {
  test("schema lists names; each schema parses as JSON Schema", () => {
    const list = cli(["schema"]);
    assert.equal(list.code, 0);
    for (const name of ["event", "state", "summary", "manifest", "learn", "task", "noema"]) {
      assert.match(list.stdout, new RegExp(`^${name}\\b`, "m"));
      const r = cli(["schema", name]);
      assert.equal(r.code, 0, name);
      const schema = JSON.parse(r.stdout);
      assert.equal(schema.$schema, "https://json-schema.org/draft/2020-12/schema");
      assert.match(schema.$id, new RegExp(`:${name}:`));
    }
    assert.deepEqual(JSON.parse(cli(["schema", "--json"]).stdout).map((s: { name: string }) => s.name), [
      "event",
      "state",
      "summary",
      "manifest",
      "learn",
      "task",
      "noema",
    ]);
  });

  test("completions cover every command and option, for each shell", () => {
    let bashScript = "";
    for (const shell of ["bash", "zsh", "fish"]) {
      const r = cli(["completions", shell]);
      assert.equal(r.code, 0, shell);
      for (const word of ["list", "view", "validate", "completions", "root", "limit", "phase", "schema"]) {
        assert.ok(r.stdout.includes(word), `${shell}: ${word}`);
      }
      if (shell === "bash") bashScript = r.stdout;
    }
    assert.match(bashScript, /complete -F _noema noema/);
    assert.match(bashScript, /'event state summary manifest learn'/, "choices come from the program");
    const check = spawnSync("bash", ["-n"], { input: bashScript, encoding: "utf8" });
    if (!check.error) assert.equal(check.status, 0, check.stderr);
  });
});

// ---------------------------------------------------------------- pipes

test("a closed stdout pipe ends the command quietly", () => {
  const dir = join(tmp, "long");
  const many = Array.from(
    { length: 20_000 },
    (_, i) => event(`l${i}`, i, "long", "observe", { n: i, text: "x".repeat(100) }),
  );
  writeEpisode(dir, {}, many);
  assert.ok(statSync(join(dir, "events.jsonl")).size > 2_000_000);
  const runner = IS_DENO
    ? `"${process.execPath}" run -A --quiet --config "${join(REPO, "deno.json")}" "${MAIN}"`
    : `"${process.execPath}" "${MAIN}"`;
  const r = spawnSync("sh", ["-c", `${runner} events "${dir}" | head -n 2; echo done`], {
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  if (r.error) return; // no sh: nothing to check
  assert.equal(lines(r.stdout).length, 3, r.stdout);
  assert.equal(r.stderr, "", "nothing on stderr");
});
