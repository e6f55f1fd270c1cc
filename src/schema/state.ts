/**
 * `state.json`: the cognitive state snapshot (version `1.0`, state schema
 * version `1.0.0`).
 *
 * @module
 */
import * as v from "valibot";
import { CONTRACT_VERSIONS } from "../version.ts";
import { Duration, JsonObject, JsonValue, looseObject, Timestamp, Unit } from "./common.ts";
import { Plan } from "./plan.ts";
import { type SchemaProblem, toProblems } from "./problems.ts";

/** The three intuition postures of an episode. */
export const INTUITION_MODES = ["advisory", "interventive", "hybrid"] as const;
/** An intuition posture. */
export type IntuitionMode = (typeof INTUITION_MODES)[number];

/** The six outcome statuses. */
export const OUTCOME_STATUSES = ["ok", "error", "vetoed", "aborted", "partial", "pending"] as const;
/** An outcome status. */
export type OutcomeStatus = (typeof OUTCOME_STATUSES)[number];

/**
 * `state.json` `episode`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Episode } from "./state.ts";
 * v.parse(Episode, { id: "ep_01J", started_at: "2026-01-01T00:00:00Z" });
 * ```
 */
export const Episode = looseObject({
  id: v.pipe(v.string(), v.description("Unique episode identifier.")),
  seed: v.optional(v.pipe(v.number(), v.description("Seed for reproducibility."))),
  tags: v.optional(v.pipe(JsonObject, v.description("User-provided metadata tags (string keys)."))),
  using: v.optional(v.pipe(v.string(), v.description("Adapter label used for execution."))),
  started_at: v.pipe(
    Timestamp,
    v.description("Equals the timestamp of the start event; stable across continuation."),
  ),
  intuition_mode: v.optional(
    v.pipe(v.picklist(INTUITION_MODES), v.description("Absent in runs from older versions; read as advisory.")),
  ),
});
/** `state.json` `episode`. */
export type Episode = v.InferOutput<typeof Episode>;

/**
 * A non-null `outcomes.error` as noema writes it: `{type, message}` (and
 * reads a plain string too). The contract does not show the type of a
 * non-null value, so `state.json` accepts any JSON value there
 * ({@link Outcomes}); `noema validate --profile noema` warns when it is not
 * this shape.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { OutcomeError } from "./state.ts";
 * v.parse(OutcomeError, { type: "AdapterError", message: "exit code 2" });
 * ```
 */
export const OutcomeError = v.union([
  looseObject({
    type: v.pipe(v.string(), v.description("Error class, e.g. AdapterError, PolicyError, Aborted.")),
    message: v.pipe(v.string(), v.description("What went wrong, in words.")),
  }),
  v.string(),
]);
/** A non-null `outcomes.error`. */
export type OutcomeError = v.InferOutput<typeof OutcomeError>;

/**
 * One action record of `outcomes.actions`; mirrors an `act` event payload and
 * carries its timestamp. Extension fields start with `x-`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ActionRecord } from "./state.ts";
 * v.parse(ActionRecord, { id: "act-1", kind: "shell", timestamp: "2026-01-01T00:00:00Z", result_status: "ok" });
 * ```
 */
export const ActionRecord = looseObject({
  id: v.optional(v.string()),
  kind: v.optional(v.string()),
  tool: v.optional(v.string()),
  input_excerpt: v.optional(v.string()),
  result_status: v.optional(v.string()),
  step_id: v.optional(v.string()),
  provenance: v.optional(JsonObject),
  result_artifacts: v.optional(v.array(JsonObject)),
  timestamp: v.optional(v.pipe(Timestamp, v.description("Equals the timestamp of the matching act event."))),
  input: v.optional(JsonValue),
  output: v.optional(JsonValue),
  duration_ms: v.optional(Duration),
});
/** One action record. */
export type ActionRecord = v.InferOutput<typeof ActionRecord>;

/**
 * `state.json` `outcomes`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Outcomes } from "./state.ts";
 * v.parse(Outcomes, { status: "ok", actions: [], error: null });
 * ```
 */
export const Outcomes = looseObject({
  status: v.picklist(OUTCOME_STATUSES),
  actions: v.optional(v.array(ActionRecord)),
  metrics: v.optional(looseObject({
    task_score: v.optional(v.number()),
    steps_completed: v.optional(v.number()),
    steps_total: v.optional(v.number()),
  })),
  artifacts: v.optional(v.array(v.string())),
  error: v.optional(v.pipe(
    JsonValue,
    v.description(
      "null when there is no error; any JSON value otherwise (the contract does not show its type; noema writes {type, message}).",
    ),
  )),
});
/** `state.json` `outcomes`. */
export type Outcomes = v.InferOutput<typeof Outcomes>;

/**
 * `state.json` `links`: artifact paths relative to the episode directory.
 * Non-terminal runs have `events` and `learn`; terminal runs also `summary`
 * and `manifest`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Links } from "./state.ts";
 * v.parse(Links, { events: "events.jsonl", learn: "learn.jsonl" });
 * ```
 */
export const Links = looseObject({
  events: v.optional(v.string()),
  learn: v.optional(v.string()),
  summary: v.optional(v.string()),
  manifest: v.optional(v.string()),
});
/** `state.json` `links`. */
export type Links = v.InferOutput<typeof Links>;

/**
 * `state.json`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { State } from "./state.ts";
 * v.parse(State, { version: "1.0", state_schema_version: "1.0.0" });
 * ```
 */
export const State = looseObject({
  version: v.pipe(v.literal(CONTRACT_VERSIONS.state), v.description("Backwards-compatible identifier.")),
  state_schema_version: v.pipe(
    v.literal(CONTRACT_VERSIONS.state_schema),
    v.description("Semantic version of the schema contract."),
  ),
  episode: v.optional(Episode),
  goal: v.optional(looseObject({
    task: v.pipe(v.string(), v.description("The original task or goal.")),
    type: v.optional(v.string()),
  })),
  beliefs: v.optional(v.array(looseObject({
    statement: v.string(),
    confidence: Unit,
    provenance: v.pipe(v.string(), v.description("Source of the belief.")),
    timestamp: v.optional(v.pipe(
      v.string(),
      v.description("When the belief was recorded: any string (the contract gives no format; noema writes ISO 8601)."),
    )),
  }))),
  plan: v.optional(Plan),
  memory: v.optional(looseObject({
    facts: v.optional(v.array(looseObject({
      key: v.string(),
      value: JsonValue,
      timestamp: v.optional(v.pipe(
        v.string(),
        v.description("Any string (the contract gives no format; noema writes ISO 8601)."),
      )),
      provenance: v.optional(v.string()),
    }))),
    scratchpad: v.optional(v.string()),
  })),
  outcomes: v.optional(Outcomes),
  links: v.optional(Links),
});
/** `state.json`. */
export type State = v.InferOutput<typeof State>;

/**
 * The schema problems of a `state.json` value (empty when it conforms),
 * each with its field path.
 *
 * @example
 * ```ts
 * import { checkState } from "./state.ts";
 * checkState({ version: "1.0", state_schema_version: "1.0.0", outcomes: 5 }); // [{ path: "outcomes", … }]
 * ```
 */
export function checkState(value: unknown): SchemaProblem[] {
  const r = v.safeParse(State, value);
  return r.success ? [] : toProblems(r.issues);
}

/**
 * The intuition mode of an episode, reading an absent value as `advisory`
 * (runs from older versions omit it).
 *
 * @example
 * ```ts
 * import { intuitionModeOf } from "./state.ts";
 * intuitionModeOf({ version: "1.0", state_schema_version: "1.0.0" }); // "advisory"
 * ```
 */
export function intuitionModeOf(state: Pick<State, "episode">): IntuitionMode {
  return state.episode?.intuition_mode ?? "advisory";
}
