/**
 * Plan steps: the shape shared by `state.json` `plan.steps` and by the
 * structured `step_records` of a `plan` event.
 *
 * @module
 */
import * as v from "valibot";
import { JsonObject, looseObject, Timestamp } from "./common.ts";

/** The six step kinds of the contract. */
export const STEP_KINDS = ["detect", "analyze", "plan", "act", "verify", "review"] as const;
/** A step kind. */
export type StepKind = (typeof STEP_KINDS)[number];

/** The six step statuses of the contract. */
export const STEP_STATUSES = ["pending", "running", "done", "skipped", "failed", "vetoed"] as const;
/** A step status. */
export type StepStatus = (typeof STEP_STATUSES)[number];

/**
 * One plan step.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { PlanStep } from "./plan.ts";
 * v.parse(PlanStep, { id: "step-1", kind: "detect", description: "Collect context", status: "done" });
 * ```
 */
export const PlanStep = v.pipe(
  looseObject({
    id: v.pipe(v.string(), v.description("Unique step identifier.")),
    kind: v.pipe(v.picklist(STEP_KINDS), v.description("detect | analyze | plan | act | verify | review.")),
    description: v.pipe(v.string(), v.description("Human-readable description.")),
    status: v.picklist(STEP_STATUSES),
    rationale: v.optional(v.string()),
    inputs: v.optional(JsonObject),
    outputs: v.optional(JsonObject),
  }),
  v.title("step"),
);
/** One plan step. */
export type PlanStep = v.InferOutput<typeof PlanStep>;

/**
 * One item of a `plan` event's `step_records` (the contract does not show it;
 * noema uses the step shape, with `status` optional and read as `pending`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { StepRecord } from "./plan.ts";
 * v.parse(StepRecord, { id: "step-2", kind: "act", description: "Run the task" });
 * ```
 */
export const StepRecord = v.pipe(
  looseObject({
    ...PlanStep.entries,
    status: v.optional(v.picklist(STEP_STATUSES)),
  }),
  v.title("step record"),
  v.description(
    "A structured plan step in a plan event. Same fields as a state.json plan step; a missing status reads as pending.",
  ),
);
/** One structured plan step of a `plan` event. */
export type StepRecord = v.InferOutput<typeof StepRecord>;

/**
 * The `plan` object of `state.json`, also the result of plan reconstruction.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Plan } from "./plan.ts";
 * v.parse(Plan, { steps: [], source: "planner:minimal" });
 * ```
 */
export const Plan = looseObject({
  steps: v.pipe(v.array(PlanStep), v.description("Ordered steps.")),
  source: v.optional(v.pipe(
    v.string(),
    v.description("Origin of the plan, e.g. planner:minimal or a resume planner label."),
  )),
  updated_at: v.optional(Timestamp),
  rationale: v.optional(v.string()),
});
/** The plan of an episode. */
export type Plan = v.InferOutput<typeof Plan>;
