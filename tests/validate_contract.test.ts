/**
 * `noema validate`, the contract exact both ways (issue 38 §2).
 *
 * Each rule is shown on an episode noema itself wrote: a small scripted run
 * (the `shell` adapter, a policy that vetoes in audit mode, one assertion) and
 * an approval pause, both run through the CLI in a temp root. Each case copies
 * one, edits one field (keeping everything else consistent: the last state
 * projection follows `state.json`, the manifest is re-hashed), and checks that
 * exactly the expected rules are reported. A foreign but conforming episode
 * (what the contract leaves open, written otherwise than noema writes it)
 * validates clean, and gets the named warnings of `--profile noema`.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PROFILE_RULES, RULES, validateEpisodeDir } from "noema";
import { cli } from "./helpers/cli.ts";
import { checkpointDigest } from "../src/store/checkpoint_digest.ts";
import { AGENT_POLICIES } from "./helpers/policies.ts";
import { tempDir } from "./helpers/tmp.ts";

// Artifacts are edited as loose JSON.
// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

const tmp = tempDir("noema-contract-");
after(() => tmp.cleanup());

/** Runs one scripted episode through the CLI; returns its directory. */
function runEpisode(name: string, policy: string, command: string, extra: string[], exitCode: number): string {
  const dir = join(tmp.path, name);
  mkdirSync(join(dir, "ws"), { recursive: true });
  writeFileSync(join(dir, policy), AGENT_POLICIES[policy]);
  const task = join(dir, "task.json");
  writeFileSync(
    task,
    JSON.stringify({
      task: `contract: ${name}`,
      steps: [
        { kind: "act", description: "write a", inputs: { command: "echo a > a.txt" } },
        { kind: "act", description: "the second step", inputs: { command } },
      ],
    }),
  );
  const root = join(dir, "root");
  const r = cli(
    [
      "run",
      task,
      "--root",
      root,
      "--using",
      "shell",
      "--workspace",
      join(dir, "ws"),
      "--policy",
      join(dir, policy),
      ...extra,
    ],
    { cwd: dir },
  );
  assert.equal(r.code, exitCode, r.stderr);
  const episodes = join(root, "episodes");
  return join(episodes, readdirSync(episodes)[0]);
}

/** A terminal meta-mode run: two direction events, a learn proposal, an assertion with a workspace diff. */
const TERMINAL = runEpisode("terminal", "no-forbidden.ts", "echo f > forbidden.txt", [
  "--governance",
  "audit",
  "--verify-file-exists",
  "a.txt",
], 0);
/** An approval pause (non-terminal, exit 4). */
const PAUSED = runEpisode("paused", "gate.ts", "echo deploy", [], 4);

/** One episode's artifacts, as edited. */
interface Episode {
  state: Json;
  summary: Json | null;
  manifest: Json | null;
  events: Json[];
  learn: Json[];
}

const readJson = (path: string): Json | null => existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : null;
const readLines = (path: string): Json[] =>
  readFileSync(path, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
const pretty = (x: unknown) => JSON.stringify(x, null, 2) + "\n";
let cases = 0;

/**
 * Copies `base` (named by its id, in a new root), applies `mutate`, writes the artifacts back with the last
 * projection following state.json and the manifest re-hashed; returns the copy's directory.
 */
function edited(base: string, mutate: (ep: Episode) => void): string {
  const dir = join(tmp.path, `case_${cases++}`, "episodes", base.split("/").at(-1)!);
  cpSync(base, dir, { recursive: true });
  const ep: Episode = {
    state: readJson(join(dir, "state.json"))!,
    summary: readJson(join(dir, "summary.json")),
    manifest: readJson(join(dir, "manifest.json")),
    events: readLines(join(dir, "events.jsonl")),
    learn: readLines(join(dir, "learn.jsonl")),
  };
  mutate(ep);
  const projection = ep.events.findLast((e) => e.event_type === "run.state_projection")!.payload;
  const outcomes = ep.state.outcomes;
  const from = typeof projection.actions_from === "number" ? projection.actions_from : 0;
  projection.status = outcomes.status;
  projection.outcomes = from > 0 ? { ...outcomes, actions: outcomes.actions.slice(from) } : outcomes;
  if (Array.isArray(outcomes.actions)) projection.actions_total = outcomes.actions.length;
  projection.links = ep.state.links;
  writeFileSync(join(dir, "state.json"), pretty(ep.state));
  if (ep.summary) writeFileSync(join(dir, "summary.json"), pretty(ep.summary));
  writeFileSync(join(dir, "events.jsonl"), ep.events.map((e) => JSON.stringify(e) + "\n").join(""));
  writeFileSync(join(dir, "learn.jsonl"), ep.learn.map((e) => JSON.stringify(e) + "\n").join(""));
  if (ep.manifest) {
    for (const f of ep.manifest.files) {
      const bytes = readFileSync(join(dir, f.name));
      f.size_bytes = bytes.length;
      f.sha256 = "sha256:" + createHash("sha256").update(bytes).digest("hex");
    }
    writeFileSync(join(dir, "manifest.json"), pretty(ep.manifest));
  }
  return dir;
}

/** The rules reported for an edited copy of `base`. */
function rulesOf(base: string, mutate: (ep: Episode) => void): string[] {
  const report = validateEpisodeDir(edited(base, mutate));
  return report.problems.map((p) => p.rule);
}

const phase = (ep: Episode, p: string, n = 1) => ep.events.filter((e) => e.phase === p)[n - 1];

describe("the episodes noema wrote", () => {
  test("validate clean, with no warning under --profile noema, after a copy that changes nothing", () => {
    for (const base of [TERMINAL, PAUSED]) {
      const report = validateEpisodeDir(edited(base, () => {}), { profile: "noema", strict: true });
      assert.deepEqual([report.problems, report.warnings], [[], []], base);
      assert.equal(report.valid, true);
    }
  });
});

describe("impossible dates in a timestamp are rejected", () => {
  const cases: [string, (ep: Episode) => void, string[]][] = [
    ["an event's timestamp, February 30", (ep) => void (phase(ep, "observe").timestamp = "2026-02-30T10:00:00.000Z"), [
      "event.schema",
    ]],
    ["an event's metrics.completed_at, April 31", (ep) => {
      phase(ep, "act").metrics.completed_at = "2026-04-31T10:00:00.000Z";
    }, ["event.metrics"]],
    ["a learn.jsonl timestamp, February 29 of a common year", (ep) => {
      ep.learn[0].timestamp = "2025-02-29T10:00:00.000Z";
    }, ["learn.schema"]],
    ["manifest.json created_at, February 30", (ep) => void (ep.manifest!.created_at = "2026-02-30T10:00:00.000Z"), [
      "manifest.schema",
    ]],
    ["state.json plan.updated_at and its plan event's timestamp, April 31", (ep) => {
      ep.state.plan.updated_at = phase(ep, "plan").timestamp = "2026-04-31T10:00:00.000Z";
    }, ["state.schema", "event.schema"]],
    ["the start, state.json and summary.json started_at, February 29 of 2100", (ep) => {
      ep.state.episode.started_at = phase(ep, "start").timestamp = ep.summary!.started_at = "2100-02-29T00:00:00.000Z";
    }, ["state.schema", "event.schema", "summary.schema"]],
  ];
  for (const [name, mutate, rules] of cases) test(name, () => assert.deepEqual(rulesOf(TERMINAL, mutate), rules));

  test("the message names the date and why", () => {
    const dir = edited(TERMINAL, (ep) => void (ep.learn[0].timestamp = "2025-02-29T10:00:00.000Z"));
    assert.deepEqual(validateEpisodeDir(dir).problems.map((p) => [p.line, p.message]), [
      [1, "timestamp: must be a real date: 2025-02-29 is not a calendar date (February 2025 has 28 days)"],
    ]);
  });
});

describe("what disagrees with what it counts or mirrors is rejected", () => {
  test("insight.metrics.branching_factor that is not the number of direction events", () => {
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void (ep.summary!.insight.metrics.branching_factor += 1)), [
      "trace.branching_factor",
    ]);
  });

  test("metrics.success that disagrees with outcome", () => {
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void (ep.summary!.metrics.success = 0)), ["summary.success"]);
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void (ep.summary!.outcome = "goal_not_achieved")), ["summary.success"]);
  });

  test("duration_sec that disagrees with metrics.latencies.total_ms", () => {
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void (ep.summary!.duration_sec += 0.5)), ["summary.duration"]);
    // Rounded to fewer decimals, it still agrees.
    assert.deepEqual(
      rulesOf(
        TERMINAL,
        (ep) => void (ep.summary!.duration_sec = Math.round(ep.summary!.metrics.latencies.total_ms / 100) / 10),
      ),
      [],
    );
  });

  for (const [field, value] of [["step_id", "step-2"], ["result_status", "error"], ["input_excerpt", "rm -rf /"]]) {
    test(`an action whose ${field} does not mirror its act event`, () => {
      assert.deepEqual(rulesOf(TERMINAL, (ep) => void (ep.state.outcomes.actions[0][field] = value)), [
        "trace.action_mirror",
      ]);
    });
  }

  test("a terminal run's act event with no action", () => {
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void ep.state.outcomes.actions.pop()), ["trace.action_missing"]);
  });

  test("two start events", () => {
    const got = rulesOf(TERMINAL, (ep) => {
      const start = phase(ep, "start");
      ep.events.splice(1, 0, { ...start, id: start.id.slice(0, -4) + "ZZZZ" });
    });
    assert.deepEqual(got, ["event.duplicate_start"]);
  });

  test("learn counts and ids that disagree with learn.jsonl", () => {
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void (phase(ep, "learn").payload.proposal_count = 2)), [
      "trace.learn_proposals",
    ]);
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void (phase(ep, "learn").payload.proposal_ids = ["other:proposal"])), [
      "trace.learn_proposals",
      "trace.learn_proposals",
    ]);
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void (ep.summary!.metrics.learn_proposals = 0)), [
      "trace.learn_proposals",
    ]);
    assert.deepEqual(rulesOf(TERMINAL, (ep) => void (ep.summary!.metrics.learn_applied = 1)), [
      "trace.learn_proposals",
    ]);
  });

  test("a non-terminal episode whose status is not pending", () => {
    assert.deepEqual(rulesOf(PAUSED, (ep) => void (ep.state.outcomes.status = "error")), ["lifecycle.status"]);
  });

  test("every new rule is listed in RULES", () => {
    for (
      const rule of [
        "event.duplicate_start",
        "summary.success",
        "summary.duration",
        "trace.action_mirror",
        "trace.action_missing",
        "trace.learn_proposals",
        "trace.branching_factor",
      ]
    ) assert.ok(Object.hasOwn(RULES, rule), rule);
  });
});

/** What another conforming implementation may write where the contract leaves the shape open. */
function foreign(ep: Episode): void {
  ep.state.outcomes.status = "error";
  ep.state.outcomes.error = { code: 3, detail: ["the second step failed"] };
  ep.state.beliefs[0].timestamp = "shortly after the start";
  ep.state.memory.facts = [{ key: "files", value: 2, timestamp: "t+3" }];
  delete ep.state.plan.source;
  delete ep.state.plan.updated_at;
  const s = ep.summary!;
  s.outcome = "error";
  s.adapter_result = "error";
  s.metrics.success = 0;
  s.verification.assertions = [{ check: "file_exists", path: "a.txt", ok: true }];
  s.verification.workspace_diff.added = [{ path: "a.txt", bytes: 2 }, { path: "forbidden.txt", bytes: 2 }];
}

describe("a foreign but conforming episode", () => {
  test("validates clean by default, and gets the named warnings of --profile noema", () => {
    const dir = edited(TERMINAL, foreign);
    const plain = validateEpisodeDir(dir);
    assert.deepEqual(plain.problems, []);
    assert.deepEqual([plain.valid, plain.profile, plain.warning_count, plain.warnings], [true, "contract", 0, []]);
    const noema = validateEpisodeDir(dir, { profile: "noema" });
    assert.deepEqual(noema.problems, []);
    assert.equal(noema.valid, true);
    assert.deepEqual(noema.warnings.map((w) => `${w.file.split("/").at(-1)} ${w.rule} ${w.message.split(":")[0]}`), [
      "state.json noema.outcome_error outcomes.error",
      "state.json noema.timestamp beliefs[0].timestamp",
      "state.json noema.timestamp memory.facts[0].timestamp",
      "summary.json noema.assertion verification.assertions[0].name",
      "summary.json noema.assertion verification.assertions[0].target",
      "summary.json noema.assertion verification.assertions[0].passed",
      "summary.json noema.assertion verification.assertions[0].reason",
      "summary.json noema.workspace_diff verification.workspace_diff.added[0]",
      "summary.json noema.workspace_diff verification.workspace_diff.added[1]",
      "state.json noema.plan_fields plan",
    ]);
    for (const w of noema.warnings) assert.ok(Object.hasOwn(PROFILE_RULES, w.rule), w.rule);
    assert.equal(validateEpisodeDir(dir, { profile: "noema", strict: true }).valid, false);
  });

  test("an action record that leaves out the fields it may leave out: valid, a noema.action_fields warning", () => {
    const dir = edited(TERMINAL, (ep) => {
      for (const a of ep.state.outcomes.actions) delete a.input_excerpt;
    });
    const report = validateEpisodeDir(dir, { profile: "noema" });
    assert.deepEqual(report.problems, []);
    assert.deepEqual(report.warnings.map((w) => w.rule), ["noema.action_fields", "noema.action_fields"]);
  });

  test("the CLI: warnings are listed but pass; --strict fails on them; --strict without the profile is a usage error", () => {
    const dir = edited(TERMINAL, foreign);
    const plain = cli(["validate", dir]);
    assert.equal(plain.code, 0, plain.stdout + plain.stderr);
    assert.equal(plain.stdout, "");
    const warned = cli(["validate", dir, "--profile", "noema"]);
    assert.equal(warned.code, 0, warned.stderr);
    assert.equal(warned.stdout.trim().split("\n").length, 10);
    assert.match(warned.stdout, /state\.json: noema\.plan_fields: plan: lacks source and updated_at/);
    assert.match(warned.stderr, /valid: .* \(\d+ events, 10 warnings of --profile noema\)/);
    const strict = cli(["validate", dir, "--profile", "noema", "--strict", "--json"]);
    assert.equal(strict.code, 1);
    const report = JSON.parse(strict.stdout);
    assert.deepEqual([report.valid, report.problem_count, report.warning_count, report.profile, report.strict], [
      false,
      0,
      10,
      "noema",
      true,
    ]);
    const usage = cli(["validate", dir, "--strict"]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--strict needs --profile noema/);
  });
});

describe("--profile noema: each decision is one on a checkpoint of this episode, bound to it", () => {
  /** A copy of the paused episode with the approval `noema approve` writes; its directory and the record's path. */
  function approved(): { dir: string; record: string; checkpoint: string } {
    const dir = edited(PAUSED, () => {});
    const root = join(dir, "..", "..");
    const r = cli(["approve", dir.split("/").at(-1)!, "--root", root, "--by", "ana"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const [name] = readdirSync(join(dir, "approvals"));
    return { dir, record: join(dir, "approvals", name), checkpoint: join(dir, "checkpoints", name) };
  }
  const rules = (dir: string) => validateEpisodeDir(dir, { profile: "noema" }).warnings.map((w) => w.message);

  test("noema's own decision: no warning; edited, planted or unbound decisions: one warning each", () => {
    const { dir, record, checkpoint } = approved();
    assert.deepEqual(validateEpisodeDir(dir, { profile: "noema" }).warnings, []);
    const text = readFileSync(record, "utf8");
    const edit = (change: (r: Json) => void) => {
      const r = JSON.parse(text);
      change(r);
      writeFileSync(record, JSON.stringify(r));
    };
    edit((r) => r.checkpoint_digest = "sha256:" + "0".repeat(64));
    assert.match(rules(dir).join("\n"), /checkpoint_digest sha256:0{64} is not checkpoints\/.*\.json's \(sha256:/);
    edit((r) => delete r.checkpoint_digest);
    assert.match(rules(dir).join("\n"), /has no checkpoint_digest/);
    edit((r) => r.decision = "maybe");
    assert.match(rules(dir).join("\n"), /its decision "maybe" is neither "approved" nor "rejected"/);
    edit((r) => r.episode_id = "ep_other");
    assert.match(rules(dir).join("\n"), /it names ep_other\//);
    // The checkpoint's pending action changed after the decision: the decision is bound to the old one.
    writeFileSync(record, text);
    const cp = JSON.parse(readFileSync(checkpoint, "utf8"));
    cp.pending.action.input = { command: "rm -rf /" };
    writeFileSync(checkpoint, JSON.stringify(cp));
    assert.match(rules(dir).join("\n"), /it decided another pending action or other policies/);
    // A decision planted for a checkpoint the run never had.
    writeFileSync(join(dir, "approvals", "cp_never.json"), text);
    assert.ok(rules(dir).some((m) => /no checkpoints\/cp_never\.json/.test(m)), rules(dir).join("\n"));
    const report = validateEpisodeDir(dir, { profile: "noema" });
    // The edited checkpoint is no longer the one its run.checkpoint event announced, either.
    assert.deepEqual(
      report.warnings.filter((w) => w.rule === "noema.checkpoint").map((w) => w.message),
      ["not the checkpoint its run.checkpoint event announced (its pending action differs)"],
    );
    assert.ok(report.warnings.every((w) => w.rule === "noema.approval" || w.rule === "noema.checkpoint"));
    assert.equal(report.valid, true, "warnings: the contract knows no approvals");
    assert.deepEqual(validateEpisodeDir(dir).warnings, [], "the contract profile has none");
  });

  test("a checkpoint edited before its decision: the decision is bound to it, but no run.checkpoint announced it", () => {
    // Found by an audit: a pending action edited before `noema approve` ran (the approval's digest taken from the
    // edited file) left no trace that validate reported; approve and resume now refuse it, and validate says so.
    const dir = edited(PAUSED, () => {});
    const [name] = readdirSync(join(dir, "checkpoints"));
    const checkpoint = join(dir, "checkpoints", name);
    const cp = JSON.parse(readFileSync(checkpoint, "utf8"));
    cp.pending.action.input = { command: "rm -rf /" };
    writeFileSync(checkpoint, JSON.stringify(cp));
    mkdirSync(join(dir, "approvals"), { recursive: true });
    writeFileSync(
      join(dir, "approvals", name),
      JSON.stringify({
        schema_version: "approval/1.0",
        episode_id: cp.episode_id,
        checkpoint_id: cp.checkpoint_id,
        state_hash: cp.state_hash,
        checkpoint_digest: checkpointDigest(cp),
        decision: "approved",
        by: "ana",
        at: "2026-01-01T00:00:00.000Z",
        note: null,
        consumed_at: null,
        consumed_by: null,
      }),
    );
    const report = validateEpisodeDir(dir, { profile: "noema" });
    assert.deepEqual(report.warnings.map((w) => [w.rule, w.message]), [[
      "noema.checkpoint",
      "not the checkpoint its run.checkpoint event announced (its pending action differs)",
    ]]);
    writeFileSync(join(dir, "checkpoints", "chk_000000000000.json"), JSON.stringify({ ...cp, checkpoint_id: "chk_0" }));
    assert.ok(
      validateEpisodeDir(dir, { profile: "noema" }).warnings.some((w) =>
        /no run\.checkpoint event of events\.jsonl announced checkpoint chk_000000000000/.test(w.message)
      ),
    );
  });

  test("a checkpoint edited with its run.checkpoint event: not the action judged; validate warns, approve and resume refuse", () => {
    // Found by an audit: the event line lies past the checkpoint's events_bytes (no hash covers it), so editing both
    // ran an action the action_candidate event, which policies and governance judged, never held.
    const dir = edited(PAUSED, () => {});
    const [name] = readdirSync(join(dir, "checkpoints"));
    const checkpoint = join(dir, "checkpoints", name);
    const cp = JSON.parse(readFileSync(checkpoint, "utf8"));
    const was = JSON.stringify(cp.pending.action.input).slice(1, -1);
    cp.pending.action.input = { command: "echo harmless" };
    writeFileSync(checkpoint, JSON.stringify(cp));
    const log = join(dir, "events.jsonl");
    const lines = readFileSync(log, "utf8").split("\n").map((l) => {
      if (!l.includes('"run.checkpoint"')) return l;
      const e = JSON.parse(l);
      e.payload.pending.action.input = { command: "echo harmless" };
      return JSON.stringify(e);
    });
    writeFileSync(log, lines.join("\n"));
    assert.ok(was.length > 0);
    assert.deepEqual(validateEpisodeDir(dir, { profile: "noema" }).warnings.map((w) => [w.rule, w.message]), [[
      "noema.checkpoint",
      "its pending action is not the one policies and governance judged (its input differs, against its " +
      "action_candidate event)",
    ]]);
    const root = join(dir, "..", ".."), id = dir.split("/").at(-1)!;
    for (const args of [["approve", id], ["resume", id]]) {
      const r = cli([...args, "--root", root]);
      assert.equal(r.code, 7, `${args[0]}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /its pending action is not the one policies and governance judged/);
    }
    assert.equal(existsSync(join(dir, "approvals")), false, "nothing decided");
  });

  test("an approved run resumed to its end: no warning; its decision rewritten afterwards: a warning", () => {
    const { dir, record } = approved();
    const r = cli(["resume", dir.split("/").at(-1)!, "--root", join(dir, "..", "..")], {
      cwd: join(PAUSED, "..", "..", ".."),
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const report = validateEpisodeDir(dir, { profile: "noema", strict: true });
    assert.deepEqual([report.problems, report.warnings, report.valid], [[], [], true]);
    // Found by an audit: the record rewritten after the resume used it (by, while the action ran) went unnoticed.
    const used = JSON.parse(readFileSync(record, "utf8"));
    writeFileSync(record, JSON.stringify({ ...used, by: "mallory" }));
    assert.deepEqual(rules(dir), [
      `its by is not the one the run.resume event that used it (${used.consumed_by}) recorded: the record changed ` +
      "after the decision was applied",
    ]);
    writeFileSync(record, JSON.stringify({ ...used, consumed_by: "ev_0" }));
    assert.match(rules(dir).join("\n"), /consumed_by "ev_0"\), but no run\.resume event has that id/);
  });

  test("a decision that is not JSON, or a symbolic link, is a warning naming the file; nothing is read through it", () => {
    const { dir, record } = approved();
    writeFileSync(record, "{ not json");
    const bad = validateEpisodeDir(dir, { profile: "noema" }).warnings;
    assert.equal(bad.length, 1);
    assert.match(bad[0].file, /approvals\/.*\.json$/);
    assert.match(bad[0].message, /invalid JSON/);
    const link = join(dir, "approvals", "cp_link.json");
    symlinkSync("/etc/passwd", link);
    assert.ok(
      validateEpisodeDir(dir, { profile: "noema" }).warnings.some((w) =>
        w.file.endsWith("cp_link.json") && /symbolic link/.test(w.message)
      ),
    );
  });
});
