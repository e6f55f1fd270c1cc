/**
 * Plan reconstruction from events, by the contract's five rules: latest plan
 * event; steps from step_records, else legacy "<kind>:<description>" labels;
 * later act evidence (step_id + step_status) applied in order; no evidence
 * keeps the status.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { type PlanEventLike, PlanProjector, readJsonl, readPlan, reconstructPlan } from "noema";
import { fixtureEpisode } from "../scripts/make-fixtures.ts";

const T = (s: number) => `2026-03-02T10:00:${String(s).padStart(2, "0")}.000Z`;

function plan(ts: number, payload: Record<string, unknown>, agent_id?: string): PlanEventLike {
  return { phase: "plan", timestamp: T(ts), payload, ...(agent_id ? { agent_id } : {}) };
}
function act(step_id?: string, step_status?: string): PlanEventLike {
  const payload: Record<string, unknown> = { input_excerpt: "x", outcome: "ok" };
  if (step_id !== undefined) payload.step_id = step_id;
  if (step_status !== undefined) payload.step_status = step_status;
  return { phase: "act", timestamp: T(30), payload };
}
const records = [
  { id: "a", kind: "detect", description: "Look around", status: "pending", inputs: { path: "." } },
  { id: "b", kind: "act", description: "Do it" },
  { id: "c", kind: "verify", description: "Check it", status: "done", rationale: "already checked" },
];

describe("plan reconstruction", () => {
  test("no plan event gives null", () => {
    assert.equal(reconstructPlan([]), null);
    assert.equal(reconstructPlan([act("a", "done"), { phase: "start", payload: {} }]), null);
  });

  test("steps come from step_records, keeping their fields; a missing status reads pending", () => {
    const p = reconstructPlan([plan(1, { source: "planner:test", step_records: records, steps: ["detect:Ignored"] })])!;
    assert.deepEqual(p.steps, [
      { id: "a", kind: "detect", description: "Look around", status: "pending", inputs: { path: "." } },
      { id: "b", kind: "act", description: "Do it", status: "pending" },
      { id: "c", kind: "verify", description: "Check it", status: "done", rationale: "already checked" },
    ]);
    assert.equal(p.source, "planner:test");
    assert.equal(p.updated_at, T(1));
  });

  test('legacy "<kind>:<description>" labels when step_records is absent', () => {
    const p = reconstructPlan([
      plan(1, { steps: ["detect:Collect relevant context", "act:Run: the task", "verify:Check"] }),
    ])!;
    assert.deepEqual(p.steps, [
      { id: "step-1", kind: "detect", description: "Collect relevant context", status: "pending" },
      { id: "step-2", kind: "act", description: "Run: the task", status: "pending" },
      { id: "step-3", kind: "verify", description: "Check", status: "pending" },
    ]);
  });

  test("later act evidence is applied in event order after the latest plan event", () => {
    const p = reconstructPlan([
      plan(1, { step_records: records }),
      act("a", "running"),
      act("b", "failed"),
      act("a", "done"),
      act("b", "skipped"),
    ])!;
    assert.deepEqual(p.steps.map((s) => [s.id, s.status]), [["a", "done"], ["b", "skipped"], ["c", "done"]]);
  });

  test("an act without step_status (or without step_id) keeps the step's status", () => {
    const p = reconstructPlan([
      plan(1, { step_records: records }),
      act("a", "done"),
      act("a"),
      act(undefined, "failed"),
      act("c"),
    ])!;
    assert.deepEqual(p.steps.map((s) => s.status), ["done", "pending", "done"]);
  });

  test("act evidence before a later plan event does not affect the new plan", () => {
    const p = reconstructPlan([
      plan(1, { step_records: records }),
      act("a", "done"),
      act("b", "failed"),
      plan(20, {
        source: "planner:resume",
        step_records: [{ id: "a", kind: "detect", description: "Look again" }, records[1]],
      }),
      act("b", "done"),
    ])!;
    assert.deepEqual(p.steps.map((s) => [s.id, s.description, s.status]), [
      ["a", "Look again", "pending"],
      ["b", "Do it", "done"],
    ]);
    assert.equal(p.source, "planner:resume");
    assert.equal(p.updated_at, T(20));
  });

  test("an act naming an unknown step_id is ignored", () => {
    const p = reconstructPlan([plan(1, { step_records: records }), act("zzz", "failed"), act("step-1", "failed")])!;
    assert.deepEqual(p.steps.map((s) => s.status), ["pending", "pending", "done"]);
  });

  test("source falls back to the plan event's agent_id; payload source wins when present", () => {
    assert.equal(reconstructPlan([plan(1, { steps: ["act:x"] }, "planner-agent")])!.source, "planner-agent");
    assert.equal(
      reconstructPlan([plan(1, { source: "planner:minimal", steps: ["act:x"] }, "planner-agent")])!.source,
      "planner:minimal",
    );
    assert.equal("source" in reconstructPlan([plan(1, { steps: ["act:x"] })])!, false);
    // The fallback follows the latest plan event, not an earlier one.
    const p = reconstructPlan([
      plan(1, { source: "first", steps: ["act:x"] }),
      plan(2, { steps: ["act:y"] }, "second-agent"),
    ])!;
    assert.equal(p.source, "second-agent");
  });

  test("updated_at is the latest plan event's timestamp; rationale comes from that payload", () => {
    const p = reconstructPlan([
      plan(1, { steps: ["act:x"], rationale: "old" }),
      act("step-1", "done"),
      plan(9, { steps: ["act:x", "verify:y"] }),
    ])!;
    assert.equal(p.updated_at, T(9));
    assert.equal(p.rationale, undefined);
    assert.deepEqual(p.steps.map((s) => s.status), ["pending", "pending"]);
  });

  test("PlanProjector is incremental: the plan can be read between events, and counts plan events", () => {
    const proj = new PlanProjector();
    proj.add(plan(1, { steps: ["act:x", "verify:y"] }));
    assert.deepEqual(proj.plan()!.steps.map((s) => s.status), ["pending", "pending"]);
    const snapshot = proj.plan()!;
    proj.add(act("step-1", "done"));
    assert.deepEqual(proj.plan()!.steps.map((s) => s.status), ["done", "pending"]);
    assert.equal(snapshot.steps[0].status, "pending", "an earlier snapshot is not changed by later events");
    proj.add(plan(2, { steps: ["act:z"] }));
    assert.equal(proj.planEvents, 2);
  });

  test("the fixtures' plans rebuild to state.json's plan (step_records and legacy labels)", () => {
    for (const dir of ["valid-terminal", "valid-legacy-plan"]) {
      const episodeDir = fixtureEpisode(dir);
      const evs = [...readJsonl(join(episodeDir, "events.jsonl"))].map((e) => e.value!);
      const p = reconstructPlan(evs)!;
      assert.deepEqual(p.steps.map((s) => [s.id, s.kind, s.description, s.status]), [
        ["step-1", "detect", "Collect the CI log", "done"],
        ["step-2", "analyze", "Group failing tests by error", "done"],
        ["step-3", "act", "Write failures.md", "done"],
      ], dir);
      assert.equal(p.source, "planner:minimal");
      assert.equal(p.updated_at, "2026-03-02T10:00:00.040Z");
      assert.deepEqual(readPlan(episodeDir), p);
    }
    const paused = readPlan(fixtureEpisode("valid-nonterminal"))!;
    assert.deepEqual(paused.steps.map((s) => s.status), ["done", "done", "pending"]);
  });
});
