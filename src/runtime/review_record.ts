/**
 * Recording a result's review in the episode: one `direction` event per
 * policy with a `review` method (`stage: "review"`), then one `governance`
 * event (`stage: "review"`) with the decision, what the agent was shown
 * (`agent_saw`: `original`, `redacted`, `blocked`, or `none` in a
 * plan-driven run, where no agent reads results) and, when it was not the
 * original, the text it got instead (`shown`, masked for secrets like every
 * artifact). The `act` event before them keeps the output the tool produced.
 *
 * @module
 */
import type { ActResult, PendingAction, PolicyStep, ReviewState } from "../plugins/api.ts";
import { frozenJsonCopy } from "../plugins/freeze.ts";
import { outputExcerpt } from "../plugins/review.ts";
import type { PlanStep } from "../schema/plan.ts";
import { boundedValue, limits } from "../store/limits.ts";
import { displayCommand } from "./core/command.ts";
import type { Engine } from "./engine.ts";
import { combineReviews, consultReview, type ResultReview, type ReviewOutcome } from "./review.ts";
import { redactWithinBounds } from "./review_mask.ts";
import type { ReviewCounters } from "./summary_builder.ts";

/**
 * What the agent can be shown instead of a result: `replace` when its
 * integration can put another output (or an error) in the result's place;
 * `agent: false` in a plan-driven run (nobody reads the result).
 */
export interface ReviewDelivery {
  /** Whether the agent can be shown another output (a redaction). @default {true} */
  replace?: boolean;
  /** Whether a block withholds the result from the agent. @default {replace} */
  block?: boolean;
  /** @default {true} */
  agent?: boolean;
}

/** A result's review as the episode recorded it: what the agent is shown, and what it saw. */
export interface RecordedReview extends ResultReview {
  /** What the agent saw: the original result, a redacted one, a blocked one, or none (no agent). */
  agent_saw: "original" | "redacted" | "blocked" | "none";
}

/**
 * Reviews the result of the action of step `index` (recorded by its `act` event `actEventId`): consults every
 * policy with a `review` method, records their verdicts and the decision, and returns what the agent is shown.
 * Null when no policy reviews results, or the action did not run (`skipped`): nothing is recorded.
 *
 * @example
 * ```ts
 * import { reviewResult } from "./review_record.ts";
 * // const review = await reviewResult(engine, index, action, candidateId, result, actEventId);
 * // if (review?.decision === "redact") send(review.shown);
 * ```
 */
export async function reviewResult(
  e: Engine,
  index: number,
  action: PendingAction,
  candidateId: string,
  result: ActResult,
  actEventId: string,
  delivery: ReviewDelivery = {},
): Promise<RecordedReview | null> {
  const s = e.s, p = e.p;
  const reviewers = s.policies.filter((x) => typeof x.review === "function");
  // A call that did not run (skipped) has no result for the agent to see.
  if (reviewers.length === 0 || result.status === "skipped") return null;
  const step = p.steps[index];
  // Taken before anything is awaited: a parallel call recorded meanwhile must not be mistaken for this one.
  const actionId = p.actions.at(-1)?.id ?? null;
  const state = reviewState(e, index, action, result);
  const outcomes: ReviewOutcome[] = [];
  const eventIds: string[] = [];
  for (const policy of reviewers) {
    const o = await consultReview(policy, state, {
      intuitionMode: s.intuitionMode,
      thresholds: s.thresholds,
      defaultThreshold: s.threshold,
      timeoutMs: s.timeoutMs,
      now: () => e.rec.now(),
    });
    outcomes.push(o);
    eventIds.push(directionEvent(e, step, o, actEventId));
  }
  const output = result.output ?? null;
  // Patterns run where each policy runs (its worker), within the policy timeout: a failure withholds the result.
  const redaction = s.governance === "audit" ? undefined : await redactWithinBounds(outcomes, output, s.timeoutMs);
  const combined = combineReviews(outcomes, output, s.governance, s.failurePolicy, redaction);
  const review: RecordedReview = { ...combined, agent_saw: agentSaw(combined, delivery) };
  governanceEvent(e, step, { candidateId, actionId, actEventId }, review, eventIds);
  return review;
}

/**
 * What the agent saw, given the decision and what its integration can do.
 *
 * @example
 * ```ts
 * import { agentSaw } from "./review_record.ts";
 * // agentSaw(review, { replace: false }); // "original": the agent's integration cannot replace a result
 * ```
 */
export function agentSaw(r: ResultReview, delivery: ReviewDelivery): RecordedReview["agent_saw"] {
  if (delivery.agent === false) return "none";
  if (!r.enforced) return "original";
  const replace = delivery.replace !== false;
  if (r.decision === "block") return (delivery.block ?? replace) ? "blocked" : "original";
  return r.decision === "redact" && replace ? "redacted" : "original";
}

/** The frozen state `review` gets: the snapshot (with the action just recorded), the action, step and result. */
function reviewState(e: Engine, index: number, action: PendingAction, result: ActResult): ReviewState {
  const output = result.output ?? null;
  const step: PolicyStep = e.stepView(index);
  const view = e.snapshot.view(
    Object.freeze({
      kind: action.kind,
      tool: action.tool,
      input: frozenJsonCopy(action.input),
      command: action.command ?? displayCommand(action.input),
    }),
    step,
    {
      workspace: e.s.workspace,
      result: {
        status: result.status,
        output: frozenJsonCopy(output),
        excerpt: outputExcerpt(output),
        error: result.error ? { type: String(result.error.type), message: String(result.error.message) } : null,
      },
    },
  );
  return view as unknown as ReviewState;
}

/** One policy's review verdict as a `direction` event (`stage: "review"`), counted like any direction event. */
function directionEvent(e: Engine, step: PlanStep, o: ReviewOutcome, actEventId: string): string {
  const p = e.p;
  const verdict = o.verdict ? e.redactor.redact(o.verdict).value : null;
  const event = e.emit("direction", {
    policy: o.policy.id,
    policy_id: o.policy.id,
    policy_version: o.policy.version,
    step_id: step.id,
    stage: "review",
    kind: verdict?.kind ?? "none",
    advice: verdict?.advice ?? null,
    confidence: verdict?.confidence ?? null,
    threshold: o.threshold,
    status: o.status,
    reason: o.reason,
    diff: [],
    patch: null,
    ...(verdict?.kind === "redact"
      ? { redaction: { text: verdict.text !== undefined, patterns: verdict.patterns ?? [] } }
      : {}),
    requires_approval: false,
    error: o.error ? e.redactor.redact(o.error).value : null,
    advise_ms: o.duration_ms,
  }, {
    faculty: "direction",
    caused_by: actEventId,
    metrics: { started_at: o.started_at, completed_at: o.completed_at, duration_ms: o.duration_ms },
  });
  p.counters.direction++;
  const ev = p.evidence.get(o.policy.id);
  if (ev) ev.directionEvents++;
  if (o.status === "blocked") p.counters.direction_failed++;
  if (o.status === "applied") {
    p.counters.direction_applied++;
    p.lastDirectivePolicy = o.policy.id;
  }
  return event.id;
}

/** The review's `governance` event (`stage: "review"`), and the review counters. */
function governanceEvent(
  e: Engine,
  step: PlanStep,
  ids: { candidateId: string; actionId: string | null; actEventId: string },
  r: RecordedReview,
  eventIds: string[],
): void {
  const p = e.p, s = e.s;
  // What the agent got (or, with no agent, would get) instead of the result.
  const changed = r.agent_saw === "redacted" || (r.agent_saw === "none" && r.enforced && r.decision === "redact");
  if (s.mode !== "minimal") {
    e.emit("governance", {
      stage: "review",
      decision: r.decision,
      rule: r.rule,
      rule_id: r.rule,
      message: r.reason === null ? "no policy objected to the result" : e.redactor.redactString(r.reason),
      policy_id: r.policy_id,
      mode: s.governance,
      failure_policy: s.failurePolicy,
      enforced: r.enforced,
      action_candidate_id: ids.candidateId,
      action_id: ids.actionId,
      step_id: step.id,
      agent_saw: r.agent_saw,
      // What the agent got instead of the result (masked like every artifact, bounded like a tool output).
      ...(changed && r.shown !== null
        ? { shown: boundedValue(e.redactor.redact(r.shown).value, limits().toolOutputBytes) }
        : {}),
      ...(r.hints.length > 0 ? { hints: r.hints.map((h) => e.redactor.redactString(h)) } : {}),
      error: r.error ? e.redactor.redact(r.error).value : null,
    }, { faculty: "governance", caused_by: ids.actEventId, evidence_ids: eventIds });
    p.counters.governance++;
  }
  countReview(p.counters, r.decision, r.enforced, r.error !== null);
}

/**
 * Adds one review decision to the run's counters (what `summary.json` `metrics.review` reports).
 *
 * @example
 * ```ts
 * import { newCounters } from "./summary_builder.ts";
 * import { countReview } from "./review_record.ts";
 * const c = newCounters();
 * countReview(c, "redact", true, false);
 * c.review?.redacted; // 1
 * ```
 */
export function countReview(
  counters: { review?: ReviewCounters },
  decision: string,
  enforced: boolean,
  failed: boolean,
): void {
  const c = counters.review ??= { reviewed: 0, redacted: 0, blocked: 0, hinted: 0, failed: 0, would: 0 };
  c.reviewed++;
  if (failed) c.failed++;
  if (!enforced && (decision === "redact" || decision === "block")) c.would++;
  else if (decision === "redact") c.redacted++;
  else if (decision === "block") c.blocked++;
  else if (decision === "hint") c.hinted++;
}
