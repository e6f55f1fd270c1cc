/**
 * Governance: the pre-act gate. It turns the direction outcomes of one
 * action into a decision.
 *
 * | governance | applied veto / fail_closed failure | event | action |
 * |------------|------------------------------------|-------|--------|
 * | `enforce`  | decision `veto`, enforced          | yes   | blocked (step `vetoed`) |
 * | `audit`    | decision `veto`, not enforced      | yes   | runs (a "would veto") |
 * | `off`      | no decision                        | no    | blocked: policies act on their own |
 *
 * Without a veto, the decision is `audit` when a policy failed under
 * `fail_open` or an intervention or hint was applied, else `allow`. A veto
 * marked `audit` (a policy or rule set that only watches) is a decision
 * `veto` that is never enforced, unless another veto blocks the action.
 *
 * A veto that asks for approval (`requires_approval`: a rule's `ask`, an
 * approval gate) blocks until a human approves, but only when nothing else
 * blocks: a plain veto (a rule's `deny`) or a policy failure under
 * `fail_closed` decides instead, and the action is refused without asking
 * ({@link approvalAsked}): an approval cannot undo another policy's veto.
 *
 * @module
 */
import type { FailurePolicy, GovernanceMode } from "./settings.ts";
import type { DirectionOutcome } from "./direction.ts";

/** The governance decision for one action. */
export interface GovernanceResult {
  /** allow, audit or veto. */
  decision: "allow" | "audit" | "veto";
  /** The rule that decided, e.g. `policy.veto:SqlGuard@1.0`. */
  rule: string;
  /** Why, in words. */
  message: string;
  /** The policy that decided, when one did. */
  policy_id: string | null;
  /** The governance mode. */
  mode: GovernanceMode;
  /** The failure policy in force. */
  failure_policy: FailurePolicy;
  /** Whether this decision is enforced (blocks when it is a veto). */
  enforced: boolean;
  /** True when the action must not run. */
  blocked: boolean;
  /** A policy failure that shaped the decision. */
  error: { type: string; message: string; policy_id: string } | null;
}

/**
 * Decides about one action from its direction outcomes.
 *
 * @example
 * ```ts
 * import { decide } from "noema";
 * decide([], "enforce", "fail_closed").decision; // "allow"
 * ```
 */
export function decide(
  outcomes: readonly DirectionOutcome[],
  mode: GovernanceMode,
  failurePolicy: FailurePolicy,
): GovernanceResult {
  const base = { mode, failure_policy: failurePolicy, enforced: mode === "enforce" };
  const vetoes = outcomes.filter((o) => o.status === "applied" && o.verdict?.kind === "veto");
  const enforced = vetoes.filter((o) => o.verdict?.audit !== true);
  const failure = outcomes.find((o) => o.error !== null);
  const failedClosed = failure !== undefined && failurePolicy === "fail_closed";
  // What decides a block: a plain veto, else a failure under fail_closed, else a veto asking for approval.
  const veto = enforced.find((o) => o.verdict?.requires_approval !== true) ??
    (failedClosed ? undefined : enforced[0]);
  const blockRequested = enforced.length > 0 || failedClosed;
  const blocked = blockRequested && mode !== "audit";
  const watched = vetoes.find((o) => o.verdict?.audit === true);
  if (watched && !blockRequested) {
    return {
      ...base,
      decision: "veto",
      rule: `policy.veto:${watched.policy.id}`,
      message: watched.verdict!.advice,
      policy_id: watched.policy.id,
      enforced: false,
      blocked: false,
      error: null,
    };
  }
  if (veto) {
    return {
      ...base,
      decision: "veto",
      rule: `policy.veto:${veto.policy.id}`,
      message: veto.verdict!.advice,
      policy_id: veto.policy.id,
      blocked,
      error: null,
    };
  }
  if (failure) {
    const error = { ...failure.error!, policy_id: failure.policy.id };
    return failurePolicy === "fail_closed"
      ? {
        ...base,
        decision: "veto",
        rule: `policy.failure:${failure.policy.id}`,
        message: `policy ${failure.policy.id} failed (${error.type}: ${error.message}); fail_closed blocks the action`,
        policy_id: failure.policy.id,
        blocked,
        error,
      }
      : {
        ...base,
        decision: "audit",
        rule: `policy.failure:${failure.policy.id}`,
        message: `policy ${failure.policy.id} failed (${error.type}: ${error.message}); fail_open lets the action run`,
        policy_id: failure.policy.id,
        blocked: false,
        error,
      };
  }
  const applied = outcomes.find((o) => o.status === "applied");
  if (applied) {
    return {
      ...base,
      decision: "audit",
      rule: `policy.${applied.verdict!.kind}:${applied.policy.id}`,
      message: applied.verdict!.advice,
      policy_id: applied.policy.id,
      blocked: false,
      error: null,
    };
  }
  return {
    ...base,
    decision: "allow",
    rule: "default.allow",
    message: "no policy objected",
    policy_id: null,
    blocked: false,
    error: null,
  };
}

/**
 * The veto that asks a human to approve the action, when an approval is what the action waits for: every veto that
 * blocks it (applied, not only watched) asks for approval, and no policy failed under `fail_closed`. Null otherwise:
 * nothing asks, or a plain veto (a rule's `deny`) or a fail-closed failure refuses the action, which no approval may
 * undo. Whether the action is blocked at all is {@link decide}'s (under `--governance audit` nothing blocks).
 *
 * @example
 * ```ts
 * import { approvalAsked } from "noema";
 * approvalAsked([], "fail_closed"); // null
 * ```
 */
export function approvalAsked(
  outcomes: readonly DirectionOutcome[],
  failurePolicy: FailurePolicy,
): DirectionOutcome | null {
  if (failurePolicy === "fail_closed" && outcomes.some((o) => o.error !== null)) return null;
  const enforced = outcomes.filter((o) =>
    o.status === "applied" && o.verdict?.kind === "veto" && o.verdict.audit !== true
  );
  if (enforced.length === 0 || enforced.some((o) => o.verdict?.requires_approval !== true)) return null;
  return enforced[0];
}
