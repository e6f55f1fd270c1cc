/**
 * Approvals across machines, over the shared store. The store is the
 * arbiter: a decision is recorded there first, bound to the checkpoint id and
 * its `state_hash`, and a checkpoint takes one decision wherever it is made
 * (the loser exits 8, as locally). The machine that holds the run applies it:
 * the decision becomes the episode's `approvals/<checkpoint>.json` (recorded
 * as made, by whom and where), and the run resumes.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import {
  type ApprovalRecord,
  deciderOf,
  readApproval,
  setAsideApproval,
  writeApproval,
} from "../runtime/checkpoint.ts";
import { oneLine } from "./output.ts";
import { ArtifactSink } from "../runtime/artifact_sink.ts";
import { Redactor } from "../runtime/redact.ts";
import { pendingCheckpoint, type PendingRun } from "../runtime/resume.ts";
import { osUserName } from "../runtime/os_user.ts";
import { publishingHost } from "../shared_store/host.ts";
import { pulledCopy } from "../shared_store/pulled.ts";
import { MAX_CHECKPOINT_BYTES, storedPendingCall } from "../shared_store/pending_call.ts";
import { checkpointDigest } from "../store/checkpoint_digest.ts";
import { answering, isOutage, Resubscription, ridingOutStrayErrors, StoreOutage } from "../shared_store/outage.ts";
import {
  AlreadyDecidedError,
  type SharedStore,
  type StoredDecision,
  StoreTimeoutError,
} from "../shared_store/shared_store.ts";
import { episodesDir, resolveRoot, type RootOptions } from "../store/layout.ts";
import { calledAs } from "../called_as.ts";

/** A decision someone asks for: approve or reject, why, by whom. */
export interface DecisionRequest {
  decision: StoredDecision["decision"];
  note?: string;
  /** The name the decider gives (`--by`): recorded as `claimed_by`, beside the authenticated identity. */
  by?: string;
  /** The label of the `noema serve` token that made the request: then the authenticated decider. */
  servedBy?: string;
  /** The checkpoint the decider saw: a run that waits on another one now is refused (exit 7), not decided on. */
  checkpointId?: string;
}

function consumed(e: AlreadyDecidedError): NoemaError {
  return new NoemaError("already_decided", e.message, { exitCode: EXIT.CONSUMED });
}

/**
 * The local paused run an id names, or null when this machine does not hold
 * it or it is not paused (a sealed run still throws, exit 5).
 *
 * @example
 * ```ts
 * localPending("ep_01J…", { root: ".noema" })?.checkpoint.checkpoint_id;
 * ```
 */
export function localPending(id: string, options: RootOptions): PendingRun | null {
  const root = resolveRoot(options);
  if (!existsSync(join(episodesDir(root), id)) && !existsSync(id)) return null;
  // A copy pulled from the store is not held here: the root that holds the run applies decisions and resumes it.
  if (pulledCopy(root, id) !== null) return null;
  try {
    return pendingCheckpoint(id, options);
  } catch (e) {
    if (e instanceof NoemaError && e.exitCode === EXIT.NO_CHECKPOINT) return null;
    throw e;
  }
}

/**
 * Decides on a paused run of the fleet: records the decision in the store
 * (bound to the checkpoint the run waits on), then, when this machine holds
 * the run, in its episode too. Throws exit 6 when the run waits on nothing,
 * 8 when the checkpoint was already decided.
 *
 * @example
 * ```ts
 * await decideInStore(store, "ep_01J…", { decision: "approved", note: "ok" }, { root: ".noema" });
 * ```
 */
export async function decideInStore(
  store: SharedStore,
  id: string,
  req: DecisionRequest,
  options: RootOptions,
  say: (line: string) => void = () => {},
): Promise<StoredDecision> {
  const local = localPending(id, options);
  let checkpointId: string, stateHash: string, digest: string | null;
  if (local) {
    checkpointId = local.checkpoint.checkpoint_id;
    stateHash = local.checkpoint.state_hash;
    digest = checkpointDigest(local.checkpoint as unknown as Record<string, unknown>);
  } else {
    const row = await store.get(id);
    if (row === null) throw new NoemaError("not_found", `episode ${id} is neither here nor in ${store.location}`);
    if (row.run_state !== "waiting_for_approval" || !row.pending) {
      throw new NoemaError("not_paused", `episode ${id} is not waiting for approval (${row.run_state})`, {
        exitCode: EXIT.NO_CHECKPOINT,
      });
    }
    // Bound to the checkpoint the run itself published, never to the catalog row's words alone.
    const pending = await storedPendingCall(store, row);
    if (pending === null) {
      throw new NoemaError(
        "not_paused",
        `episode ${id}: the checkpoint its catalog row names (${row.pending.checkpoint_id}) is not in ` +
          `${store.location}, or is not one noema wrote (unreadable, or over ${MAX_CHECKPOINT_BYTES >> 20} MiB); ` +
          `nothing to decide on until its host publishes it`,
        { exitCode: EXIT.NO_CHECKPOINT },
      );
    }
    checkpointId = pending.checkpoint_id;
    stateHash = pending.state_hash;
    digest = await storedCheckpointDigest(store, id, checkpointId);
  }
  if (req.checkpointId !== undefined && req.checkpointId !== checkpointId) {
    throw new NoemaError(
      "stale",
      `${id} now waits on ${checkpointId}, not on ${req.checkpointId}, the checkpoint the decision was asked for: ` +
        "nothing decided",
      { exitCode: EXIT.MISMATCH },
    );
  }
  // The decider's words are masked before they reach the store, as in the episode: with the run's recorded secret
  // names when it is held here, else the token shapes and the secrets this process's environment names.
  const words = (local ? ArtifactSink.forEpisode(local.episode_dir).redactor : new Redactor()).redact({
    note: req.note ?? null,
    claimed_by: req.by ?? null,
  }).value;
  const decision: StoredDecision = {
    episode_id: id,
    checkpoint_id: checkpointId,
    state_hash: stateHash,
    decision: req.decision,
    // PostgreSQL stamps its session_user instead; a files store has only the OS user to go by.
    by: req.servedBy ?? osUserName(),
    note: words.note,
    host: publishingHost(),
    at: new Date().toISOString(),
    authenticated_as: req.servedBy !== undefined
      ? "serve_token"
      : store.kind === "postgres"
      ? "database_role"
      : "os_user",
    database_role: null,
    claimed_by: words.claimed_by,
    checkpoint_digest: digest,
  };
  let recorded: StoredDecision;
  try {
    recorded = await store.decide(decision);
  } catch (e) {
    if (e instanceof StoreTimeoutError) {
      // The answer, not the call, may be what was lost: the store may hold the decision already (still an outage).
      const more =
        `; the decision may have been recorded before the answer was lost: ${calledAs()} approvals, or deciding ` +
        "again, tells (a second decision is refused, naming the first)";
      e.message += more;
      (e as { detail: string }).detail += more;
    }
    throw e instanceof AlreadyDecidedError ? consumed(e) : e;
  }
  // Held here: the store's decision becomes the episode's, over one made here without the store meanwhile.
  if (local) applyDecision(local, recorded, say);
  return recorded;
}

/**
 * Why the holder of a run cannot apply the store's decision `d` on the checkpoint it waits on (bound to another
 * `state_hash`, or made on another checkpoint content than the one published: `resume` refuses it, exit 7), or null
 * when it can (or the published checkpoint cannot be read: nothing to compare).
 *
 * @example
 * ```ts
 * // const why = await unappliableDecision(store, row, decision); // "it is bound to sha256:0000, …" or null
 * ```
 */
export async function unappliableDecision(
  store: SharedStore,
  row: Parameters<typeof storedPendingCall>[1],
  d: StoredDecision,
): Promise<string | null> {
  const pending = await storedPendingCall(store, row);
  if (pending === null || pending.checkpoint_id !== d.checkpoint_id) return null;
  if (d.state_hash !== pending.state_hash) {
    return `it is bound to state ${d.state_hash}, not to the checkpoint's ${pending.state_hash}`;
  }
  if (d.checkpoint_digest == null) return null;
  const digest = await storedCheckpointDigest(store, d.episode_id, d.checkpoint_id);
  if (digest === null || digest === d.checkpoint_digest) return null;
  return `it was made on checkpoint digest ${d.checkpoint_digest}, the published checkpoint's is ${digest}`;
}

/** The digest of a checkpoint as the store holds it (the file the run published), or null when it cannot be read. */
async function storedCheckpointDigest(store: SharedStore, id: string, checkpointId: string): Promise<string | null> {
  const bytes = await store.readFile(id, `checkpoints/${checkpointId}.json`, MAX_CHECKPOINT_BYTES);
  if (bytes === null) return null;
  try {
    return checkpointDigest(JSON.parse(new TextDecoder().decode(bytes)));
  } catch {
    return null;
  }
}

/** The fields of an approval record that say what was decided, by whom, when and on what: the store's, each one. */
const DECISION_FIELDS = [
  "episode_id",
  "checkpoint_id",
  "state_hash",
  "checkpoint_digest",
  "decision",
  "by",
  "at",
  "note",
  "authenticated_as",
  "database_role",
  "claimed_by",
] as const;

/**
 * Whether a local approval record is the store's decision `d`, as {@link writeStoreDecision} writes it here (masked
 * as the episode masks): every field the store holds, the same. A record that copies only the store's decision and
 * time (another decider, note, role or checkpoint digest) is not the store's, and is set aside for it. The decider
 * may be written with or without its `@host` (the host this machine calls itself may have changed since).
 */
function isStoreDecision(local: PendingRun, r: ApprovalRecord, d: StoredDecision): boolean {
  const expected = ArtifactSink.forEpisode(local.episode_dir).redactor.redact(storeRecord(local, d)).value;
  const own = r as unknown as Record<string, unknown>, theirs = expected as unknown as Record<string, unknown>;
  return DECISION_FIELDS.every((f) =>
    f === "by"
      ? r.by === expected.by || r.by === d.by || r.by === `${d.by}@${d.host}`
      : (own[f] ?? null) === (theirs[f] ?? null)
  );
}

/**
 * Writes a store decision into the local episode as its approval record;
 * returns it. The store arbitrates a checkpoint's one decision for the
 * fleet: a record already here that is not the store's decision (made here
 * without the store) is set aside (`approvals/<checkpoint>.json.overruled-<ms>`,
 * kept as evidence, said through `say`) and the store's written instead.
 * Refuses (exit 7) a decision bound to another checkpoint or state, or made
 * on another checkpoint's content (its `checkpoint_digest`).
 *
 * @example
 * ```ts
 * applyDecision(pendingCheckpoint("ep_01J…"), decision);
 * ```
 */
export function applyDecision(
  local: PendingRun,
  d: StoredDecision,
  say: (line: string) => void = () => {},
): ApprovalRecord {
  const c = local.checkpoint;
  if (d.checkpoint_id !== c.checkpoint_id || d.state_hash !== c.state_hash) {
    throw new NoemaError(
      "mismatch",
      `the decision in the store is bound to ${d.checkpoint_id} (${d.state_hash}), ` +
        `but the run waits on ${c.checkpoint_id} (${c.state_hash})`,
      { exitCode: EXIT.MISMATCH },
    );
  }
  refuseOtherCheckpoint(c as unknown as Record<string, unknown>, d);
  // A local decision may be written at any moment (a racing `approve` without the store): set aside, written again.
  for (let attempt = 1;; attempt++) {
    const existing = readApproval(local.episode_dir, c.checkpoint_id);
    if (existing && isStoreDecision(local, existing, d)) return existing;
    if (existing) overrule(local, existing, d, say);
    try {
      return writeStoreDecision(local, d);
    } catch (e) {
      if (!(e instanceof NoemaError && e.exitCode === EXIT.CONSUMED) || attempt === 3) throw e;
    }
  }
}

/** Sets aside a local decision the store's overrules, saying so. */
function overrule(local: PendingRun, existing: ApprovalRecord, d: StoredDecision, say: (line: string) => void): void {
  const file = `approvals/${local.checkpoint.checkpoint_id}.json`;
  const moved = setAsideApproval(local.episode_dir, local.checkpoint.checkpoint_id);
  if (moved === null) return;
  say(
    `noema: ${d.episode_id}: ${file} (${existing.decision} by ${oneLine(deciderOf(existing))}) is not the decision ` +
      `the store holds (${d.decision} by ${oneLine(deciderOf(d))}): the store decides for the fleet, so its decision ` +
      `applies; the other was set aside as ${moved}`,
  );
}

/** Writes the store's decision `d` as the local episode's approval record (exclusively: exit 8 if one appeared). */
function writeStoreDecision(local: PendingRun, d: StoredDecision): ApprovalRecord {
  return writeApproval(local.episode_dir, storeRecord(local, d));
}

/** The approval record the store's decision `d` is in this episode (before masking). */
function storeRecord(local: PendingRun, d: StoredDecision): ApprovalRecord {
  const c = local.checkpoint;
  const by = d.host === publishingHost() ? d.by : `${d.by}@${d.host}`;
  return {
    schema_version: "approval/1.0",
    episode_id: d.episode_id,
    checkpoint_id: d.checkpoint_id,
    state_hash: d.state_hash,
    // The checkpoint as this run holds it (the store's digest, when it has one, was checked to be the same above).
    checkpoint_digest: checkpointDigest(c as unknown as Record<string, unknown>),
    decision: d.decision,
    by,
    at: d.at,
    note: d.note,
    consumed_at: null,
    consumed_by: null,
    authenticated_as: d.authenticated_as ?? null,
    database_role: d.database_role ?? null,
    claimed_by: d.claimed_by ?? null,
  };
}

/**
 * Refuses (exit 7) a decision made on another checkpoint than the run's own: the decider computed its
 * `checkpoint_digest` (the action, policies and state) from the checkpoint file the store held, and a writer that
 * took the run's lease over could have replaced that file, keeping its id and `state_hash`, with another action.
 * A decision without a digest (made before noema recorded them) is taken on its id and `state_hash`.
 */
function refuseOtherCheckpoint(checkpoint: Record<string, unknown>, d: StoredDecision): void {
  if (d.checkpoint_digest == null) return;
  const own = checkpointDigest(checkpoint);
  if (d.checkpoint_digest === own) return;
  throw new NoemaError(
    "mismatch",
    `the decision in the store on ${d.checkpoint_id} was made on another checkpoint than the one this run waits ` +
      `on: it was made on digest ${d.checkpoint_digest}, this run's checkpoint is ${own} (the stored ` +
      `checkpoints/${d.checkpoint_id}.json differs from this run's: its action or policies were replaced after the ` +
      `run published it). The decision is not applied and nothing runs; ${d.episode_id} stays paused`,
    { exitCode: EXIT.MISMATCH },
  );
}

/**
 * For the machine that holds a paused run: applies the store's decision on
 * its checkpoint (see {@link applyDecision}: a local record that is not the
 * store's is set aside). Returns true when the store holds a decision, now
 * the episode's too; false when it holds none — a record made here without
 * the store then does not count: the store decides for the fleet.
 *
 * @example
 * ```ts
 * if (await applyStoreDecision(store, "ep_01J…", { root: ".noema" })) await resume("ep_01J…");
 * ```
 */
export async function applyStoreDecision(
  store: SharedStore,
  id: string,
  options: RootOptions,
  say: (line: string) => void = () => {},
): Promise<boolean> {
  const local = pendingCheckpoint(id, options);
  const d = await store.decision(id, local.checkpoint.checkpoint_id);
  if (d === null) return false;
  applyDecision(local, d, say);
  return true;
}

/**
 * Refuses (exit 6) to resume a held run whose only decision was made here without the store, which holds none:
 * with a store, the fleet's one decision is the store's, and a local record could contradict one made elsewhere.
 *
 * @example
 * ```ts
 * if (!(await applyStoreDecision(store, id, { root }))) refuseUnbackedDecision(id, { root }, store.location);
 * ```
 */
export function refuseUnbackedDecision(id: string, options: RootOptions, location: string): void {
  const local = pendingCheckpoint(id, options);
  const r = local.approval;
  if (r === null) return; // no decision at all: resume says so as ever
  const chk = local.checkpoint.checkpoint_id;
  throw new NoemaError(
    "not_in_store",
    `${id}: approvals/${chk}.json (${r.decision} by ${oneLine(deciderOf(r))}) was made without the store, and ` +
      `${location} holds no decision on ${chk}: the store decides for the fleet, so nothing runs. Decide through it ` +
      `(${calledAs()} approve|reject ${id} with --store or NOEMA_STORE), then resume`,
    { exitCode: EXIT.NO_CHECKPOINT },
  );
}

/** How often a waiter looks at the store when no notification wakes it, ms. */
const POLL_MS = 1000;
/** How long a look at the store may go unanswered (a network cut) before it counts as an outage, ms. */
const ANSWER_MS = 10_000;

/**
 * Waits for a decision on a paused run (woken by the store's notifications,
 * polling as the fallback), then applies it locally. Outages of the store
 * (a restart, a failover, a network cut: a look unanswered for 10 s) do not
 * end the wait: it says so once through `say`, tries again with backoff
 * (250 ms doubling to 5 s), subscribes again once the store is back, and says
 * that once too. Only the deadline or `signal` ends it. On timeout, a
 * decision found by a last look stands; else the configured default is
 * recorded in the store and here, decided by `timeout`: `deny` rejects,
 * `abort` returns "abort" for the caller to abort the run. A store that
 * cannot be reached at the deadline decides nothing:
 * {@link WaitUnreachableError}, the run stays paused.
 *
 * @example
 * ```ts
 * const r = await waitForDecision(store, id, { root }, 600_000, "deny");
 * ```
 */
export function waitForDecision(
  store: SharedStore,
  id: string,
  options: RootOptions,
  timeoutMs: number,
  onTimeout: "deny" | "abort",
  signal?: AbortSignal,
  say: (line: string) => void = () => {},
  onLook: () => Promise<void> = async () => {},
): Promise<"decided" | "abort" | "interrupted"> {
  // A connection error the client leaves unawaited while the store is down must not end the wait.
  return ridingOutStrayErrors(() => waitThenDecide(store, id, options, timeoutMs, onTimeout, signal, say, onLook));
}

/** {@link waitForDecision}'s wait, its last look and the default on timeout. */
async function waitThenDecide(
  store: SharedStore,
  id: string,
  options: RootOptions,
  timeoutMs: number,
  onTimeout: "deny" | "abort",
  signal: AbortSignal | undefined,
  say: (line: string) => void,
  onLook: () => Promise<void>,
): Promise<"decided" | "abort" | "interrupted"> {
  const end = Date.now() + timeoutMs;
  // Looks end by the deadline, or 5 s after it (the last look), whatever a network cut holds.
  const looking = answering(store, () => Math.min(ANSWER_MS, Math.max(5_000, end - Date.now())));
  const got = await untilDecided(looking, id, options, end, signal, say, onLook);
  if (got !== "timeout") return got;
  try {
    // One last look, which also tells whether the store can take the default: a decision made at the last moment,
    // or while the store could not be reached, stands.
    if (await applyStoreDecision(looking, id, options, say)) return "decided";
    if (onTimeout === "abort") return "abort";
    await decideInStore(
      store,
      id,
      { decision: "rejected", by: "timeout", note: "the wait for approval ran out" },
      options,
      say,
    );
  } catch (e) {
    if (isOutage(e)) throw new WaitUnreachableError(id, onTimeout, e);
    if (!(e instanceof NoemaError && e.exitCode === EXIT.CONSUMED)) throw e;
    await applyStoreDecision(store, id, options, say); // decided at the last moment: that decision stands
  }
  return "decided";
}

/** The wait of {@link waitForDecision}: "timeout" when the deadline passed without a decision. */
async function untilDecided(
  store: SharedStore,
  id: string,
  options: RootOptions,
  end: number,
  signal: AbortSignal | undefined,
  say: (line: string) => void,
  onLook: () => Promise<void>,
): Promise<"decided" | "interrupted" | "timeout"> {
  const outage = new StoreOutage(say, store.location, `${id} waits for approval`);
  let wake: () => void = () => {};
  const onAbort = () => wake();
  signal?.addEventListener("abort", onAbort);
  const subscription = new Resubscription(store, id, () => wake());
  let first = true;
  try {
    while (Date.now() < end) {
      if (signal?.aborted) return "interrupted";
      let pause = POLL_MS;
      try {
        if (first) {
          first = false;
          await subscription.start(); // before the first look, so that a decision made meanwhile wakes
        }
        await onLook();
        const decided = await applyStoreDecision(store, id, options, say);
        outage.succeeded();
        if (decided) return "decided";
        subscription.renew(); // after an outage: LISTEN again
      } catch (e) {
        if (!isOutage(e)) throw e;
        pause = outage.failed(e);
        subscription.drop();
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(pause, Math.max(0, end - Date.now())));
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return "timeout";
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await subscription.close();
  }
}

/**
 * The wait for approval ran out while the store could not be reached: the
 * `--approval-timeout` default is a decision only the store can record (the
 * fleet may have decided meanwhile), so nothing is decided and the run stays
 * paused, resumable (exit 4).
 */
export class WaitUnreachableError extends NoemaError {
  constructor(id: string, onTimeout: "deny" | "abort", cause: Error) {
    super(
      "wait_store_unreachable",
      `the wait for approval of ${id} ran out while ${cause.message}; the --approval-timeout default ` +
        `(${onTimeout}) was not applied, since only the store can record a decision the fleet knows: ${id} stays ` +
        `paused. Decide with ${calledAs()} approve|reject ${id} --store … once the store is back, then run ` +
        `${calledAs()} resume ${id} on this machine`,
      { exitCode: EXIT.PAUSED, cause },
    );
    this.name = "WaitUnreachableError";
  }
}
