/**
 * The `noema` profile's check of an episode's human decisions: each
 * `approvals/<id>.json` must be a decision on a checkpoint this episode has
 * (`checkpoints/<id>.json` beside it), naming this episode and that
 * checkpoint, `approved` or `rejected`, and bound to that checkpoint's pending
 * action by its `checkpoint_digest` — what `noema attest` and `noema resume`
 * require before they attest or act on it; and each `checkpoints/<id>.json`
 * must be the checkpoint its `run.checkpoint` event announced (what `approve`
 * and `resume` require). The contract does not know approvals, so these are
 * warnings (`--strict` makes them fail).
 *
 * @module
 */
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { NoemaError } from "../errors.ts";
import {
  announcedDifference,
  candidateDifference,
  checkpointDigest,
  consumedDifference,
  type DecisionEvents,
  decisionEvents,
  type DecisionFile,
  decisionRecordProblem,
  unrecordedDecisions,
} from "../store/checkpoint_digest.ts";
import { readJsonText } from "../store/json_file.ts";
import { type Collector, display } from "./collector.ts";

/** An approval record is a few hundred bytes; a larger file is not read. */
const MAX_RECORD_BYTES = 1024 * 1024;

/** The names of the regular `*.json` files of `dir/sub` (none when it is absent); a link is reported, not followed. */
function records(c: Collector, dir: string, sub: string): string[] {
  let names: string[];
  try {
    names = readdirSync(join(dir, sub)).filter((n) => n.endsWith(".json")).sort();
  } catch {
    return [];
  }
  return names.filter((n) => {
    const path = join(dir, sub, n);
    if (!lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()) return true;
    c.warn(display(path), "noema.approval", "is a symbolic link; not read (noema never writes one)");
    return false;
  });
}

/** The parsed JSON of one record, or null (warned) when it cannot be read. */
function readRecord(c: Collector, path: string): Record<string, unknown> | null {
  try {
    return readJsonText(path, display(path), { maxBytes: MAX_RECORD_BYTES }).value;
  } catch (e) {
    if (!(e instanceof NoemaError)) throw e;
    c.warn(display(path), "noema.approval", e.detail, e.location.line);
    return null;
  }
}

/** What is wrong with one decision on checkpoint `id` (its checkpoint parsed, or null when absent), or null. */
function problemOf(
  r: Record<string, unknown>,
  id: string,
  episodeId: string | null,
  checkpoint: Record<string, unknown> | null,
): string | null {
  if (checkpoint === null) return `no checkpoints/${id}.json: a decision on a checkpoint this run never had`;
  const own = decisionRecordProblem(r, id, episodeId);
  if (own !== null) return own;
  if (typeof r.checkpoint_digest !== "string") {
    return "it has no checkpoint_digest: it is bound to no pending action (noema resume refuses it)";
  }
  const digest = checkpointDigest(checkpoint);
  if (r.checkpoint_digest !== digest) {
    return `its checkpoint_digest ${r.checkpoint_digest} is not checkpoints/${id}.json's (${digest}): ` +
      "it decided another pending action or other policies";
  }
  return null;
}

/** Why a consumed record is not the decision its `run.resume` event applied, or null. */
function consumedProblem(r: Record<string, unknown>, events: DecisionEvents): string | null {
  if (r.consumed_at === null || r.consumed_at === undefined) return null;
  const resume = typeof r.consumed_by === "string" ? events.resumes.get(r.consumed_by) : undefined;
  if (resume === undefined) {
    return `it says a resume used it (consumed_by ${
      JSON.stringify(r.consumed_by)
    }), but no run.resume event has that id`;
  }
  const field = consumedDifference(r, resume);
  return field === null
    ? null
    : `its ${field} is not the one the run.resume event that used it (${r.consumed_by}) recorded: ` +
      "the record changed after the decision was applied";
}

/**
 * Warns (profile `noema`) about each decision in `dir/approvals` that is not
 * one on a checkpoint of this episode, bound to it.
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { checkApprovals } from "./approvals.ts";
 * const c = new Collector(100, true);
 * checkApprovals(c, ".noema/episodes/ep_1", "ep_1");
 * console.log(c.warnings);
 * ```
 */
export function checkApprovals(c: Collector, dir: string, episodeId: string | null): void {
  if (!c.profile) return;
  const checkpoints = checkpointRecords(c, dir);
  const wanted = new Set<string>();
  for (const { checkpoint } of checkpoints) {
    const id = (checkpoint.pending as { action_candidate_id?: unknown } | undefined)?.action_candidate_id;
    if (typeof id === "string") wanted.add(id);
  }
  const events = decisionEvents(join(dir, "events.jsonl"), wanted);
  checkCheckpoints(c, checkpoints, events);
  const decided = new Map<string, Record<string, unknown>>();
  for (const name of records(c, dir, "approvals")) {
    const path = join(dir, "approvals", name);
    const record = readRecord(c, path);
    if (record === null) continue;
    const id = name.slice(0, -".json".length);
    decided.set(id, record);
    const cpPath = join(dir, "checkpoints", name);
    const cp = lstatSync(cpPath, { throwIfNoEntry: false });
    if (cp?.isSymbolicLink()) {
      c.warn(display(cpPath), "noema.approval", "is a symbolic link; not read (noema never writes one)");
      continue;
    }
    const checkpoint = cp === undefined ? null : readRecord(c, cpPath);
    if (cp !== undefined && checkpoint === null) continue; // its own warning says why
    const why = problemOf(record, id, episodeId, checkpoint) ?? consumedProblem(record, events);
    if (why !== null) c.warn(display(path), "noema.approval", why);
  }
  // The other way: what the log says was asked and decided must have its files (none deleted, none un-applied).
  const present = (sub: string, id: string): DecisionFile =>
    lstatSync(join(dir, sub, `${id}.json`), { throwIfNoEntry: false }) === undefined ? "absent" : "unreadable";
  const unrecorded = unrecordedDecisions(
    events,
    (id) => present("checkpoints", id),
    (id) => decided.get(id) ?? present("approvals", id),
  );
  for (const { file, why } of unrecorded) {
    c.warn(display(join(dir, file)), file.startsWith("checkpoints/") ? "noema.checkpoint" : "noema.approval", why);
  }
}

/**
 * Warns (`noema.checkpoint`) of a checkpoint file that no `run.checkpoint` event announced, or that differs from the
 * one its event announced: a pending action edited while the run waited, which approve and resume refuse.
 */
function checkCheckpoints(
  c: Collector,
  checkpoints: readonly { path: string; id: string; checkpoint: Record<string, unknown> }[],
  events: DecisionEvents,
): void {
  for (const { path, id, checkpoint } of checkpoints) {
    const payload = events.checkpoints.get(id);
    const why = payload === undefined
      ? `no run.checkpoint event of events.jsonl announced checkpoint ${id}`
      : announcedDifference(checkpoint, payload);
    if (why !== null) {
      c.warn(display(path), "noema.checkpoint", `not the checkpoint its run.checkpoint event announced (${why})`);
      continue;
    }
    // The action asked about must be the one policies and governance judged (its action_candidate event, which the
    // checkpoint's events_sha256 covers): a pending action edited with its run.checkpoint event is caught here.
    const candidateId = (checkpoint.pending as { action_candidate_id?: unknown } | undefined)?.action_candidate_id;
    const candidate = typeof candidateId === "string" ? events.candidates.get(candidateId) : undefined;
    const judged = candidate === undefined
      ? `no action_candidate event has its pending action_candidate_id ${JSON.stringify(candidateId ?? null)}`
      : candidateDifference(checkpoint, candidate);
    if (judged !== null) {
      c.warn(
        display(path),
        "noema.checkpoint",
        `its pending action is not the one policies and governance judged (${judged}, against its action_candidate ` +
          "event)",
      );
    }
  }
}

/** The checkpoint files of `dir/checkpoints` that can be read, each with its path and id. */
function checkpointRecords(
  c: Collector,
  dir: string,
): { path: string; id: string; checkpoint: Record<string, unknown> }[] {
  const out: { path: string; id: string; checkpoint: Record<string, unknown> }[] = [];
  for (const name of records(c, dir, "checkpoints")) {
    const path = join(dir, "checkpoints", name);
    const checkpoint = readRecord(c, path);
    if (checkpoint !== null) out.push({ path, id: name.slice(0, -".json".length), checkpoint });
  }
  return out;
}
