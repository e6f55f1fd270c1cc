/**
 * Plan reconstruction from `events.jsonl`, by the contract's five rules:
 * latest `plan` event; steps from `step_records`, else from legacy
 * `"<kind>:<description>"` labels; then later `act` events with both
 * `step_id` and `step_status` set that step's status; other steps keep theirs.
 *
 * @module
 */
import type { Plan, PlanStep, StepKind, StepStatus } from "../schema/plan.ts";
import { STEP_STATUSES } from "../schema/plan.ts";
import { asRecord } from "../json.ts";

/** The subset of an event that plan reconstruction reads. */
export interface PlanEventLike {
  phase?: unknown;
  timestamp?: unknown;
  agent_id?: unknown;
  payload?: unknown;
}

function stepsFromPayload(payload: Record<string, unknown>): PlanStep[] {
  if (Array.isArray(payload.step_records)) {
    return payload.step_records.map((r, i) => {
      const rec = asRecord(r);
      const status = STEP_STATUSES.includes(rec.status as StepStatus) ? rec.status as StepStatus : "pending";
      return {
        ...rec,
        id: typeof rec.id === "string" ? rec.id : `step-${i + 1}`,
        kind: rec.kind as StepKind,
        description: typeof rec.description === "string" ? rec.description : "",
        status,
      };
    });
  }
  if (Array.isArray(payload.steps)) {
    return payload.steps.filter((s): s is string => typeof s === "string").map((label, i) => {
      const colon = label.indexOf(":");
      const kind = colon > 0 ? label.slice(0, colon).trim() : "act";
      return {
        id: `step-${i + 1}`,
        kind: kind as StepKind, // an unknown legacy kind is kept as written; validate reports it
        description: colon > 0 ? label.slice(colon + 1).trim() : label,
        status: "pending" as const,
      };
    });
  }
  return [];
}

/**
 * Incremental plan reconstruction: feed events in file order, read the plan
 * at any time. Memory is bounded by the plan size, not the log size.
 *
 * @example
 * ```ts
 * import { PlanProjector } from "noema";
 * const p = new PlanProjector();
 * p.add({ phase: "plan", timestamp: "2026-01-01T00:00:00Z", payload: { source: "x", steps: ["act:Run it"] } });
 * p.add({ phase: "act", payload: { step_id: "step-1", step_status: "done" } });
 * p.plan()?.steps[0].status; // "done"
 * ```
 */
export class PlanProjector {
  #steps: PlanStep[] | null = null;
  #index = new Map<string, number>();
  #source: string | undefined;
  #updatedAt: string | undefined;
  #rationale: string | undefined;
  /** Number of `plan` events seen. */
  planEvents = 0;

  /** Feeds one event. */
  add(event: PlanEventLike): void {
    if (event.phase === "plan") {
      const payload = asRecord(event.payload);
      this.planEvents++;
      this.#steps = stepsFromPayload(payload);
      this.#index = new Map(this.#steps.map((s, i) => [s.id, i]));
      this.#source = typeof payload.source === "string"
        ? payload.source
        : typeof event.agent_id === "string"
        ? event.agent_id
        : undefined;
      this.#updatedAt = typeof event.timestamp === "string" ? event.timestamp : undefined;
      this.#rationale = typeof payload.rationale === "string" ? payload.rationale : undefined;
    } else if (event.phase === "act" && this.#steps) {
      const payload = asRecord(event.payload);
      if (typeof payload.step_id === "string" && typeof payload.step_status === "string") {
        const i = this.#index.get(payload.step_id);
        if (i !== undefined) this.#steps[i] = { ...this.#steps[i], status: payload.step_status as StepStatus };
      }
    }
  }

  /** The plan so far, or `null` when no `plan` event was seen. */
  plan(): Plan | null {
    if (!this.#steps) return null;
    const plan: Plan = { steps: this.#steps.map((s) => ({ ...s })) };
    if (this.#source !== undefined) plan.source = this.#source;
    if (this.#updatedAt !== undefined) plan.updated_at = this.#updatedAt;
    if (this.#rationale !== undefined) plan.rationale = this.#rationale;
    return plan;
  }
}

/**
 * Rebuilds the plan from events (in file order).
 *
 * @example
 * ```ts
 * import { reconstructPlan } from "noema";
 * reconstructPlan([{ phase: "plan", payload: { steps: ["detect:Look"] } }])?.steps[0].kind; // "detect"
 * ```
 */
export function reconstructPlan(events: Iterable<PlanEventLike>): Plan | null {
  const p = new PlanProjector();
  for (const e of events) p.add(e);
  return p.plan();
}
