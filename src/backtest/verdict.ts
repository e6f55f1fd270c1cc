/**
 * What one decision means for the action it was about, in three words:
 * `allow` (the action runs: no objection, a hint, an intervention, a veto
 * only audited or skipped), `ask` (blocked until someone approves: an
 * applied veto asking for approval) or `deny` (blocked: a veto, or a policy
 * failure under `fail_closed`). A backtest compares the recorded word with
 * the candidate's; a flip is a pair of different words (`allow_to_deny`…).
 *
 * @module
 */
import { approvalAsked, type GovernanceResult } from "../runtime/governance.ts";
import type { DirectionOutcome } from "../runtime/direction.ts";

/** What a decision does to its action. */
export type Verdict = "allow" | "ask" | "deny";

/** The verdicts, in order of strictness. */
export const VERDICTS: readonly Verdict[] = ["allow", "ask", "deny"];

/** A flip kind: `allow_to_deny`, `deny_to_allow`, `ask_to_allow`… */
export type FlipKind = `${Verdict}_to_${Verdict}`;

/** Every flip kind (a recorded verdict, then a different candidate one), in a stable order. */
export const FLIP_KINDS: readonly FlipKind[] = VERDICTS.flatMap((a) =>
  VERDICTS.filter((b) => b !== a).map((b) => `${a}_to_${b}` as FlipKind)
);

/**
 * The verdict of a recorded decision: its `governance` event's payload, and the `direction` events of the same
 * action. A block is an `ask` when the veto that decided it asks for approval (governance names the policy that
 * decided: a plain veto or a fail-closed failure decides before a veto asking for approval), else a `deny`.
 *
 * @example
 * ```ts
 * import { recordedVerdict } from "./verdict.ts";
 * recordedVerdict({ decision: "veto", enforced: true }, []); // "deny"
 * recordedVerdict({ decision: "audit", enforced: true }, []); // "allow"
 * ```
 */
export function recordedVerdict(
  governance: Record<string, unknown>,
  directions: readonly Record<string, unknown>[],
): Verdict {
  if (governance.decision !== "veto" || governance.enforced === false || governance.mode === "audit") return "allow";
  if (typeof governance.rule !== "string" || !governance.rule.startsWith("policy.veto:")) return "deny";
  const decider = directions.find((d) =>
    d.policy_id === governance.policy_id && d.status === "applied" && d.kind === "veto"
  );
  return decider?.requires_approval === true ? "ask" : "deny";
}

/**
 * The verdict of a candidate decision, the way the engine reads it before an action (`#pauseFor`): blocked, and every
 * veto that blocks asks for approval (no plain veto, no fail-closed failure: `approvalAsked`): `ask`; blocked
 * otherwise: `deny`; else `allow`.
 *
 * @example
 * ```ts
 * import { candidateVerdict } from "./verdict.ts";
 * import { decide } from "../runtime/governance.ts";
 * candidateVerdict(decide([], "enforce", "fail_closed"), []); // "allow"
 * ```
 */
export function candidateVerdict(decision: GovernanceResult, outcomes: readonly DirectionOutcome[]): Verdict {
  if (!decision.blocked) return "allow";
  return approvalAsked(outcomes, decision.failure_policy) ? "ask" : "deny";
}
