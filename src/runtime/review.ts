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
 * the matches in every text of the result), and hints add up.
 *
 * @module
 */
import type { ReviewState } from "../plugins/api.ts";
import type { LoadedPolicy } from "../plugins/loader.ts";
import { cutString, type PlainJson, PLUGIN_LIMITS, toPlainJson } from "../plugins/plain_json.ts";
import { captureOutput } from "../plugins/plugin_output.ts";
import { REVIEW_CONFIDENCE, type ReviewVerdict, reviewVerdictProblem } from "../plugins/review.ts";
import {
  callWithTimeout,
  type ConsultSettings,
  type DirectionOutcome,
  policyError,
  PolicyTimeout,
} from "./direction.ts";
import { MASK } from "./redact.ts";
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
    copy = toPlainJson(raw, { maxBytes: PLUGIN_LIMITS.verdictBytes });
    const problem = reviewVerdictProblem(copy);
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

/**
 * Masks every match of `patterns` in every string of `value` (keys stay).
 *
 * @example
 * ```ts
 * import { maskPatterns } from "./review.ts";
 * maskPatterns({ stdout: "key sk-abc" }, ["sk-\\w+"]); // { stdout: "key [REDACTED]" }
 * ```
 */
export function maskPatterns(value: unknown, patterns: readonly string[]): unknown {
  const res = patterns.map((p) => new RegExp(p, "g"));
  const walk = (x: unknown): unknown => {
    if (typeof x === "string") return res.reduce((s, re) => s.replace(re, MASK), x);
    if (Array.isArray(x)) return x.map(walk);
    if (typeof x === "object" && x !== null) {
      return Object.fromEntries(Object.entries(x as Record<string, unknown>).map(([k, v]) => [k, walk(v)]));
    }
    return x;
  };
  return walk(value);
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
    let shown = output;
    for (const o of redacts) {
      const v = o.verdict as Extract<ReviewVerdict, { kind: "redact" }>;
      if (v.text !== undefined) shown = v.text;
      if (v.patterns?.length) shown = maskPatterns(shown, v.patterns);
    }
    const first = redacts[0];
    return {
      ...base,
      decision: "redact",
      shown: enforced ? shown : output,
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
