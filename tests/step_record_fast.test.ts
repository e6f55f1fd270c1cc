/**
 * The planner's fast paths give exactly what the slow ones gave: `fastStepRecord` is valibot's output of a valid step
 * record (the same keys in the same order) or null, never another value; and `runPlanner`, which parses with it and
 * stringifies each step once for its text checks and the plan's byte count, returns the same plan and throws the same
 * error as the planner check it replaced (kept below as the reference) on valid, odd and invalid plans.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import * as v from "valibot";
import { StepRecord } from "../src/schema/plan.ts";
import { fastStepRecord } from "../src/schema/step_record_fast.ts";
import { type Planner, type PlanResult, runPlanner } from "../src/runtime/planner.ts";
import type { PlanStep } from "../src/schema/plan.ts";
import { toProblems } from "../src/schema/problems.ts";
import { jsonBytes, limits, valueDepthProblem } from "../src/store/limits.ts";
import { loneSurrogatePath, loneSurrogateProblem } from "../src/plugins/plain_json.ts";
import { prng } from "./helpers/prng.ts";

/** The planner check as it was before its fast paths (the reference). */
function referenceRunPlanner(planner: Planner, input: { task: string }): PlanResult {
  const raw = planner.plan(input) as Partial<PlanResult> | undefined;
  const where = `planner ${planner.name}`;
  if (typeof raw !== "object" || raw === null || !Array.isArray(raw.steps)) {
    throw new Error(`${where}: plan() must return { steps: [...], source?, rationale? }`);
  }
  const { planSteps, planBytes } = limits();
  if (raw.steps.length > planSteps) {
    throw new Error(
      `${where}: ${raw.steps.length} steps, over noema's limit of ${planSteps} steps per plan (NOEMA_MAX_PLAN_STEPS)`,
    );
  }
  const textProblem = (step: unknown): string | null => {
    const inputs = (step as { inputs?: unknown }).inputs;
    const deep = inputs === undefined ? null : valueDepthProblem(inputs);
    if (deep !== null) return `.inputs: ${deep}`;
    const lone = loneSurrogatePath(step);
    return lone === null ? null : loneSurrogateProblem(`.${lone}`);
  };
  const seen = new Set<string>();
  const steps = raw.steps.map((s, i): PlanStep => {
    const r = v.safeParse(StepRecord, s);
    if (!r.success) {
      const [p] = toProblems(r.issues, `steps[${i}]`);
      throw new Error(`${where}: ${p.path}: ${p.message}`);
    }
    if (seen.has(r.output.id)) {
      throw new Error(`${where}: steps[${i}].id: duplicate step id ${JSON.stringify(r.output.id)}`);
    }
    seen.add(r.output.id);
    const problem = textProblem(r.output);
    if (problem !== null) throw new Error(`${where}: steps[${i}]${problem}`);
    return { ...r.output, status: "pending" };
  });
  for (const key of ["source", "rationale"] as const) {
    const text = raw[key];
    if (typeof text === "string" && !text.isWellFormed()) throw new Error(`${where}: ${loneSurrogateProblem(key)}`);
  }
  const bytes = jsonBytes(steps);
  if (bytes > planBytes) {
    throw new Error(
      `${where}: the steps take ${bytes} bytes as JSON, over noema's limit of ${planBytes} bytes per plan`,
    );
  }
  return {
    source: typeof raw.source === "string" && raw.source !== "" ? raw.source : `planner:${planner.name}`,
    steps,
    rationale: typeof raw.rationale === "string" ? raw.rationale : `Plan from planner ${planner.name}.`,
  };
}

/** Keys in order, all the way down (deepEqual does not compare key order), with `undefined` values kept. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (typeof value === "object" && value !== null) {
    return Object.keys(value).map((k) => [k, shape((value as Record<string, unknown>)[k])]);
  }
  return typeof value === "bigint" ? `${value}n` : value;
}

function nested(depth: number): unknown {
  let x: unknown = 1;
  for (let i = 0; i < depth; i++) x = { a: x };
  return x;
}

const inherited = Object.create({ kind: "act", extra: 1 });
inherited.id = "inh";
inherited.description = "inherited kind";
const getter = {
  id: "g",
  kind: "act",
  get description() {
    return "from a getter";
  },
};

/** Step records: valid, odd (extra keys, undefined fields, `__proto__` own key) and invalid. */
const RECORDS: unknown[] = [
  { id: "a", kind: "act", description: "Run" },
  { kind: "verify", description: "Check", id: "b", status: "done", rationale: "r", inputs: { x: 1 }, outputs: {} },
  { id: "c", kind: "detect", description: "d", status: undefined, rationale: undefined, inputs: undefined },
  { id: "d", kind: "act", description: "d", extra: { deep: [1, 2] }, z: null, outputs: { y: [] } },
  { id: "e", kind: "act", description: "d", inputs: { constructor: 1, prototype: 2, ok: 3 } },
  JSON.parse('{"id":"f","kind":"act","description":"d","__proto__":{"x":1},"inputs":{"__proto__":5,"k":1}}'),
  { id: "g", kind: "act", description: "d", constructor: "c", prototype: "p" },
  { id: "h", kind: "review", description: "d", 3: "three", 1: "one" },
  inherited,
  getter,
  { id: "i", kind: "act", description: "d", inputs: new Map() },
  { id: "j", kind: "act", description: "d", inputs: Object.create(null) },
  // Invalid: valibot decides, the fast parse says null.
  { id: "k", kind: "fly", description: "d" },
  { id: 1, kind: "act", description: "d" },
  { kind: "act", description: "d" },
  { id: "l", kind: "act" },
  { id: "m", kind: "act", description: 5 },
  { id: "n", kind: "act", description: "d", status: "bogus" },
  { id: "o", kind: "act", description: "d", status: null },
  { id: "p", kind: "act", description: "d", rationale: 1 },
  { id: "q", kind: "act", description: "d", inputs: [1] },
  { id: "r", kind: "act", description: "d", inputs: null },
  { id: "s", kind: "act", description: "d", outputs: "x" },
  { id: "t", kind: "act", description: "d", inputs: () => 1 },
  [],
  null,
  undefined,
  "act:Run",
  7,
];

function randomRecord(rand: () => number, i: number): unknown {
  const pick = (good: readonly unknown[], bad: readonly unknown[]): unknown => {
    const xs = rand() < 0.93 ? good : bad;
    return xs[Math.floor(rand() * xs.length)];
  };
  const rec: Record<string, unknown> = {};
  const keys = ["id", "kind", "description", "status", "rationale", "inputs", "outputs", "x", "constructor"];
  for (const k of keys.sort(() => rand() - 0.5)) {
    if (rand() < (["id", "kind", "description"].includes(k) ? 0.02 : 0.4)) continue;
    rec[k] = k === "id"
      ? pick([`s${i}`, `s${i % 3}`], [i, undefined])
      : k === "kind"
      ? pick(["act", "verify", "plan"], ["nope", undefined])
      : k === "status"
      ? pick(["pending", "done", undefined], ["x", null])
      : k === "inputs" || k === "outputs"
      ? pick([{ a: i }, { b: { c: "\ud83d\ude00" } }, undefined, { constructor: 1, d: [] }], [[], null, "s"])
      : k === "description" || k === "rationale"
      ? pick(["text", "t\u00e9", undefined], [3, { y: 1 }])
      : pick(["text", 3, undefined, { y: 1 }], []);
  }
  return rec;
}

describe("fastStepRecord", () => {
  test("a valid record: valibot's output, keys in the same order; an invalid one: null", () => {
    const rand = prng(38);
    const corpus = [...RECORDS, ...Array.from({ length: 3000 }, (_, i) => randomRecord(rand, i))];
    let fast = 0;
    for (const [i, record] of corpus.entries()) {
      const slow = v.safeParse(StepRecord, record);
      const got = fastStepRecord(record);
      if (got === null) continue;
      fast++;
      assert.ok(slow.success, `record ${i}: the fast parse accepted what valibot refuses`);
      assert.deepEqual(shape(got), shape(slow.output), `record ${i}`);
      assert.equal(Object.getPrototypeOf(got), Object.getPrototypeOf(slow.output));
    }
    assert.ok(fast > 500, `the fast parse answered ${fast} times`);
    for (const record of RECORDS.slice(0, 12)) assert.notEqual(fastStepRecord(record), null);
    for (const record of RECORDS.slice(12)) assert.equal(fastStepRecord(record), null);
  });
});

describe("runPlanner against the reference check", () => {
  const planOf = (steps: unknown[], extra: Record<string, unknown> = {}): Planner => ({
    name: "P",
    plan: () => ({ steps, ...extra }) as unknown as PlanResult,
  });
  const outcome = (f: () => PlanResult): unknown => {
    try {
      return { ok: JSON.stringify(shape(f())) };
    } catch (e) {
      return { error: `${(e as Error).constructor.name}: ${(e as Error).message}` };
    }
  };
  const same = (steps: unknown[], extra?: Record<string, unknown>) => {
    const planner = planOf(steps, extra);
    const got = outcome(() => runPlanner(planner, { task: "t" }));
    assert.deepEqual(got, outcome(() => referenceRunPlanner(planner, { task: "t" })));
    return "ok" in (got as object);
  };
  const withToJson = { id: "tj", kind: "act", description: "d", toJSON: () => ({ replaced: "\ud800" }) };
  const inputsToJson = {
    id: "ij",
    kind: "act",
    description: "d",
    inputs: { toJSON: (k: string) => k === "" ? nested(300) : 1 },
  };
  const sparse = [{ id: "a", kind: "act", description: "d" }, , { id: "b", kind: "act", description: "d" }];
  const plans: [string, unknown[], Record<string, unknown>?][] = [
    [
      "valid records",
      RECORDS.slice(0, 12).map((r, i) =>
        typeof r === "object" && r !== null && !Array.isArray(r) ? r : { id: `x${i}` }
      ),
    ],
    ["a schema error", [{ id: "a", kind: "act", description: "d" }, { id: "b", kind: "fly", description: "d" }]],
    ["a surrogate before a schema error", [{ id: "a", kind: "act", description: "\ud800" }, { id: "b", kind: "fly" }]],
    ["a surrogate in a key of the inputs", [{ id: "a", kind: "act", description: "d", inputs: { ["k\udc00"]: 1 } }]],
    ["an escaped backslash-u", [{ id: "a", kind: "act", description: "\\ud800 is fine" }]],
    ["a duplicate id", [{ id: "a", kind: "act", description: "d" }, { id: "a", kind: "act", description: "d" }]],
    ["inputs too deep", [{ id: "a", kind: "act", description: "d", inputs: nested(260) as Record<string, unknown> }]],
    ["inputs just deep enough", [{
      id: "a",
      kind: "act",
      description: "d",
      inputs: nested(251) as Record<string, unknown>,
    }]],
    ["outputs deep", [{ id: "a", kind: "act", description: "d", outputs: nested(1200) as Record<string, unknown> }]],
    ["a BigInt", [{ id: "a", kind: "act", description: "d", n: 1n }]],
    ["a BigInt in the inputs", [{ id: "a", kind: "act", description: "d", inputs: { n: 1n } }]],
    [
      "a cycle",
      (() => {
        const s: Record<string, unknown> = { id: "a", kind: "act", description: "d" };
        s.self = s;
        return [s];
      })(),
    ],
    ["a step's toJSON", [withToJson]],
    ["an inputs' toJSON", [inputsToJson]],
    ["a hole", sparse],
    ["no steps", []],
    ["a bad source", [{ id: "a", kind: "act", description: "d" }], { source: "s\ud800" }],
    ["a source and rationale", [{ id: "a", kind: "act", description: "é 😀 \u2028" }], { source: "s", rationale: "r" }],
  ];
  for (const [name, steps, extra] of plans) test(name, () => void same(steps, extra));

  test("the plan's byte limit: the same count, the same refusal", () => {
    const before = process.env.NOEMA_MAX_LINE_BYTES;
    process.env.NOEMA_MAX_LINE_BYTES = "4096";
    try {
      for (const n of [1, 5, 9, 10, 11, 40]) {
        const steps: unknown[] = Array.from({ length: n }, (_, i) => ({
          id: `s${i}`,
          kind: "act",
          description: `é step ${i}`,
          inputs: { sql: "😀".repeat(i) },
        }));
        same(steps);
        delete steps[Math.floor(n / 2)]; // a hole: written as null
        same(steps);
      }
    } finally {
      if (before === undefined) delete process.env.NOEMA_MAX_LINE_BYTES;
      else process.env.NOEMA_MAX_LINE_BYTES = before;
    }
  });

  test("random plans", () => {
    const rand = prng(3838);
    let planned = 0;
    for (let p = 0; p < 300; p++) {
      if (same(Array.from({ length: 1 + Math.floor(rand() * 5) }, (_, i) => randomRecord(rand, i)))) planned++;
    }
    assert.ok(planned >= 30, `${planned} of the random plans were valid`);
  });
});
