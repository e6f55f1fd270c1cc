/**
 * How `noema validate` parses a large `state.json` or `events.jsonl` line:
 * in pieces (`json_split.ts`), keeping of each long list only what the rules
 * read (`compact.ts`), so that the parsed tree never exists whole. A text
 * shorter than {@link PIECEWISE_CHARS} is parsed whole, as every reader does.
 *
 * - `state.json`: `plan.steps` and `outcomes.actions` are cut out; each
 *   element is checked against its schema (`PlanStep`, `ActionRecord`) on
 *   its own, its problems named by their full path (`plan.steps[3].id`),
 *   listed after the rest of the file's schema problems.
 * - An event line: a `run.state_projection`'s `payload.outcomes.actions` is
 *   cut out and digested (the event schema does not look into it); a
 *   `plan`'s `payload.step_records` is cut out, each record checked alone.
 *
 * Both are read from the file's bytes a window at a time
 * ({@link parseStateFile}, {@link parseEventRange}: no string of the whole
 * is built). What such a reading refuses (invalid JSON or UTF-8, a duplicate
 * key, nesting too deep, another kind of event) is read whole by the caller,
 * which reports it as usual.
 *
 * @module
 */
import * as v from "valibot";
import { PlanStep, StepRecord } from "../schema/plan.ts";
import { type SchemaProblem, toProblems } from "../schema/problems.ts";
import { ActionRecord } from "../schema/state.ts";
import { compactAction, digestOf, pick, PIECES, type Pieces, STEP_KEYS } from "./compact.ts";
import { closeSync, fstatSync } from "node:fs";
import { openRegularFile } from "../store/regular_file.ts";
import { limits } from "../store/limits.ts";
import { type EnterCheck, splitFile, splitJson, type SplitTarget } from "./json_split.ts";

type Json = Record<string, unknown>;

/** Texts at least this long (in UTF-16 units) are parsed in pieces: 1 Mi. */
export const PIECEWISE_CHARS = 1 << 20;

/** A growing list of digests. */
class Digests {
  #d = new Float64Array(1024);
  #n = 0;
  push(x: number): void {
    if (this.#n === this.#d.length) {
      const grown = new Float64Array(this.#d.length * 2);
      grown.set(this.#d);
      this.#d = grown;
    }
    this.#d[this.#n++] = x;
  }
  done(): Float64Array {
    return this.#d.slice(0, this.#n);
  }
}

function schemaProblems(schema: v.GenericSchema, value: unknown, prefix: string): SchemaProblem[] {
  const r = v.safeParse(schema, value);
  return r.success ? [] : toProblems(r.issues, prefix);
}

/**
 * Parses a `state.json` text; a large one in pieces (see the module doc),
 * pushing its cut-out elements' schema problems to `problems`.
 *
 * @example
 * ```ts
 * import { parseState } from "./large.ts";
 * import type { SchemaProblem } from "../schema/problems.ts";
 * const problems: SchemaProblem[] = [];
 * parseState('{"plan":{"steps":[]}}', problems); // { plan: { steps: [] } }: short, parsed whole
 * ```
 */
export function parseState(text: string, problems: SchemaProblem[]): unknown {
  if (text.length < PIECEWISE_CHARS) return JSON.parse(text);
  const parts = stateParts();
  let split;
  try {
    split = splitJson(text, parts.targets);
  } catch {
    return JSON.parse(text); // text the walk did not expect: parsed whole (a syntax error is reported as usual)
  }
  return parts.done(split, problems);
}

/**
 * Parses the `state.json` at `path` from its bytes, in pieces, when it is at
 * least {@link PIECEWISE_CHARS} bytes, pushing its cut-out elements' schema
 * problems to `problems`. Returns null when it is smaller, cannot be read, or
 * holds anything a whole-text reader reports (see the module doc): read it
 * whole then. A value returned has no duplicate key and is valid JSON.
 *
 * @example
 * ```ts
 * import { parseStateFile } from "./large.ts";
 * parseStateFile(".noema/episodes/ep_1/state.json", []); // null: a small one
 * ```
 */
export function parseStateFile(path: string, problems: SchemaProblem[]): Record<string, unknown> | null {
  let fd: number;
  try {
    fd = openRegularFile(path);
  } catch {
    return null;
  }
  try {
    const size = fstatSync(fd).size;
    // Small: parsed whole. Over the artifact limit: not read at all (the whole read refuses it, naming the limit).
    if (size < PIECEWISE_CHARS || size > limits().artifactBytes) return null;
    const parts = stateParts();
    return parts.done(splitFile(fd, 0, size, parts.targets), problems);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

type Split = { value: Json; split: ReadonlySet<SplitTarget> };

/** The two targets of a `state.json` and what makes the value of their pieces. */
function stateParts(): { targets: SplitTarget[]; done(split: Split, problems: SchemaProblem[]): Json } {
  const steps: Json[] = [], actions: Json[] = [], found: SchemaProblem[] = [];
  const digests = new Digests();
  const stepTarget: SplitTarget = {
    path: ["plan", "steps"],
    each(s, i) {
      steps.push(pick(s, STEP_KEYS));
      found.push(...schemaProblems(PlanStep, s, `plan.steps[${i}]`));
    },
  };
  const actionTarget: SplitTarget = {
    path: ["outcomes", "actions"],
    each(a, i) {
      actions.push(compactAction(a));
      digests.push(digestOf(a));
      found.push(...schemaProblems(ActionRecord, a, `outcomes.actions[${i}]`));
    },
  };
  const done = (split: Split, problems: SchemaProblem[]): Json => {
    const { value } = split;
    if (split.split.has(stepTarget)) (value.plan as { [PIECES]?: Pieces })[PIECES] = { records: steps };
    if (split.split.has(actionTarget)) {
      (value.outcomes as { [PIECES]?: Pieces })[PIECES] = { records: actions, digests: digests.done() };
    }
    problems.push(...found);
    return value;
  };
  return { targets: [stepTarget, actionTarget], done };
}

/** Whether the short members of an event before its payload tell it is a state projection or a plan. */
function projectionOrPlan(scalars: ReadonlyMap<string, string>): boolean {
  const phase = scalars.get("phase"), type = scalars.get("event_type");
  if (phase === undefined) return true; // not seen yet: the value tells at the end
  return phase === '"plan"' || (phase === '"runtime"' && (type === undefined || type === '"run.state_projection"'));
}

/** Stops the walk of an event line at its payload when the members before it tell it has no list to cut out. */
const toPayload: EnterCheck = (at, scalars) => {
  if (at.length === 1 && !projectionOrPlan(scalars)) throw new TypeError("neither a state projection nor a plan");
};

/**
 * Parses the event line at bytes `[offset, offset + bytes)` of the file at
 * `path` from its bytes when it is a `run.state_projection` (its
 * `payload.outcomes.actions` cut out and digested: the event schema does not
 * look into them) or a `plan` (its `payload.step_records` cut out, each
 * checked against `StepRecord` alone, its problems and `{ id, status }` kept
 * on the payload, see `piecesOf`). Throws for any other line, and for one a
 * whole-text reader reports (see the module doc): read it as text then.
 *
 * @example
 * ```ts
 * import { parseEventRange } from "./large.ts";
 * parseEventRange(".noema/episodes/ep_1/events.jsonl", 0, 120); // throws: the start event is neither
 * ```
 */
export function parseEventRange(path: string, offset: number, bytes: number): unknown {
  const fd = openRegularFile(path);
  try {
    const digests = new Digests();
    const actions: SplitTarget = { path: ["payload", "outcomes", "actions"], each: (a) => digests.push(digestOf(a)) };
    const records: Json[] = [], problems: SchemaProblem[] = [];
    const steps: SplitTarget = {
      path: ["payload", "step_records"],
      each(s, i) {
        records.push(pick(s, STEP_KEYS));
        problems.push(...schemaProblems(StepRecord, s, `payload.step_records[${i}]`));
      },
    };
    const { value, split } = splitFile(fd, offset, bytes, [actions, steps], toPayload);
    const projection = value.phase === "runtime" && value.event_type === "run.state_projection";
    if (split.has(actions) && projection && !split.has(steps)) {
      const outcomes = (value.payload as Json).outcomes as { [PIECES]?: Pieces };
      outcomes[PIECES] = { records: [], digests: digests.done() };
    } else if (split.has(steps) && value.phase === "plan" && !split.has(actions)) {
      (value.payload as { [PIECES]?: Pieces })[PIECES] = { records, problems };
    } else throw new TypeError("neither a state projection nor a plan"); // read it whole
    return value;
  } finally {
    closeSync(fd);
  }
}
