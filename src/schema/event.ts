/**
 * The event record (schema version 1.3.0): one line of `events.jsonl`.
 *
 * Additional properties are allowed on an event and on its payload. The
 * payload is checked by phase: `learn` (exactly one of two forms),
 * `action_candidate`, `act` and `plan`; other phases carry any object.
 *
 * @module
 */
import * as v from "valibot";
import { Duration, JsonObject, looseObject, Timestamp } from "./common.ts";
import { ActionCandidatePayload, ActPayload, checkLearnPayload, PlanPayload } from "./payloads.ts";
import { type SchemaProblem, toProblems } from "./problems.ts";
import { jsonType } from "../json.ts";

/** The phases of the event contract, in the order a run writes them. */
export const KNOWN_PHASES: readonly string[] = [
  "start",
  "observe",
  "interpret",
  "plan",
  "direction",
  "governance",
  "action_candidate",
  "act",
  "reflect",
  "learn",
  "runtime",
  "terminate",
  "insight",
];

/** The four faculties an event may name. */
export const FACULTIES = ["intuition", "direction", "governance", "insight"] as const;
/** A faculty. */
export type Faculty = (typeof FACULTIES)[number];

/**
 * Timing of the work an event records. When present, all three fields are
 * required; extra keys are allowed.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { EventMetrics } from "./event.ts";
 * v.parse(EventMetrics, { started_at: "2026-01-01T00:00:00Z", completed_at: "2026-01-01T00:00:01Z", duration_ms: 1000 });
 * ```
 */
export const EventMetrics = looseObject({
  started_at: Timestamp,
  completed_at: Timestamp,
  duration_ms: Duration,
});
/** Timing of an event. */
export type EventMetrics = v.InferOutput<typeof EventMetrics>;

/**
 * The event record without phase-specific payload rules (see
 * {@link checkEvent} for the full check).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { EventRecord } from "./event.ts";
 * v.parse(EventRecord, {
 *   id: "e1", timestamp: "2026-01-01T00:00:00Z", episode_id: "ep_1", phase: "start", payload: {}, evidence_ids: [],
 * });
 * ```
 */
export const EventRecord = looseObject({
  id: v.pipe(v.string(), v.description("Unique event id within the episode.")),
  timestamp: Timestamp,
  episode_id: v.string(),
  agent_id: v.optional(v.string()),
  phase: v.pipe(
    v.string(),
    v.description(
      "start, observe, interpret, plan, direction, governance, action_candidate, act, reflect, learn, runtime, terminate, insight, or another phase.",
    ),
  ),
  faculty: v.optional(v.picklist(FACULTIES)),
  payload: v.pipe(JsonObject, v.description("Shape depends on phase.")),
  evidence_ids: v.array(v.string()),
  caused_by: v.optional(v.pipe(v.string(), v.description("Id of the event that caused this one."))),
  metrics: v.optional(EventMetrics),
  event_type: v.optional(v.pipe(
    v.string(),
    v.description(
      "Set on runtime-phase events: run.state_projection, run.interrupt, run.checkpoint, run.resume.",
    ),
  )),
});
/** One event record. */
export type EventRecord = v.InferOutput<typeof EventRecord>;

/**
 * Payload schemas by phase. `learn` is checked by {@link checkLearnPayload}
 * because exactly one of its two forms must match.
 */
export const PHASE_PAYLOADS = {
  action_candidate: ActionCandidatePayload,
  act: ActPayload,
  plan: PlanPayload,
} as const;

/**
 * Checks one parsed `events.jsonl` value against the event record and its
 * phase payload. Returns no problems when the event is valid.
 *
 * @example
 * ```ts
 * import { checkEvent } from "./event.ts";
 * const problems = checkEvent({ id: "e1", phase: "act" });
 * console.log(problems.map((p) => p.path)); // ["timestamp", "episode_id", "payload", "evidence_ids"]
 * ```
 */
export function checkEvent(value: unknown): SchemaProblem[] {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return [{
      path: "",
      message: `an event must be a JSON object, got ${jsonType(value)}`,
    }];
  }
  const base = v.safeParse(EventRecord, value);
  const problems = base.success ? [] : toProblems(base.issues);
  const event = value as Record<string, unknown>;
  const payload = event.payload;
  if (typeof payload !== "object" || payload === null || Array.isArray(payload)) return problems;
  const phase = event.phase;
  if (phase === "learn") {
    problems.push(...checkLearnPayload(payload));
  } else if (typeof phase === "string" && Object.hasOwn(PHASE_PAYLOADS, phase)) {
    const r = v.safeParse(PHASE_PAYLOADS[phase as keyof typeof PHASE_PAYLOADS], payload);
    if (!r.success) problems.push(...toProblems(r.issues, "payload"));
  }
  return problems;
}
