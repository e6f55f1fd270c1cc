/**
 * The data behind `noema report`: one episode's artifacts (state.json,
 * summary.json, events.jsonl) gathered into a {@link ReportModel} with ONE
 * streaming pass over `events.jsonl`. Every step carries its policy verdicts
 * (direction and governance events) and its actions with bounded excerpts of
 * their input and output, so the model (and the page) stays small for an
 * episode of 10,000 steps: excerpts share a character budget, the timeline
 * keeps its first and last events, long path lists are cut.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { EXIT, NoemaError } from "../errors.ts";
import { asRecord, textOf } from "../json.ts";
import { episodePaths } from "../read/episode.ts";
import { PlanProjector } from "../read/plan.ts";
import { StepDecisions } from "../read/step_decisions.ts";
import type { EpisodeLocation } from "../store/layout.ts";
import { NOEMA_VERSION } from "../version.ts";
import { eventSummary, msBetween } from "../cli/format.ts";
import { actionOf, attach, type ReportStep, verdictOf } from "./steps.ts";
import { clip, type Excerpt } from "./excerpt.ts";
import { finalAnswer } from "../read/answer.ts";
import { readEventLines } from "./event_lines.ts";
import { readJsonArtifact } from "./json_artifact.ts";

export type { ReportAction, ReportStep, ReportVerdict } from "./steps.ts";
export type { Excerpt } from "./excerpt.ts";

/** Options of {@link buildReport}. */
export interface ReportOptions {
  /** Longest excerpt of one action's input or output, in characters. @default {2000} */
  excerptChars?: number;
  /** Characters shared by all excerpts: with many actions each gets less (never under 200). @default {4000000} */
  budgetChars?: number;
  /** Events shown at the start of the timeline. @default {50} */
  timelineHead?: number;
  /** Events shown at the end of the timeline. @default {200} */
  timelineTail?: number;
  /** Entries shown per workspace diff list (added, modified, deleted). @default {500} */
  listLimit?: number;
  /** The report's creation time. @default {now} */
  now?: Date;
}

/** One row of the timeline. */
export interface TimelineRow {
  /** 1-based position of the event in events.jsonl. */
  n: number;
  /** The event's timestamp. */
  timestamp: string | null;
  /** Milliseconds since the first event. */
  delta_ms: number | null;
  /** The phase. */
  phase: string;
  /** A one-line summary of the payload (clipped). */
  summary: string;
  /** Why the row stands out, if it does. */
  mark: "veto" | "policy_failure" | "error" | null;
}

/** A list cut to a limit. */
export interface CutList {
  /** The entries kept. */
  items: string[];
  /** How many there were in all. */
  total: number;
}

/** Verification, from summary.json. */
export interface ReportVerification {
  provided: boolean;
  passed: boolean | null;
  error: string | null;
  assertions: { name: string; target: string; passed: boolean | null; reason: string }[];
  diff: { added: CutList; modified: CutList; deleted: CutList } | null;
}

/** Everything the report shows. */
export interface ReportModel {
  episode_id: string;
  generated_at: string;
  noema_version: string;
  /** `terminal` when summary.json exists. */
  lifecycle: "terminal" | "non-terminal";
  /** outcomes.status of state.json. */
  status: string;
  /** summary.json outcome (terminal runs). */
  outcome: string | null;
  adapter_result: string | null;
  task: Excerpt;
  /** An agent's final answer (see `finalAnswer`), or null. */
  answer: Excerpt | null;
  started_at: string | null;
  duration_ms: number | null;
  /** Header facts: adapter, mode, intuition mode, governance, policies… (label, value). */
  facts: [string, string][];
  /** outcomes.error, as one line. */
  error: string | null;
  /** Why a non-terminal run waits (its last lifecycle event), or null. */
  waiting: string | null;
  plan_source: string | null;
  steps: ReportStep[];
  verification: ReportVerification | null;
  /** summary.json metrics, flags.direction and insight.metrics as (label, value) rows. */
  metrics: [string, string][];
  counts: {
    events: number;
    by_phase: Record<string, number>;
    actions: number;
    /** Enforced vetoes (one that asked for a human's decision counts as that decision: approved or rejected). */
    vetoes: number;
    would_vetoes: number;
    policy_failures: number;
    damaged_lines: number;
    /** Steps a human approved (they then ran). */
    approved: number;
    /** Steps a human rejected. */
    rejected: number;
  };
  timeline: { head: TimelineRow[]; tail: TimelineRow[]; omitted: number };
  /** Problems met while reading: unreadable files, damaged lines. */
  problems: string[];
  /** The per-action excerpt length used. */
  excerpt_chars: number;
}

const str = (x: unknown): string | null => (typeof x === "string" ? x : null);

function readOptional(path: string, problems: string[]): Record<string, unknown> | null {
  if (!existsSync(path)) return null;
  try {
    return readJsonArtifact(path);
  } catch (e) {
    if (!(e instanceof NoemaError)) throw e;
    problems.push(e.message);
    return null;
  }
}

function timelineMark(e: Record<string, unknown>): TimelineRow["mark"] {
  const p = asRecord(e.payload);
  if (e.phase === "governance" && p.decision === "veto") {
    return textOf(p.rule ?? "").startsWith("policy.failure:") ? "policy_failure" : "veto";
  }
  if (e.phase === "direction" && p.error !== null && p.error !== undefined) return "policy_failure";
  if (e.phase === "act" && p.result_status === "error") return "error";
  if (e.phase === "terminate" && p.status === "error") return "error";
  return null;
}

/** The timeline row of event `e`, line `n` of the log (`first`: the first event's timestamp). */
function timelineRow(n: number, e: Record<string, unknown>, phase: string, first: string | null): TimelineRow {
  const ts = str(e.timestamp);
  return {
    n,
    timestamp: ts,
    delta_ms: msBetween(first, ts),
    phase,
    summary: eventSummary(e, 80).slice(0, 400),
    mark: timelineMark(e),
  };
}

/** Events over this size (bytes) are summarized as they come; smaller ones when they end up in the tail. */
const KEEP_EVENT_BYTES = 16 * 1024;

/**
 * The last `size` events of the timeline. A row is made (summary, delta) only for the events that stay in it, not
 * for each of a long log's events; an event is kept until then only when it is small (a large one is summarized at
 * once), so the tail holds at most `size` small events.
 */
class TimelineTail {
  #ring: ({ n: number; e: Record<string, unknown>; phase: string } | { row: TimelineRow })[] = [];
  #at = 0;

  constructor(readonly size: number) {}

  add(n: number, e: Record<string, unknown>, phase: string, bytes: number): void {
    if (this.size <= 0) return;
    const item = bytes > KEEP_EVENT_BYTES ? { row: timelineRow(n, e, phase, null) } : { n, e, phase };
    if (this.#ring.length < this.size) this.#ring.push(item);
    else this.#ring[this.#at] = item;
    this.#at = (this.#at + 1) % this.size;
  }

  /** The rows, oldest first (`first`: the first event's timestamp). */
  rows(first: string | null): TimelineRow[] {
    const ordered = this.#ring.length < this.size
      ? this.#ring
      : [...this.#ring.slice(this.#at), ...this.#ring.slice(0, this.#at)];
    return ordered.map((x) =>
      "row" in x ? { ...x.row, delta_ms: msBetween(first, x.row.timestamp) } : timelineRow(x.n, x.e, x.phase, first)
    );
  }
}

/** Reads the events once: steps, counts, timeline. */
function scanEvents(
  path: string | null,
  excerptChars: number,
  compact: boolean,
  o: Required<ReportOptions>,
  problems: string[],
) {
  const projector = new PlanProjector();
  const decisions = new StepDecisions();
  const steps = new Map<string, ReportStep>();
  const byPhase: Record<string, number> = {};
  const head: TimelineRow[] = [], tail = new TimelineTail(o.timelineTail);
  const counts = { events: 0, actions: 0, vetoes: 0, would_vetoes: 0, policy_failures: 0, damaged_lines: 0 };
  let first: string | null = null, waiting: string | null = null, directionFailures = 0, governanceFailures = 0;
  let answer: string | null = null, message: string | null = null, start: Record<string, unknown> = {};
  for (const entry of path === null ? [] : readEventLines(path)) {
    if (entry.line === 1) start = entry.problem ? {} : entry.value;
    if (entry.problem) {
      if (++counts.damaged_lines <= 5) problems.push(`${path}:${entry.line}: ${entry.message}`);
      continue;
    }
    const e = entry.value, p = asRecord(e.payload);
    const phase = typeof e.phase === "string" ? e.phase : "?";
    counts.events++;
    byPhase[phase] = (byPhase[phase] ?? 0) + 1;
    projector.add(e);
    decisions.add(e);
    const ts = str(e.timestamp);
    first ??= ts;
    const stepId = str(p.step_id) ?? str(asRecord(p.payload).step_id);
    if (phase === "direction" || phase === "governance") {
      const v = verdictOf(phase, e, p);
      if (v.failure) phase === "governance" ? governanceFailures++ : directionFailures++;
      if (phase === "governance" && v.veto) v.enforced === false ? counts.would_vetoes++ : counts.vetoes++;
      if (stepId !== null) attach(steps, stepId).verdicts.push(v);
    } else if (phase === "act") {
      counts.actions++;
      if (stepId !== null) attach(steps, stepId).actions.push(actionOf(e, p, excerptChars, compact));
    } else if (phase === "action_candidate" && stepId !== null) {
      const tags = asRecord(p).risk_tags;
      if (Array.isArray(tags)) attach(steps, stepId).risk_tags = tags.map(textOf);
    } else if (phase === "terminate") {
      [message, answer] = [str(p.message), str(p.answer)];
    } else if (phase === "runtime" && typeof e.event_type === "string" && e.event_type !== "run.state_projection") {
      waiting = [e.event_type, str(p.status), str(p.reason) ?? str(asRecord(p.pending).reason)]
        .filter((x) => x !== null).join(": ");
    }
    if (head.length < o.timelineHead) head.push(timelineRow(entry.line, e, phase, first));
    else tail.add(entry.line, e, phase, entry.bytes);
  }
  // With governance events, each failure is one decision; without (governance off), count the direction failures.
  counts.policy_failures = byPhase.governance ? governanceFailures : directionFailures;
  if (counts.damaged_lines > 5) problems.push(`${path}: ${counts.damaged_lines - 5} more damaged lines`);
  const tailRows = tail.rows(first);
  const omitted = counts.events - head.length - tailRows.length;
  return {
    projector,
    decisions,
    steps,
    byPhase,
    counts,
    timeline: { head, tail: tailRows, omitted },
    start,
    waiting,
    answer,
    message,
  };
}

function cutList(x: unknown, limit: number): CutList {
  const all = Array.isArray(x) ? x.map((p) => (typeof p === "string" ? p : JSON.stringify(p))) : [];
  return { items: all.slice(0, limit), total: all.length };
}

function verificationOf(summary: Record<string, unknown> | null, limit: number): ReportVerification | null {
  if (!summary) return null;
  const v = asRecord(summary.verification);
  const d = v.workspace_diff;
  const show = (x: unknown) => (typeof x === "string" ? x : x === undefined || x === null ? "" : JSON.stringify(x));
  return {
    provided: v.provided === true,
    passed: typeof v.passed === "boolean" ? v.passed : null,
    error: v.error === null || v.error === undefined ? null : show(v.error),
    assertions: (Array.isArray(v.assertions) ? v.assertions : []).map((a0) => {
      const a = asRecord(a0);
      return {
        name: str(a.name) ?? str(a.kind) ?? str(a.type) ?? "assertion",
        target: Array.isArray(a.target) ? a.target.map(show).join(", ") : show(a.target ?? a.path),
        passed: typeof a.passed === "boolean" ? a.passed : null,
        reason: show(a.reason),
      };
    }),
    diff: d && typeof d === "object"
      ? {
        added: cutList(asRecord(d).added, limit),
        modified: cutList(asRecord(d).modified, limit),
        deleted: cutList(asRecord(d).deleted, limit),
      }
      : null,
  };
}

function flatten(prefix: string, x: unknown, out: [string, string][]): void {
  if (x === undefined) return;
  if (typeof x === "object" && x !== null && !Array.isArray(x)) {
    for (const [k, v] of Object.entries(x)) flatten(prefix ? `${prefix}.${k}` : k, v, out);
  } else out.push([prefix, typeof x === "string" ? x : JSON.stringify(x)]);
}

function metricsOf(summary: Record<string, unknown> | null, state: Record<string, unknown> | null): [string, string][] {
  const rows: [string, string][] = [];
  if (summary) {
    flatten("", summary.metrics, rows);
    flatten("direction", asRecord(summary.flags).direction, rows);
    flatten("insight", asRecord(summary.insight).metrics, rows);
  } else flatten("so far", asRecord(state?.outcomes).metrics, rows);
  return rows;
}

function factsOf(state: Record<string, unknown> | null, start: Record<string, unknown>): [string, string][] {
  const ep = asRecord(state?.episode);
  const sp = asRecord(start.payload);
  const facts: [string, string | null][] = [
    ["adapter", str(ep.using) ?? str(sp.using)],
    ["mode", str(sp.mode)],
    ["intuition mode", str(ep.intuition_mode) ?? str(sp.intuition_mode)],
    ["governance", str(sp.governance)],
    ["failure policy", str(sp.failure_policy)],
    ["policies", Array.isArray(sp.policies) && sp.policies.length ? sp.policies.map(textOf).join(", ") : null],
    ["workspace", str(sp.workspace)],
    ["seed", typeof (ep.seed ?? sp.seed) === "number" ? String(ep.seed ?? sp.seed) : null],
  ];
  const tags = asRecord(ep.tags ?? sp.tags);
  for (const [k, v] of Object.entries(tags)) facts.push([`tag ${k}`, textOf(v)]);
  return facts.filter((f): f is [string, string] => f[1] !== null);
}

/**
 * Gathers the report of one episode. Fails (exit 1) when the directory is not
 * an episode (neither state.json nor events.jsonl); damaged lines and
 * unreadable files are listed in `problems`, not thrown.
 *
 * @example
 * ```ts
 * import { locateEpisode } from "../store/layout.ts";
 * import { buildReport } from "./model.ts";
 * const model = buildReport(locateEpisode("ep_01K9RBBMXXRSFWR49SXFGF4SPR"));
 * console.log(model.steps.length, model.counts.vetoes);
 * ```
 */
export function buildReport(loc: EpisodeLocation, options: ReportOptions = {}): ReportModel {
  const o: Required<ReportOptions> = {
    excerptChars: 2000,
    budgetChars: 4_000_000,
    timelineHead: 50,
    timelineTail: 200,
    listLimit: 500,
    now: new Date(),
    ...options,
  };
  const paths = episodePaths(loc.dir);
  if (!existsSync(paths.state) && !existsSync(paths.events)) {
    throw new NoemaError("not_episode", `not an episode directory: ${loc.dir} (no state.json or events.jsonl)`, {
      exitCode: EXIT.ERROR,
    });
  }
  const problems: string[] = [];
  const state = readOptional(paths.state, problems);
  const summary = readOptional(paths.summary, problems);
  const outcomes = asRecord(state?.outcomes);
  const planned = Array.isArray(outcomes.actions) ? outcomes.actions.length : 0;
  // Two excerpts (input, output) per action share the budget.
  const excerptChars = Math.max(200, Math.min(o.excerptChars, Math.floor(o.budgetChars / 2 / Math.max(1, planned))));
  const hasEvents = existsSync(paths.events);
  if (!hasEvents) problems.push(`${paths.events}: file not found`);
  // Many actions: JSON excerpts on one line (the page lists such episodes compactly).
  const scan = scanEvents(hasEvents ? paths.events : null, excerptChars, planned > 100, o, problems);
  const start = scan.start;
  const plan = scan.projector.plan();
  const steps = orderSteps(plan?.steps ?? [], scan.steps, recordedStatuses(state));
  const { decidedVetoes, ...decided } = withDecisions(steps, scan.decisions);
  const startedAt = str(summary?.started_at) ?? str(asRecord(state?.episode).started_at) ?? str(start.timestamp);
  const task = str(asRecord(state?.goal).task) ?? str(summary?.task) ?? str(asRecord(start.payload).task) ?? "";
  return {
    episode_id: loc.id,
    generated_at: o.now.toISOString(),
    noema_version: NOEMA_VERSION,
    lifecycle: existsSync(paths.summary) ? "terminal" : "non-terminal",
    status: str(outcomes.status) ?? "unknown",
    outcome: str(summary?.outcome),
    adapter_result: str(summary?.adapter_result),
    task: clip(task, 20_000),
    answer: answerOf(scan, state, start),
    started_at: startedAt,
    duration_ms: typeof summary?.duration_sec === "number" ? summary.duration_sec * 1000 : null,
    facts: factsOf(state, start),
    error: outcomes.error === null || outcomes.error === undefined ? null : errorLine(outcomes.error),
    waiting: summary ? null : scan.waiting,
    plan_source: plan?.source ?? null,
    steps,
    verification: verificationOf(summary, o.listLimit),
    metrics: metricsOf(summary, state),
    counts: { ...scan.counts, ...decided, vetoes: scan.counts.vetoes - decidedVetoes, by_phase: scan.byPhase },
    timeline: scan.timeline,
    problems,
    excerpt_chars: excerptChars,
  };
}

/**
 * Sets each step's human decision; counts the approved and rejected steps, and the governance vetoes of decided
 * steps (they asked for the decision a human took, which is what is shown and counted).
 */
function withDecisions(
  steps: ReportStep[],
  decisions: StepDecisions,
): { approved: number; rejected: number; decidedVetoes: number } {
  const out = { approved: 0, rejected: 0, decidedVetoes: 0 };
  for (const step of steps) {
    step.decision = decisions.of(step.id) ?? null;
    if (step.decision === null) continue;
    step.decision.decision === "approved" ? out.approved++ : out.rejected++;
    out.decidedVetoes += step.verdicts.filter((v) => v.faculty === "governance" && v.veto && v.enforced !== false)
      .length;
  }
  return out;
}

/** The agent's final answer, clipped like the task. */
function answerOf(
  scan: { answer: string | null; message: string | null },
  state: Record<string, unknown> | null,
  start: Record<string, unknown>,
): Excerpt | null {
  const using = str(asRecord(state?.episode).using) ?? str(asRecord(start.payload).using);
  const answer = finalAnswer(scan.answer, scan.message, using, asRecord(state?.outcomes).status);
  return answer === null ? null : clip(answer, 20_000);
}

function errorLine(error: unknown): string {
  const e = asRecord(error);
  if (typeof e.message === "string") return typeof e.type === "string" ? `${e.type}: ${e.message}` : e.message;
  return typeof error === "string" ? error : JSON.stringify(error);
}

/** Step statuses as state.json records them (a vetoed step has no act event, so only state.json says `vetoed`). */
function recordedStatuses(state: Record<string, unknown> | null): Map<string, string> {
  const out = new Map<string, string>();
  const steps = asRecord(state?.plan).steps;
  if (Array.isArray(steps)) {
    for (const s of steps.map(asRecord)) {
      if (typeof s.id === "string" && typeof s.status === "string") out.set(s.id, s.status);
    }
  }
  return out;
}

/** A step's status when neither state.json nor the plan has it: from its last action, or vetoed by governance. */
function statusFromEvents(step: ReportStep): string {
  const last = step.actions.at(-1);
  if (last) return last.result_status === "error" ? "failed" : "done";
  return step.verdicts.some((v) => v.faculty === "governance" && v.verdict === "veto" && v.enforced !== false)
    ? "vetoed"
    : "pending";
}

/**
 * Plan steps in plan order, then steps seen only in events. The status is the
 * one state.json records, else the plan rebuilt from events, else from the events.
 */
function orderSteps(
  planSteps: readonly { id: string; kind: string; description: string; status: string }[],
  seen: Map<string, ReportStep>,
  recorded: Map<string, string>,
): ReportStep[] {
  const out: ReportStep[] = [];
  for (const s of planSteps) {
    const step = attach(seen, s.id);
    step.kind = s.kind;
    step.description = s.description;
    step.status = recorded.get(s.id) ?? s.status;
    step.in_plan = true;
    out.push(step);
  }
  for (const step of seen.values()) {
    if (step.in_plan) continue;
    step.status = recorded.get(step.id) ?? statusFromEvents(step);
    out.push(step);
  }
  out.forEach((s, i) => (s.index = i + 1));
  return out;
}
