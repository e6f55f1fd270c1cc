/**
 * Rebuilding a run's progress from `events.jsonl`, the source of truth, for
 * `resume`: the plan with step statuses, the actions, the facts, the counters
 * behind the summary, per-policy evidence for learning, pauses, and whether
 * the log ends in a torn line.
 *
 * @module
 */
import { countReview } from "./review_record.ts";
import { join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import type { ActionRecord } from "../schema/state.ts";
import { type JsonlEntry, readJsonl } from "../store/jsonl.ts";
import { ARTIFACTS } from "../store/layout.ts";
import { PlanProjector } from "../read/plan.ts";
import type { EngineProgress } from "./engine.ts";
import type { PolicyEvidence } from "./learning.ts";
import { newCounters } from "./summary_builder.ts";
import { calledAs } from "../called_as.ts";
import { checkEvent } from "../schema/event.ts";
import { hash53, NumberSet, repeatedIds } from "../store/number_set.ts";

/** What a run's events say about it: the engine's progress fields, and what resume checks. */
export interface RebuiltRun extends
  Pick<
    EngineProgress,
    | "steps"
    | "planSource"
    | "actions"
    | "facts"
    | "counters"
    | "evidence"
    | "lastDiff"
    | "lastDirectivePolicy"
    | "lastStepEventId"
    | "startedAt"
  > {
  /** The `start` event's payload (settings included). */
  start: Record<string, unknown>;
  /** The latest `plan` event's timestamp and rationale (what a terminal `state.plan` must say), when there is one. */
  planUpdatedAt: string | null;
  planRationale: string | null;
  /** Number of complete events. */
  eventCount: number;
  /** Id of the last complete event. */
  lastEventId: string;
  /** Id of the complete event before it (what a checkpoint's `last_event_id` names). */
  previousEventId: string | null;
  /** The last complete event. */
  lastEvent: Record<string, unknown>;
  /** Milliseconds spent paused (checkpoint to resume), for completed pauses. */
  waitingMs: number;
  /** When the current pause began (the last run.checkpoint with no run.resume after it), in ms. */
  pausedAt: number | null;
  /** The `terminate` event's payload, when the run got that far. */
  terminate: Record<string, unknown> | null;
  /** A torn final line: its byte offset and length. */
  torn: { offset: number; bytes: number; line: number } | null;
  /**
   * Damaged lines other than a torn final line (resume refuses these): lines that are not JSON, values that are not
   * events of the contract (a JSON object that fails the event schema), an event of another episode, and (from
   * {@link rebuildRun}) an event whose id an earlier one has.
   */
  damaged: { line: number; offset: number; message: string }[];
  /**
   * The action that was running when the run stopped: its last
   * `action.process` event had no `act` event for its step after it.
   */
  interrupted: InterruptedAction | null;
}

/** An action whose program was started (`action.process`) and never reported (no `act` event after it). */
export interface InterruptedAction {
  /** The `action.process` event's payload (step, candidate, pid, pgid, identity). */
  process: Record<string, unknown>;
  /** That event's id and timestamp. */
  eventId: string;
  startedAt: string;
  /** The action's masked input, from its `action_candidate` event (null when the log has none). */
  input: Record<string, unknown> | null;
}

/** Everything the scan of an event log accumulates, before it becomes a {@link RebuiltRun}. */
interface RunScan {
  plan: PlanProjector;
  counters: RebuiltRun["counters"];
  actions: ActionRecord[];
  facts: RebuiltRun["facts"];
  evidence: Map<string, PolicyEvidence>;
  damaged: RebuiltRun["damaged"];
  start: Record<string, unknown> | null;
  startedAt: string;
  startedMs: number;
  lastDiff: string[];
  lastDirectivePolicy: string | null;
  previousEventId: string | null;
  lastStepEventId: string;
  lastEventId: string;
  lastEvent: Record<string, unknown>;
  eventCount: number;
  waitingMs: number;
  pausedAt: number | null;
  terminate: Record<string, unknown> | null;
  torn: RebuiltRun["torn"];
  interrupted: InterruptedAction | null;
  /** The latest `action_candidate` event's id and masked input. */
  candidate: { id: string; input: Record<string, unknown> } | null;
  /** The `hash53` of each event id so far, and those seen twice (a duplicate id, or a hash collision to confirm). */
  ids: NumberSet;
  idsTwice: Set<number>;
  /** The episode id of the start event (each event must name it). */
  episodeId: string | null;
}

/** An empty scan: nothing read yet. */
function newScan(): RunScan {
  return {
    plan: new PlanProjector(),
    counters: newCounters(),
    actions: [],
    facts: [],
    evidence: new Map(),
    damaged: [],
    start: null,
    startedAt: "",
    startedMs: 0,
    lastDiff: [],
    lastDirectivePolicy: null,
    previousEventId: null,
    lastStepEventId: "",
    lastEventId: "",
    lastEvent: {},
    eventCount: 0,
    waitingMs: 0,
    pausedAt: null,
    terminate: null,
    torn: null,
    interrupted: null,
    candidate: null,
    ids: new NumberSet(),
    idsTwice: new Set(),
    episodeId: null,
  };
}

/**
 * Scans an episode's event log.
 *
 * @example
 * ```ts
 * import { rebuildRun } from "noema";
 * const r = rebuildRun(".noema/episodes/ep_1");
 * console.log(r.steps.map((s) => s.status), r.torn);
 * ```
 */
export function rebuildRun(dir: string): RebuiltRun {
  const replay = replayRun(dir);
  let next = replay.next();
  while (!next.done) next = replay.next();
  return next.value;
}

/**
 * Confirms the event ids whose hash was seen twice (`twice`) against the ids themselves, reading the log again:
 * each repeated id is a damaged line.
 */
function confirmDuplicateIds(entries: Iterable<JsonlEntry>, twice: Set<number>, damaged: RebuiltRun["damaged"]): void {
  for (const { entry, id, first } of repeatedIds(entries, twice)) {
    damaged.push({
      line: entry.line,
      offset: entry.offset,
      message: `id: ${JSON.stringify(id)} is already used on line ${first}`,
    });
  }
  damaged.sort((a, b) => a.line - b.line);
}

/** One complete event of a replayed log, and the run as rebuilt from the events before it. */
export interface ReplayedEvent {
  /** The event. */
  event: Record<string, unknown>;
  /**
   * The run as `resume` would rebuild it had the log ended just before this event (null before the `start`
   * event). Its `actions` and `facts` are the replay's own lists: they grow as the replay goes on.
   */
  before(): RebuiltRun | null;
}

/**
 * Scans an episode's event log like {@link rebuildRun}, one event at a time: each complete event is yielded, with
 * the run rebuilt from the events before it, before it is folded in (what `noema policy backtest` replays the
 * policies' snapshots from). Returns the rebuilt run; throws like {@link rebuildRun} when the log has no start.
 *
 * @example
 * ```ts
 * import { replayRun } from "./rebuild.ts";
 * for (const { event, before } of replayRun(".noema/episodes/ep_1")) {
 *   if (event.phase === "action_candidate") console.log(before()?.actions.length);
 * }
 * ```
 */
export function replayRun(dir: string): Generator<ReplayedEvent, RebuiltRun, undefined> {
  const path = join(dir, ARTIFACTS.events);
  return replayEntries(readJsonl(path), path, () => readJsonl(path));
}

/**
 * {@link replayRun} over the lines of an event log read elsewhere (a shared store's copy): `path` names the log in
 * the error a log without a start event throws; `again`, when given, reads the lines once more to confirm an event
 * id seen twice (a damaged line; without it, a repeated id is not looked for).
 *
 * @example
 * ```ts
 * import { replayEntries } from "./rebuild.ts";
 * import { type JsonlEntry, readJsonl } from "../store/jsonl.ts";
 * for (const { event } of replayEntries(readJsonl("events.jsonl"), "events.jsonl")) console.log(event.phase);
 * ```
 */
export function* replayEntries(
  entries: Iterable<JsonlEntry>,
  path: string,
  again?: () => Iterable<JsonlEntry>,
): Generator<ReplayedEvent, RebuiltRun, undefined> {
  const scan = newScan();
  for (const entry of entries) {
    if (entry.problem) {
      if (entry.problem === "torn") scan.torn = { offset: entry.offset, bytes: entry.bytes, line: entry.line };
      else scan.damaged.push({ line: entry.line, offset: entry.offset, message: entry.message });
      continue;
    }
    const problem = eventProblem(scan, entry.value);
    if (problem !== null) {
      scan.damaged.push({ line: entry.line, offset: entry.offset, message: problem });
      continue;
    }
    yield { event: entry.value, before: () => scan.start ? rebuiltFrom(scan, scan.start) : null };
    scanEvent(scan, entry.value);
  }
  if (!scan.start) {
    throw new NoemaError(
      "no_start",
      `${
        scan.eventCount === 0 ? "no events" : "no start event"
      }: the run cannot be rebuilt from this log (${calledAs()} validate lists its problems)`,
      { file: path, line: 1, exitCode: EXIT.MISMATCH },
    );
  }
  // A repeated id (damaged) or a collision of their hashes: told apart by reading the ids again, when the log can be.
  if (scan.idsTwice.size > 0 && again) confirmDuplicateIds(again(), scan.idsTwice, scan.damaged);
  return rebuiltFrom(scan, scan.start);
}

/**
 * Why a parsed line is no event to rebuild a run from, or null: it fails the event schema (what `noema validate`
 * reports), or names another episode than the start event's. Its id is noted (a repeated one is confirmed later).
 */
function eventProblem(scan: RunScan, e: Record<string, unknown>): string | null {
  const problems = checkEvent(e);
  if (problems.length > 0) {
    const p = problems[0];
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : "";
    return `not an event of the contract: ${p.path ? `${p.path}: ` : ""}${p.message}${more}`;
  }
  if (scan.episodeId !== null && e.episode_id !== scan.episodeId) {
    return `episode_id: ${JSON.stringify(e.episode_id)} is not the episode's (${scan.episodeId})`;
  }
  if (e.phase === "start") scan.episodeId ??= String(e.episode_id);
  const h = hash53(String(e.id));
  if (scan.ids.has(h)) scan.idsTwice.add(h);
  else scan.ids.add(h);
  return null;
}

/** Folds one complete event into the scan: the log position, the plan, then what its phase counts. */
function scanEvent(scan: RunScan, e: Record<string, unknown>): void {
  const p = (e.payload ?? {}) as Record<string, unknown>;
  scan.eventCount++;
  scan.previousEventId = scan.lastEventId || null;
  scan.lastEventId = String(e.id);
  scan.lastEvent = e;
  scan.plan.add(e);
  const ts = Date.parse(String(e.timestamp));
  switch (e.phase) {
    case "start":
      scan.start ??= p;
      if (!scan.startedAt) {
        scan.startedAt = String(e.timestamp);
        scan.startedMs = ts;
      }
      break;
    case "plan":
      scan.counters.plan++;
      if (scan.counters.plan === 1) scan.counters.planning_ms = ts - scan.startedMs;
      scan.lastStepEventId = String(e.id);
      break;
    case "direction":
      scanDirection(scan, e, p);
      break;
    case "governance":
      scan.counters.governance++;
      if (p.decision === "veto" && p.enforced === false) scan.counters.would_veto++;
      if (p.decision === "unreviewed") scan.counters.unreviewed = (scan.counters.unreviewed ?? 0) + 1;
      if (p.stage === "review") countReview(scan.counters, String(p.decision), p.enforced !== false, p.error != null);
      break;
    case "act":
      scanAct(scan, e, p);
      break;
    case "runtime":
      scanPause(scan, e, ts);
      scanProcess(scan, e, p);
      break;
    case "action_candidate":
      scan.candidate = {
        id: String(p.action_candidate_id),
        input: ((p.payload as Record<string, unknown> | undefined)?.input ?? {}) as Record<string, unknown>,
      };
      break;
    case "reflect":
      scan.counters.reflect++;
      break;
    case "learn":
      // What the summary counts of the proposals (a run killed while sealing is sealed from the log).
      scan.counters.learn_proposals = typeof p.proposal_count === "number" ? p.proposal_count : 0;
      scan.counters.learn_applied = typeof p.applied_count === "number" ? p.applied_count : 0;
      break;
    case "terminate":
      scan.terminate = p;
      break;
  }
}

/** A direction event: its counters, the policy's learning evidence, and the last directive's policy and diff. */
function scanDirection(scan: RunScan, e: Record<string, unknown>, p: Record<string, unknown>): void {
  const counters = scan.counters;
  counters.direction++;
  const id = String(p.policy_id ?? p.policy);
  const ev = scan.evidence.get(id) ??
    {
      policyId: id,
      policyVersion: String(p.policy_version ?? "unspecified"),
      vetoes: 0,
      directionEvents: 0,
      confidence: 0,
      eventIds: [],
    };
  scan.evidence.set(id, ev);
  ev.directionEvents++;
  if (p.status === "blocked") counters.direction_failed++;
  if (p.status === "applied") {
    counters.direction_applied++;
    scan.lastDirectivePolicy = id;
    if (p.kind === "veto") {
      counters.direction_vetoed++;
      ev.vetoes++;
      ev.confidence = Math.max(ev.confidence, Number(p.confidence ?? 0));
      ev.eventIds.push(String(e.id));
      scan.lastDirectivePolicy = id;
    }
    if (p.kind === "intervention" && Array.isArray(p.diff)) {
      scan.lastDiff = p.diff.map((d) => String((d as { key?: unknown }).key));
      scan.lastDirectivePolicy = id;
    }
  }
}

/** An act event: the act/veto counters and timings, the action record, and the facts it established. */
function scanAct(scan: RunScan, e: Record<string, unknown>, p: Record<string, unknown>): void {
  const counters = scan.counters;
  // A vetoed step's act event is evidence for the plan, not an executed action.
  if (p.step_status === "vetoed") counters.veto++;
  else counters.act++;
  const metrics = e.metrics as { started_at?: string } | undefined;
  if (counters.first_action_ms === null && metrics?.started_at) {
    counters.first_action_ms = Date.parse(metrics.started_at) - scan.startedMs;
  }
  counters.execution_ms += Number(p.duration_ms ?? 0);
  scan.actions.push({
    id: p.action_id as string,
    kind: p.kind as string,
    tool: p.tool as string,
    input_excerpt: p.input_excerpt as string,
    result_status: p.result_status as string,
    step_id: p.step_id as string,
    provenance: p.provenance as Record<string, unknown>,
    result_artifacts: (p.result_artifacts ?? []) as Record<string, unknown>[],
    timestamp: String(e.timestamp),
    input: p.input,
    output: p.output,
    duration_ms: Number(p.duration_ms ?? 0),
  });
  for (const f of Array.isArray(p.facts) ? p.facts : []) scan.facts.push(f as RebuiltRun["facts"][number]);
  scan.lastStepEventId = String(e.id);
  if (scan.interrupted?.process.step_id === p.step_id) scan.interrupted = null;
}

/** An `action.process` event: the action it started is running until an `act` event for its step. */
function scanProcess(scan: RunScan, e: Record<string, unknown>, p: Record<string, unknown>): void {
  if (e.event_type !== "action.process") return;
  const candidate = scan.candidate?.id === p.action_candidate_id ? scan.candidate : null;
  scan.interrupted = {
    process: p,
    eventId: String(e.id),
    startedAt: String(e.timestamp),
    input: candidate?.input ?? null,
  };
}

/** A runtime event: a checkpoint opens a pause, a resume closes it and adds its length to the waiting time. */
function scanPause(scan: RunScan, e: Record<string, unknown>, ts: number): void {
  if (e.event_type === "run.checkpoint") scan.pausedAt = ts;
  if (e.event_type === "run.resume" && scan.pausedAt !== null) {
    scan.waitingMs += ts - scan.pausedAt;
    scan.pausedAt = null;
  }
}

/** The finished scan as a {@link RebuiltRun}, with the plan projected from the events. */
function rebuiltFrom(scan: RunScan, start: Record<string, unknown>): RebuiltRun {
  const rebuilt = scan.plan.plan();
  return {
    start,
    startedAt: scan.startedAt,
    steps: rebuilt?.steps ?? [],
    planSource: rebuilt?.source ?? "planner:unknown",
    planUpdatedAt: rebuilt?.updated_at ?? null,
    planRationale: rebuilt?.rationale ?? null,
    actions: scan.actions,
    facts: scan.facts,
    counters: scan.counters,
    evidence: scan.evidence,
    lastDiff: scan.lastDiff,
    lastDirectivePolicy: scan.lastDirectivePolicy,
    lastStepEventId: scan.lastStepEventId || scan.lastEventId,
    eventCount: scan.eventCount,
    lastEventId: scan.lastEventId,
    previousEventId: scan.previousEventId,
    lastEvent: scan.lastEvent,
    waitingMs: scan.waitingMs,
    pausedAt: scan.pausedAt,
    terminate: scan.terminate,
    torn: scan.torn,
    damaged: scan.damaged,
    interrupted: scan.interrupted,
  };
}
