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
import { readJsonl } from "./jsonl.ts";

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

/**
 * How a checkpoint's pending action differs from the action its `action_candidate` event recorded (the one policies
 * and governance judged: `payload.tool` and `payload.input`), or null when it is that action.
 *
 * @example
 * ```ts
 * import { candidateDifference } from "./checkpoint_digest.ts";
 * candidateDifference({ pending: { action: { tool: "t", input: { a: 1 } } } }, { payload: { tool: "t", input: { a: 2 } } });
 * // "its input differs"
 * ```
 */
export function candidateDifference(
  checkpoint: Record<string, unknown>,
  candidate: Record<string, unknown>,
): string | null {
  const pending = (checkpoint.pending ?? {}) as Record<string, unknown>;
  const action = (pending.action ?? {}) as Record<string, unknown>;
  const judged = (candidate.payload ?? {}) as Record<string, unknown>;
  for (const key of ["tool", "input"]) {
    if (canonicalJson(action[key] ?? null) !== canonicalJson(judged[key] ?? null)) return `its ${key} differs`;
  }
  return null;
}

/**
 * What is wrong with an approval record as a decision on checkpoint `id` of episode `episodeId` (null: not known),
 * read from itself alone: another episode or checkpoint named, or a decision other than `approved` or `rejected`.
 * Null when it is one. `attest` refuses such a record, `validate --profile noema` warns of it.
 *
 * @example
 * ```ts
 * import { decisionRecordProblem } from "./checkpoint_digest.ts";
 * decisionRecordProblem({ episode_id: "ep_1", checkpoint_id: "chk_1", decision: "maybe" }, "chk_1", "ep_1");
 * // 'its decision "maybe" is neither "approved" nor "rejected"'
 * ```
 */
export function decisionRecordProblem(r: Record<string, unknown>, id: string, episodeId: string | null): string | null {
  if (r.checkpoint_id !== id || (episodeId !== null && r.episode_id !== episodeId)) {
    return `it names ${String(r.episode_id)}/${String(r.checkpoint_id)}, not ${episodeId ?? "this episode"}/${id}`;
  }
  if (r.decision !== "approved" && r.decision !== "rejected") {
    return `its decision ${JSON.stringify(r.decision)} is neither "approved" nor "rejected"`;
  }
  return null;
}

/** The fields of a decision a `run.resume` event's `approval` repeats (`approvalSummary`), null when absent. */
const SUMMARY_FIELDS = ["decision", "by", "at", "note", "checkpoint_digest", "authenticated_as", "claimed_by"] as const;

/**
 * What differs between a consumed approval record and the `run.resume` event that consumed it (its
 * `consumed_by`): the checkpoint, or the decision as the event recorded it (decision, by, at, note, digest, how `by`
 * was authenticated, the claimed name). A record rewritten after the resume read it (while its action ran) is
 * caught here. Null when they agree.
 *
 * @example
 * ```ts
 * import { consumedDifference } from "./checkpoint_digest.ts";
 * consumedDifference({ checkpoint_id: "chk_1", by: "ana" }, { checkpoint_id: "chk_1", approval: { by: "bob" } }); // "by"
 * ```
 */
export function consumedDifference(record: Record<string, unknown>, resume: Record<string, unknown>): string | null {
  if (resume.checkpoint_id !== record.checkpoint_id) return "checkpoint_id";
  const said = resume.approval;
  if (typeof said !== "object" || said === null || Array.isArray(said)) return "approval";
  for (const key of SUMMARY_FIELDS) {
    const theirs = (said as Record<string, unknown>)[key] ?? null;
    const own = record[key] ?? null;
    // approvalSummary leaves out a digest, authentication or claimed name the record does not have (or has empty).
    if ((key === "checkpoint_digest" || key === "authenticated_as" || key === "claimed_by") && !own && !theirs) {
      continue;
    }
    if (canonicalJson(own) !== canonicalJson(theirs)) return key;
  }
  return null;
}

/** The `run.checkpoint` payloads by checkpoint id and the `run.resume` events by id, from an `events.jsonl`. */
export interface DecisionEvents {
  checkpoints: Map<string, Record<string, unknown>>;
  resumes: Map<string, Record<string, unknown>>;
  /** The payloads of the `action_candidate` events asked for, by `action_candidate_id`. */
  candidates: Map<string, Record<string, unknown>>;
}

/**
 * Reads the decision events of an episode's log: only the lines that hold `"run.checkpoint"` or `"run.resume"` are
 * parsed, and the `action_candidate` events whose ids are in `candidateIds`. An unreadable log gives what was read
 * before the fault (its own check reports it).
 *
 * @example
 * ```ts
 * import { decisionEvents } from "./checkpoint_digest.ts";
 * decisionEvents(".noema/episodes/ep_1/events.jsonl").checkpoints.get("chk_1")?.pending;
 * ```
 */
export function decisionEvents(path: string, candidateIds: ReadonlySet<string> = new Set()): DecisionEvents {
  const out: DecisionEvents = { checkpoints: new Map(), resumes: new Map(), candidates: new Map() };
  const parse = (text: string) =>
    text.includes('"run.checkpoint"') || text.includes('"run.resume"') ||
      (candidateIds.size > 0 && text.includes('"phase":"action_candidate"'))
      ? JSON.parse(text)
      : null;
  try {
    for (const e of readJsonl(path, { noFollow: true, parse })) {
      const v = e.problem ? null : e.value as Record<string, unknown> | null;
      const payload = v?.payload;
      if (typeof payload !== "object" || payload === null || Array.isArray(payload)) continue;
      const p = payload as Record<string, unknown>;
      if (v!.event_type === "run.checkpoint" && typeof p.checkpoint_id === "string") {
        out.checkpoints.set(p.checkpoint_id, p);
      }
      if (v!.event_type === "run.resume" && typeof v!.id === "string") out.resumes.set(v!.id, p);
      const candidate = p.action_candidate_id;
      if (v!.phase === "action_candidate" && typeof candidate === "string" && candidateIds.has(candidate)) {
        out.candidates.set(candidate, p);
      }
    }
  } catch {
    // an unreadable log: what was read stands; the log's own check says why
  }
  return out;
}

/** What a decision file of an episode is when looked for: absent, present but unreadable (said elsewhere), or read. */
export type DecisionFile = Record<string, unknown> | "absent" | "unreadable";

/**
 * What the log says was asked and decided that the episode's decision files do not hold, each as the file and why: a
 * `run.checkpoint` event's `checkpoints/<id>.json` gone, a decision a `run.resume` event applied whose
 * `approvals/<id>.json` is gone, or one that says it was never applied (`consumed_at` null). The checks of the files
 * themselves go the other way (each file against the events); these catch a file deleted, or rewritten as a decision
 * that never took effect, before the episode was sealed.
 *
 * @example
 * ```ts
 * import { decisionEvents, unrecordedDecisions } from "./checkpoint_digest.ts";
 * const events = decisionEvents(".noema/episodes/ep_1/events.jsonl");
 * unrecordedDecisions(events, () => "absent", () => "absent"); // [{ file: "checkpoints/chk_1.json", why: "…" }]
 * ```
 */
export function unrecordedDecisions(
  events: DecisionEvents,
  checkpoint: (id: string) => DecisionFile,
  approval: (id: string) => DecisionFile,
): { file: string; why: string }[] {
  const out: { file: string; why: string }[] = [];
  for (const id of events.checkpoints.keys()) {
    if (checkpoint(id) === "absent") {
      out.push({ file: `checkpoints/${id}.json`, why: "missing: a run.checkpoint event of events.jsonl announced it" });
    }
  }
  const said = new Set<string>();
  for (const [eventId, p] of events.resumes) {
    const id = p.checkpoint_id, applied = p.approval;
    if (typeof id !== "string" || typeof applied !== "object" || applied === null || said.has(id)) continue;
    const record = approval(id);
    const what = `the run.resume event ${eventId} applied a decision on it (${
      JSON.stringify((applied as Record<string, unknown>).decision ?? null)
    } by ${JSON.stringify((applied as Record<string, unknown>).by ?? null)})`;
    if (record === "absent") out.push({ file: `approvals/${id}.json`, why: `missing: ${what}` });
    else if (record !== "unreadable" && (record.consumed_at === null || record.consumed_at === undefined)) {
      out.push({ file: `approvals/${id}.json`, why: `it says it was never applied (consumed_at null), but ${what}` });
    } else continue;
    said.add(id);
  }
  return out;
}
