/**
 * Rebuilding a run's progress from `events.jsonl`, the source of truth, for
 * `resume`: the plan with step statuses, the actions, the facts, the counters
 * behind the summary, per-policy evidence for learning, pauses, and whether
 * the log ends in a torn line.
 *
 * @module
 */
import { join } from "node:path";
import type { ActionRecord } from "../schema/state.ts";
import { readJsonl } from "../store/jsonl.ts";
import { ARTIFACTS } from "../store/layout.ts";
import { PlanProjector } from "../read/plan.ts";
import type { EngineProgress } from "./engine.ts";
import type { PolicyEvidence } from "./learning.ts";
import { newCounters } from "./summary_builder.ts";

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
  /** Damaged lines other than a torn final line (resume refuses these). */
  damaged: { line: number; message: string }[];
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
  const path = join(dir, ARTIFACTS.events);
  const plan = new PlanProjector();
  const counters = newCounters();
  const actions: ActionRecord[] = [];
  const facts: RebuiltRun["facts"] = [];
  const evidence = new Map<string, PolicyEvidence>();
  const damaged: RebuiltRun["damaged"] = [];
  let start: Record<string, unknown> | null = null, startedAt = "", startedMs = 0;
  let lastDiff: string[] = [], lastDirectivePolicy: string | null = null;
  let previousEventId: string | null = null;
  let lastStepEventId = "", lastEventId = "", lastEvent: Record<string, unknown> = {};
  let eventCount = 0, waitingMs = 0, pausedAt: number | null = null;
  let terminate: Record<string, unknown> | null = null;
  let torn: RebuiltRun["torn"] = null;
  for (const entry of readJsonl(path)) {
    if (entry.problem) {
      if (entry.problem === "torn") torn = { offset: entry.offset, bytes: entry.bytes, line: entry.line };
      else damaged.push({ line: entry.line, message: entry.message });
      continue;
    }
    const e = entry.value;
    const p = (e.payload ?? {}) as Record<string, unknown>;
    eventCount++;
    previousEventId = lastEventId || null;
    lastEventId = String(e.id);
    lastEvent = e;
    plan.add(e);
    const ts = Date.parse(String(e.timestamp));
    switch (e.phase) {
      case "start":
        start ??= p;
        if (!startedAt) {
          startedAt = String(e.timestamp);
          startedMs = ts;
        }
        break;
      case "plan":
        counters.plan++;
        if (counters.plan === 1) counters.planning_ms = ts - startedMs;
        lastStepEventId = String(e.id);
        break;
      case "direction": {
        counters.direction++;
        const id = String(p.policy_id ?? p.policy);
        const ev = evidence.get(id) ??
          {
            policyId: id,
            policyVersion: String(p.policy_version ?? "unspecified"),
            vetoes: 0,
            directionEvents: 0,
            confidence: 0,
            eventIds: [],
          };
        evidence.set(id, ev);
        ev.directionEvents++;
        if (p.status === "blocked") counters.direction_failed++;
        if (p.status === "applied") {
          counters.direction_applied++;
          lastDirectivePolicy = id;
          if (p.kind === "veto") {
            counters.direction_vetoed++;
            ev.vetoes++;
            ev.confidence = Math.max(ev.confidence, Number(p.confidence ?? 0));
            ev.eventIds.push(String(e.id));
            lastDirectivePolicy = id;
          }
          if (p.kind === "intervention" && Array.isArray(p.diff)) {
            lastDiff = p.diff.map((d) => String((d as { key?: unknown }).key));
            lastDirectivePolicy = id;
          }
        }
        break;
      }
      case "governance":
        counters.governance++;
        if (p.decision === "veto" && p.enforced === false) counters.would_veto++;
        break;
      case "act": {
        // A vetoed step's act event is evidence for the plan, not an executed action.
        if (p.step_status === "vetoed") counters.veto++;
        else counters.act++;
        const metrics = e.metrics as { started_at?: string } | undefined;
        if (counters.first_action_ms === null && metrics?.started_at) {
          counters.first_action_ms = Date.parse(metrics.started_at) - startedMs;
        }
        counters.execution_ms += Number(p.duration_ms ?? 0);
        actions.push({
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
        for (const f of Array.isArray(p.facts) ? p.facts : []) facts.push(f as RebuiltRun["facts"][number]);
        lastStepEventId = String(e.id);
        break;
      }
      case "runtime":
        if (e.event_type === "run.checkpoint") pausedAt = ts;
        if (e.event_type === "run.resume" && pausedAt !== null) {
          waitingMs += ts - pausedAt;
          pausedAt = null;
        }
        break;
      case "reflect":
        counters.reflect++;
        break;
      case "terminate":
        terminate = p;
        break;
    }
  }
  if (!start) throw new Error(`${path}: no start event; the run cannot be rebuilt`);
  const rebuilt = plan.plan();
  return {
    start,
    startedAt,
    steps: rebuilt?.steps ?? [],
    planSource: rebuilt?.source ?? "planner:unknown",
    actions,
    facts,
    counters,
    evidence,
    lastDiff,
    lastDirectivePolicy,
    lastStepEventId: lastStepEventId || lastEventId,
    eventCount,
    lastEventId,
    previousEventId,
    lastEvent,
    waitingMs,
    pausedAt,
    terminate,
    torn,
    damaged,
  };
}
