/**
 * Planners: the minimal planner (detect → act → verify, as in the reference
 * system) and the task-file planner (the steps a task file lists).
 *
 * @module
 */
import * as v from "valibot";
import { type PlanStep, type StepKind, StepRecord } from "../schema/plan.ts";
import { toProblems } from "../schema/problems.ts";
import { jsonBytes, limits, MAX_VALUE_DEPTH, utf8Bytes, valueDepthProblem } from "../store/limits.ts";
import { tooDeep } from "../store/json_scan.ts";
import { fastStepRecord } from "../schema/step_record_fast.ts";
import { loneSurrogatePath, loneSurrogateProblem } from "../plugins/plain_json.ts";
import type { StepSpec } from "./settings.ts";

/** What a planner's `plan` returns: the steps, and optionally who planned them and why. */
export interface PlanResult {
  /** Names the planner, recorded as `plan.source`. @default {"planner:<name>"} */
  source?: string;
  /** The steps, all `pending`. */
  steps: PlanStep[];
  /** Why this plan. @default {"Plan from planner <name>."} */
  rationale?: string;
}

/** A plan as {@link runPlanner} checked it: its source and rationale filled in. */
export type CheckedPlan = Required<PlanResult>;

/** A planner plugin. */
export interface Planner {
  /** Name, e.g. `minimal`. */
  name: string;
  /** Builds the plan for a task. */
  plan(input: { task: string; steps?: readonly StepSpec[] }): PlanResult;
}

/**
 * The minimal planner: `step-1 detect "Collect relevant context"`,
 * `step-2 act "Execute goal: <task>"`, `step-3 verify "Verify outcome and
 * capture learnings"`.
 *
 * @example
 * ```ts
 * import { minimalPlanner } from "noema";
 * minimalPlanner.plan({ task: "x" }).steps.map((s) => s.kind); // ["detect", "act", "verify"]
 * ```
 */
export const minimalPlanner: Planner = {
  name: "minimal",
  plan({ task }) {
    const step = (n: number, kind: StepKind, description: string): PlanStep => ({
      id: `step-${n}`,
      kind,
      description,
      status: "pending",
    });
    return {
      source: "planner:minimal",
      rationale: "Minimal plan: detect, act, verify.",
      steps: [
        step(1, "detect", "Collect relevant context"),
        step(2, "act", `Execute goal: ${task || "task"}`),
        step(3, "verify", "Verify outcome and capture learnings"),
      ],
    };
  },
};

/**
 * The task-file planner: the task file's `steps`, in order. Labels
 * `"<kind>:<description>"` and objects are both accepted; ids default to
 * `step-<n>` and must be unique.
 *
 * @example
 * ```ts
 * import { taskFilePlanner } from "noema";
 * taskFilePlanner.plan({ task: "x", steps: ["act:Run it"] }).steps[0].id; // "step-1"
 * ```
 */
export const taskFilePlanner: Planner = {
  name: "task_file",
  plan({ steps = [] }) {
    const seen = new Set<string>();
    const out = steps.map((spec, i): PlanStep => {
      let step: PlanStep;
      if (typeof spec === "string") {
        const colon = spec.indexOf(":");
        step = {
          id: `step-${i + 1}`,
          kind: spec.slice(0, colon) as StepKind,
          description: spec.slice(colon + 1).trim(),
          status: "pending",
        };
      } else {
        step = { id: spec.id ?? `step-${i + 1}`, kind: spec.kind, description: spec.description, status: "pending" };
        if (spec.rationale !== undefined) step.rationale = spec.rationale;
        if (spec.inputs !== undefined) step.inputs = spec.inputs;
      }
      if (seen.has(step.id)) throw new Error(`steps[${i}].id: duplicate step id ${JSON.stringify(step.id)}`);
      seen.add(step.id);
      return step;
    });
    return {
      source: "planner:task_file",
      rationale: `Plan taken from the task file (${out.length} step${out.length === 1 ? "" : "s"}).`,
      steps: out,
    };
  },
};

/**
 * The legacy label of a step, `"<kind>:<description>"`.
 *
 * @example
 * ```ts
 * import { stepLabel } from "noema";
 * stepLabel({ id: "step-1", kind: "act", description: "Run", status: "pending" }); // "act:Run"
 * ```
 */
export function stepLabel(step: PlanStep): string {
  return `${step.kind}:${step.description}`;
}

/**
 * What no artifact can carry in a step: inputs nested deeper than `MAX_VALUE_DEPTH` (`store/limits.ts`), a string
 * or key holding a lone surrogate. The problem after the step's path (`.inputs: nested deeper…`), or null. `text` is
 * the step's `JSON.stringify` when the caller has it (see {@link checkedStep}).
 */
function stepTextProblem(step: unknown, text?: string): string | null {
  const inputs = (step as { inputs?: unknown }).inputs;
  // The inputs' text is part of the step's: a step text too short to nest past the limit clears them (unless a
  // `toJSON` of theirs could write them otherwise at the top).
  const short = text !== undefined && text.length < 2 * (MAX_VALUE_DEPTH + 1) &&
    !(typeof inputs === "object" && inputs !== null && "toJSON" in inputs);
  const deep = inputs === undefined || short ? null : valueDepthProblem(inputs);
  if (deep !== null) return `.inputs: ${deep}`;
  // The step fits in the artifacts' depth now (a step is copied only when its text holds a surrogate escape).
  const lone = loneSurrogatePath(step, text);
  return lone === null ? null : loneSurrogateProblem(`.${lone}`);
}

/**
 * Nesting a step's text is cleared at for {@link checkedSteps}' byte count: far below where `JSON.stringify` gives up
 * (about 40,000 levels under Bun), so the plan as a whole, one level deeper, is sure to stringify too.
 */
const SAFE_DEPTH = 1000;

/**
 * Steps[i] of a plan, checked (the step shape, a unique id, its text) and made `pending`, with its JSON text:
 * null when the step has no JSON form, could write itself otherwise in the plan (a `toJSON`) or nests deeper than
 * {@link SAFE_DEPTH}, so that the plan's bytes are counted from the plan as a whole, as before.
 */
function checkedStep(s: unknown, i: number, where: string, seen: Set<string>): { step: PlanStep; text: string | null } {
  let step = fastStepRecord(s); // exactly valibot's output for a valid step; null: valibot decides
  if (step === null) {
    const r = v.safeParse(StepRecord, s);
    if (!r.success) {
      const [p] = toProblems(r.issues, `steps[${i}]`);
      throw new Error(`${where}: ${p.path}: ${p.message}`);
    }
    step = r.output;
  }
  if (seen.has(step.id)) throw new Error(`${where}: steps[${i}].id: duplicate step id ${JSON.stringify(step.id)}`);
  seen.add(step.id);
  // The parsed step is a new object: made pending in place (the key where a spread would put it).
  let text: string | null = null;
  if ("toJSON" in step) {
    const problem = stepTextProblem(step);
    if (problem !== null) throw new Error(`${where}: steps[${i}]${problem}`);
    step.status = "pending";
    return { step: step as PlanStep, text };
  }
  step.status = "pending"; // an ASCII word: the text's surrogates and nesting are the parsed step's
  try {
    text = JSON.stringify(step);
  } catch {
    text = null; // no JSON form: the plan's byte count says so, as before
  }
  const problem = stepTextProblem(step, text ?? undefined);
  if (problem !== null) throw new Error(`${where}: steps[${i}]${problem}`);
  if (text !== null && text.length >= 2 * SAFE_DEPTH && tooDeep(text, SAFE_DEPTH) !== null) text = null;
  return { step: step as PlanStep, text };
}

/** A plan's steps checked ({@link checkedStep}) and the bytes of their JSON text (`jsonBytes(steps)`). */
function checkedSteps(raw: readonly unknown[], where: string): { steps: PlanStep[]; bytes: () => number } {
  const seen = new Set<string>();
  const texts: string[] = [];
  let whole = true;
  const steps = raw.map((s, i): PlanStep => {
    const { step, text } = checkedStep(s, i, where, seen);
    if (text === null) whole = false;
    else texts.push(text);
    return step;
  });
  // `JSON.stringify` of an array of objects is their texts, comma-separated, in brackets (a hole, which `map` left,
  // is `null`: then the plan is stringified as a whole).
  whole &&= texts.length === steps.length;
  return { steps, bytes: () => whole ? utf8Bytes(`[${texts.join(",")}]`) : jsonBytes(steps) };
}

/**
 * Runs a planner and checks what it returned: a non-empty `source`, steps of
 * the step shape (a missing status becomes `pending`) with unique ids.
 * Throws an `Error` naming the planner and the field.
 *
 * @example
 * ```ts
 * import { minimalPlanner, runPlanner } from "noema";
 * runPlanner(minimalPlanner, { task: "x" }).steps.length; // 3
 * ```
 */
export function runPlanner(planner: Planner, input: { task: string; steps?: readonly StepSpec[] }): CheckedPlan {
  const raw = planner.plan(input) as Partial<PlanResult> | undefined;
  const where = `planner ${planner.name}`;
  if (typeof raw !== "object" || raw === null || !Array.isArray(raw.steps)) {
    throw new Error(`${where}: plan() must return { steps: [...], source?, rationale? }`);
  }
  const { planSteps, planBytes } = limits();
  if (raw.steps.length > planSteps) {
    throw new Error(
      `${where}: ${raw.steps.length} steps, over noema's limit of ${planSteps} steps per plan (NOEMA_MAX_PLAN_STEPS)`,
    );
  }
  const { steps, bytes: planJsonBytes } = checkedSteps(raw.steps, where);
  for (const key of ["source", "rationale"] as const) {
    const text = raw[key];
    if (typeof text === "string" && !text.isWellFormed()) throw new Error(`${where}: ${loneSurrogateProblem(key)}`);
  }
  // Every plan event carries every step record: the plan must fit in one line with room to spare.
  const bytes = planJsonBytes();
  if (bytes > planBytes) {
    throw new Error(
      `${where}: the steps take ${bytes} bytes as JSON, over noema's limit of ${planBytes} bytes per plan`,
    );
  }
  return {
    source: typeof raw.source === "string" && raw.source !== "" ? raw.source : `planner:${planner.name}`,
    steps,
    rationale: typeof raw.rationale === "string" ? raw.rationale : `Plan from planner ${planner.name}.`,
  };
}
