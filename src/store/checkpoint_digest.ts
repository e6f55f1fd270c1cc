/**
 * The digest a decision records of the checkpoint it decides: `sha256:` over
 * the canonical JSON (RFC 8785, `canonicalHash`) of
 * `{"action", "policy", "state_hash"}`, where `action` is the checkpoint's
 * pending action as the run published it, `policy` the id of the policy that
 * asked (null when none) and the policies in force at the pause, as the checkpoint records them
 * (`policy_versions`: each id and file digest; null in a checkpoint written before), and `state_hash` the
 * checkpoint's. Computed by the decider from the checkpoint file itself, so
 * the decision log says what exactly was allowed.
 *
 * @module
 */
import { canonicalHash } from "./hash.ts";

/**
 * The digest of a checkpoint (its parsed JSON) that a decision on it records.
 *
 * @example
 * ```ts
 * import { checkpointDigest } from "./checkpoint_digest.ts";
 * checkpointDigest({ state_hash: "sha256:…", pending: { action: { tool: "shell" }, policy_id: null } });
 * ```
 */
export function checkpointDigest(checkpoint: Record<string, unknown>): string {
  const pending = (checkpoint.pending ?? {}) as Record<string, unknown>;
  return canonicalHash({
    action: pending.action ?? null,
    policy: { id: pending.policy_id ?? null, versions: checkpoint.policy_versions ?? null },
    state_hash: checkpoint.state_hash ?? null,
  });
}
