/**
 * Applying the redactions of a result's review within the policy's bounds.
 *
 * A `redact` verdict's `patterns` are regular expressions a policy chose:
 * run where the policy runs. For a policy in a worker (policy files, by
 * default) they run in its worker, under the policy timeout (the worker is
 * terminated when it passes) and its memory cap; for a policy in this thread
 * (objects, `NOEMA_POLICY_ISOLATION=thread`) they run in a worker of their
 * own, bounded the same way (here only when no worker can start). Everywhere, patterns that backtrack exponentially (or that the
 * engine may give up on) are refused before they run (`mask_patterns.ts`).
 * A pattern refused, timed out or thrown makes the redaction fail: the
 * result is withheld (`review_failed`), never shown unmasked.
 *
 * @module
 */
import { UnsafePattern, unsafePatternProblem } from "./mask_patterns.ts";
import { callWithTimeout, PolicyTimeout } from "./direction.ts";
import { redactInThread, type Redaction, redactionFailure, type ReviewOutcome } from "./review.ts";

/**
 * The output with every applied redaction of `outcomes`, in policy order, each policy's patterns run in its worker
 * within `timeoutMs`; or the failure that withholds it. Never throws.
 *
 * @example
 * ```ts
 * import { redactWithinBounds } from "./review_mask.ts";
 * const r = await redactWithinBounds([], "out", 5000);
 * r.shown; // "out"
 * ```
 */
export async function redactWithinBounds(
  outcomes: readonly ReviewOutcome[],
  output: unknown,
  timeoutMs: number,
): Promise<Redaction> {
  let shown = output;
  for (const o of outcomes) {
    if (o.status !== "applied" || o.verdict?.kind !== "redact") continue;
    const policy = o.policy;
    if (o.verdict.text !== undefined) shown = o.verdict.text;
    if (!o.verdict.patterns?.length) continue;
    const patterns = o.verdict.patterns;
    // Refused at once, here (the worker checks again): no round trip, nothing that a slow worker could turn into a pass.
    const unsafe = patterns.findIndex((p) => unsafePatternProblem(p) !== null);
    if (unsafe >= 0) {
      const why = new UnsafePattern(
        `patterns[${unsafe}] ${JSON.stringify(patterns[unsafe])}: ${unsafePatternProblem(patterns[unsafe])}`,
      );
      return { shown: null, failure: redactionFailure(policy.id, why) };
    }
    // A policy file's own worker; for a policy in this thread, the pattern worker (started outside the timeout).
    const worker = policy.mask
      ? { mask: policy.mask, abort: () => policy.abort?.() }
      : await (await import("./policy_host.ts")).patternWorker();
    if (worker === null) {
      const r = redactInThread([{ ...o, verdict: { ...o.verdict, text: undefined } }], shown);
      if (r.failure) return r;
      shown = r.shown;
      continue;
    }
    const input = shown;
    try {
      if (policy.mask) await policy.prepare?.(); // a worker a timeout stopped: restarted and reloaded outside the timeout
      shown = await callWithTimeout(() => worker.mask(input, patterns), timeoutMs, "review patterns");
    } catch (e) {
      if (e instanceof PolicyTimeout) worker.abort();
      return { shown: null, failure: redactionFailure(policy.id, e) };
    }
  }
  return { shown, failure: null };
}
