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
import { canonicalHash, canonicalJson } from "./hash.ts";

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

/**
 * What differs between a checkpoint file (its parsed JSON) and the `run.checkpoint` event that announced it (the
 * event's payload): its id, its offset, or a field of its pending action (kind, step, reason, policy, action, compared
 * as canonical JSON). Null when the file is the one the event announced.
 *
 * @example
 * ```ts
 * import { announcedDifference } from "./checkpoint_digest.ts";
 * announcedDifference({ checkpoint_id: "chk_1", event_offset: 3, pending: {} }, { checkpoint_id: "chk_2" }); // "another checkpoint_id"
 * ```
 */
export function announcedDifference(
  checkpoint: Record<string, unknown>,
  payload: Record<string, unknown>,
): string | null {
  if (payload.checkpoint_id !== checkpoint.checkpoint_id) return "another checkpoint_id";
  if (payload.event_offset !== checkpoint.event_offset) return "another event_offset";
  const said = payload.pending;
  if (typeof said !== "object" || said === null || Array.isArray(said)) return "the event has no pending action";
  const own = (checkpoint.pending ?? {}) as Record<string, unknown>;
  for (const key of ["kind", "step_id", "reason", "policy_id", "action"]) {
    const theirs = (said as Record<string, unknown>)[key];
    if (canonicalJson(own[key] ?? null) !== canonicalJson(theirs ?? null)) return `its pending ${key} differs`;
  }
  return null;
}
