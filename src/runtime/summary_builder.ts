/**
 * Building `summary.json` (1.3.0) from what the run recorded.
 *
 * @module
 */
import { CONTRACT_VERSIONS } from "../version.ts";
import type {
  AdapterResult,
  CostMetrics,
  Mode,
  Outcome,
  Summary,
  TokenMetrics,
  Verification,
} from "../schema/summary.ts";

/** Counters the runtime keeps while it runs. */
export interface RunCounters {
  plan: number;
  act: number;
  reflect: number;
  /** Actions blocked by a veto. */
  veto: number;
  /** Vetoes recorded but not enforced (governance audit). */
  would_veto: number;
  direction: number;
  direction_applied: number;
  direction_vetoed: number;
  /** Direction events whose policy failed (threw, timed out, returned garbage): status blocked, policy_failure. */
  direction_failed: number;
  governance: number;
  /** Results recorded for calls noema never saw proposed (verdict `unreviewed`; absent in older files: 0). */
  unreviewed?: number;
  /** Reviews of results (policies' `review`); absent when no policy reviewed a result. */
  review?: ReviewCounters;
  learn_proposals: number;
  learn_applied: number;
  /** Milliseconds from start to the first action's start, if any. */
  first_action_ms: number | null;
  planning_ms: number;
  execution_ms: number;
}

/** Review counts of a run: results reviewed, redacted, blocked, hinted, reviews that failed, and would-have (audit). */
export interface ReviewCounters {
  reviewed: number;
  redacted: number;
  blocked: number;
  hinted: number;
  failed: number;
  /** Redactions and blocks recorded but not applied (governance audit). */
  would: number;
}

/**
 * Fresh counters.
 *
 * @example
 * ```ts
 * import { newCounters } from "noema";
 * newCounters().act; // 0
 * ```
 */
export function newCounters(): RunCounters {
  return {
    plan: 0,
    act: 0,
    reflect: 0,
    veto: 0,
    would_veto: 0,
    direction: 0,
    direction_applied: 0,
    direction_vetoed: 0,
    direction_failed: 0,
    governance: 0,
    learn_proposals: 0,
    learn_applied: 0,
    first_action_ms: null,
    planning_ms: 0,
    execution_ms: 0,
  };
}

/** Inputs of {@link buildSummary}. */
export interface SummaryInput {
  episodeId: string;
  task: string;
  startedAt: string;
  /** The total episode duration: start to end, time spent waiting for approval included. */
  totalMs: number;
  /** Working time: the total minus time spent waiting for approval. @default {totalMs - waitingMs} */
  workingMs?: number;
  /** Time spent waiting for approval. @default {0} */
  waitingMs?: number;
  adapterResult: AdapterResult;
  outcome: Outcome;
  verification: Verification;
  mode: Mode;
  intuition: boolean;
  counters: RunCounters;
  direction?: { policy: string | null; threshold: number; last_diff: string[]; failed: number };
  insight?: { plan_adherence: number; tool_coverage: number; branching_factor: number; plan_revisions: number };
  tags: Record<string, unknown>;
  /** Extra metrics a driver reports (e.g. `tokens`), merged into `metrics`; the built-in ones win. */
  metrics?: ExtraMetrics;
}

/** Extra `summary.json` metrics: token usage and cost estimate of an agent's model turns, or any extension field. */
export type ExtraMetrics = { tokens?: TokenMetrics; cost?: CostMetrics } & Record<string, unknown>;

const round3 = (n: number) => Math.round(n * 1000) / 1000;

/**
 * The `summary.json` object.
 *
 * @example
 * ```ts
 * import { buildSummary } from "noema";
 * // const summary = buildSummary({ episodeId, task, ... });
 * ```
 */
export function buildSummary(input: SummaryInput): Summary {
  const c = input.counters;
  const success = input.outcome === "success" || input.outcome === "success_unverified" ? 1 : 0;
  const latencies: Record<string, number> = {
    total_ms: round3(input.totalMs),
    planning_ms: round3(c.planning_ms),
    execution_ms: round3(c.execution_ms),
  };
  if (c.first_action_ms !== null) latencies.first_action_ms = round3(c.first_action_ms);
  const waiting = input.waitingMs ?? 0;
  latencies.working_ms = round3(input.workingMs ?? Math.max(0, input.totalMs - waiting));
  latencies.waiting_ms = round3(waiting);
  const summary: Summary = {
    schema_version: CONTRACT_VERSIONS.summary,
    episode_id: input.episodeId,
    task: input.task,
    started_at: input.startedAt,
    duration_sec: round3(input.totalMs / 1000),
    adapter_result: input.adapterResult,
    outcome: input.outcome,
    verification: input.verification,
    flags: { intuition: input.intuition, mode: input.mode },
    metrics: {
      ...input.metrics,
      success: success as 0 | 1,
      plan_count: c.plan,
      act_count: c.act,
      reflect_count: c.reflect,
      veto_count: c.veto,
      would_veto_count: c.would_veto,
      ...(c.unreviewed ? { unreviewed_count: c.unreviewed } : {}),
      ...(c.review ? { review: { ...c.review } } : {}),
      learn_proposals: c.learn_proposals,
      learn_applied: c.learn_applied,
      latencies,
    },
    tags: input.tags,
  };
  if (input.direction) {
    summary.flags!.direction = {
      applied: c.direction_applied,
      vetoed: c.direction_vetoed,
      ...(input.direction.policy !== null ? { policy: input.direction.policy } : {}),
      threshold: input.direction.threshold,
      last_diff: input.direction.last_diff,
      failed: input.direction.failed,
    };
  }
  if (input.insight) summary.insight = { metrics: input.insight };
  return summary;
}
