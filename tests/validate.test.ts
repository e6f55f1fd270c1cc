/**
 * Conformance: the fixtures under `testdata/episodes/` against `noema
 * validate`. Valid fixtures have no problem; each invalid fixture reports
 * exactly the rules (and line) its `expected.json` names.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { NoemaError, readJsonl, RULES, validate, validateEpisodeDir, validateFile } from "noema";
import { type Expected, fixtureEpisode, FIXTURES, FIXTURES_DIR, staleFixtures } from "../scripts/make-fixtures.ts";
import { tempDir } from "./helpers/tmp.ts";

// Parsed fixture JSON is navigated freely in assertions; every value read is compared to a literal.
// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

const tmp = tempDir();
after(() => tmp.cleanup());

/** The episode directory of a fixture (named by the episode id), and its expected.json. */
const fixture = (dir: string) => fixtureEpisode(dir);
const expectedOf = (dir: string) => join(FIXTURES_DIR, dir, "expected.json");
const json = (path: string): Json => JSON.parse(readFileSync(path, "utf8"));
const events = (dir: string): Json[] => [...readJsonl(join(fixture(dir), "events.jsonl"))].map((e) => e.value as Json);

const VALID = readdirSync(FIXTURES_DIR).filter((d) => d.startsWith("valid-")).sort();
const INVALID = readdirSync(join(FIXTURES_DIR, "invalid")).sort().map((d) => `invalid/${d}`);

describe("fixtures", () => {
  test("the committed fixtures are exactly what scripts/make-fixtures.ts builds", () => {
    assert.deepEqual(staleFixtures(), []);
  });

  test("there are the five valid fixtures and one invalid fixture (or more) per rule id", () => {
    assert.deepEqual(VALID, [
      "valid-legacy-learn",
      "valid-legacy-plan",
      "valid-legacy-state",
      "valid-nonterminal",
      "valid-terminal",
    ]);
    const covered = new Set(INVALID.map((d) => d.slice("invalid/".length).replace(/-.*$/, "")));
    // jsonl.too_long needs a line over 16 MiB: tests/inputs.test.ts makes one at run time (a sparse file).
    const runtimeOnly = new Set(["jsonl.too_long"]);
    assert.deepEqual([...covered].sort(), Object.keys(RULES).filter((r) => !runtimeOnly.has(r)).sort());
    for (const d of INVALID) assert.ok(existsSync(expectedOf(d)), `${d}/expected.json`);
  });
});

describe("valid fixtures have no problems", () => {
  for (const dir of VALID) {
    test(dir, () => {
      const report = validateEpisodeDir(fixture(dir));
      assert.deepEqual(report.problems, []);
      assert.equal(report.valid, true);
      assert.equal(report.problem_count, 0);
      assert.equal(report.episode_id, "ep_01JNQ8M3F0K2V7WQ4XNB5T6Y9Z");
      assert.equal(report.lifecycle, dir === "valid-nonterminal" ? "non-terminal" : "terminal");
      assert.equal(report.checked.events, events(dir).length);
    });
  }
});

describe("each invalid fixture reports exactly its rules", () => {
  for (const dir of INVALID) {
    test(dir, () => {
      const expected = json(expectedOf(dir)) as Expected;
      assert.ok(expected.rules.length > 0);
      const report = validateEpisodeDir(fixture(dir));
      assert.deepEqual(report.problems.map((p) => p.rule), expected.rules, JSON.stringify(report.problems, null, 2));
      for (const p of report.problems) assert.equal(p.line ?? null, expected.line, `${p.rule}: ${p.message}`);
      assert.equal(report.valid, false);
      assert.equal(report.problem_count, expected.rules.length);
    });
  }

  test("expected.json was written from the contract, and names the rule of its directory", () => {
    for (const spec of FIXTURES.filter((s) => s.expected)) {
      const rule = spec.dir.slice("invalid/".length).replace(/-.*$/, "");
      const expected = json(expectedOf(spec.dir)) as Expected;
      assert.ok(expected.rules.includes(rule), `${spec.dir} must report ${rule}`);
      for (const r of expected.rules) assert.ok(Object.hasOwn(RULES, r), `${r} is a rule id`);
    }
  });

  test("problem messages locate the fault", () => {
    const msg = (dir: string) => validateEpisodeDir(fixture(dir)).problems[0];
    assert.match(msg("invalid/event.required").message, /^evidence_ids: required field is missing$/);
    assert.match(msg("invalid/event.faculty").message, /^faculty: /);
    assert.match(msg("invalid/event.metrics").message, /^metrics\.completed_at: /);
    assert.match(msg("invalid/payload.learn").message, /matches neither learn form/);
    assert.match(msg("invalid/payload.learn-both").message, /matches both learn forms/);
    assert.match(msg("invalid/payload.action_candidate").message, /^payload\.state_hash: required field is missing$/);
    assert.match(msg("invalid/payload.act").message, /^payload\.outcome: required field is missing$/);
    assert.match(msg("invalid/lifecycle.links").message, /^links\.manifest: required for a terminal run$/);
    assert.match(
      msg("invalid/lifecycle.links-nonterminal").message,
      /^links\.summary: a non-terminal run must not link summary$/,
    );
    assert.match(msg("invalid/summary.schema").message, /^verification\.passed: must be null when provided is false$/);
    assert.match(msg("invalid/manifest.hash").message, /learn\.jsonl has sha256:[0-9a-f]{64}, manifest says sha256:/);
    assert.match(msg("invalid/jsonl.torn").message, /torn final line/);
    assert.equal(msg("invalid/manifest.size").file.endsWith("manifest.json"), true);
    assert.equal(msg("invalid/trace.start").file.endsWith("events.jsonl"), true);
    const all = (dir: string) => validateEpisodeDir(fixture(dir)).problems;
    assert.deepEqual(all("invalid/state.schema-sections").map((p) => [p.file.split("/").pop(), p.message]), [
      ["state.json", "episode: required section is missing (the contract requires fields in it)"],
      ["state.json", "goal: required section is missing (the contract requires fields in it)"],
      ["state.json", "plan: required section is missing (the contract requires fields in it)"],
    ]);
    assert.deepEqual(all("invalid/summary.schema-sections").map((p) => p.message.split(":")[0]), ["flags", "metrics"]);
    assert.deepEqual(all("invalid/trace.plan").map((p) => [p.file.split("/").pop(), p.message]), [
      [
        "state.json",
        'plan.source: state.json says "planner:resume", the events say "planner:minimal" (plan event on events.jsonl line 4)',
      ],
      [
        "state.json",
        'plan.steps[1] (step-2).status: state.json says "failed", the events say "done" (plan event on events.jsonl line 4)',
      ],
    ]);
    assert.match(
      msg("invalid/trace.directory").message,
      /^episode\.id: "ep_01JNQ8M3F0K2V7WQ4XNB5T6Y9Z", but the episode directory is named "ep_01JNQ8M3F0AAAAAAAAAAAAAAAA"/,
    );
  });
});

describe("the valid-terminal fixture meets the contract (checked directly, not through validate)", () => {
  const dir = fixture("valid-terminal");
  const state = json(join(dir, "state.json"));
  const evs = events("valid-terminal");

  test("event order and faculties", () => {
    assert.deepEqual(evs.map((e) => e.event_type ?? e.phase), [
      "start",
      "observe",
      "interpret",
      "plan",
      "direction",
      "action_candidate",
      "governance",
      "act",
      "act",
      "act",
      "reflect",
      "learn",
      "run.state_projection",
      "terminate",
      "insight",
    ]);
    const faculties = Object.fromEntries(evs.filter((e) => e.faculty).map((e) => [e.phase, e.faculty]));
    assert.deepEqual(faculties, {
      interpret: "intuition",
      direction: "direction",
      governance: "governance",
      insight: "insight",
    });
    const plan = evs.find((e) => e.phase === "plan")!.payload;
    assert.equal(plan.step_records.length, 3);
    assert.deepEqual(plan.steps, [
      "detect:Collect the CI log",
      "analyze:Group failing tests by error",
      "act:Write failures.md",
    ]);
  });

  test("traceability: start = started_at; projection = state outcomes and links; action timestamps", () => {
    assert.equal(evs[0].phase, "start");
    assert.equal(evs[0].timestamp, state.episode.started_at);
    const projection = evs.findLast((e) => e.event_type === "run.state_projection")!;
    assert.equal(projection.phase, "runtime");
    assert.deepEqual(projection.payload.outcomes, state.outcomes);
    assert.deepEqual(projection.payload.links, state.links);
    const acts = evs.filter((e) => e.phase === "act");
    assert.equal(state.outcomes.actions.length, 3);
    for (const a of state.outcomes.actions) {
      const act = acts.find((e) => e.payload.action_id === a.id);
      assert.ok(act, `act event for ${a.id}`);
      assert.equal(a.timestamp, act.timestamp);
    }
  });

  test("manifest: sha256 and size of every other artifact, sorted, without itself", () => {
    const manifest = json(join(dir, "manifest.json"));
    assert.deepEqual(manifest.files.map((f: Json) => f.name), [
      "events.jsonl",
      "learn.jsonl",
      "state.json",
      "summary.json",
    ]);
    for (const f of manifest.files) {
      const bytes = readFileSync(join(dir, f.name));
      assert.equal(f.size_bytes, bytes.length, f.name);
      assert.equal(f.sha256, "sha256:" + createHash("sha256").update(bytes).digest("hex"), f.name);
    }
  });

  test("learn: form A pointer and one learn/1.0 line; links and versions", () => {
    const learn = evs.find((e) => e.phase === "learn")!.payload;
    assert.equal(learn.learn_path, "learn.jsonl");
    assert.equal(learn.proposal_count, 1);
    const lines = [...readJsonl(join(dir, "learn.jsonl"))];
    assert.equal(lines.length, 1);
    assert.equal(lines[0].value?.schema_version, "learn/1.0");
    assert.deepEqual(learn.proposal_ids, (lines[0].value?.payload as Json).proposal.map((p: Json) => p.proposal_id));
    assert.deepEqual(state.links, {
      events: "events.jsonl",
      learn: "learn.jsonl",
      summary: "summary.json",
      manifest: "manifest.json",
    });
    assert.equal(state.version, "1.0");
    assert.equal(state.state_schema_version, "1.0.0");
    assert.equal(json(join(dir, "summary.json")).schema_version, "1.3.0");
  });

  test("the non-terminal fixture is pending, links events and learn only, and has run.interrupt and run.checkpoint", () => {
    const nt = fixture("valid-nonterminal");
    const s = json(join(nt, "state.json"));
    assert.equal(s.outcomes.status, "pending");
    assert.deepEqual(s.links, { events: "events.jsonl", learn: "learn.jsonl" });
    assert.equal(existsSync(join(nt, "summary.json")), false);
    assert.equal(existsSync(join(nt, "manifest.json")), false);
    const types = events("valid-nonterminal").filter((e) => e.phase === "runtime").map((e) => e.event_type);
    assert.deepEqual(types, ["run.state_projection", "run.interrupt", "run.checkpoint"]);
  });
});

describe("validate on a single file and by path", () => {
  test("validateFile picks the schema by file name", () => {
    for (const name of ["events.jsonl", "learn.jsonl", "state.json", "summary.json", "manifest.json"]) {
      const report = validateFile(join(fixture("valid-terminal"), name));
      assert.deepEqual(report.problems, [], name);
      assert.deepEqual(report.checked.files, [name]);
      assert.equal(report.lifecycle, null);
    }
    assert.equal(validateFile(join(fixture("valid-terminal"), "events.jsonl")).checked.events, 15);
    assert.equal(validateFile(join(fixture("valid-terminal"), "learn.jsonl")).checked.learn_lines, 1);
  });

  test("validateFile reports the schema rules of one file, with lines for JSONL", () => {
    const faculty = validateFile(join(fixture("invalid/event.faculty"), "events.jsonl"));
    assert.deepEqual(faculty.problems.map((p) => [p.rule, p.line]), [["event.faculty", 5]]);
    const state = validateFile(join(fixture("invalid/state.schema"), "state.json"));
    assert.deepEqual(state.problems.map((p) => p.rule), ["state.schema"]);
    const learn = validateFile(join(fixture("invalid/learn.schema"), "learn.jsonl"));
    assert.deepEqual(learn.problems.map((p) => [p.rule, p.line]), [["learn.schema", 1]]);
    // Cross-file rules need the episode: a file-level check of a trace fixture finds nothing.
    assert.deepEqual(validateFile(join(fixture("invalid/trace.start"), "events.jsonl")).problems, []);
  });

  test("an unknown file name without a schema is a usage error (exit code 2); with a schema it validates", () => {
    const copy = join(tmp.path, "snapshot-of-state.json");
    copyFileSync(join(fixture("invalid/state.schema"), "state.json"), copy);
    assert.throws(() => validateFile(copy), (e: unknown) => {
      assert.ok(e instanceof NoemaError);
      assert.equal(e.exitCode, 2);
      assert.equal(e.code, "usage");
      assert.match(e.message, /--schema/);
      return true;
    });
    assert.deepEqual(validateFile(copy, { schema: "state" }).problems.map((p) => p.rule), ["state.schema"]);
    assert.deepEqual(validate(copy, { schema: "state" }).problems.map((p) => p.rule), ["state.schema"]);
    // Names every object has as properties are unknown names too (they were an internal error).
    for (const name of ["toString", "constructor", "__proto__"]) {
      copyFileSync(copy, join(tmp.path, name));
      assert.throws(() => validateFile(join(tmp.path, name)), (e: unknown) => {
        assert.ok(e instanceof NoemaError && e.code === "usage", String(e));
        return true;
      });
    }
  });

  test("validate() takes an episode directory path or a file path", () => {
    assert.equal(validate(fixture("valid-terminal")).valid, true);
    assert.equal(validate(fixture("valid-terminal")).lifecycle, "terminal");
    assert.deepEqual(validate(fixture("invalid/trace.start")).problems.map((p) => p.rule), ["trace.start"]);
    assert.deepEqual(validate(join(fixture("invalid/summary.schema"), "summary.json")).problems.map((p) => p.rule), [
      "summary.schema",
    ]);
  });

  test("maxProblems caps the list but counts every problem", () => {
    const report = validateEpisodeDir(fixture("invalid/file.missing"), { maxProblems: 1 });
    assert.equal(report.problems.length, 1);
    assert.equal(report.problem_count, 2);
    assert.equal(report.valid, false);
  });
});
