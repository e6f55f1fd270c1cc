/**
 * Event payloads whose shape the contract defines: `learn` (two forms, exactly
 * one must match), `action_candidate`, `act` and `plan`.
 *
 * @module
 */
import * as v from "valibot";
import { Count, JsonObject, looseObject } from "./common.ts";
import { StepRecord } from "./plan.ts";
import { type SchemaProblem, toProblems } from "./problems.ts";

/**
 * `learn` payload, form A: a pointer to the `learn.jsonl` artifact.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { LearnPointerPayload } from "./payloads.ts";
 * v.parse(LearnPointerPayload, { learn_path: "learn.jsonl", learn_schema: "learn/1.0", proposal_count: 0, proposal_ids: [] });
 * ```
 */
export const LearnPointerPayload = v.pipe(
  looseObject({
    learn_path: v.string(),
    learn_schema: v.string(),
    proposal_count: Count,
    proposal_ids: v.array(v.string()),
    applied: v.optional(v.boolean()),
    applied_count: v.optional(Count),
  }),
  v.title("learn payload (form A, pointer)"),
);
/** `learn` payload, form A. */
export type LearnPointerPayload = v.InferOutput<typeof LearnPointerPayload>;

/**
 * `learn` payload, form B (legacy): proposals inline.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { LearnInlinePayload } from "./payloads.ts";
 * v.parse(LearnInlinePayload, { policy_id: "p@1", basis: [], proposal: [], scope: "episode" });
 * ```
 */
export const LearnInlinePayload = v.pipe(
  looseObject({
    policy_id: v.string(),
    basis: v.union([JsonObject, v.array(v.unknown()), v.string()]),
    proposal: v.array(v.unknown()),
    scope: v.string(),
  }),
  v.title("learn payload (form B, legacy inline)"),
);
/** `learn` payload, form B. */
export type LearnInlinePayload = v.InferOutput<typeof LearnInlinePayload>;

/** A `learn` payload in either form. */
export type LearnPayload = LearnPointerPayload | LearnInlinePayload;

/**
 * Checks a `learn` payload: exactly one of form A and form B must match.
 *
 * @example
 * ```ts
 * import { checkLearnPayload } from "./payloads.ts";
 * checkLearnPayload({ scope: "x" }); // one problem: matches neither form
 * ```
 */
export function checkLearnPayload(payload: unknown, prefix = "payload"): SchemaProblem[] {
  const a = v.safeParse(LearnPointerPayload, payload);
  const b = v.safeParse(LearnInlinePayload, payload);
  if (a.success !== b.success) return [];
  if (a.success && b.success) {
    return [{ path: prefix, message: "matches both learn forms (pointer and legacy inline); exactly one must match" }];
  }
  // Neither: report the form the payload came closest to.
  const aIssues = a.issues!, bIssues = b.issues!;
  const closest = aIssues.length <= bIssues.length ? aIssues : bIssues;
  const which = closest === aIssues ? "form A (pointer)" : "form B (legacy inline)";
  return [
    {
      path: prefix,
      message: `matches neither learn form; closest is ${which}: ${
        toProblems(closest, prefix).map((p) => `${p.path}: ${p.message}`).join("; ")
      }`,
    },
  ];
}

/**
 * `action_candidate` payload: the action the runtime is about to take, bound
 * to the state it was derived from.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ActionCandidatePayload } from "./payloads.ts";
 * v.parse(ActionCandidatePayload, {
 *   schema_version: "action_candidate/1.0", action_candidate_id: "ac-1", kind: "shell",
 *   payload: {}, state_ref: "state.json", state_hash: "sha256:" + "0".repeat(64), redaction: {},
 * });
 * ```
 */
export const ActionCandidatePayload = v.pipe(
  looseObject({
    schema_version: v.string(),
    action_candidate_id: v.nullable(v.string()),
    kind: v.string(),
    payload: JsonObject,
    state_ref: v.string(),
    state_hash: v.string(),
    redaction: JsonObject,
    provenance: v.optional(JsonObject),
    risk_tags: v.optional(v.array(v.string())),
  }),
  v.title("action_candidate payload"),
);
/** `action_candidate` payload. */
export type ActionCandidatePayload = v.InferOutput<typeof ActionCandidatePayload>;

/**
 * `act` payload: one executed action.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { ActPayload } from "./payloads.ts";
 * v.parse(ActPayload, { input_excerpt: "ls", outcome: "ok", step_id: "step-2", step_status: "done" });
 * ```
 */
export const ActPayload = v.pipe(
  looseObject({
    input_excerpt: v.string(),
    outcome: v.string(),
    action_id: v.optional(v.string()),
    kind: v.optional(v.string()),
    result_status: v.optional(v.string()),
    tool: v.optional(v.string()),
    adapter: v.optional(v.string()),
    action_candidate_id: v.optional(v.string()),
    step_id: v.optional(v.string()),
    step_status: v.optional(v.string()),
    provenance: v.optional(JsonObject),
    result_artifacts: v.optional(v.array(JsonObject)),
    exit_code: v.optional(v.pipe(
      v.nullable(v.number()),
      v.description("Exit code of the program the action ran (command and shell adapters); null when killed."),
    )),
  }),
  v.title("act payload"),
);
/** `act` payload. */
export type ActPayload = v.InferOutput<typeof ActPayload>;

/** A legacy plan label, `<kind>:<description>`. */
export const LegacyStepLabel = v.pipe(
  v.string(),
  v.regex(/^[^:\s]+:/, 'must have the form "<kind>:<description>"'),
);

/**
 * `plan` payload: `source`, structured `step_records`, legacy `steps` labels.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { PlanPayload } from "./payloads.ts";
 * v.parse(PlanPayload, { source: "planner:minimal", steps: ["detect:Collect relevant context"] });
 * ```
 */
export const PlanPayload = v.pipe(
  looseObject({
    source: v.optional(v.string()),
    step_records: v.optional(v.array(StepRecord)),
    steps: v.optional(v.array(LegacyStepLabel)),
    rationale: v.optional(v.string()),
  }),
  v.title("plan payload"),
);
/** `plan` payload. */
export type PlanPayload = v.InferOutput<typeof PlanPayload>;
