/**
 * `validate` strictness (issue 11 §4): a section that is present must carry
 * its required fields; `flags.mode: "minimal"` excludes `insight` and
 * `flags.direction`; act events without `action_id` are matched to
 * `outcomes.actions` by step and timestamp, with no false positive.
 *
 * Episodes are built with the fixture generator (scripts/make-fixtures.ts),
 * so the manifest stays consistent with every mutation.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { buildFixture, EPISODE_ID, type EpisodeModel, fixtureEpisode } from "../scripts/make-fixtures.ts";
import { reconstructPlan } from "../src/read/plan.ts";
import { readJsonl } from "../src/store/jsonl.ts";
import { EventTrace } from "../src/validate/trace_rules.ts";
import { RULES } from "../src/validate/rules.ts";
import { validateEpisodeDir } from "../src/validate/validate.ts";
import { tempDir } from "./helpers/tmp.ts";

type Json = Record<string, unknown>;
const tmp = tempDir("noema-strict-");
after(() => tmp.cleanup());
let n = 0;

/** Builds the base terminal story, mutated, into a temp dir; returns its problems as `rule file:path`. */
function problems(mutate: (m: EpisodeModel) => void): string[] {
  const base = join(tmp.path, `case_${n++}`);
  const built = buildFixture({ dir: "x", description: "", mutate });
  for (const [name, bytes] of built.files) {
    mkdirSync(dirname(join(base, name)), { recursive: true });
    writeFileSync(join(base, name), bytes);
  }
  // The episode directory is named by its id (the fixture generator puts it there).
  return validateEpisodeDir(join(base, EPISODE_ID)).problems.map((p) => `${p.rule} ${p.message}`);
}

const acts = (m: EpisodeModel) => m.events.filter((e) => e.phase === "act");

describe("the sections whose fields are required are there", () => {
  test("state.json without episode, goal or plan; summary.json without flags or metrics: each is reported", () => {
    const got = problems((m) => {
      delete m.state.episode;
      delete m.state.goal;
      delete m.state.plan;
      delete m.summary!.flags;
      delete m.summary!.metrics;
    });
    assert.deepEqual(got, [
      "state.schema episode: required section is missing (the contract requires fields in it)",
      "state.schema goal: required section is missing (the contract requires fields in it)",
      "state.schema plan: required section is missing (the contract requires fields in it)",
      "summary.schema flags: required section is missing (the contract requires fields in it)",
      "summary.schema metrics: required section is missing (the contract requires fields in it)",
    ]);
  });
});

describe("a terminal state.json plan equals the plan rebuilt from the events", () => {
  test("updated_at, a step status, a step missing: each reported with the step id and both values", () => {
    const got = problems((m) => {
      const plan = m.state.plan as { steps: Json[]; updated_at: string };
      plan.updated_at = "2026-03-02T10:00:00.041Z";
      plan.steps[2].status = "skipped";
      plan.steps.push({ id: "step-4", kind: "verify", description: "extra", status: "done" });
    });
    assert.deepEqual(got.map((p) => p.replace(/ \(plan event on events\.jsonl line \d+\)$/, "")), [
      'trace.plan plan.updated_at: state.json says "2026-03-02T10:00:00.041Z", the events say "2026-03-02T10:00:00.040Z" (the latest plan event\'s timestamp)',
      "trace.plan plan.steps[3] (step-4): in state.json, but not in the latest plan event",
      'trace.plan plan.steps[2] (step-3).status: state.json says "skipped", the events say "done"',
    ]);
  });

  test("the trace rebuilds what reconstructPlan rebuilds (step_records, legacy labels, defaults)", () => {
    const logs: Json[][] = ["valid-terminal", "valid-legacy-plan", "valid-nonterminal"].map((d) =>
      [...readJsonl(join(fixtureEpisode(d), "events.jsonl"))].map((e) => e.value as Json)
    );
    logs.push([
      {
        phase: "plan",
        agent_id: "agent:x",
        timestamp: "2026-01-01T00:00:00.000Z",
        payload: { steps: ["a", 1, "act:b"] },
      },
      {
        phase: "plan",
        timestamp: "t2",
        payload: { source: "s", step_records: [{ status: "done" }, { id: "z", status: "?" }] },
      },
      { phase: "act", payload: { step_id: "z", step_status: "failed" } },
      { phase: "act", payload: { step_id: "step-1" } },
    ]);
    for (const log of logs) {
      const trace = new EventTrace();
      log.forEach((e, i) => trace.add(e, i + 1));
      const want = reconstructPlan(log as never)!;
      assert.deepEqual(trace.plan(), {
        source: want.source,
        updated_at: want.updated_at,
        ids: want.steps.map((x) => x.id),
        statuses: want.steps.map((x) => x.status),
      });
    }
  });

  test("a non-terminal run is not compared (its latest steps may not be announced yet)", () => {
    const got = problems((m) => {
      (m.state.plan as { steps: Json[] }).steps[0].status = "running";
      (m.state.outcomes as Json).status = "pending";
      m.summary = null;
      m.state.links = { events: "events.jsonl", learn: "learn.jsonl" };
    });
    assert.ok(!got.some((p) => p.startsWith("trace.plan")), got.join("\n"));
  });
});

describe("present sections carry their required fields", () => {
  const cases: [string, (m: EpisodeModel) => void, RegExp][] = [
    ["state episode without id", (m) => void delete (m.state.episode as Json).id, /^state\.schema episode\.id:/],
    ["state episode {}", (m) => void (m.state.episode = {}), /^state\.schema episode\.(id|started_at):/],
    ["state goal without task", (m) => void delete (m.state.goal as Json).task, /^state\.schema goal\.task:/],
    ["state plan without steps", (m) => void delete (m.state.plan as Json).steps, /^state\.schema plan\.steps:/],
    ["summary flags without mode", (m) => void delete (m.summary!.flags as Json).mode, /^summary\.schema flags\.mode:/],
    ["summary flags {}", (m) => void (m.summary!.flags = {}), /^summary\.schema flags\.(intuition|mode):/],
    [
      "summary metrics without veto_count",
      (m) => void delete (m.summary!.metrics as Json).veto_count,
      /^summary\.schema metrics\.veto_count:/,
    ],
    [
      "summary verification without provided",
      (m) => void delete (m.summary!.verification as Json).provided,
      /^summary\.schema verification\.provided:/,
    ],
  ];
  for (const [what, mutate, want] of cases) {
    test(what, () => {
      const got = problems(mutate);
      assert.ok(got.some((p) => want.test(p)), got.join("\n"));
    });
  }
});

describe('flags.mode "minimal" excludes the meta-mode blocks', () => {
  test("the rule is listed", () => assert.ok("summary.mode" in RULES));

  test("minimal with insight", () => {
    const got = problems((m) => {
      (m.summary!.flags as Json).mode = "minimal";
      delete (m.summary!.flags as Json).direction;
    });
    assert.deepEqual(got, ['summary.mode insight: present, but flags.mode is "minimal" (meta mode only)']);
  });

  test("minimal with flags.direction", () => {
    const got = problems((m) => {
      (m.summary!.flags as Json).mode = "minimal";
      delete m.summary!.insight;
    });
    assert.deepEqual(got, ['summary.mode flags.direction: present, but flags.mode is "minimal" (meta mode only)']);
  });

  test("meta with both, and minimal with neither, are fine", () => {
    assert.deepEqual(problems(() => {}), []);
    assert.deepEqual(
      problems((m) => {
        (m.summary!.flags as Json).mode = "minimal";
        delete (m.summary!.flags as Json).direction;
        delete m.summary!.insight;
      }),
      [],
    );
  });
});

describe("act events without action_id", () => {
  test("are matched to outcomes.actions by step and timestamp: no false positive", () => {
    const got = problems((m) => {
      for (const e of acts(m)) delete (e.payload as Json).action_id;
    });
    assert.deepEqual(got, []);
  });

  test("an action whose act event (no action_id) has another timestamp is reported", () => {
    const got = problems((m) => {
      for (const e of acts(m)) delete (e.payload as Json).action_id;
      const a = ((m.state.outcomes as Json).actions as Json[])[1];
      a.timestamp = new Date(Date.parse(a.timestamp as string) + 1).toISOString();
    });
    // Without action_id the pair cannot be told: the action has no act event, and (a terminal run) the act event
    // has no action.
    assert.equal(got.length, 2, got.join("\n"));
    assert.match(got[0], /^trace\.action_missing act event of a terminal run with no action: step_id "step-2"/);
    assert.match(got[1], /^trace\.action_timestamp outcomes\.actions: action \S+ has no act event/);
  });

  test("two actions of one step at one timestamp each take one act event", () => {
    const got = problems((m) => {
      const [a, b] = acts(m);
      for (const e of [a, b]) delete (e.payload as Json).action_id;
      (b.payload as Json).step_id = (a.payload as Json).step_id;
      b.timestamp = a.timestamp;
      const [x, y] = (m.state.outcomes as Json).actions as Json[];
      y.step_id = x.step_id;
      y.timestamp = x.timestamp;
    });
    assert.ok(!got.some((p) => p.startsWith("trace.action_timestamp")), got.join("\n"));
  });
});
