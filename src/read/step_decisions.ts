/**
 * The human decisions on an episode's steps, read from its events: a paused
 * run's `run.checkpoint` names the step waiting (`pending.step_id`), and the
 * `run.resume` that consumed a decision carries it (`approval`: decision, by,
 * note, claimed_by). A step a human approved and that then ran is shown as
 * "approved by WHO (note)", a rejected one as "rejected by WHO: note", never
 * as the policy's veto that asked for the decision (`noema view`, `noema
 * report`, `noema serve`).
 *
 * @module
 */

/** One decision on a step. */
export interface StepDecision {
  /** The step that waited. */
  step_id: string;
  /** The checkpoint it waited at. */
  checkpoint_id: string;
  decision: "approved" | "rejected";
  /** The authenticated decider. */
  by: string;
  /** The name the decider gave, when it differs from `by`. */
  claimed_by: string | null;
  /** The decider's note, or null. */
  note: string | null;
  /** When it was decided. */
  at: string | null;
}

const rec = (x: unknown): Record<string, unknown> =>
  typeof x === "object" && x !== null && !Array.isArray(x) ? x as Record<string, unknown> : {};
const str = (x: unknown): string | null => (typeof x === "string" ? x : null);

/**
 * Collects the decisions from events fed in log order.
 *
 * @example
 * ```ts
 * import { StepDecisions } from "./step_decisions.ts";
 * const d = new StepDecisions();
 * d.add({ phase: "runtime", event_type: "run.checkpoint", payload: { checkpoint_id: "chk_1", pending: { step_id: "step-2" } } });
 * d.add({ phase: "runtime", event_type: "run.resume", payload: { checkpoint_id: "chk_1", approval: { decision: "approved", by: "ana", note: "ok" } } });
 * d.of("step-2")?.by; // "ana"
 * ```
 */
export class StepDecisions {
  readonly #stepOf = new Map<string, string>();
  /** Each step's latest checkpoint: a step asked again waits on a new one, undecided until its own decision. */
  readonly #latest = new Map<string, string>();
  readonly #byCheckpoint = new Map<string, StepDecision>();

  /** Folds one event (only `run.checkpoint` and `run.resume` matter). */
  add(e: Record<string, unknown>): void {
    if (e.phase !== "runtime") return;
    const p = rec(e.payload), checkpoint = str(p.checkpoint_id);
    if (checkpoint === null) return;
    if (e.event_type === "run.checkpoint") {
      const step = str(rec(p.pending).step_id);
      if (step !== null) {
        this.#stepOf.set(checkpoint, step);
        this.#latest.set(step, checkpoint);
      }
      return;
    }
    if (e.event_type !== "run.resume") return;
    const a = rec(p.approval), step = this.#stepOf.get(checkpoint), by = str(a.by);
    if (step === undefined || by === null || (a.decision !== "approved" && a.decision !== "rejected")) return;
    this.#byCheckpoint.set(checkpoint, {
      step_id: step,
      checkpoint_id: checkpoint,
      decision: a.decision,
      by,
      claimed_by: str(a.claimed_by),
      note: str(a.note) === "" ? null : str(a.note),
      at: str(a.at),
    });
  }

  /**
   * The decision on a step's latest checkpoint, if any: none while the step waits again (asked anew after an
   * earlier decision, e.g. its approved action was interrupted), so an old decision is never shown as the current one.
   */
  of(stepId: string): StepDecision | undefined {
    const checkpoint = this.#latest.get(stepId);
    return checkpoint === undefined ? undefined : this.#byCheckpoint.get(checkpoint);
  }

  /** The decision on a checkpoint, if one was applied. */
  onCheckpoint(checkpointId: string): StepDecision | undefined {
    return this.#byCheckpoint.get(checkpointId);
  }

  /** Every decision applied, in the order they were taken (a step asked twice may have two). */
  all(): StepDecision[] {
    return [...this.#byCheckpoint.values()];
  }
}

/**
 * A decision in words: `approved by ana (looks fine)`, `approved by ana`,
 * `rejected by ana: not on a Friday`; a claimed name that differs is shown
 * beside the authenticated one (`ana (claimed: carol)`).
 *
 * @example
 * ```ts
 * import { decisionText } from "./step_decisions.ts";
 * decisionText({ decision: "rejected", by: "ana", claimed_by: null, note: "not today" }); // "rejected by ana: not today"
 * ```
 */
export function decisionText(d: Pick<StepDecision, "decision" | "by" | "claimed_by" | "note">): string {
  const who = d.claimed_by && d.claimed_by !== d.by ? `${d.by} (claimed: ${d.claimed_by})` : d.by;
  if (d.decision === "rejected") return `rejected by ${who}${d.note ? `: ${d.note}` : ""}`;
  return `approved by ${who}${d.note ? ` (${d.note})` : ""}`;
}
