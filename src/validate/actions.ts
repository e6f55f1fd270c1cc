/**
 * Matching `act` events to `state.json` `outcomes.actions` for the
 * `trace.action_timestamp` rule: by `action_id` when the event has one, else
 * by `step_id` and timestamp together (events from writers that leave
 * `action_id` out). An action no event matches either way is reported; an
 * event without `action_id` that matches no action is not (it proves nothing
 * wrong), so there is no false positive.
 *
 * @module
 */
import type { RuleId } from "./rules.ts";

/** Where problems go. */
export interface ProblemSink {
  add(file: string, rule: RuleId, message: string, line?: number): void;
}

/** The `outcomes.actions` not yet matched, by id and by step and timestamp. */
export class ActionMatcher {
  // Lean on purpose (one entry per action of a 100,000-action state.json): the timestamp itself; the index by
  // step and timestamp is built when an event first needs it (noema's own act events all carry action_id), with one
  // id without an array in the common case of one action per step and timestamp.
  #pending = new Map<string, string>();
  #byStepTime: Map<string, string | string[]> | null = null;
  readonly #actions: readonly Record<string, unknown>[];

  /** `actions`: every one has a string `id`. */
  constructor(actions: readonly Record<string, unknown>[]) {
    this.#actions = actions;
    for (const a of actions) {
      if (typeof a.timestamp === "string") this.#pending.set(a.id as string, a.timestamp); // else nothing to trace
    }
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

  /** Matches one act event; reports a timestamp that differs from its action's. */
  match(
    c: ProblemSink,
    file: string,
    e: Record<string, unknown>,
    payload: Record<string, unknown>,
    line: number,
  ): void {
    const actionId = payload.action_id;
    if (typeof actionId === "string" && this.#pending.has(actionId)) {
      const expected = this.#pending.get(actionId)!;
      if (expected !== e.timestamp) {
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
      return;
    }
    if (actionId !== undefined && actionId !== null) return; // names an action state.json does not have
    if (typeof payload.step_id !== "string" || typeof e.timestamp !== "string") return;
    const there = this.#index().get(`${payload.step_id}\u0000${e.timestamp}`) ?? [];
    const id = (typeof there === "string" ? [there] : there).find((i) => this.#pending.has(i));
    if (id !== undefined) this.#pending.delete(id);
  }

  /** Ids of the actions no act event matched. */
  unmatched(): string[] {
    return [...this.#pending.keys()];
  }
}
