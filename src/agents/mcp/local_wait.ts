/**
 * The wait of `noema mcp --wait DURATION` without a shared store: a call that
 * needs approval has paused the session's episode at its checkpoint, and the
 * gateway looks for the decision a local `noema approve|reject ID` writes
 * into the episode (its approval record) until one comes or the wait runs
 * out; then the call is rejected, decided by `timeout`, so that the episode
 * never stays paused under a session that goes on.
 *
 * @module
 */
import { readApproval } from "../../runtime/checkpoint.ts";
import { reject } from "../../runtime/resume.ts";

/** How often the approval record is looked for. */
const POLL_MS = 100;

/**
 * Waits up to `waitMs` for the decision on `checkpointId` in the episode
 * `dir`; "decided" once there is one (a timeout's rejection included),
 * "none" when the wait was stopped by `signal`.
 *
 * @example
 * ```ts
 * import { waitLocalDecision } from "./local_wait.ts";
 * await waitLocalDecision(".noema/episodes/ep_1", "ck_1", 600_000); // "decided"
 * ```
 */
export async function waitLocalDecision(
  dir: string,
  checkpointId: string,
  waitMs: number,
  signal?: AbortSignal,
): Promise<"decided" | "none"> {
  const until = Date.now() + waitMs;
  while (!signal?.aborted) {
    if (readApproval(dir, checkpointId) !== null) return "decided";
    if (Date.now() >= until) {
      try {
        reject(dir, { by: "timeout", note: `no decision within ${Math.round(waitMs / 1000)} s (noema mcp --wait)` });
      } catch {
        // decided meanwhile: that decision stands
      }
      return "decided";
    }
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(1, until - Date.now()))));
  }
  return "none";
}
