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
import type { GovernanceResult } from "../runtime/governance.ts";
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
 * action (an applied veto among them asking for approval makes a block an `ask`).
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
  const asks = directions.some((d) => d.status === "applied" && d.kind === "veto" && d.requires_approval === true);
  return asks ? "ask" : "deny";
}

/**
 * The verdict of a candidate decision, the way the engine reads it before an action (`#pauseFor`): blocked, and an
 * applied (not audited) veto asks for approval: `ask`; blocked otherwise: `deny`; else `allow`.
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
  const asks = outcomes.some((o) =>
    o.status === "applied" && o.verdict?.kind === "veto" && o.verdict.requires_approval === true &&
    o.verdict.audit !== true
  );
  return asks ? "ask" : "deny";
}
