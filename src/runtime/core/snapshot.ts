/**
 * The state snapshot policies receive: every field of `state.json` as it
 * stands at that moment, deeply frozen, plus the pending `action` and `step`.
 *
 * Built incrementally, so a call costs the same on an episode with 10 or
 * 10,000 actions: action records and facts are frozen once when they are
 * appended (they never change afterwards); plan steps are copied and frozen
 * again only when their status changes ({@link StateSnapshot.markStep}). The
 * three lists that grow with an episode (`plan.steps`, `outcomes.actions`,
 * `memory.facts`) are frozen array views over those frozen entries (see
 * `list_view.ts`: freezing a new 10k-entry array per call would cost
 * milliseconds under Bun, so a view is made frozen only when a policy asks
 * `Object.isFrozen` or reflects on it); every other object is frozen.
 * Small parts (`episode`, `goal`, `beliefs`, `links`…) are copied once per
 * value: replace them, do not change them in place. `outcomes.metrics` (a
 * handful of numbers the runtime updates in place) is compared with its last
 * copy on every call and copied again when a number changed. A part in which
 * nothing changed is the same frozen object as in the previous snapshot.
 *
 * @module
 */
import type { PolicyAction, PolicyState, PolicyStep, StateView } from "../../plugins/api.ts";
import { deepFreeze, frozenJsonCopy } from "../../plugins/freeze.ts";
import { listView } from "./list_view.ts";
import { entryAt, SharedList } from "./shared_list.ts";
import type { State } from "../../schema/state.ts";
import { sameMembers } from "./same_members.ts";

/** The big list of each top-level part: the lists that grow with an episode. */
export const LIST_FIELDS: Readonly<Record<string, string>> = Object.freeze({
  plan: "steps",
  outcomes: "actions",
  memory: "facts",
});

/**
 * A list mirrored for the snapshot: entries appended to the source are
 * frozen once; entries marked changed are copied and frozen again (the
 * mirror copies one chunk, not the list: see `shared_list.ts`). The big
 * lists are shown as frozen views (see `list_view.ts`), others as frozen
 * arrays.
 */
class FrozenList {
  #source: readonly unknown[] | null = null;
  #items = new SharedList<unknown>();
  #frozen: readonly unknown[] = Object.freeze([]);
  /** Entries marked changed since the last call (an index marked twice in a row is listed once). */
  #dirty: number[] = [];
  /** Entries are copied before freezing (the source changes them in place), else frozen in place. */
  readonly #copy: boolean;
  readonly #view: boolean;

  constructor(options: { copy: boolean; view: boolean }) {
    this.#copy = options.copy;
    this.#view = options.view;
  }

  mark(index: number): void {
    const dirty = this.#dirty;
    if (dirty.length === 0 || dirty[dirty.length - 1] !== index) dirty.push(index);
  }

  #freeze(value: unknown): unknown {
    return this.#copy ? frozenJsonCopy(value) : deepFreeze(value);
  }

  get(source: readonly unknown[]): readonly unknown[] {
    let changed = false;
    if (source !== this.#source) {
      this.#source = source;
      this.#items = new SharedList();
      this.#dirty.length = 0;
      changed = true;
    }
    const items = this.#items, dirty = this.#dirty;
    if (dirty.length > 0) {
      // An index listed twice (marked again after another) is copied twice: the last copy is what it is now.
      for (const i of dirty) {
        if (i < items.length && i < source.length) items.set(i, this.#freeze(source[i]));
      }
      dirty.length = 0;
      changed = true;
    }
    if (source.length < items.length) {
      items.truncate(source.length);
      changed = true;
    }
    for (let i = items.length; i < source.length; i++) {
      items.push(this.#freeze(source[i]));
      changed = true;
    }
    if (changed) this.#frozen = this.#show();
    return this.#frozen;
  }

  #show(): readonly unknown[] {
    const snapshot = this.#items.snapshot();
    if (this.#view) return listView(snapshot);
    const out: unknown[] = [];
    for (let i = 0; i < snapshot.length; i++) out.push(entryAt(snapshot, i));
    return Object.freeze(out);
  }
}

/** A frozen copy of a small object: shallow when its values are primitives (the common case), else deep. */
function frozenCopy(value: Record<string, unknown>): unknown {
  for (const k in value) {
    const x = value[k];
    if (typeof x === "object" && x !== null) return frozenJsonCopy(value);
  }
  return Object.freeze({ ...value });
}

/**
 * Keeps the frozen snapshot of one episode's state.
 *
 * @example
 * ```ts
 * import { StateSnapshot } from "./snapshot.ts";
 * const state = { version: "1.0", state_schema_version: "1.0.0", outcomes: { status: "pending", actions: [] } } as const;
 * const snap = new StateSnapshot(structuredClone(state) as never);
 * Object.isFrozen(snap.state().outcomes); // true
 * ```
 */
export class StateSnapshot {
  readonly #state: State;
  /** The frozen copy of each small value by key, per part (`""`: the state's own keys). */
  readonly #small = new Map<string, Map<string, { ref: unknown; frozen: unknown }>>();
  /** The last frozen `plan`, `outcomes` and `memory` parts, and the last `outcomes.metrics` copy. */
  readonly #parts = new Map<string, Readonly<Record<string, unknown>>>();
  readonly #lists = {
    steps: new FrozenList({ copy: true, view: true }),
    actions: new FrozenList({ copy: false, view: true }),
    facts: new FrozenList({ copy: false, view: true }),
    artifacts: new FrozenList({ copy: false, view: false }),
  };

  /** Snapshots `state`, the live object the runtime updates. */
  constructor(state: State) {
    this.#state = state;
  }

  /** Says that plan step `index` changed (its status, typically) since the last snapshot. */
  markStep(index: number): void {
    this.#lists.steps.mark(index);
  }

  /** The copies of small values kept for `part`. */
  #smallOf(part: string): Map<string, { ref: unknown; frozen: unknown }> {
    let small = this.#small.get(part);
    if (small === undefined) this.#small.set(part, small = new Map());
    return small;
  }

  #frozenSmall(small: Map<string, { ref: unknown; frozen: unknown }>, key: string, value: unknown): unknown {
    if (typeof value !== "object" || value === null) return value;
    const hit = small.get(key);
    if (hit && hit.ref === value) return hit.frozen;
    const frozen = frozenJsonCopy(value);
    small.set(key, { ref: value, frozen });
    return frozen;
  }

  #part(key: string, value: unknown): unknown {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return this.#frozenSmall(this.#smallOf(""), key, value);
    }
    const obj = value as Record<string, unknown>;
    const small = this.#smallOf(key);
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(obj)) {
      const v = obj[k];
      if (key === "plan" && k === "steps" && Array.isArray(v)) out[k] = this.#lists.steps.get(v);
      else if (key === "outcomes" && k === "actions" && Array.isArray(v)) out[k] = this.#lists.actions.get(v);
      else if (key === "outcomes" && k === "artifacts" && Array.isArray(v)) out[k] = this.#lists.artifacts.get(v);
      else if (key === "memory" && k === "facts" && Array.isArray(v)) out[k] = this.#lists.facts.get(v);
      else if (key === "outcomes" && k === "metrics" && typeof v === "object" && v !== null) {
        out[k] = this.#metrics(v as Record<string, unknown>);
      } else out[k] = this.#frozenSmall(small, k, v);
    }
    // Nothing in it changed: the same frozen part as last time (a policy worker is then sent `same`).
    const last = this.#parts.get(key);
    if (last && sameMembers(last, out)) return last;
    this.#parts.set(key, Object.freeze(out));
    return out;
  }

  /** `outcomes.metrics`, updated in place by the runtime: copied, unless its values are the last copy's. */
  #metrics(live: Record<string, unknown>): unknown {
    const last = this.#parts.get("outcomes.metrics");
    if (last && sameMembers(last, live)) return last;
    const copy = frozenCopy(live) as Readonly<Record<string, unknown>>;
    this.#parts.set("outcomes.metrics", copy);
    return copy;
  }

  /** The state as it stands now, deeply frozen. Parts that did not change are the same objects as last time. */
  state(): StateView {
    return Object.freeze(this.#build()) as unknown as StateView;
  }

  #build(): Record<string, unknown> {
    const s = this.#state as Record<string, unknown>;
    const small = this.#smallOf("");
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(s)) {
      const value = s[key];
      out[key] = key === "plan" || key === "outcomes" || key === "memory"
        ? this.#part(key, value)
        : this.#frozenSmall(small, key, value);
    }
    return out;
  }

  /**
   * What `advise` receives: the snapshot plus the pending `action` and `step`
   * and the convenience fields in `extra` (e.g. `workspace`), all frozen.
   */
  view(action: PolicyAction, step: PolicyStep, extra: Record<string, unknown> = {}): PolicyState {
    const out = this.#build();
    for (const k of Object.keys(extra)) out[k] = deepFreeze(extra[k]);
    out.action = action;
    out.step = step;
    return Object.freeze(out) as unknown as PolicyState;
  }
}
