/**
 * Checkpoints and approval records: the files that bind a paused run to the
 * exact state it paused in, and a human decision to that checkpoint.
 *
 * - `checkpoints/<checkpoint_id>.json`: event offset, last event id, the
 *   log's length and digest up to the checkpoint (`events_bytes`,
 *   `events_sha256`), `state_hash` (sha256 of `state.json`'s bytes), adapter label, and the
 *   pending action with why it needs approval.
 * - `approvals/<checkpoint_id>.json`: who decided, when, approve or reject,
 *   a note, the `state_hash` and `checkpoint_digest` (the pending action
 *   decided on) it was bound to, and when a resume consumed it.
 *
 * Both are written through the episode's {@link ArtifactSink}: secrets are
 * masked (an approver's note and name too, with the secret names the run
 * recorded, even from another process).
 *
 * @module
 */
import { renameSync } from "node:fs";
import { join } from "node:path";
import { EXIT, type ExitCode, NoemaError } from "../errors.ts";
import {
  announcedDifference,
  candidateDifference,
  checkpointDigest,
  decisionEvents,
} from "../store/checkpoint_digest.ts";
import { readJsonFile } from "../store/json_file.ts";
import { fsyncDir } from "../store/atomic.ts";
import { episodeRoot, lexists, refuseSymlinks } from "../store/nofollow.ts";
import type { PendingAction } from "../plugins/api.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { ArtifactSink } from "./artifact_sink.ts";
import { calledAs } from "../called_as.ts";

/** Why a run paused and what it was about to do. */
export interface PendingApproval {
  /** `review` (a review step), `approval` (a policy asked), `veto` (an enforced veto with pause-on-veto). */
  kind: "review" | "approval" | "veto";
  /** Why, in words. */
  reason: string;
  /** The policy that asked, if any. */
  policy_id: string | null;
  step_id: string;
  step_index: number;
  action_candidate_id: string;
  /** The pending action (secrets masked). */
  action: PendingAction;
}

/** A checkpoint file. */
export interface Checkpoint {
  schema_version: "checkpoint/1.0";
  episode_id: string;
  checkpoint_id: string;
  created_at: string;
  /** Number of events before the run.checkpoint event. */
  event_offset: number;
  /** Id of the last event before the run.checkpoint event. */
  last_event_id: string;
  /** `sha256:` of state.json's bytes when the run paused. */
  state_hash: string;
  /** The adapter the run used. */
  adapter_label: string;
  /**
   * Bytes of events.jsonl when the run paused (every event before the run.checkpoint event) and their `sha256:`:
   * `resume` refuses (7) a log whose first `events_bytes` differ. Absent in checkpoints written before.
   */
  events_bytes?: number;
  events_sha256?: string;
  /**
   * The policies in force when the run paused, each its id (`name@version`) and the `sha256:` of its file (null for
   * one given as an object): a decision's `checkpoint_digest` covers them. Absent in checkpoints written before.
   */
  policy_versions?: { id: string; sha256: string | null }[];
  pending: PendingApproval;
}

/** A human decision on a checkpoint. */
export interface ApprovalRecord {
  schema_version: "approval/1.0";
  episode_id: string;
  checkpoint_id: string;
  state_hash: string;
  /**
   * `checkpointDigest` of the checkpoint decided on (its pending action, policies and `state_hash`): `resume`
   * refuses (7) a checkpoint that no longer matches it. Absent in records written before noema recorded it, which
   * `resume` refuses too (nothing binds them to the action).
   */
  checkpoint_digest?: string | null;
  decision: "approved" | "rejected";
  /**
   * Who decided, as authenticated (`authenticated_as`): the OS user; the `noema serve` token's label; or, decided in
   * a PostgreSQL store, its `session_user` (`@host` when made on another machine).
   */
  by: string;
  at: string;
  note: string | null;
  /** When a resume used the decision, and the id of its run.resume event. */
  consumed_at: string | null;
  consumed_by: string | null;
  /** What `by` is: `database_role`, `serve_token` or `os_user`; absent (null) in records written before it was. */
  authenticated_as?: "database_role" | "serve_token" | "os_user" | null;
  /** PostgreSQL's `session_user` of the connection that recorded it (for `noema serve`, the server's role). */
  database_role?: string | null;
  /** The name the decider gave (`--by`): display only, never trusted. */
  claimed_by?: string | null;
}

/**
 * What a `run.resume` event says of the decision it applies: decision, by, at, note, and how `by` was authenticated
 * and the name the decider gave, when the record says so.
 *
 * @example
 * ```ts
 * import { approvalSummary } from "./checkpoint.ts";
 * // approvalSummary(record).by
 * ```
 */
export function approvalSummary(a: ApprovalRecord): Record<string, unknown> {
  return {
    decision: a.decision,
    by: a.by,
    at: a.at,
    note: a.note,
    ...(a.checkpoint_digest ? { checkpoint_digest: a.checkpoint_digest } : {}),
    ...(a.authenticated_as ? { authenticated_as: a.authenticated_as } : {}),
    ...(a.claimed_by ? { claimed_by: a.claimed_by } : {}),
  };
}

/**
 * A decider as shown: the authenticated identity, with the claimed name beside it when it differs.
 *
 * @example
 * ```ts
 * import { deciderOf } from "./checkpoint.ts";
 * deciderOf({ by: "ana", claimed_by: "carol" }); // "ana (claimed: carol)"
 * ```
 */
export function deciderOf(r: { by: string; claimed_by?: string | null }): string {
  return r.claimed_by && r.claimed_by !== r.by ? `${r.by} (claimed: ${r.claimed_by})` : r.by;
}

function checkId(id: string): void {
  const problem = episodeIdProblem(id);
  if (problem || !id.startsWith("chk_")) {
    throw new NoemaError(
      "invalid_id",
      `invalid checkpoint id ${JSON.stringify(id)}: ${problem ?? 'must start with "chk_"'}`,
      {
        exitCode: EXIT.MISMATCH,
      },
    );
  }
}

/** Path of a checkpoint file. */
export function checkpointPath(dir: string, checkpointId: string): string {
  checkId(checkpointId);
  return join(dir, "checkpoints", `${checkpointId}.json`);
}

/** Path of an approval record. */
export function approvalPath(dir: string, checkpointId: string): string {
  checkId(checkpointId);
  return join(dir, "approvals", `${checkpointId}.json`);
}

/**
 * Writes a checkpoint atomically (secrets masked, through `sink`, by default
 * a sink for the episode's recorded secret names); returns its path relative
 * to the episode.
 *
 * @example
 * ```ts
 * import { writeCheckpoint } from "noema";
 * // writeCheckpoint(dir, checkpoint); // "checkpoints/chk_0123456789ab.json"
 * ```
 */
export function writeCheckpoint(dir: string, checkpoint: Checkpoint, sink?: ArtifactSink): string {
  checkpointPath(dir, checkpoint.checkpoint_id);
  const rel = `checkpoints/${checkpoint.checkpoint_id}.json`;
  (sink ?? ArtifactSink.forEpisode(dir)).writeJson(rel, checkpoint);
  return rel;
}

/**
 * Reads one of these files with `readJsonFile`'s checks; missing ⇒ `missingCode`, damaged ⇒ MISMATCH (7).
 * A symbolic link at it (or at a directory below the root) is refused, never read: its target's content
 * could otherwise appear in an error.
 */
function readJson<T>(path: string, what: string, missingCode: ExitCode, dir: string): T {
  refuseSymlinks(path, episodeRoot(dir), "read");
  try {
    return readJsonFile(path, path, { noFollow: true }) as T;
  } catch (e) {
    if (!(e instanceof NoemaError)) throw e;
    const missing = e.code === "not_found";
    throw new NoemaError(e.code, missing ? `${what} not found` : `${what}: ${e.detail}`, {
      ...e.location,
      file: path,
      exitCode: missing ? missingCode : EXIT.MISMATCH,
    });
  }
}

/**
 * Reads a checkpoint; a missing one is an error with exit code 6.
 *
 * @example
 * ```ts
 * import { readCheckpoint } from "noema";
 * // readCheckpoint(dir, "chk_0123456789ab").pending.reason
 * ```
 */
export function readCheckpoint(dir: string, checkpointId: string): Checkpoint {
  return readJson<Checkpoint>(checkpointPath(dir, checkpointId), `checkpoint ${checkpointId}`, EXIT.NO_CHECKPOINT, dir);
}

/**
 * Refuses (exit 7) a checkpoint file that is not the one its `run.checkpoint` event announced: another id or
 * offset, or another pending action, step, kind, policy or reason. `noema view` shows the event's pending action,
 * `noema serve` the file's, and `resume` runs the file's: a checkpoint file edited while the run waits (before or
 * after a decision) must not run an action other than the one the log shows was checked and asked about.
 *
 * @example
 * ```ts
 * import { checkEventMatches } from "./checkpoint.ts";
 * // checkEventMatches(checkpoint, lastEvent.payload); // throws (7) when they differ
 * ```
 */
export function checkEventMatches(checkpoint: Checkpoint, payload: Record<string, unknown>): void {
  const what = announcedDifference(checkpoint as unknown as Record<string, unknown>, payload);
  if (what === null) return;
  throw new NoemaError(
    "mismatch",
    `checkpoints/${checkpoint.checkpoint_id}.json is not the checkpoint its run.checkpoint event announced (${what}); ` +
      "refusing to decide or resume on it",
    { exitCode: EXIT.MISMATCH },
  );
}

/**
 * Refuses (exit 7) a checkpoint whose pending action is not the one its `action_candidate` event recorded: the
 * action policies and governance judged (that event lies before the checkpoint, under its `events_sha256`). A
 * checkpoint file and its `run.checkpoint` event edited together while the run waits would otherwise run an action
 * nobody judged. A checkpoint that names no candidate (written before noema recorded it) is not checked.
 *
 * @example
 * ```ts
 * import { checkJudgedAction } from "./checkpoint.ts";
 * // checkJudgedAction(dir, readCheckpoint(dir, "chk_0123456789ab")); // throws (7) when they differ
 * ```
 */
export function checkJudgedAction(dir: string, checkpoint: Checkpoint): void {
  const id = (checkpoint.pending as { action_candidate_id?: unknown }).action_candidate_id;
  if (typeof id !== "string") return;
  const candidate = decisionEvents(join(dir, "events.jsonl"), new Set([id])).candidates.get(id);
  const why = candidate === undefined
    ? `no action_candidate event has its id ${id}`
    : candidateDifference(checkpoint as unknown as Record<string, unknown>, candidate);
  if (why === null) return;
  throw new NoemaError(
    "mismatch",
    `checkpoints/${checkpoint.checkpoint_id}.json: its pending action is not the one policies and governance judged ` +
      `(${why}, against its action_candidate event); refusing to decide or resume on it`,
    { exitCode: EXIT.MISMATCH },
  );
}

/**
 * Why a decision is not bound to `checkpoint` of episode `episodeId`, or null when it is: it names another episode
 * or checkpoint, is bound to another state, has no `checkpoint_digest` (recorded by a noema that did not bind it),
 * or has one that is not the checkpoint's now (its pending action or policies changed since it was decided on).
 * Neither a resume nor an agent's call acts on such a decision.
 *
 * @example
 * ```ts
 * import { decisionBindingProblem } from "./checkpoint.ts";
 * // decisionBindingProblem(readCheckpoint(dir, "chk_0123456789ab"), readApproval(dir, "chk_0123456789ab")!, "ep_1")
 * ```
 */
export function decisionBindingProblem(
  checkpoint: Checkpoint,
  approval: ApprovalRecord,
  episodeId: string,
): string | null {
  if (approval.state_hash !== checkpoint.state_hash) {
    return `the decision is bound to ${approval.state_hash}, not to this checkpoint's state`;
  }
  if (approval.checkpoint_id !== checkpoint.checkpoint_id || approval.episode_id !== episodeId) {
    return `the decision names ${approval.episode_id}/${approval.checkpoint_id}, not ${episodeId}/${checkpoint.checkpoint_id}`;
  }
  if (typeof approval.checkpoint_digest !== "string") {
    return `the decision on checkpoint ${checkpoint.checkpoint_id} has no checkpoint_digest (recorded by an older ` +
      `noema): nothing binds it to the pending action; delete approvals/${checkpoint.checkpoint_id}.json and decide ` +
      `again, or end the run with ${calledAs()} resume --abort`;
  }
  const own = checkpointDigest(checkpoint as unknown as Record<string, unknown>);
  if (approval.checkpoint_digest !== own) {
    return `checkpoints/${checkpoint.checkpoint_id}.json changed since it was decided on: the decision was made on ` +
      `digest ${approval.checkpoint_digest}, the checkpoint now is ${own} (its pending action or policies differ)`;
  }
  return null;
}

/**
 * Reads the approval record of a checkpoint, or null when none was made.
 *
 * @example
 * ```ts
 * import { readApproval } from "noema";
 * // readApproval(dir, "chk_0123456789ab")?.decision
 * ```
 */
export function readApproval(dir: string, checkpointId: string): ApprovalRecord | null {
  const path = approvalPath(dir, checkpointId);
  // lstat, not exists: a dangling symlink is refused too, not taken for "no decision yet".
  return lexists(path) ? readJson<ApprovalRecord>(path, "approval record", EXIT.NO_CHECKPOINT, dir) : null;
}

/**
 * Records a decision. A checkpoint gets one decision: a second one is an
 * error (exit code 8). The record is created exclusively, so two concurrent
 * deciders cannot both succeed. Secrets in it (`note`, `by`) are masked with
 * the secret names the run recorded; returns the record as written.
 *
 * @example
 * ```ts
 * import { writeApproval } from "noema";
 * // writeApproval(dir, { …, decision: "approved", by: "ana", … });
 * ```
 */
export function writeApproval(dir: string, record: ApprovalRecord, sink?: ArtifactSink): ApprovalRecord {
  approvalPath(dir, record.checkpoint_id);
  const existing = readApproval(dir, record.checkpoint_id);
  if (existing) throw alreadyDecided(record.checkpoint_id, existing);
  try {
    return (sink ?? ArtifactSink.forEpisode(dir)).writeJson(`approvals/${record.checkpoint_id}.json`, record, {
      exclusive: true,
    });
  } catch (e) {
    // A concurrent decider created the record after the check above: it won, this one is already decided (8).
    if ((e as { code?: unknown }).code !== "EEXIST") throw e;
    throw alreadyDecided(record.checkpoint_id, readApproval(dir, record.checkpoint_id));
  }
}

/**
 * Moves a checkpoint's approval record aside, to `approvals/<checkpoint>.json.overruled-<ms>` beside it (never
 * through a symbolic link): for a decision the shared store overruled (one made here without the store, which
 * arbitrates a checkpoint's one decision for the fleet). The record is kept, as evidence; validate reads only
 * `*.json` records. Returns the new name, relative to the episode, or null when there was no record.
 *
 * @example
 * ```ts
 * import { setAsideApproval } from "./checkpoint.ts";
 * // setAsideApproval(dir, "chk_0123456789ab"); // "approvals/chk_0123456789ab.json.overruled-1765100000000"
 * ```
 */
export function setAsideApproval(dir: string, checkpointId: string): string | null {
  const path = approvalPath(dir, checkpointId);
  const root = episodeRoot(dir);
  const name = `approvals/${checkpointId}.json.overruled-${Date.now()}`;
  refuseSymlinks(path, root);
  refuseSymlinks(join(dir, name), root);
  if (!lexists(path)) return null;
  if (lexists(join(dir, name))) throw new NoemaError("set_aside", `${name} exists already`, { exitCode: EXIT.ERROR });
  try {
    renameSync(path, join(dir, name));
  } catch (e) {
    if ((e as { code?: unknown }).code === "ENOENT") return null; // moved meanwhile by another process
    throw e;
  }
  fsyncDir(join(dir, "approvals"));
  return name;
}

/**
 * The error of a second decision on a checkpoint (exit 8), naming the first when it can be read.
 *
 * @example
 * ```ts
 * import { alreadyDecided } from "./checkpoint.ts";
 * alreadyDecided("chk_1", null).exitCode; // 8
 * ```
 */
export function alreadyDecided(checkpointId: string, existing: ApprovalRecord | null): NoemaError {
  // The first decider's names are another person's words (`--by`): on one line, so they cannot forge a line of ours.
  const who = existing ? deciderOf(existing).replace(/\s+/g, " ") : "";
  const first = existing ? ` ${existing.decision} by ${who} at ${existing.at}` : " decided";
  return new NoemaError("already_decided", `checkpoint ${checkpointId} was already${first}`, {
    exitCode: EXIT.CONSUMED,
  });
}

/**
 * Marks a decision as used by a resume (rewrites the record atomically).
 *
 * @example
 * ```ts
 * import { consumeApproval } from "noema";
 * // consumeApproval(dir, record, resumeEvent.id, new Date().toISOString());
 * ```
 */
export function consumeApproval(
  dir: string,
  record: ApprovalRecord,
  eventId: string,
  at: string,
  sink?: ArtifactSink,
): ApprovalRecord {
  approvalPath(dir, record.checkpoint_id);
  const next = { ...record, consumed_at: at, consumed_by: eventId };
  return (sink ?? ArtifactSink.forEpisode(dir)).writeJson(`approvals/${record.checkpoint_id}.json`, next);
}
