/**
 * Matching `act` events to `state.json` `outcomes.actions`: by `action_id`
 * when the event has one, else by `step_id` and timestamp together (events
 * from writers that leave `action_id` out). For each match:
 *
 * - `trace.action_timestamp`: the action's timestamp equals the event's; an
 *   action no event matches is reported too;
 * - `trace.action_mirror`: the action mirrors its event: each of `step_id`,
 *   `result_status` and `input_excerpt` the action carries equals the event
 *   payload's (one the action leaves out is a `noema.action_fields` warning of
 *   the `noema` profile: the contract does not make it required);
 * - `trace.action_missing`: in a terminal run (whose `state.json` is final)
 *   every act event has its action. A non-terminal run's `state.json` may lag
 *   behind its events, so there an unmatched event is not reported.
 *
 * When some action has no id, the n-th act event is matched to the n-th
 * action instead ({@link checkOrderedAction}).
 *
 * @module
 */
import type { ProfileRuleId } from "./profile.ts";
import type { RuleId } from "./rules.ts";
import { digestOf } from "./compact.ts";

/** Where problems (and profile warnings) go. */
export interface ProblemSink {
  add(file: string, rule: RuleId, message: string, line?: number): void;
  warn(file: string, rule: ProfileRuleId, message: string, line?: number): void;
}

type Json = Record<string, unknown>;

const show = (x: unknown) => (x === undefined ? "absent" : JSON.stringify(x));
const excerpt = (x: unknown) => {
  const s = show(x);
  return s.length > 80 ? `${s.slice(0, 77)}…` : s;
};

/**
 * `trace.action_mirror` (and the `noema.action_fields` warning) for one
 * action, as `compact.ts` keeps it (`input_excerpt` as a digest), against its
 * act event's payload.
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { mirrorAction } from "./actions.ts";
 * const c = new Collector(10);
 * mirrorAction(c, "events.jsonl", { id: "a", result_status: "ok" }, 0, { result_status: "error" }, 7);
 * c.problems[0].rule; // "trace.action_mirror"
 * ```
 */
export function mirrorAction(c: ProblemSink, file: string, action: Json, index: number, payload: Json, line: number) {
  const name = `outcomes.actions[${index}]${typeof action.id === "string" ? ` (${action.id})` : ""}`;
  const lacking: string[] = [];
  for (const field of ["step_id", "result_status"]) {
    if (!Object.hasOwn(action, field)) {
      if (payload[field] !== undefined) lacking.push(field);
    } else if (action[field] !== payload[field]) {
      c.add(
        file,
        "trace.action_mirror",
        `${name}.${field}: state.json says ${show(action[field])}, this act event says ${show(payload[field])}`,
        line,
      );
    }
  }
  if (!Object.hasOwn(action, "input_excerpt_digest")) {
    if (payload.input_excerpt !== undefined) lacking.push("input_excerpt");
  } else if (action.input_excerpt_digest !== digestOf(payload.input_excerpt)) {
    c.add(
      file,
      "trace.action_mirror",
      `${name}.input_excerpt: differs from this act event's ${excerpt(payload.input_excerpt)}`,
      line,
    );
  }
  if (lacking.length > 0) {
    c.warn(file, "noema.action_fields", `${name}: lacks ${lacking.join(", ")}, which this act event has`, line);
  }
}

/** The `trace.action_missing` problem of an act event no action matches. */
function missing(c: ProblemSink, file: string, e: Json, payload: Json, line: number): void {
  const which = typeof payload.action_id === "string"
    ? `action_id ${JSON.stringify(payload.action_id)}: no outcomes.actions record has this id`
    : `step_id ${show(payload.step_id)} at ${
      show(e.timestamp)
    }: no outcomes.actions record has this step and timestamp`;
  c.add(file, "trace.action_missing", `act event of a terminal run with no action: ${which}`, line);
}

/** The `outcomes.actions` not yet matched, by id and by step and timestamp. */
export class ActionMatcher {
  // Lean on purpose (one entry per action of a 100,000-action state.json): the timestamp itself; the index by
  // step and timestamp is built when an event first needs it (noema's own act events all carry action_id), with one
  // id without an array in the common case of one action per step and timestamp.
  #pending = new Map<string, string>();
  #byId = new Map<string, number>();
  #byStepTime: Map<string, string | string[]> | null = null;
  readonly #actions: readonly Record<string, unknown>[];
  readonly #terminal: boolean;

  /** `actions`: every one has a string `id` (as `compact.ts` keeps them); `terminal`: whether the run is. */
  constructor(actions: readonly Record<string, unknown>[], terminal = false) {
    this.#actions = actions;
    this.#terminal = terminal;
    actions.forEach((a, i) => {
      const id = a.id as string;
      if (!this.#byId.has(id)) this.#byId.set(id, i);
      if (typeof a.timestamp === "string") this.#pending.set(id, a.timestamp); // else nothing to trace
    });
  }

  #index(): Map<string, string | string[]> {
    if (this.#byStepTime) return this.#byStepTime;
    const index = this.#byStepTime = new Map();
    for (const a of this.#actions) {
      if (typeof a.timestamp !== "string" || typeof a.step_id !== "string") continue;
      const id = a.id as string;
      const key = `${a.step_id}\u0000${a.timestamp}`;
      const there = index.get(key);
      if (there === undefined) index.set(key, id);
      else if (typeof there === "string") index.set(key, [there, id]);
      else there.push(id); // in place: copying it for each action was quadratic
    }
    return index;
  }

  /** Matches one act event (see the module doc). */
  match(
    c: ProblemSink,
    file: string,
    e: Record<string, unknown>,
    payload: Record<string, unknown>,
    line: number,
  ): void {
    const actionId = payload.action_id;
    if (typeof actionId === "string" && this.#byId.has(actionId)) {
      const expected = this.#pending.get(actionId);
      if (expected !== undefined && expected !== e.timestamp) {
        c.add(
          file,
          "trace.action_timestamp",
          `action ${actionId}: state.json outcomes.actions timestamp ${expected} differs from this act event's ${
            String(e.timestamp)
          }`,
          line,
        );
      }
      this.#pending.delete(actionId);
      const i = this.#byId.get(actionId)!;
      mirrorAction(c, file, this.#actions[i], i, payload, line);
      return;
    }
    const unmatched = (): void => {
      if (this.#terminal) missing(c, file, e, payload, line);
    };
    if (actionId !== undefined && actionId !== null) return unmatched(); // names an action state.json does not have
    if (typeof payload.step_id !== "string" || typeof e.timestamp !== "string") return unmatched();
    const there = this.#index().get(`${payload.step_id}\u0000${e.timestamp}`) ?? [];
    const id = (typeof there === "string" ? [there] : there).find((i) => this.#pending.has(i));
    if (id === undefined) return unmatched();
    this.#pending.delete(id);
    const i = this.#byId.get(id)!;
    mirrorAction(c, file, this.#actions[i], i, payload, line);
  }

  /** Ids of the actions no act event matched. */
  unmatched(): string[] {
    return [...this.#pending.keys()];
  }
}

/**
 * Without action ids, the n-th act event against the n-th action: its
 * timestamp, its mirrored fields, and (terminal runs) that there is one.
 *
 * @example
 * ```ts
 * import { Collector } from "./collector.ts";
 * import { checkOrderedAction } from "./actions.ts";
 * const c = new Collector(10);
 * checkOrderedAction(c, "events.jsonl", [], 0, { timestamp: "t" }, { step_id: "s" }, 3, true);
 * c.problems[0].rule; // "trace.action_missing"
 * ```
 */
export function checkOrderedAction(
  c: ProblemSink,
  file: string,
  actions: readonly Json[],
  index: number,
  e: Json,
  payload: Json,
  line: number,
  terminal: boolean,
): void {
  if (index >= actions.length) {
    if (terminal) missing(c, file, e, payload, line);
    return;
  }
  const ts = actions[index].timestamp;
  if (ts !== undefined && ts !== e.timestamp) {
    c.add(
      file,
      "trace.action_timestamp",
      `outcomes.actions[${index}].timestamp ${String(ts)} differs from this act event's ${String(e.timestamp)}`,
      line,
    );
  }
  mirrorAction(c, file, actions[index], index, payload, line);
}
