/**
 * What a paused run waits on, as approvers anywhere are shown it: taken from
 * the run's own pending checkpoint (`checkpoints/<id>.json`, published with
 * the episode's files, masked as every artifact), never from the free-form
 * catalog row alone. A row copied into another episode's folder, or forged,
 * cannot show a harmless-looking action next to the real one: what is shown
 * and decided on is the checkpoint the run itself wrote.
 *
 * @module
 */
import { type CatalogRow, type PendingCall, type SharedStore, StoredFileTooLargeError } from "./shared_store.ts";

/** A checkpoint id noema writes: a file name inside `checkpoints/`, nothing that could leave it. */
const CHECKPOINT_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,199}$/;

/**
 * The most of a stored checkpoint that is read (16 MiB): noema writes a few KiB (a tool input is bounded far below
 * this); a larger one is not a checkpoint it wrote, and is never loaded.
 */
export const MAX_CHECKPOINT_BYTES = 16 << 20;

/**
 * The pending call of a checkpoint's JSON (`pending` and `state_hash` of `checkpoints/<id>.json`).
 *
 * @example
 * ```ts
 * import { pendingCallOf } from "./pending_call.ts";
 * pendingCallOf(JSON.parse(text), "chk_01").action.tool; // "shell"
 * ```
 */
export function pendingCallOf(checkpoint: Record<string, unknown>, checkpointId: string): PendingCall {
  const p = (checkpoint.pending ?? {}) as Record<string, unknown>;
  const action = (p.action ?? {}) as Record<string, unknown>;
  const input = action.input ?? {};
  return {
    checkpoint_id: checkpointId,
    state_hash: String(checkpoint.state_hash),
    kind: String(p.kind ?? "approval"),
    step_id: String(p.step_id ?? ""),
    reason: String(p.reason ?? ""),
    policy_id: typeof p.policy_id === "string" ? p.policy_id : null,
    action: {
      tool: typeof action.tool === "string" ? action.tool : null,
      input_excerpt: (typeof action.command === "string" ? action.command : JSON.stringify(input)).slice(0, 500),
    },
    created_at: String(checkpoint.created_at ?? ""),
  };
}

/**
 * The call a waiting run of the catalog waits on, read from its stored
 * checkpoint; null when the row names none, the checkpoint is not in the
 * store (or not readable JSON of that checkpoint), or the store cannot say.
 *
 * @example
 * ```ts
 * import { storedPendingCall } from "./pending_call.ts";
 * const call = await storedPendingCall(store, row); // null: nothing trustworthy to show
 * ```
 */
export async function storedPendingCall(store: SharedStore, row: CatalogRow): Promise<PendingCall | null> {
  const id = row.pending?.checkpoint_id;
  if (typeof id !== "string" || !CHECKPOINT_ID.test(id) || id.includes("..")) return null;
  let bytes: Uint8Array | null;
  try {
    bytes = await store.readFile(row.episode_id, `checkpoints/${id}.json`, MAX_CHECKPOINT_BYTES);
  } catch (e) {
    if (e instanceof StoredFileTooLargeError) return null; // not a checkpoint noema wrote: nothing to show
    throw e;
  }
  if (bytes === null) return null;
  try {
    const c = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as Record<string, unknown>;
    if (c === null || typeof c !== "object" || Array.isArray(c)) return null;
    if (typeof c.checkpoint_id === "string" && c.checkpoint_id !== id) return null; // another checkpoint's file
    if (typeof c.episode_id === "string" && c.episode_id !== row.episode_id) return null; // another episode's
    if (typeof c.state_hash !== "string") return null;
    return pendingCallOf(c, id);
  } catch {
    return null;
  }
}
