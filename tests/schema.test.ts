/**
 * Representative positive and negative cases for the artifact schemas:
 * state, summary, manifest, learn (payload forms and learn.jsonl lines) and
 * events.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import * as v from "valibot";
import {
  checkEvent,
  checkLearnPayload,
  checkManifest,
  checkSummary,
  intuitionModeOf,
  LearnRecord,
  SCHEMAS,
  State,
  Summary,
} from "noema";
import { VERIFICATION_NOT_PROVIDED } from "./helpers/verification.ts";

type Json = Record<string, unknown>;

const SHA = "sha256:" + "0".repeat(64);
const TS = "2026-03-02T10:00:00.000Z";

const state = (over: Json = {}): Json => ({
  version: "1.0",
  state_schema_version: "1.0.0",
  episode: { id: "ep_1", started_at: TS, intuition_mode: "hybrid" },
  goal: { task: "t" },
  beliefs: [{ statement: "s", confidence: 0.5, provenance: "interpret" }],
  plan: { steps: [{ id: "step-1", kind: "act", description: "d", status: "done" }], source: "planner:minimal" },
  memory: { facts: [{ key: "k", value: [1, { a: null }] }], scratchpad: "" },
  outcomes: { status: "ok", actions: [{ id: "a1", timestamp: TS, "x-cost": 3 }], error: null },
  links: { events: "events.jsonl", learn: "learn.jsonl" },
  ...over,
});

const notProvided = VERIFICATION_NOT_PROVIDED;
const summary = (over: Json = {}, verification: Json = {}): Json => ({
  schema_version: "1.3.0",
  episode_id: "ep_1",
  task: "t",
  started_at: TS,
  duration_sec: 1.5,
  adapter_result: "success",
  outcome: "success_unverified",
  verification: { ...notProvided, ...verification },
  flags: { intuition: false, mode: "minimal" },
  metrics: { success: 1, plan_count: 1, act_count: 1, reflect_count: 1, veto_count: 0 },
  ...over,
});

const manifest = (names: string[]): Json => ({
  schema_version: "manifest/1.0",
  episode_id: "ep_1",
  created_at: TS,
  files: names.map((name) => ({ name, kind: "custom", size_bytes: 0, sha256: SHA })),
});

const paths = (problems: { path: string }[]) => problems.map((p) => p.path);

describe("state.json", () => {
  test("a full state is valid; unknown fields are kept in the parse output at every level", () => {
    assert.deepEqual(SCHEMAS.state.check(state()), []);
    const input = state({ future_field: { x: 1 } });
    (input.episode as Json).runner = "ci";
    (input.outcomes as Json).cost_usd = 0.02;
    const out = v.parse(State, input) as Json;
    assert.deepEqual(out.future_field, { x: 1 });
    assert.equal((out.episode as Json).runner, "ci");
    assert.equal((out.outcomes as Json).cost_usd, 0.02);
    assert.equal(((out.outcomes as Json).actions as Json[])[0]["x-cost"], 3);
  });

  test("only version and state_schema_version are required at the root", () => {
    assert.deepEqual(SCHEMAS.state.check({ version: "1.0", state_schema_version: "1.0.0" }), []);
    assert.deepEqual(paths(SCHEMAS.state.check({})), ["version", "state_schema_version"]);
  });

  test("wrong versions are problems", () => {
    assert.deepEqual(paths(SCHEMAS.state.check(state({ version: "2.0" }))), ["version"]);
    const p = SCHEMAS.state.check(state({ state_schema_version: "1.1.0" }));
    assert.deepEqual(paths(p), ["state_schema_version"]);
    assert.match(p[0].message, /"1\.1\.0"/);
  });

  test("missing intuition_mode is allowed and reads as advisory; an unknown mode is a problem", () => {
    const legacy = state({ episode: { id: "ep_1", started_at: TS } });
    assert.deepEqual(SCHEMAS.state.check(legacy), []);
    assert.equal(intuitionModeOf(v.parse(State, legacy)), "advisory");
    assert.equal(intuitionModeOf({}), "advisory");
    assert.equal(intuitionModeOf(v.parse(State, state())), "hybrid");
    assert.deepEqual(
      paths(SCHEMAS.state.check(state({ episode: { id: "e", started_at: TS, intuition_mode: "eager" } }))),
      [
        "episode.intuition_mode",
      ],
    );
  });

  test("enums, ranges and required nested fields", () => {
    const bad = (over: Json) => paths(SCHEMAS.state.check(state(over)));
    assert.deepEqual(bad({ outcomes: { status: "done" } }), ["outcomes.status"]);
    assert.deepEqual(bad({ outcomes: { actions: [] } }), ["outcomes.status"]);
    assert.deepEqual(bad({ beliefs: [{ statement: "s", confidence: 1.5, provenance: "p" }] }), [
      "beliefs[0].confidence",
    ]);
    assert.deepEqual(bad({ plan: { steps: [{ id: "s", kind: "deploy", description: "d", status: "done" }] } }), [
      "plan.steps[0].kind",
    ]);
    assert.deepEqual(bad({ plan: { steps: [{ id: "s", kind: "act", description: "d", status: "finished" }] } }), [
      "plan.steps[0].status",
    ]);
    assert.deepEqual(bad({ episode: { id: "e", started_at: "yesterday" } }), ["episode.started_at"]);
    assert.deepEqual(bad({ episode: { started_at: TS } }), ["episode.id"]);
    assert.deepEqual(bad({ goal: {} }), ["goal.task"]);
    assert.deepEqual(bad({ memory: { facts: [{ value: 1 }] } }), ["memory.facts[0].key"]);
    assert.deepEqual(bad({ links: { events: 3 } }), ["links.events"]);
  });

  test("outcomes.error is null or any JSON value (the contract does not show its type)", () => {
    for (const error of [null, { type: "AdapterError", message: "exit 2" }, "boom", 42, [1, "x"], { code: 7 }]) {
      assert.deepEqual(SCHEMAS.state.check(state({ outcomes: { status: "error", error } })), [], JSON.stringify(error));
    }
  });
});

describe("summary.json", () => {
  test("a minimal-mode summary without insight and flags.direction is valid", () => {
    assert.deepEqual(checkSummary(summary()), []);
    const s = v.parse(Summary, summary());
    assert.equal(s.insight, undefined);
    assert.equal(s.flags?.direction, undefined);
  });

  test("a meta-mode summary with insight and flags.direction is valid; unknown fields are kept", () => {
    const meta = summary({
      flags: {
        intuition: true,
        mode: "meta",
        direction: { applied: 1, vetoed: 0, policy: "P@1", threshold: 0.6, last_diff: [] },
      },
      insight: { metrics: { plan_adherence: 0.6667, tool_coverage: 1, branching_factor: 2, plan_revisions: 0 } },
      metrics: { success: 1, plan_count: 1, act_count: 3, reflect_count: 1, veto_count: 0, would_veto_count: 1 },
    });
    assert.deepEqual(checkSummary(meta), []);
    assert.equal((v.parse(Summary, meta).metrics as Json).would_veto_count, 1);
  });

  test("no assertions ⇒ provided false, passed null, assertions [], workspace_diff null, snapshots null", () => {
    assert.deepEqual(paths(checkSummary(summary({}, { passed: true }))), ["verification.passed"]);
    assert.deepEqual(paths(checkSummary(summary({}, { passed: false }))), ["verification.passed"]);
    assert.deepEqual(
      paths(
        checkSummary(summary({}, { assertions: [{ name: "file_exists", target: "a", passed: true, reason: null }] })),
      ),
      [
        "verification.assertions",
      ],
    );
    assert.deepEqual(paths(checkSummary(summary({}, { workspace_diff: { added: [], modified: [], deleted: [] } }))), [
      "verification.workspace_diff",
    ]);
    assert.deepEqual(
      paths(checkSummary(summary({}, { snapshots: { pre: "snapshots/pre.json", post: "snapshots/post.json" } }))),
      [
        "verification.snapshots",
      ],
    );
    assert.match(checkSummary(summary({}, { passed: true }))[0].message, /must be null when provided is false/);
  });

  test("provided verification may pass or fail; a verification error leaves passed null", () => {
    const provided = {
      provided: true,
      passed: false,
      assertions: [{ name: "file_exists", target: "out.txt", passed: false, reason: "file_not_found: out.txt" }],
      workspace_diff: { added: ["a.txt"], modified: [], deleted: [] },
      snapshots: { pre: "snapshots/pre.json", post: "snapshots/post.json" },
    };
    assert.deepEqual(checkSummary(summary({ outcome: "goal_not_achieved" }, provided)), []);
    assert.deepEqual(
      checkSummary(summary({ outcome: "error" }, { ...provided, passed: null, error: "workspace_unavailable" })),
      [],
    );
    assert.deepEqual(paths(checkSummary(summary({}, { ...provided, passed: true, error: "workspace_unavailable" }))), [
      "verification.passed",
    ]);
  });

  test("required fields, versions and enums", () => {
    assert.deepEqual(paths(checkSummary(summary({ schema_version: "1.2.0" }))), ["schema_version"]);
    assert.deepEqual(paths(checkSummary(summary({ adapter_result: "ok" }))), ["adapter_result"]);
    assert.deepEqual(paths(checkSummary(summary({ outcome: "passed" }))), ["outcome"]);
    assert.deepEqual(paths(checkSummary(summary({ flags: { intuition: true, mode: "maximal" } }))), ["flags.mode"]);
    assert.deepEqual(
      paths(
        checkSummary(
          summary({ metrics: { success: 2, plan_count: 1, act_count: 1, reflect_count: 1, veto_count: 0 } }),
        ),
      ),
      [
        "metrics.success",
      ],
    );
    assert.deepEqual(paths(checkSummary(summary({ insight: { metrics: { plan_adherence: 0.66667 } } }))), [
      "insight.metrics.plan_adherence",
    ]);
    const { task: _task, verification: _verification, ...rest } = summary();
    assert.deepEqual(paths(checkSummary(rest)), ["task", "verification"]);
  });
});

describe("manifest.json", () => {
  test("sorted files without manifest.json are valid; extra fields are allowed", () => {
    assert.deepEqual(checkManifest(manifest(["events.jsonl", "learn.jsonl", "state.json", "summary.json"])), []);
    assert.deepEqual(checkManifest({ ...manifest([]), signer: null, plugins: [] }), []);
  });

  test("a manifest listing itself is a problem", () => {
    const p = checkManifest(manifest(["events.jsonl", "manifest.json", "state.json"]));
    assert.deepEqual(p, [{ path: "files[1].name", message: "the manifest must not list itself" }]);
  });

  test("unsorted or duplicate names are problems", () => {
    assert.deepEqual(paths(checkManifest(manifest(["state.json", "events.jsonl"]))), ["files[1].name"]);
    assert.deepEqual(paths(checkManifest(manifest(["events.jsonl", "events.jsonl"]))), ["files[1].name"]);
    assert.match(checkManifest(manifest(["state.json", "events.jsonl"]))[0].message, /sorted/);
  });

  test("schema version, digests and sizes", () => {
    assert.deepEqual(paths(checkManifest({ ...manifest([]), schema_version: "manifest/2.0" })), ["schema_version"]);
    const badFile = (f: Json) =>
      paths(
        checkManifest({ ...manifest([]), files: [{ name: "a", kind: "custom", size_bytes: 0, sha256: SHA, ...f }] }),
      );
    assert.deepEqual(badFile({ sha256: "0".repeat(64) }), ["files[0].sha256"]);
    assert.deepEqual(badFile({ sha256: "sha256:" + "A".repeat(64) }), ["files[0].sha256"]);
    assert.deepEqual(badFile({ size_bytes: -1 }), ["files[0].size_bytes"]);
    assert.deepEqual(badFile({ size_bytes: 1.5 }), ["files[0].size_bytes"]);
    assert.deepEqual(badFile({ kind: undefined }), ["files[0].kind"]);
  });
});

describe("learn payloads and learn.jsonl lines", () => {
  const formA = {
    learn_path: "learn.jsonl",
    learn_schema: "learn/1.0",
    proposal_count: 1,
    proposal_ids: ["p1"],
    applied: false,
  };
  const formB = { policy_id: "P@1", basis: ["step:step-1:act:done"], proposal: [], scope: "episode" };

  test("exactly one of form A and form B: each alone is valid", () => {
    assert.deepEqual(checkLearnPayload(formA), []);
    assert.deepEqual(checkLearnPayload({ ...formA, applied_count: 0 }), []);
    assert.deepEqual(checkLearnPayload(formB), []);
    assert.deepEqual(checkLearnPayload({ ...formB, basis: { success: true } }), []);
    assert.deepEqual(checkLearnPayload({ ...formB, basis: "reasons" }), []);
  });

  test("both forms at once, or neither, is one problem", () => {
    const both = checkLearnPayload({ ...formA, ...formB });
    assert.equal(both.length, 1);
    assert.match(both[0].message, /matches both/);
    const neither = checkLearnPayload({ learn_path: "learn.jsonl", learn_schema: "learn/1.0", proposal_count: 1 });
    assert.equal(neither.length, 1);
    assert.match(neither[0].message, /matches neither.*form A.*proposal_ids/);
    assert.equal(checkLearnPayload({ ...formA, proposal_count: -1 }).length, 1);
    assert.equal(checkLearnPayload({ ...formB, basis: 3 }).length, 1);
  });

  test("checkEvent applies the learn rule to learn-phase events only", () => {
    const event = (phase: string, payload: Json) => ({
      id: "e",
      timestamp: TS,
      episode_id: "ep_1",
      phase,
      payload,
      evidence_ids: [],
    });
    assert.deepEqual(checkEvent(event("learn", formA)), []);
    assert.deepEqual(paths(checkEvent(event("learn", { ...formA, ...formB }))), ["payload"]);
    assert.deepEqual(checkEvent(event("reflect", { ...formA, ...formB })), []);
  });

  test("learn.jsonl line (learn/1.0): required fields; unknown fields kept", () => {
    const line = {
      schema_version: "learn/1.0",
      id: "P@1:ep_1",
      episode_id: "ep_1",
      agent_id: "P@1",
      timestamp: TS,
      payload: {
        policy_id: "P@1",
        proposal: [{ proposal_id: "p1", kind: "threshold_tune", score_fn: "heuristic:veto_rate" }],
        ttl: null,
      },
    };
    assert.deepEqual(SCHEMAS.learn.check(line), []);
    const out = v.parse(LearnRecord, line);
    assert.equal((out.payload as Json).ttl, null);
    assert.equal((out.payload.proposal[0] as Json).score_fn, "heuristic:veto_rate");
    assert.deepEqual(paths(SCHEMAS.learn.check({ ...line, schema_version: "learn/2.0" })), ["schema_version"]);
    const { agent_id: _agent, ...noAgent } = line;
    assert.deepEqual(paths(SCHEMAS.learn.check(noAgent)), ["agent_id"]);
    assert.deepEqual(paths(SCHEMAS.learn.check({ ...line, payload: { proposal: [{ kind: "x" }] } })), [
      "payload.proposal[0].proposal_id",
    ]);
  });
});

describe("event records", () => {
  const ok = {
    id: "e",
    timestamp: TS,
    episode_id: "ep_1",
    phase: "act",
    payload: { input_excerpt: "ls", outcome: "ok" },
    evidence_ids: [],
  };

  test("required fields, faculty, metrics", () => {
    assert.deepEqual(checkEvent(ok), []);
    assert.deepEqual(paths(checkEvent({ phase: "observe" })), [
      "id",
      "timestamp",
      "episode_id",
      "payload",
      "evidence_ids",
    ]);
    assert.deepEqual(paths(checkEvent({ ...ok, faculty: "memory" })), ["faculty"]);
    for (const faculty of ["intuition", "direction", "governance", "insight"]) {
      assert.deepEqual(checkEvent({ ...ok, faculty }), []);
    }
    assert.deepEqual(
      checkEvent({ ...ok, metrics: { started_at: TS, completed_at: TS, duration_ms: 0, extra: 1 } }),
      [],
    );
    assert.deepEqual(paths(checkEvent({ ...ok, metrics: { started_at: TS, duration_ms: 1 } })), [
      "metrics.completed_at",
    ]);
    assert.deepEqual(paths(checkEvent({ ...ok, metrics: { started_at: TS, completed_at: TS, duration_ms: -1 } })), [
      "metrics.duration_ms",
    ]);
    assert.deepEqual(paths(checkEvent("not an object")), [""]);
  });

  test("act and action_candidate payloads", () => {
    assert.deepEqual(paths(checkEvent({ ...ok, payload: { outcome: "ok" } })), ["payload.input_excerpt"]);
    assert.deepEqual(paths(checkEvent({ ...ok, payload: { input_excerpt: "ls" } })), ["payload.outcome"]);
    const candidate: Json = {
      schema_version: "action_candidate/1.0",
      action_candidate_id: null,
      kind: "shell",
      payload: {},
      state_ref: "state.json",
      state_hash: SHA,
      redaction: {},
    };
    assert.deepEqual(checkEvent({ ...ok, phase: "action_candidate", payload: candidate }), []);
    for (const key of Object.keys(candidate)) {
      const { [key]: _dropped, ...rest } = candidate;
      assert.deepEqual(paths(checkEvent({ ...ok, phase: "action_candidate", payload: rest })), [`payload.${key}`], key);
    }
  });

  test("unknown fields on an event and its payload are allowed", () => {
    assert.deepEqual(checkEvent({ ...ok, event_type: "x", custom: 1, payload: { ...ok.payload, extra: [1] } }), []);
  });
});
