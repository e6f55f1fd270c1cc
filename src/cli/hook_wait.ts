/**
 * `noema hook … --wait DURATION` with a shared store: a call an interactive
 * session's episode pauses for is published at once (the fleet's
 * `noema approvals` lists it), and the hook waits for the decision made on
 * any machine (`noema approve|reject ID --store …`, woken by NOTIFY, polling
 * as the fallback), writes it into the episode as a local `noema approve`
 * would (by `ana@host-b` when made elsewhere), and answers the agent allow
 * or deny. When the wait runs out, `--approval-timeout` applies: `deny`
 * rejects the call (decided by `timeout`), `abort` ends the episode aborted.
 *
 * The agent kills a hook that outlives its own timeout, so `noema
 * install-hooks claude-code --wait D` registers the hook with a timeout
 * longer than D.
 *
 * @module
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import type { HookSettings } from "../agents/hook_runner.ts";
import { openSharedStore } from "../shared_store/open.ts";
import { EpisodePublisher } from "../shared_store/publish.ts";
import { LeaseHeldError, StoreConflictError } from "../shared_store/shared_store.ts";
import { episodesDir } from "../store/layout.ts";
import { applyStoreDecision, waitForDecision } from "./store_approvals.ts";
import { storeFromEnvironment } from "./store_option.ts";

/** Seconds the agent's hook timeout must exceed a hook's `--wait` by (its start-up, the publish, the answer). */
export const HOOK_WAIT_MARGIN_S = 30;

/**
 * Publishes the episode, trying again for a few seconds while it fails: the
 * resident server's own publisher of the session may be sending it at that
 * moment (a lease held, a batch under way). Then the wait goes on anyway:
 * that publisher, or the next try, shows the waiting call.
 */
async function publishSoon(p: EpisodePublisher, tryMs = 5_000): Promise<void> {
  const end = Date.now() + tryMs;
  for (;;) {
    try {
      return void await p.publish();
    } catch (e) {
      if (Date.now() >= end) {
        if (e instanceof LeaseHeldError || e instanceof StoreConflictError) return; // said by that publisher, or sync
        throw e; // the store itself: the hook does not wait on it
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/** The size of an episode's event log, or -1 when it cannot be read. */
function logSize(dir: string): number {
  try {
    return statSync(join(dir, "events.jsonl")).size;
  } catch {
    return -1;
  }
}

/**
 * The `awaitDecision` of a hook waiting up to `waitMs` for decisions made
 * through the shared store; undefined without a store. A store that cannot
 * be reached decides nothing: the call stays asked (`noema approve` on this
 * machine decides it). Its `signal` (the MCP gateway's: the client left) ends
 * the wait with nothing decided.
 *
 * @example
 * ```ts
 * const awaitDecision = hookApprovalWait(".noema", 600_000, "deny");
 * ```
 */
export function hookApprovalWait(
  root: string,
  waitMs: number,
  onTimeout: "deny" | "abort",
): HookSettings["awaitDecision"] | undefined {
  const pick = storeFromEnvironment();
  if (pick === null) return undefined;
  return async (episodeId, _checkpointId, signal?: AbortSignal) => {
    const store = await openSharedStore(pick.url, pick.from);
    try {
      // Approvers anywhere see the waiting call: the catalog row names it (checkpoint, state hash, policy, reason).
      const dir = join(episodesDir(root), episodeId);
      const publisher = new EpisodePublisher(store, dir, episodeId);
      await publishSoon(publisher);
      // The session's other calls go on during the wait (a result recorded beside the pause asks the call again at a
      // new checkpoint): what they wrote is published before each look, so approvers decide the checkpoint it waits at.
      let size = logSize(dir);
      const onLook = async () => {
        const now = logSize(dir);
        if (now === size) return;
        size = now;
        await publisher.publish().catch(() => {}); // held by the session's own publisher meanwhile: it sends it
      };
      const got = await waitForDecision(store, episodeId, { root }, waitMs, onTimeout, signal, () => {}, onLook);
      return got === "interrupted" ? "none" : got;
    } catch {
      return "none";
    } finally {
      await store.close().catch(() => {});
    }
  };
}

/**
 * The `pullDecision` of a hook with a shared store: while the episode waits for a decision that no hook waits for
 * (the waiting hook was killed by its agent), the session's next call brings the store's decision in, if one was made,
 * as a local record (`approvals/<checkpoint>.json`, by `ana@host-b` when made elsewhere), and returns whether it did.
 * A store that cannot be reached brings nothing: the call is held back as before. Undefined without a store.
 *
 * @example
 * ```ts
 * const pull = hookDecisionPull(".noema");
 * // if (pull && await pull("ep_01…")) … propose again: the decision is applied
 * ```
 */
export function hookDecisionPull(root: string): HookSettings["pullDecision"] | undefined {
  const pick = storeFromEnvironment();
  if (pick === null) return undefined;
  return async (episodeId) => {
    try {
      const store = await openSharedStore(pick.url, pick.from);
      try {
        return await applyStoreDecision(store, episodeId, { root });
      } finally {
        await store.close().catch(() => {});
      }
    } catch {
      return false; // the store down, or the run not waiting at a checkpoint of its own: nothing brought in
    }
  };
}
