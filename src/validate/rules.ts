/**
 * The rules `noema validate` checks, each with a stable id. Problems name the
 * rule they break, so scripts and tests can match on it.
 *
 * @module
 */

/**
 * Every rule id with what it checks.
 *
 * @example
 * ```ts
 * import { RULES } from "noema";
 * console.log(RULES["trace.start"]);
 * ```
 */
export const RULES = {
  "file.missing": "a required artifact file is missing",
  "file.json": "a JSON artifact cannot be read or parsed (invalid JSON, invalid UTF-8, BOM, not an object)",
  "json.duplicate_key":
    "a JSON artifact repeats a key in one object (JSON.parse keeps the last value; other readers may keep the first)",
  "jsonl.utf8": "a JSONL line is not valid UTF-8",
  "jsonl.json": "a JSONL line is not valid JSON",
  "jsonl.blank": "a JSONL file has a blank line",
  "jsonl.not_object": "a JSONL line is not a JSON object",
  "jsonl.torn": "the final JSONL line was cut short (no newline, incomplete JSON, or too long to be an event)",
  "jsonl.too_long":
    "a JSONL line is longer than the reader's limit (16 MiB, NOEMA_MAX_LINE_BYTES); it is skipped in bounded memory",
  "event.required": "an event lacks id, timestamp, episode_id, phase, payload or evidence_ids",
  "event.faculty": "an event's faculty is not intuition, direction, governance or insight",
  "event.metrics": "an event's metrics lack started_at, completed_at or duration_ms (>= 0)",
  "event.schema": "an event field has the wrong type or format",
  "event.duplicate_id": "two events share an id",
  "event.caused_by": "an event's caused_by names no earlier event",
  "event.episode_id": "an event's episode_id differs from the episode's id",
  "event.duplicate_start": "events.jsonl has a second start event (an episode starts once)",
  "payload.learn": "a learn payload matches neither form, or both",
  "payload.action_candidate": "an action_candidate payload lacks a required field or has a wrong type",
  "payload.act": "an act payload lacks input_excerpt or outcome, or has a wrong type",
  "payload.plan": "a plan payload has malformed step_records or legacy step labels",
  "state.schema":
    "state.json does not match its schema (version 1.0, state schema 1.0.0), or lacks its episode, goal or plan section",
  "summary.schema":
    "summary.json does not match its schema (1.3.0) or its verification rules, or lacks its flags or metrics section",
  "summary.mode": "summary.json has insight or flags.direction, though flags.mode is minimal (both are meta mode only)",
  "summary.success":
    "summary.json metrics.success disagrees with outcome (1 for success and success_unverified, 0 for goal_not_achieved and error)",
  "summary.duration":
    "summary.json duration_sec disagrees with metrics.latencies.total_ms (beyond one unit of duration_sec's last decimal, at least 1 ms)",
  "manifest.schema": "manifest.json does not match its schema (manifest/1.0), is unsorted, or lists itself",
  "learn.schema": "a learn.jsonl line does not match learn/1.0",
  "lifecycle.links":
    "state.json links do not fit the lifecycle (non-terminal: events+learn; terminal: +summary+manifest)",
  "lifecycle.files":
    "the artifact files do not fit the lifecycle (summary.json and manifest.json together, terminal only)",
  "lifecycle.status":
    "outcomes.status does not fit the lifecycle (a terminal run is not pending; a non-terminal run is pending)",
  "trace.start": "the start event's timestamp differs from episode.started_at (or there is no start event)",
  "trace.projection": "state.json persists lack a run.state_projection event, or the last one differs from state.json",
  "trace.action_timestamp": "an outcomes.actions timestamp differs from its act event's timestamp",
  "trace.action_mirror":
    "an outcomes.actions record does not mirror its act event (a step_id, result_status or input_excerpt it carries differs)",
  "trace.action_missing": "an act event of a terminal run has no outcomes.actions record",
  "trace.learn": "a learn event points at a learn file that does not exist",
  "trace.learn_proposals":
    "learn counts or ids disagree with learn.jsonl (a learn event's proposal_count and proposal_ids, summary.json learn_proposals and learn_applied)",
  "trace.branching_factor": "summary.json insight.metrics.branching_factor is not the number of direction events",
  "trace.summary": "summary.json disagrees with state.json (episode id, task, started_at)",
  "trace.plan":
    "a terminal run's state.json plan differs from the plan rebuilt from the events (source, updated_at, step ids, step statuses)",
  "trace.directory":
    "the episode directory is not named by the episode's id (state.json episode.id, else the events' episode_id)",
  "manifest.missing": "a file listed in manifest.json does not exist",
  "manifest.size": "a file's size differs from manifest.json",
  "manifest.hash": "a file's sha256 differs from manifest.json",
  "manifest.unlisted": "a terminal artifact is not listed in manifest.json",
} as const;

/** A rule id. */
export type RuleId = keyof typeof RULES;
