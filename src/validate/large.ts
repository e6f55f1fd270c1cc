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
 *   cut out and digested (the event schema does not look into it).
 *
 * @module
 */
import * as v from "valibot";
import { PlanStep } from "../schema/plan.ts";
import { type SchemaProblem, toProblems } from "../schema/problems.ts";
import { ActionRecord } from "../schema/state.ts";
import { ACTION_KEYS, digestOf, pick, PIECES, type Pieces, STEP_KEYS } from "./compact.ts";
import { splitJson, type SplitTarget } from "./json_split.ts";

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
      actions.push(pick(a, ACTION_KEYS));
      digests.push(digestOf(a));
      found.push(...schemaProblems(ActionRecord, a, `outcomes.actions[${i}]`));
    },
  };
  let split;
  try {
    split = splitJson(text, [stepTarget, actionTarget]);
  } catch {
    return JSON.parse(text); // text the walk did not expect: parsed whole (a syntax error is reported as usual)
  }
  const { value } = split;
  if (split.split.has(stepTarget)) (value.plan as { [PIECES]?: Pieces })[PIECES] = { records: steps };
  if (split.split.has(actionTarget)) {
    (value.outcomes as { [PIECES]?: Pieces })[PIECES] = { records: actions, digests: digests.done() };
  }
  problems.push(...found);
  return value;
}

/**
 * Parses an `events.jsonl` line; a large `run.state_projection` in pieces
 * (see the module doc).
 *
 * @example
 * ```ts
 * import { parseEvent } from "./large.ts";
 * parseEvent('{"phase":"runtime"}'); // { phase: "runtime" }
 * ```
 */
export function parseEvent(text: string): unknown {
  if (text.length < PIECEWISE_CHARS) return JSON.parse(text);
  const digests = new Digests();
  const target: SplitTarget = { path: ["payload", "outcomes", "actions"], each: (a) => digests.push(digestOf(a)) };
  let split;
  try {
    split = splitJson(text, [target]);
  } catch {
    return JSON.parse(text);
  }
  const { value } = split;
  if (!split.split.has(target) || value.phase !== "runtime" || value.event_type !== "run.state_projection") {
    return JSON.parse(text); // another kind of event: its lists are checked by its schema
  }
  const outcomes = (value.payload as Json).outcomes as { [PIECES]?: Pieces };
  outcomes[PIECES] = { records: [], digests: digests.done() };
  return value;
}
