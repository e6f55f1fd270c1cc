/**
 * Review: consulting the policies that have a `review` method about an
 * action's result, after the action ran and before the result reaches the
 * agent, and deciding what the agent is shown.
 *
 * | verdict | advisory | interventive | hybrid |
 * |---|---|---|---|
 * | hint | applied | applied | applied |
 * | redact | skipped (recorded only) | applied | applied |
 * | block | skipped (recorded only) | applied | applied |
 *
 * A verdict below the confidence threshold is skipped. A `review` that
 * throws, times out or returns something that is not a review verdict is
 * `blocked` (a policy failure), exactly like `advise`: under `fail_closed`
 * the result is withheld from the agent (a block), under `fail_open` it
 * passes. Under governance `audit` nothing is applied: the record says what
 * would have been (`enforced: false`).
 *
 * When several policies answer, the first block wins; otherwise redactions
 * apply in policy order (a `text` replaces the whole result, `patterns` mask
 * the matches in every text of the result), and hints add up. A redaction
 * whose patterns cannot run — refused as unsafe (`mask_patterns.ts`), timed
 * out or thrown — blocks the result, whatever the failure policy
 * (`error.type: "review_failed"`): it is never shown unmasked.
 *
 * @module
 */
import type { ReviewState } from "../plugins/api.ts";
import type { LoadedPolicy } from "../plugins/loader.ts";
import {
  copyPlainJson,
  cutString,
  loneSurrogateProblem,
  type PlainJson,
  PLUGIN_LIMITS,
} from "../plugins/plain_json.ts";
import { captureOutput } from "../plugins/plugin_output.ts";
import { REVIEW_CONFIDENCE, type ReviewVerdict, reviewVerdictProblem } from "../plugins/review.ts";
import {
  callWithTimeout,
  type ConsultSettings,
  type DirectionOutcome,
  policyError,
  PolicyTimeout,
} from "./direction.ts";
import { maskPatterns } from "./mask_patterns.ts";
import type { FailurePolicy, GovernanceMode } from "./settings.ts";

/** The outcome of one policy's `review`: a direction outcome's fields, with a review verdict and no input diff. */
export type ReviewOutcome = Omit<DirectionOutcome, "verdict" | "diff"> & { verdict: ReviewVerdict | null };

/**
 * What the agent is shown of a result, after every review.
 *
 * `decision`: `pass` (nothing applied), `hint`, `redact` or `block`.
 */
export interface ResultReview {
  decision: "pass" | "hint" | "redact" | "block";
  /** Whether the decision is applied (false under governance `audit`). */
  enforced: boolean;
  /** The output the agent gets (the original when nothing changed it; null for a block). */
  shown: unknown;
  /** Why: the block's reason, the redaction's advice (masked by the caller before recording). */
  reason: string | null;
  /** The policy behind the decision. */
  policy_id: string | null;
  /** Advice of applied hints: context for the agent. */
  hints: string[];
  /** The rule that decided, e.g. `review.redact:SecretScanner@1.0`. */
  rule: string;
  /** A policy failure that shaped the decision. */
  error: { type: string; message: string; policy_id: string } | null;
}

/**
 * Consults one policy's `review`. Never throws: failures come back as
 * `blocked` outcomes with an error.
 *
 * @example
 * ```ts
 * import { consultReview } from "./review.ts";
 * // const outcome = await consultReview(policy, reviewState, settings);
 * ```
 */
export async function consultReview(
  policy: LoadedPolicy,
  state: ReviewState,
  settings: ConsultSettings,
): Promise<ReviewOutcome> {
  const threshold = settings.thresholds.get(policy.id) ?? settings.defaultThreshold;
  const started_at = settings.now();
  const t0 = performance.now();
  let raw: unknown, error: ReviewOutcome["error"] = null;
  const endOutput = policy.isolation === "worker" ? () => {} : captureOutput(`policy ${policy.id}`);
  try {
    await policy.prepare?.(); // a restarted worker reloads the policy outside the call's timeout
    raw = await callWithTimeout(() => policy.review?.(state), settings.timeoutMs, "review");
  } catch (e) {
    if (e instanceof PolicyTimeout) policy.abort?.();
    error = policyError(e, policy);
  } finally {
    endOutput();
  }
  const duration_ms = Math.round((performance.now() - t0) * 1000) / 1000;
  const base = { policy, duration_ms, started_at, completed_at: settings.now(), threshold };
  let copy: PlainJson = null;
  if (!error) {
    const copied = copyPlainJson(raw, { maxBytes: PLUGIN_LIMITS.verdictBytes });
    copy = copied.value;
    const problem = reviewVerdictProblem(copy) ?? loneSurrogateProblem(copied.loneSurrogate);
    if (problem) error = { type: "InvalidVerdict", message: `review: ${problem}` };
  }
  if (error) return { ...base, verdict: null, status: "blocked", reason: "policy_failure", error };
  if (copy === null) return { ...base, verdict: null, status: "skipped", reason: "no_verdict", error: null };
  const verdict = { ...(copy as unknown as ReviewVerdict) };
  verdict.advice = cutString(verdict.advice, PLUGIN_LIMITS.adviceBytes);
  verdict.confidence ??= REVIEW_CONFIDENCE[verdict.kind];
  if (verdict.confidence < threshold) {
    return { ...base, verdict, status: "skipped", reason: "below_threshold", error: null };
  }
  if (verdict.kind !== "hint" && settings.intuitionMode === "advisory") {
    return { ...base, verdict, status: "skipped", reason: "intuition_mode_advisory", error: null };
  }
  return { ...base, verdict, status: "applied", reason: null, error: null };
}

export { maskPatterns };

/**
 * The output after the applied redactions, or why it could not be computed
 * (a pattern refused as unsafe, timed out or threw: `review_failed`, the output is withheld).
 */
export type Redaction =
  | { shown: unknown; failure: null }
  | { shown: null; failure: { type: string; message: string; policy_id: string } };

/**
 * The output with the applied redactions of `outcomes`, computed in this thread
 * (see `review_mask.ts` for the bounded way the runtime computes it).
 *
 * @example
 * ```ts
 * import { redactInThread } from "./review.ts";
 * redactInThread([], "out").shown; // "out"
 * ```
 */
export function redactInThread(outcomes: readonly ReviewOutcome[], output: unknown): Redaction {
  let shown = output;
  for (const o of outcomes) {
    if (o.status !== "applied" || o.verdict?.kind !== "redact") continue;
    if (o.verdict.text !== undefined) shown = o.verdict.text;
    if (!o.verdict.patterns?.length) continue;
    try {
      shown = maskPatterns(shown, o.verdict.patterns);
    } catch (e) {
      return { shown: null, failure: redactionFailure(o.policy.id, e) };
    }
  }
  return { shown, failure: null };
}

/**
 * A redaction that could not be computed, as recorded (`type: "review_failed"`).
 *
 * @example
 * ```ts
 * import { redactionFailure } from "./review.ts";
 * redactionFailure("P@1", new Error("boom")).type; // "review_failed"
 * ```
 */
export function redactionFailure(policyId: string, e: unknown): { type: string; message: string; policy_id: string } {
  const name = (e as Error)?.name ?? "Error";
  const message = String((e as Error)?.message ?? e);
  return { type: "review_failed", message: `redaction patterns failed (${name}: ${message})`, policy_id: policyId };
}

/**
 * What the agent is shown, from every review outcome.
 *
 * @example
 * ```ts
 * import { combineReviews } from "./review.ts";
 * combineReviews([], "out", "enforce", "fail_closed").decision; // "pass"
 * ```
 */
export function combineReviews(
  outcomes: readonly ReviewOutcome[],
  output: unknown,
  mode: GovernanceMode,
  failurePolicy: FailurePolicy,
  redaction?: Redaction,
): ResultReview {
  const enforced = mode !== "audit";
  const applied = outcomes.filter((o) => o.status === "applied");
  const hints = applied.filter((o) => o.verdict!.kind === "hint").map((o) => o.verdict!.advice);
  const base = { enforced, hints: enforced ? hints : [], error: null };
  const block = applied.find((o) => o.verdict!.kind === "block");
  if (block) {
    const id = block.policy.id;
    return {
      ...base,
      decision: "block",
      shown: enforced ? null : output,
      reason: block.verdict!.advice,
      policy_id: id,
      rule: `review.block:${id}`,
    };
  }
  const failure = outcomes.find((o) => o.error !== null);
  if (failure && failurePolicy === "fail_closed") {
    const id = failure.policy.id;
    return {
      ...base,
      decision: "block",
      shown: enforced ? null : output,
      reason: `policy ${id} failed reviewing the result (${failure.error!.type}: ${failure.error!.message}); ` +
        "fail_closed withholds it",
      policy_id: id,
      rule: `review.failure:${id}`,
      error: { type: failure.error!.type, message: failure.error!.message, policy_id: id },
    };
  }
  const redacts = applied.filter((o) => o.verdict!.kind === "redact");
  if (redacts.length > 0) {
    const first = redacts[0];
    const r = enforced ? (redaction ?? redactInThread(redacts, output)) : { shown: output, failure: null };
    if (r.failure) {
      // A pattern that could not run (unsafe, timed out, threw) never lets the output through: review_failed.
      return {
        ...base,
        decision: "block",
        shown: null,
        reason: `policy ${r.failure.policy_id} asked to redact the result but ${r.failure.message}; ` +
          "the result is withheld (review_failed)",
        policy_id: r.failure.policy_id,
        rule: `review.review_failed:${r.failure.policy_id}`,
        error: r.failure,
      };
    }
    return {
      ...base,
      decision: "redact",
      shown: r.shown,
      reason: redacts.map((o) => o.verdict!.advice).join("; "),
      policy_id: first.policy.id,
      rule: `review.redact:${first.policy.id}`,
    };
  }
  const error = failure
    ? { type: failure.error!.type, message: failure.error!.message, policy_id: failure.policy.id }
    : null;
  if (hints.length > 0) {
    const id = applied.find((o) => o.verdict!.kind === "hint")!.policy.id;
    return {
      ...base,
      decision: "hint",
      shown: output,
      reason: hints.join("; "),
      policy_id: id,
      rule: `review.hint:${id}`,
      error,
    };
  }
  return {
    ...base,
    decision: "pass",
    shown: output,
    reason: failure ? `policy ${failure.policy.id} failed reviewing the result; fail_open lets it pass` : null,
    policy_id: failure?.policy.id ?? null,
    rule: failure ? `review.failure:${failure.policy.id}` : "review.pass",
    error,
  };
}
