/**
 * The candidate set's decision on one action: each policy consulted in turn
 * (`consultPolicy`: in its worker, cut off at the recorded policy timeout,
 * never throwing), an applied intervention patching the action for the
 * policies after it, as the engine does before an action; then governance
 * (`decide`) under the recorded governance mode and failure policy.
 *
 * @module
 */
import type { PendingAction, PolicyState } from "../plugins/api.ts";
import type { LoadedPolicy } from "../plugins/loader.ts";
import type { RunSettingsRecord } from "../runtime/core/options.ts";
import { applyPatch, consultPolicy, type DirectionOutcome } from "../runtime/direction.ts";
import { decide } from "../runtime/governance.ts";
import { candidateVerdict, type Verdict } from "./verdict.ts";

/** A policy of the candidate set that failed on an action (threw, timed out, returned no verdict). */
export interface PolicyFailure {
  policy_id: string;
  type: string;
  message: string;
  /** Where in the policy's file it threw, when its stack says. */
  at?: string;
}

/** The candidate set's decision on one action. */
export interface CandidateDecision {
  verdict: Verdict;
  /** The governance decision: allow, audit or veto. */
  decision: string;
  rule: string;
  policy_id: string | null;
  message: string;
  /** The candidate policies that failed on this action. */
  errors: PolicyFailure[];
}

/**
 * Consults the candidate policies about one action and decides.
 *
 * @example
 * ```ts
 * import { consultCandidates } from "./consult.ts";
 * // const d = await consultCandidates(policies, action, (a) => snapshot.view(...), { rec, thresholds: new Map() });
 * // d.verdict; // "allow" | "ask" | "deny"
 * ```
 */
export async function consultCandidates(
  policies: readonly LoadedPolicy[],
  initial: PendingAction,
  view: (action: PendingAction) => PolicyState,
  settings: { rec: RunSettingsRecord; thresholds: ReadonlyMap<string, number> },
): Promise<CandidateDecision> {
  const rec = settings.rec;
  const outcomes: DirectionOutcome[] = [];
  let action = initial;
  let state: PolicyState | undefined;
  for (const policy of policies) {
    const o = await consultPolicy(policy, state ??= view(action), {
      intuitionMode: rec.intuition_mode,
      thresholds: settings.thresholds,
      defaultThreshold: rec.direction_min_confidence,
      timeoutMs: rec.policy_timeout_ms,
      now: () => new Date().toISOString(),
    });
    if (o.status === "applied" && o.verdict?.kind === "intervention" && o.verdict.patch) {
      action = { kind: action.kind, tool: action.tool, input: applyPatch(action.input, o.verdict.patch).input };
      state = undefined;
    }
    outcomes.push(o);
  }
  const decided = decide(outcomes, rec.governance, rec.failure_policy);
  return {
    verdict: candidateVerdict(decided, outcomes),
    decision: decided.decision,
    rule: decided.rule,
    policy_id: decided.policy_id,
    message: decided.message,
    errors: outcomes.filter((o) => o.error !== null).map((o) => ({ policy_id: o.policy.id, ...o.error! })),
  };
}
