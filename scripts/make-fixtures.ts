/**
 * Builds the conformance fixtures under `testdata/episodes/` from the
 * contract (`agent-run-artifacts.md`), by hand, without using noema's writer.
 *
 * Every fixture starts from one base episode (the `valid-terminal` story:
 * a meta-mode run whose policy vetoes in audit mode, three shell actions,
 * one learning proposal) and applies one change. Valid variants change a
 * build option (legacy plan labels, legacy learn payload, minimal mode
 * without `intuition_mode`) or use the approval-pause story; each invalid
 * variant applies one mutation that breaks one rule. After the change the
 * generator keeps everything else consistent: the last `run.state_projection`
 * is re-synced with `state.json` and `manifest.json` is recomputed from the
 * final bytes, unless the mutation is about exactly that.
 *
 * Each fixture directory holds the episode directory, named by the episode id
 * as the contract's path shape has it (`<fixture>/ep_01JNQ…/`; see
 * {@link fixtureEpisode}), and, for invalid fixtures, an `expected.json`:
 * `{ "rules": [<rule id of each problem, in report order>], "line": <n or null> }`,
 * where `line` is the line every reported problem points at (`null` when the
 * problems have no line). The expectations are written here from the
 * contract, not taken from `noema validate`.
 *
 * Usage: `bun scripts/make-fixtures.ts` (rewrites `testdata/episodes/`), or
 * `bun scripts/make-fixtures.ts --check` (exit 1 when the committed files differ).
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** A JSON object. */
type Json = Record<string, unknown>;

/** The files of one fixture: path relative to the fixture directory → bytes. */
export type FixtureFiles = Map<string, Uint8Array>;

/** What an invalid fixture must make `noema validate` report. */
export interface Expected {
  /** The rule id of every problem, in report order. */
  rules: string[];
  /** The line every problem points at, or `null` when problems carry no line. */
  line: number | null;
}

/** Where the fixtures live. */
export const FIXTURES_DIR: string = join(dirname(fileURLToPath(import.meta.url)), "..", "testdata", "episodes");

const enc = new TextEncoder();
const dec = new TextDecoder();

// ---------------------------------------------------------------------------
// The base story.

/** Episode id of every fixture (a valid `ep_<ULID>`). */
export const EPISODE_ID = "ep_01JNQ8M3F0K2V7WQ4XNB5T6Y9Z";
const T0 = Date.parse("2026-03-02T10:00:00.000Z");
const TASK = "Summarize the failing tests in ci.log into failures.md";
const POLICY = "RiskGuard@1.2";

/** ISO timestamp `ms` milliseconds after the episode start. */
function at(ms: number): string {
  return new Date(T0 + ms).toISOString();
}

/** A deterministic, ULID-shaped event id. */
function eventId(n: number): string {
  return `ev_01JNQ8M3F0${String(n).padStart(16, "0")}`;
}

const STEPS = [
  { id: "step-1", kind: "detect", description: "Collect the CI log", command: "cat ci.log" },
  { id: "step-2", kind: "analyze", description: "Group failing tests by error", command: "grep -n FAIL ci.log" },
  { id: "step-3", kind: "act", description: "Write failures.md", command: "printf '%s\\n' '# Failures' > failures.md" },
] as const;

/** How the base episode is built. */
export interface BuildOptions {
  /** Execution mode: `meta` has direction, governance and insight; `minimal` has none. */
  mode: "meta" | "minimal";
  /** Plan payload: structured `step_records` plus legacy labels, or legacy labels only. */
  planForm: "records" | "labels";
  /** Learn payload: form A (pointer to learn.jsonl) or form B (legacy inline). */
  learnForm: "pointer" | "inline";
  /** `episode.intuition_mode`, or `null` to leave it out (older runs). */
  intuitionMode: "advisory" | "interventive" | "hybrid" | null;
}

/** One episode as objects, before serialization. */
export interface EpisodeModel {
  /** Events, in file order. */
  events: Json[];
  /** learn.jsonl lines. */
  learn: Json[];
  /** state.json. */
  state: Json;
  /** summary.json; `null` for a non-terminal run (then no manifest either). */
  summary: Json | null;
  /** Other files (relative path → text). */
  extra: Record<string, string>;
}

const BASE: BuildOptions = { mode: "meta", planForm: "records", learnForm: "pointer", intuitionMode: "hybrid" };

/** Builds event records with sequential ids, `agent_id: "noema"` and empty evidence. */
class Timeline {
  readonly events: Json[] = [];
  add(phase: string, ms: number, payload: Json, extra: Json = {}): Json {
    const e: Json = {
      id: eventId(this.events.length + 1),
      timestamp: at(ms),
      episode_id: EPISODE_ID,
      agent_id: "noema",
      phase,
      ...("faculty" in extra ? { faculty: extra.faculty } : {}),
      ...("event_type" in extra ? { event_type: extra.event_type } : {}),
      payload,
      evidence_ids: [],
    };
    for (const [k, v] of Object.entries(extra)) if (k !== "faculty" && k !== "event_type") e[k] = v;
    this.events.push(e);
    return e;
  }
}

function metrics(fromMs: number, toMs: number): Json {
  return { started_at: at(fromMs), completed_at: at(toMs), duration_ms: toMs - fromMs };
}

function planPayload(form: BuildOptions["planForm"]): Json {
  const labels = STEPS.map((s) => `${s.kind}:${s.description}`);
  const payload: Json = { source: "planner:minimal" };
  if (form === "records") {
    payload.step_records = STEPS.map((s) => ({
      id: s.id,
      kind: s.kind,
      description: s.description,
      status: "pending",
      inputs: { command: s.command },
    }));
  }
  payload.steps = labels;
  payload.rationale = "Read the log, group the failures, write them down.";
  return payload;
}

function stateSkeleton(opts: BuildOptions, startedAt: string): Json {
  const episode: Json = { id: EPISODE_ID, seed: 7, tags: { team: "ci" }, using: "shell", started_at: startedAt };
  if (opts.intuitionMode !== null) episode.intuition_mode = opts.intuitionMode;
  return {
    version: "1.0",
    state_schema_version: "1.0.0",
    episode,
    goal: { task: TASK, type: "analysis" },
    beliefs: [{
      statement: "The task is of type analysis.",
      confidence: 0.5,
      provenance: "interpret",
      timestamp: startedAt,
    }],
  };
}

/**
 * The terminal story: start → observe → interpret → plan → (direction →
 * action_candidate → governance) → act ×3 → reflect → learn →
 * run.state_projection → terminate → (insight). Parenthesized events exist in
 * meta mode only.
 */
export function buildTerminal(opts: BuildOptions = BASE): EpisodeModel {
  const meta = opts.mode === "meta";
  const t = new Timeline();
  const start = t.add("start", 0, {
    task: TASK,
    episode_id: EPISODE_ID,
    mode: opts.mode,
    ...(opts.intuitionMode !== null ? { intuition_mode: opts.intuitionMode } : {}),
    using: "shell",
    seed: 7,
    tags: { team: "ci" },
    policies: meta ? [POLICY] : [],
  });
  const observe = t.add("observe", 12, { snapshot: { task: TASK, using: "shell", state_path: "state.json" } });
  const interpret = t.add(
    "interpret",
    25,
    { goal_type: "analysis", task_chars: TASK.length, hints: [], step_count: 3 },
    {
      faculty: "intuition",
      caused_by: observe.id,
    },
  );
  const plan = t.add("plan", 40, planPayload(opts.planForm), { caused_by: interpret.id, metrics: metrics(31, 40) });

  let parent = plan.id as string;
  let direction: Json | null = null;
  let candidateId: string | null = null;
  if (meta) {
    direction = t.add("direction", 55, {
      policy: POLICY,
      policy_id: POLICY,
      policy_version: "1.2",
      step_id: "step-3",
      kind: "veto",
      advice: "Writing files in the workspace needs review",
      confidence: 0.72,
      threshold: 0.6,
      status: "applied",
      reason: "confidence 0.72 >= threshold 0.6",
      diff: [],
      patch: null,
      requires_approval: false,
      error: null,
      advise_ms: 3,
    }, { faculty: "direction", caused_by: plan.id, metrics: metrics(52, 55) });
    candidateId = "ac_run_1";
    const candidate = t.add("action_candidate", 61, {
      schema_version: "action_candidate/1.0",
      action_candidate_id: candidateId,
      kind: "shell",
      payload: { tool: "shell", step_ids: STEPS.map((s) => s.id), commands: STEPS.map((s) => s.command) },
      state_ref: "state.json",
      state_hash: "sha256:" + createHash("sha256").update(`${EPISODE_ID}:plan`).digest("hex"),
      redaction: { applied: false, fields: [] },
      provenance: { planner: "planner:minimal", policies: [POLICY], direction_event_ids: [direction.id] },
      risk_tags: ["writes_workspace"],
    }, { caused_by: direction.id, evidence_ids: [direction.id as string] });
    const governance = t.add("governance", 70, {
      decision: "audit",
      rule: "direction.veto",
      message: `${POLICY} would veto step-3 (audit mode: not enforced)`,
      policy_id: POLICY,
      mode: "audit",
      failure_policy: "fail_open",
      enforced: false,
      action_candidate_id: candidateId,
    }, { faculty: "governance", caused_by: candidate.id });
    parent = governance.id as string;
  }

  const timings = [[140, 180], [190, 420], [430, 910]] as const;
  const outputs = [
    { lines: 212, exit_code: 0 },
    { failures: 3, exit_code: 0 },
    { written: "failures.md", exit_code: 0 },
  ];
  const actions: Json[] = [];
  STEPS.forEach((s, i) => {
    const [from, to] = timings[i];
    const actionId = `act_${s.id}_${i + 1}`;
    const provenance = { adapter: "shell", adapter_version: "1.0.0", planner: "planner:minimal" };
    const resultArtifacts = s.id === "step-3" ? [{ path: "failures.md", kind: "file" }] : [];
    const act = t.add("act", to, {
      input_excerpt: s.command,
      outcome: "exit 0",
      action_id: actionId,
      kind: "shell",
      result_status: "ok",
      tool: "shell",
      adapter: "shell",
      ...(candidateId ? { action_candidate_id: candidateId } : {}),
      step_id: s.id,
      step_status: "done",
      provenance,
      result_artifacts: resultArtifacts,
      input: { command: s.command },
      output: outputs[i],
      duration_ms: to - from,
    }, { caused_by: parent, metrics: metrics(from, to) });
    parent = act.id as string;
    actions.push({
      id: actionId,
      kind: "shell",
      tool: "shell",
      input_excerpt: s.command,
      result_status: "ok",
      step_id: s.id,
      provenance,
      result_artifacts: resultArtifacts,
      timestamp: act.timestamp,
      input: { command: s.command },
      output: outputs[i],
      duration_ms: to - from,
      "x-exit-code": 0,
    });
  });

  const reflect = t.add("reflect", 930, {
    status: "ok",
    success: true,
    reasons: STEPS.map((s) => `step:${s.id}:${s.kind}:done`),
    steps_completed: 3,
    steps_total: 3,
  }, { caused_by: parent });

  const proposalId = `${POLICY}:${EPISODE_ID}:direction_min_confidence:0.65`;
  const learnLines: Json[] = [];
  if (meta) {
    learnLines.push({
      schema_version: "learn/1.0",
      id: `${POLICY}:${EPISODE_ID}`,
      episode_id: EPISODE_ID,
      agent_id: POLICY,
      timestamp: at(938),
      payload: {
        id: `${POLICY}:${EPISODE_ID}`,
        policy_id: POLICY,
        basis: { success: true, vetoes: 1, direction_events: 1 },
        proposal: [{
          proposal_id: proposalId,
          policy_version: "1.2",
          kind: "threshold_tune",
          target: { path: "direction_min_confidence", from: 0.6, to: 0.65 },
          rationale: "Increase direction minimum confidence after veto.",
          evidence_ids: [direction!.id],
          score_fn: "heuristic:veto_rate",
          score: 1,
          confidence: 0.72,
          status: "recorded",
          metadata: { veto_rate: 1, direction_events: 1, scorer: "heuristic" },
          accepted: false,
        }],
        applied: false,
        scope: "policy",
        ttl: null,
        approval: "pending",
      },
    });
  }
  const proposalIds = learnLines.length > 0 ? [proposalId] : [];
  const learnPayload: Json = opts.learnForm === "pointer"
    ? {
      learn_path: "learn.jsonl",
      learn_schema: "learn/1.0",
      proposal_count: proposalIds.length,
      proposal_ids: proposalIds,
      applied: false,
      applied_count: 0,
    }
    : {
      policy_id: meta ? POLICY : "policy:core.minimal",
      basis: STEPS.map((s) => `step:${s.id}:${s.kind}:done`),
      proposal: [],
      applied: false,
      scope: "episode",
    };
  t.add("learn", 941, learnPayload, { caused_by: reflect.id });

  const state: Json = stateSkeleton(opts, start.timestamp as string);
  state.plan = {
    steps: STEPS.map((s) => ({
      id: s.id,
      kind: s.kind,
      description: s.description,
      status: "done",
      inputs: { command: s.command },
    })),
    source: "planner:minimal",
    updated_at: plan.timestamp,
    rationale: "Read the log, group the failures, write them down.",
  };
  state.memory = {
    facts: [{ key: "failing_tests", value: 3, timestamp: at(420), provenance: "shell:step-2" }],
    scratchpad: "3 failures, all in the parser suite.",
  };
  state.outcomes = {
    status: "ok",
    actions,
    metrics: { task_score: 1, steps_completed: 3, steps_total: 3, duration_ms: 950 },
    artifacts: ["failures.md"],
    error: null,
  };
  state.links = { events: "events.jsonl", learn: "learn.jsonl", summary: "summary.json", manifest: "manifest.json" };

  t.add("runtime", 950, { kind: "run.state_projection", status: "ok", outcomes: null, links: null }, {
    event_type: "run.state_projection",
  });
  t.add("terminate", 962, { status: "ok", message: "Completed 3 steps." });
  const insight = { plan_adherence: 1, tool_coverage: 1, branching_factor: 1, plan_revisions: 0 };
  if (meta) t.add("insight", 970, { metrics: insight, summary_path: "summary.json" }, { faculty: "insight" });

  const summary: Json = {
    schema_version: "1.3.0",
    episode_id: EPISODE_ID,
    task: TASK,
    started_at: start.timestamp,
    duration_sec: 0.98,
    adapter_result: "success",
    outcome: "success_unverified",
    verification: {
      provided: false,
      passed: null,
      assertions: [],
      workspace_diff: null,
      snapshots: null,
      policy: { ignore: [".git", ".noema", "node_modules"], symlinks: "skip" },
      error: null,
    },
    flags: meta
      ? {
        intuition: true,
        mode: "meta",
        direction: { applied: 1, vetoed: 1, policy: POLICY, threshold: 0.6, last_diff: [] },
      }
      : { intuition: false, mode: "minimal" },
    metrics: {
      success: 1,
      plan_count: 1,
      act_count: 3,
      reflect_count: 1,
      veto_count: 0,
      would_veto_count: meta ? 1 : 0,
      learn_proposals: proposalIds.length,
      learn_applied: 0,
      latencies: { first_action_ms: 140, total_ms: 980, planning_ms: 40, execution_ms: 750 },
    },
    tags: { team: "ci" },
  };
  if (meta) summary.insight = { metrics: insight };

  const model: EpisodeModel = { events: t.events, learn: learnLines, state, summary, extra: {} };
  syncProjection(model);
  return model;
}

/**
 * The approval-pause story: steps 1 and 2 run, step 3 needs approval, so
 * governance vetoes it (enforce, pause on veto), the state is persisted as
 * pending and the run is interrupted and checkpointed. No summary, no
 * manifest; learn.jsonl is empty.
 */
export function buildPause(): EpisodeModel {
  const t = new Timeline();
  const start = t.add("start", 0, {
    task: TASK,
    episode_id: EPISODE_ID,
    mode: "meta",
    intuition_mode: "interventive",
    using: "shell",
    seed: 7,
    tags: { team: "ci" },
    policies: ["ApprovalGate@1.0"],
  });
  const observe = t.add("observe", 12, { snapshot: { task: TASK, using: "shell", state_path: "state.json" } });
  const interpret = t.add(
    "interpret",
    25,
    { goal_type: "analysis", task_chars: TASK.length, hints: [], step_count: 3 },
    {
      faculty: "intuition",
      caused_by: observe.id,
    },
  );
  const plan = t.add("plan", 40, planPayload("records"), { caused_by: interpret.id, metrics: metrics(31, 40) });
  let parent = plan.id as string;
  const actions: Json[] = [];
  const times = [[60, 70, 100, 160], [170, 180, 200, 390]] as const;
  for (const [i, s] of STEPS.slice(0, 2).entries()) {
    const [candMs, govMs, actFrom, actTo] = times[i];
    const candidateId = `ac_${s.id}_${i + 1}`;
    const candidate = t.add("action_candidate", candMs, {
      schema_version: "action_candidate/1.0",
      action_candidate_id: candidateId,
      kind: "shell",
      payload: { step_id: s.id, tool: "shell", input: { command: s.command }, hints: [] },
      state_ref: "state.json",
      state_hash: "sha256:" + createHash("sha256").update(`${EPISODE_ID}:${s.id}`).digest("hex"),
      redaction: { applied: false, fields: [] },
    }, { caused_by: parent });
    const gov = t.add("governance", govMs, {
      decision: "allow",
      rule: null,
      message: "no policy objected",
      mode: "enforce",
      failure_policy: "fail_closed",
      enforced: true,
      action_candidate_id: candidateId,
      step_id: s.id,
    }, { faculty: "governance", caused_by: candidate.id });
    const actionId = `act_${s.id}_${i + 1}`;
    const act = t.add("act", actTo, {
      input_excerpt: s.command,
      outcome: "exit 0",
      action_id: actionId,
      kind: "shell",
      result_status: "ok",
      tool: "shell",
      adapter: "shell",
      action_candidate_id: candidateId,
      step_id: s.id,
      step_status: "done",
      duration_ms: actTo - actFrom,
    }, { caused_by: gov.id, metrics: metrics(actFrom, actTo) });
    parent = act.id as string;
    actions.push({
      id: actionId,
      kind: "shell",
      tool: "shell",
      input_excerpt: s.command,
      result_status: "ok",
      step_id: s.id,
      timestamp: act.timestamp,
      duration_ms: actTo - actFrom,
    });
  }
  const direction = t.add("direction", 405, {
    policy: "ApprovalGate@1.0",
    policy_id: "ApprovalGate@1.0",
    policy_version: "1.0",
    step_id: "step-3",
    kind: "veto",
    advice: "Writing failures.md needs a human approval",
    confidence: 0.9,
    threshold: 0.6,
    status: "applied",
    requires_approval: true,
  }, { faculty: "direction", caused_by: parent, metrics: metrics(400, 405) });
  const candidate = t.add("action_candidate", 410, {
    schema_version: "action_candidate/1.0",
    action_candidate_id: "ac_step-3_3",
    kind: "shell",
    payload: { step_id: "step-3", tool: "shell", input: { command: STEPS[2].command }, hints: [] },
    state_ref: "state.json",
    state_hash: "sha256:" + createHash("sha256").update(`${EPISODE_ID}:step-3`).digest("hex"),
    redaction: { applied: false, fields: [] },
    risk_tags: ["writes_workspace", "requires_approval"],
  }, { caused_by: direction.id, evidence_ids: [direction.id as string] });
  const gov = t.add("governance", 418, {
    decision: "veto",
    rule: "direction.veto",
    message: "Action needs approval: Writing failures.md needs a human approval",
    policy_id: "ApprovalGate@1.0",
    mode: "enforce",
    failure_policy: "fail_closed",
    enforced: true,
    pause_on_veto: true,
    action_candidate_id: "ac_step-3_3",
    step_id: "step-3",
  }, { faculty: "governance", caused_by: candidate.id });

  const state = stateSkeleton({ ...BASE, intuitionMode: "interventive" }, start.timestamp as string);
  state.plan = {
    steps: STEPS.map((s, i) => ({
      id: s.id,
      kind: s.kind,
      description: s.description,
      status: i < 2 ? "done" : "pending",
      inputs: { command: s.command },
    })),
    source: "planner:minimal",
    updated_at: plan.timestamp,
    rationale: "Read the log, group the failures, write them down.",
  };
  state.memory = { facts: [] };
  state.outcomes = {
    status: "pending",
    actions,
    metrics: { task_score: 0.6667, steps_completed: 2, steps_total: 3, duration_ms: 420 },
    artifacts: [],
    error: null,
  };
  state.links = { events: "events.jsonl", learn: "learn.jsonl" };

  const projection = t.add("runtime", 420, {
    kind: "run.state_projection",
    status: "pending",
    outcomes: null,
    links: null,
  }, {
    event_type: "run.state_projection",
    caused_by: gov.id,
  });
  const interrupt = t.add("runtime", 425, {
    kind: "run.interrupt",
    status: "interrupted",
    reason: "Action needs approval: Writing failures.md needs a human approval",
  }, { event_type: "run.interrupt", agent_id: "system", caused_by: projection.id });
  const checkpointId = "chk_3f9a1c2b7d4e";
  const checkpointPath = `checkpoints/${checkpointId}/checkpoint.json`;
  t.add("runtime", 430, {
    kind: "run.checkpoint",
    status: "paused",
    checkpoint_id: checkpointId,
    event_offset: t.events.length,
    checkpoint_path: checkpointPath,
  }, { event_type: "run.checkpoint", agent_id: "system", caused_by: interrupt.id });

  const model: EpisodeModel = { events: t.events, learn: [], state, summary: null, extra: {} };
  syncProjection(model);
  model.extra[checkpointPath] = pretty({
    schema_version: "checkpoint/1.0.0",
    run_id: EPISODE_ID,
    checkpoint_id: checkpointId,
    created_at: at(430),
    event_offset: t.events.length - 1,
    last_event_id: interrupt.id,
    state_hash: "sha256:" + createHash("sha256").update(pretty(state)).digest("hex"),
    adapter_label: "shell",
  });
  return model;
}

/** Sets the last `run.state_projection` payload's `outcomes`, `links` and `status` from `state.json`. */
function syncProjection(m: EpisodeModel): void {
  const p = lastProjection(m);
  if (!p) return;
  const payload = p.payload as Json;
  const outcomes = m.state.outcomes as Json | undefined;
  payload.status = outcomes?.status;
  payload.outcomes = structuredClone(outcomes);
  payload.links = structuredClone(m.state.links);
}

function lastProjection(m: EpisodeModel): Json | undefined {
  return m.events.findLast((e) => e.phase === "runtime" && e.event_type === "run.state_projection");
}

// ---------------------------------------------------------------------------
// Serialization.

function pretty(value: unknown): string {
  return JSON.stringify(value, null, 2) + "\n";
}

function serialize(m: EpisodeModel): FixtureFiles {
  const files: FixtureFiles = new Map();
  files.set("events.jsonl", enc.encode(m.events.map((e) => JSON.stringify(e) + "\n").join("")));
  files.set("learn.jsonl", enc.encode(m.learn.map((l) => JSON.stringify(l) + "\n").join("")));
  files.set("state.json", enc.encode(pretty(m.state)));
  if (m.summary) files.set("summary.json", enc.encode(pretty(m.summary)));
  for (const [name, text] of Object.entries(m.extra)) files.set(name, enc.encode(text));
  return files;
}

const KINDS: Record<string, string> = {
  "events.jsonl": "events",
  "learn.jsonl": "learn",
  "state.json": "state",
  "summary.json": "summary",
};

/** The manifest of a set of files: every file except manifest.json, sorted by name, with raw-byte sha256 and size. */
function manifestOf(files: FixtureFiles, m: EpisodeModel): Json {
  const names = [...files.keys()].filter((n) => n !== "manifest.json").sort();
  return {
    schema_version: "manifest/1.0",
    episode_id: EPISODE_ID,
    created_at: at(975),
    files: names.map((name) => {
      const bytes = files.get(name)!;
      return {
        name,
        kind: KINDS[name] ?? (name.startsWith("attachments/") ? "attachment" : "custom"),
        size_bytes: bytes.length,
        sha256: "sha256:" + createHash("sha256").update(bytes).digest("hex"),
      };
    }),
    plugins: [
      { id: "adapter:shell", kind: "adapter", path: null, sha256: null },
      // Minimal mode consults no policy.
      ...((m.summary?.flags as Json | undefined)?.mode === "meta"
        ? [{ id: POLICY, kind: "policy", path: "/work/policies/risk-guard.ts", sha256: "sha256:" + "ab".repeat(32) }]
        : []),
    ],
    signature: null,
  };
}

// Byte-level edits of a JSONL file (1-based line numbers).

function lines(files: FixtureFiles, name: string): string[] {
  return dec.decode(files.get(name)!).split("\n").slice(0, -1);
}

function setLines(files: FixtureFiles, name: string, ls: string[], finalNewline = true): void {
  files.set(name, enc.encode(ls.join("\n") + (finalNewline ? "\n" : "")));
}

/** Line number (1-based) of the first event matching a predicate. */
function lineOf(m: EpisodeModel, pred: (e: Json) => boolean): number {
  const i = m.events.findIndex(pred);
  if (i < 0) throw new Error("no such event");
  return i + 1;
}

const phase = (p: string, n = 1) => {
  let seen = 0;
  return (e: Json) => e.phase === p && ++seen === n;
};

/** Line number (1-based) of the first line of `text` that contains `needle`. */
function lineOfText(text: string, needle: string): number {
  const i = text.split("\n").findIndex((l) => l.includes(needle));
  if (i < 0) throw new Error(`no line with ${needle}`);
  return i + 1;
}

function eventAt(m: EpisodeModel, pred: (e: Json) => boolean): Json {
  return m.events[lineOf(m, pred) - 1];
}

function payloadOf(m: EpisodeModel, pred: (e: Json) => boolean): Json {
  return eventAt(m, pred).payload as Json;
}

// ---------------------------------------------------------------------------
// The fixtures.

/** One fixture: how to build it and, for invalid ones, what validation must report. */
export interface FixtureSpec {
  /** Directory under `testdata/episodes/`. */
  dir: string;
  /** One line for the README. */
  description: string;
  /** The episode before the mutation (default: the base terminal story). */
  build?: () => EpisodeModel;
  /** Object-level mutation. */
  mutate?: (m: EpisodeModel) => void;
  /** Do not re-sync the last projection with state.json after `mutate`. */
  keepProjection?: boolean;
  /** Byte-level mutation before the manifest is computed. */
  raw?: (files: FixtureFiles, m: EpisodeModel) => void;
  /** Mutation of the computed manifest. */
  manifest?: (manifest: Json) => void;
  /** Byte-level mutation after the manifest is written. */
  after?: (files: FixtureFiles, m: EpisodeModel) => void;
  /** For invalid fixtures: what validation must report (given the built model). */
  expected?: (m: EpisodeModel) => Expected;
  /** The name of the episode directory inside the fixture directory. @default {EPISODE_ID} */
  episodeDir?: string;
}

/**
 * The episode directory of a fixture: `testdata/episodes/<dir>/<episode id>`.
 *
 * @example
 * ```ts
 * import { fixtureEpisode } from "./make-fixtures.ts";
 * fixtureEpisode("valid-terminal"); // ".../testdata/episodes/valid-terminal/ep_01JNQ8M3F0K2V7WQ4XNB5T6Y9Z"
 * ```
 */
export function fixtureEpisode(dir: string): string {
  return join(FIXTURES_DIR, dir, FIXTURES.find((s) => s.dir === dir)?.episodeDir ?? EPISODE_ID);
}

const only = (rule: string, line: number | null = null): Expected => ({ rules: [rule], line });

/** Every fixture, valid ones first. */
export const FIXTURES: FixtureSpec[] = [
  {
    dir: "valid-terminal",
    description:
      "complete terminal meta-mode run: start → observe → interpret → plan (step_records + legacy labels) → direction → action_candidate → governance → act ×3 → reflect → learn (form A) → run.state_projection → terminate → insight; learn.jsonl with one learn/1.0 line; all four links; summary 1.3.0; manifest with correct sha256 and sizes",
  },
  {
    dir: "valid-nonterminal",
    description:
      "approval pause: two acts, then governance vetoes step-3 (enforce, pause on veto); state.json pending with links events+learn only; run.state_projection, run.interrupt, run.checkpoint; empty learn.jsonl; a checkpoint file; no summary, no manifest",
    build: buildPause,
  },
  {
    dir: "valid-legacy-learn",
    description: "the base run with a legacy inline learn payload (form B) and an empty learn.jsonl",
    build: () => buildTerminal({ ...BASE, learnForm: "inline" }),
  },
  {
    dir: "valid-legacy-plan",
    description: "the base run whose plan event has only legacy `<kind>:<description>` labels (no step_records)",
    build: () => buildTerminal({ ...BASE, planForm: "labels" }),
  },
  {
    dir: "valid-legacy-state",
    description:
      "minimal-mode run from an older version: no episode.intuition_mode, no direction/governance/insight events, summary without insight and without flags.direction",
    build: () => buildTerminal({ ...BASE, mode: "minimal", intuitionMode: null }),
  },

  // ---- Files and lines.
  {
    dir: "invalid/file.missing",
    description: "events.jsonl deleted (the manifest no longer lists it); state.json still links it",
    raw: (f) => void f.delete("events.jsonl"),
    expected: () => ({ rules: ["file.missing", "lifecycle.links"], line: null }),
  },
  {
    dir: "invalid/file.json",
    description: "summary.json starts with a UTF-8 byte order mark",
    raw: (f) => void f.set("summary.json", new Uint8Array([0xef, 0xbb, 0xbf, ...f.get("summary.json")!])),
    expected: () => only("file.json", 1),
  },
  {
    dir: "invalid/jsonl.utf8",
    description: "the insight event line holds a byte that is not UTF-8 (0xFF)",
    raw: (f, m) => {
      const ls = lines(f, "events.jsonl").map((l) => enc.encode(l));
      const n = lineOf(m, phase("insight"));
      // Event lines are ASCII, so a string index is a byte index.
      ls[n - 1][dec.decode(ls[n - 1]).indexOf("summary.json")] = 0xff;
      const out: number[] = [];
      for (const l of ls) out.push(...l, 0x0a);
      f.set("events.jsonl", new Uint8Array(out));
    },
    expected: (m) => only("jsonl.utf8", lineOf(m, phase("insight"))),
  },
  {
    dir: "invalid/jsonl.json",
    description: "the terminate event line lost its closing brace (the line still ends with a newline)",
    raw: (f, m) => {
      const ls = lines(f, "events.jsonl");
      const n = lineOf(m, phase("terminate"));
      ls[n - 1] = ls[n - 1].slice(0, -1);
      setLines(f, "events.jsonl", ls);
    },
    expected: (m) => only("jsonl.json", lineOf(m, phase("terminate"))),
  },
  {
    dir: "invalid/jsonl.blank",
    description: "an empty line between the reflect and learn events",
    raw: (f, m) => {
      const ls = lines(f, "events.jsonl");
      ls.splice(lineOf(m, phase("reflect")), 0, "");
      setLines(f, "events.jsonl", ls);
    },
    expected: (m) => only("jsonl.blank", lineOf(m, phase("reflect")) + 1),
  },
  {
    dir: "invalid/jsonl.not_object",
    description: "a JSON array line after the terminate event",
    raw: (f, m) => {
      const ls = lines(f, "events.jsonl");
      ls.splice(lineOf(m, phase("terminate")), 0, '["not","an","event"]');
      setLines(f, "events.jsonl", ls);
    },
    expected: (m) => only("jsonl.not_object", lineOf(m, phase("terminate")) + 1),
  },
  {
    dir: "invalid/jsonl.torn",
    description: "the last events.jsonl line (insight) is cut mid-JSON, with no newline",
    raw: (f) => {
      const ls = lines(f, "events.jsonl");
      const last = ls.length - 1;
      ls[last] = ls[last].slice(0, Math.floor(ls[last].length / 2));
      setLines(f, "events.jsonl", ls, false);
    },
    expected: (m) => only("jsonl.torn", m.events.length),
  },

  // ---- Events.
  {
    dir: "invalid/event.required",
    description: "the observe event has no evidence_ids",
    mutate: (m) => void delete eventAt(m, phase("observe")).evidence_ids,
    expected: (m) => only("event.required", lineOf(m, phase("observe"))),
  },
  {
    dir: "invalid/event.faculty",
    description: 'the direction event names faculty "volition"',
    mutate: (m) => void (eventAt(m, phase("direction")).faculty = "volition"),
    expected: (m) => only("event.faculty", lineOf(m, phase("direction"))),
  },
  {
    dir: "invalid/event.metrics",
    description: "the second act event's metrics lack completed_at",
    mutate: (m) => void delete (eventAt(m, phase("act", 2)).metrics as Json).completed_at,
    expected: (m) => only("event.metrics", lineOf(m, phase("act", 2))),
  },
  {
    dir: "invalid/event.schema",
    description: "the reflect event's agent_id is a number",
    mutate: (m) => void (eventAt(m, phase("reflect")).agent_id = 7),
    expected: (m) => only("event.schema", lineOf(m, phase("reflect"))),
  },
  {
    dir: "invalid/event.duplicate_id",
    description: "the insight event reuses the terminate event's id",
    mutate: (m) => void (eventAt(m, phase("insight")).id = eventAt(m, phase("terminate")).id),
    expected: (m) => only("event.duplicate_id", lineOf(m, phase("insight"))),
  },
  {
    dir: "invalid/event.caused_by",
    description: "the interpret event's caused_by names the later plan event",
    mutate: (m) => void (eventAt(m, phase("interpret")).caused_by = eventAt(m, phase("plan")).id),
    expected: (m) => only("event.caused_by", lineOf(m, phase("interpret"))),
  },
  {
    dir: "invalid/event.duplicate_start",
    description: "a second start event (another id, the same payload) right after the first",
    mutate: (m) => void m.events.splice(1, 0, { ...eventAt(m, phase("start")), id: eventId(99) }),
    expected: () => only("event.duplicate_start", 2),
  },
  {
    dir: "invalid/event.schema-date",
    description: "the terminate event's timestamp is February 30 (not a calendar date; the ISO 8601 pattern allows it)",
    mutate: (m) => void (eventAt(m, phase("terminate")).timestamp = "2026-02-30T10:00:00.962Z"),
    expected: (m) => only("event.schema", lineOf(m, phase("terminate"))),
  },
  {
    dir: "invalid/event.episode_id",
    description: "the governance event carries another episode's id",
    mutate: (m) => void (eventAt(m, phase("governance")).episode_id = "ep_01JNQ8M3F0AAAAAAAAAAAAAAAA"),
    expected: (m) => only("event.episode_id", lineOf(m, phase("governance"))),
  },

  // ---- Payloads.
  {
    dir: "invalid/payload.learn",
    description: "the learn payload matches neither form (form A without proposal_ids)",
    mutate: (m) => void delete payloadOf(m, phase("learn")).proposal_ids,
    expected: (m) => only("payload.learn", lineOf(m, phase("learn"))),
  },
  {
    dir: "invalid/payload.learn-both",
    description: "the learn payload matches both forms (form A plus policy_id, basis, proposal, scope)",
    mutate: (m) =>
      void Object.assign(payloadOf(m, phase("learn")), { policy_id: POLICY, basis: [], proposal: [], scope: "policy" }),
    expected: (m) => only("payload.learn", lineOf(m, phase("learn"))),
  },
  {
    dir: "invalid/payload.action_candidate",
    description: "the action_candidate payload has no state_hash",
    mutate: (m) => void delete payloadOf(m, phase("action_candidate")).state_hash,
    expected: (m) => only("payload.action_candidate", lineOf(m, phase("action_candidate"))),
  },
  {
    dir: "invalid/payload.act",
    description: "the third act payload has no outcome",
    mutate: (m) => void delete payloadOf(m, phase("act", 3)).outcome,
    expected: (m) => only("payload.act", lineOf(m, phase("act", 3))),
  },
  {
    dir: "invalid/payload.plan",
    description: 'a plan step_record has kind "deploy" (not one of the six step kinds)',
    mutate: (m) => void ((payloadOf(m, phase("plan")).step_records as Json[])[1].kind = "deploy"),
    expected: (m) => only("payload.plan", lineOf(m, phase("plan"))),
  },

  // ---- Artifact schemas.
  {
    dir: "invalid/state.schema",
    description: 'state.json has state_schema_version "2.0.0"',
    mutate: (m) => void (m.state.state_schema_version = "2.0.0"),
    expected: () => only("state.schema", 3),
  },
  {
    dir: "invalid/summary.schema",
    description: "summary.json says verification.provided false but passed true",
    mutate: (m) => void ((m.summary!.verification as Json).passed = true),
    expected: () => only("summary.schema", 11),
  },
  {
    dir: "invalid/state.schema-sections",
    description: "state.json has no episode, goal or plan section",
    mutate: (m) => {
      delete m.state.episode;
      delete m.state.goal;
      delete m.state.plan;
    },
    expected: () => ({ rules: ["state.schema", "state.schema", "state.schema"], line: 1 }),
  },
  {
    dir: "invalid/learn.schema-date",
    description: "the learn.jsonl line's timestamp is April 31 (not a calendar date)",
    mutate: (m) => void (m.learn[0].timestamp = "2026-04-31T10:00:00.938Z"),
    expected: () => only("learn.schema", 1),
  },
  {
    dir: "invalid/summary.success",
    description: 'summary.json metrics.success is 0 while outcome is "success_unverified" (a success)',
    mutate: (m) => void ((m.summary!.metrics as Json).success = 0),
    expected: (m) => only("summary.success", lineOfText(pretty(m.summary), '"success": 0')),
  },
  {
    dir: "invalid/summary.duration",
    description: "summary.json duration_sec is 1.98 while metrics.latencies.total_ms is 980",
    mutate: (m) => void (m.summary!.duration_sec = 1.98),
    expected: (m) => only("summary.duration", lineOfText(pretty(m.summary), '"duration_sec"')),
  },
  {
    dir: "invalid/summary.schema-sections",
    description: "summary.json has no flags or metrics section",
    mutate: (m) => {
      delete m.summary!.flags;
      delete m.summary!.metrics;
    },
    expected: () => ({ rules: ["summary.schema", "summary.schema"], line: 1 }),
  },
  {
    dir: "invalid/summary.mode",
    description:
      'summary.json says flags.mode "minimal" but keeps the meta-mode insight block (flags.direction removed)',
    mutate: (m) => {
      const flags = m.summary!.flags as Json;
      flags.mode = "minimal";
      delete flags.direction;
    },
    expected: (m) =>
      only("summary.mode", pretty(m.summary).split("\n").findIndex((l) => l.startsWith('  "insight"')) + 1),
  },
  {
    dir: "invalid/manifest.schema",
    description: "manifest.json lists learn.jsonl before events.jsonl (not sorted by name)",
    manifest: (man) => {
      const files = man.files as Json[];
      [files[0], files[1]] = [files[1], files[0]];
    },
    expected: () => only("manifest.schema", 13),
  },
  {
    dir: "invalid/json.duplicate_key",
    description: 'summary.json repeats "schema_version" (same value) in its root object',
    raw: (f) => {
      const text = new TextDecoder().decode(f.get("summary.json")!);
      const line = '  "schema_version": "1.3.0",\n';
      f.set("summary.json", new TextEncoder().encode(text.replace(line, line + line)));
    },
    expected: () => only("json.duplicate_key", 3),
  },
  {
    dir: "invalid/learn.schema",
    description: "the learn.jsonl line has no agent_id",
    mutate: (m) => void delete m.learn[0].agent_id,
    expected: () => only("learn.schema", 1),
  },

  // ---- Lifecycle.
  {
    dir: "invalid/lifecycle.links",
    description: "terminal run whose state.json links lack manifest",
    mutate: (m) => void delete (m.state.links as Json).manifest,
    expected: () => only("lifecycle.links"),
  },
  {
    dir: "invalid/lifecycle.links-nonterminal",
    description: "approval pause (non-terminal) whose state.json links summary",
    build: buildPause,
    mutate: (m) => void ((m.state.links as Json).summary = "summary.json"),
    expected: () => only("lifecycle.links"),
  },
  {
    dir: "invalid/lifecycle.status-nonterminal",
    description: 'approval pause (non-terminal: no summary, no manifest) whose outcomes.status is "ok", not "pending"',
    build: buildPause,
    mutate: (m) => void ((m.state.outcomes as Json).status = "ok"),
    expected: () => only("lifecycle.status"),
  },
  {
    dir: "invalid/lifecycle.files",
    description: "terminal run with summary.json but no manifest.json (state.json still links it)",
    after: (f) => void f.delete("manifest.json"),
    expected: () => ({ rules: ["lifecycle.files", "lifecycle.links"], line: null }),
  },
  {
    dir: "invalid/lifecycle.status",
    description: 'terminal run (summary and manifest written) whose outcomes.status is "pending"',
    mutate: (m) => void ((m.state.outcomes as Json).status = "pending"),
    expected: () => only("lifecycle.status"),
  },

  // ---- Traceability.
  {
    dir: "invalid/trace.start",
    description: "the start event's timestamp is 2 ms earlier than episode.started_at",
    mutate: (m) => void (eventAt(m, phase("start")).timestamp = at(-2)),
    expected: (m) => only("trace.start", lineOf(m, phase("start"))),
  },
  {
    dir: "invalid/trace.projection",
    description: 'the last run.state_projection says outcomes.status "pending" while state.json says "ok"',
    mutate: (m) => void ((lastProjection(m)!.payload as { outcomes: Json }).outcomes.status = "pending"),
    keepProjection: true,
    expected: (m) => only("trace.projection", m.events.indexOf(lastProjection(m)!) + 1),
  },
  {
    dir: "invalid/trace.action_timestamp",
    description: "outcomes.actions[1].timestamp is 1 ms later than its act event",
    mutate: (m) => {
      const a = ((m.state.outcomes as Json).actions as Json[])[1];
      a.timestamp = new Date(Date.parse(a.timestamp as string) + 1).toISOString();
    },
    expected: (m) => only("trace.action_timestamp", lineOf(m, phase("act", 2))),
  },
  {
    dir: "invalid/trace.action_mirror",
    description: 'outcomes.actions[1].result_status is "error" while its act event says "ok"',
    mutate: (m) => void (((m.state.outcomes as Json).actions as Json[])[1].result_status = "error"),
    expected: (m) => only("trace.action_mirror", lineOf(m, phase("act", 2))),
  },
  {
    dir: "invalid/trace.action_missing",
    description: "terminal run whose outcomes.actions lacks the third action, though its act event is there",
    mutate: (m) => void ((m.state.outcomes as Json).actions as Json[]).pop(),
    expected: (m) => only("trace.action_missing", lineOf(m, phase("act", 3))),
  },
  {
    dir: "invalid/trace.learn_proposals",
    description: "the learn event says proposal_count 2 but lists one proposal id (learn.jsonl has one)",
    mutate: (m) => void (payloadOf(m, phase("learn")).proposal_count = 2),
    expected: (m) => only("trace.learn_proposals", lineOf(m, phase("learn"))),
  },
  {
    dir: "invalid/trace.learn_proposals-summary",
    description: "summary.json metrics.learn_proposals is 2 while the learn event and learn.jsonl have one proposal",
    mutate: (m) => void ((m.summary!.metrics as Json).learn_proposals = 2),
    expected: () => only("trace.learn_proposals"),
  },
  {
    dir: "invalid/trace.branching_factor",
    description: "summary.json insight.metrics.branching_factor is 2 while events.jsonl has one direction event",
    mutate: (m) => void (((m.summary!.insight as Json).metrics as Json).branching_factor = 2),
    expected: () => only("trace.branching_factor"),
  },
  {
    dir: "invalid/trace.learn",
    description: "the learn event points at learn/episode.jsonl, which does not exist",
    mutate: (m) => void (payloadOf(m, phase("learn")).learn_path = "learn/episode.jsonl"),
    expected: (m) => only("trace.learn", lineOf(m, phase("learn"))),
  },
  {
    dir: "invalid/trace.summary",
    description: "summary.json task differs from state.json goal.task",
    mutate: (m) => void (m.summary!.task = "Summarize the passing tests"),
    expected: () => only("trace.summary"),
  },

  {
    dir: "invalid/trace.plan",
    description:
      "terminal run whose state.json plan says step-2 failed and names another source than the plan event, which with its act events says done",
    mutate: (m) => {
      const plan = m.state.plan as { steps: Json[]; source: string };
      plan.steps[1].status = "failed";
      plan.source = "planner:resume";
    },
    expected: () => ({ rules: ["trace.plan", "trace.plan"], line: null }),
  },
  {
    dir: "invalid/trace.directory",
    description:
      "the episode directory was renamed: its name is another episode id than the one state.json and the events carry",
    episodeDir: "ep_01JNQ8M3F0AAAAAAAAAAAAAAAA",
    expected: () => only("trace.directory"),
  },

  // ---- Manifest integrity.
  {
    dir: "invalid/manifest.missing",
    description: "manifest.json lists attachments/notes.txt, which was deleted after the manifest was written",
    mutate: (m) => void (m.extra["attachments/notes.txt"] = "reviewer notes\n"),
    after: (f) => void f.delete("attachments/notes.txt"),
    expected: () => only("manifest.missing"),
  },
  {
    dir: "invalid/manifest.size",
    description: "manifest.json records summary.json one byte larger than it is (the hash is right)",
    manifest: (man) => {
      const entry = (man.files as Json[]).find((f) => f.name === "summary.json")!;
      entry.size_bytes = (entry.size_bytes as number) + 1;
    },
    expected: () => only("manifest.size"),
  },
  {
    dir: "invalid/manifest.hash",
    description: 'learn.jsonl edited after the manifest was written ("Increase" → "increase": same size, other bytes)',
    after: (f) => {
      const text = dec.decode(f.get("learn.jsonl")!);
      f.set("learn.jsonl", enc.encode(text.replace("Increase direction", "increase direction")));
    },
    expected: () => only("manifest.hash"),
  },
  {
    dir: "invalid/manifest.unlisted",
    description: "manifest.json does not list learn.jsonl",
    manifest: (man) => void (man.files = (man.files as Json[]).filter((f) => f.name !== "learn.jsonl")),
    expected: () => only("manifest.unlisted"),
  },
];

/** One built fixture. */
export interface BuiltFixture {
  /** The spec it came from. */
  spec: FixtureSpec;
  /** Its files (the episode's under its directory), including `expected.json` for invalid fixtures. */
  files: FixtureFiles;
  /** The parsed expectation (invalid fixtures only). */
  expected: Expected | null;
}

/** Builds one fixture in memory. */
export function buildFixture(spec: FixtureSpec): BuiltFixture {
  const model = (spec.build ?? (() => buildTerminal()))();
  spec.mutate?.(model);
  if (!spec.keepProjection) syncProjection(model);
  const files = serialize(model);
  spec.raw?.(files, model);
  if (model.summary) {
    const manifest = manifestOf(files, model);
    spec.manifest?.(manifest);
    files.set("manifest.json", enc.encode(pretty(manifest)));
  }
  spec.after?.(files, model);
  const placed: FixtureFiles = new Map();
  for (const [name, bytes] of files) placed.set(`${spec.episodeDir ?? EPISODE_ID}/${name}`, bytes);
  const expected = spec.expected ? spec.expected(model) : null;
  if (expected) placed.set("expected.json", enc.encode(pretty(expected)));
  return { spec, files: placed, expected };
}

/** Builds every fixture in memory. */
export function buildFixtures(): BuiltFixture[] {
  return FIXTURES.map(buildFixture);
}

/** Every file under a directory (relative POSIX paths, sorted). */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(relative(dir, p).split("\\").join("/"));
    }
  };
  walk(dir);
  return out.sort();
}

/**
 * Differences between the built fixtures and the files on disk under `root`,
 * as messages (empty when they match byte for byte, with no extra files).
 */
export function staleFixtures(root: string = FIXTURES_DIR): string[] {
  const want = new Map<string, Uint8Array>();
  for (const f of buildFixtures()) for (const [name, bytes] of f.files) want.set(`${f.spec.dir}/${name}`, bytes);
  const problems: string[] = [];
  const have = new Set(filesUnder(root).filter((p) => p !== "README.md"));
  for (const [path, bytes] of want) {
    if (!have.has(path)) problems.push(`${path}: missing`);
    else if (Buffer.compare(readFileSync(join(root, path)), bytes) !== 0) problems.push(`${path}: differs`);
  }
  for (const path of have) if (!want.has(path)) problems.push(`${path}: not made by the generator`);
  return problems;
}

/** Writes every fixture under `root`, replacing what was there. */
export function writeFixtures(root: string = FIXTURES_DIR): number {
  rmSync(root, { recursive: true, force: true });
  let count = 0;
  for (const f of buildFixtures()) {
    for (const [name, bytes] of f.files) {
      const path = join(root, f.spec.dir, name);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, bytes);
    }
    count++;
  }
  return count;
}

/** CLI entry: write the fixtures, or with `--check` report stale ones. */
export function main(args: string[] = process.argv.slice(2)): number {
  if (args.includes("--check")) {
    const stale = staleFixtures();
    for (const s of stale) console.error(`testdata/episodes/${s}`);
    if (stale.length > 0) console.error("fixtures are stale: run `bun scripts/make-fixtures.ts`");
    return stale.length > 0 ? 1 : 0;
  }
  const n = writeFixtures();
  console.log(`wrote ${n} fixtures to ${relative(process.cwd(), FIXTURES_DIR) || FIXTURES_DIR}`);
  return 0;
}

if (import.meta.main) process.exit(main());
