/**
 * What the cross-file rules of `noema validate` keep of `state.json` and of
 * the last `run.state_projection` event, in little memory: `state.json` with
 * its two long lists reduced (`plan.steps` to each step's `id` and `status`,
 * `outcomes.actions` to each action's `id`, `step_id`, `timestamp`,
 * `result_status` and a digest of its `input_excerpt`), and
 * each action as a 53-bit digest of its value, so that "the projection's
 * actions equal state.json's" is a comparison of numbers, not of two trees
 * of 100,000 actions held at once.
 *
 * Two values have the same digest when they are deeply equal the way
 * `util.isDeepStrictEqual` tells JSON values apart (object keys in any order,
 * `-0` unlike `0`); two that differ share one with odds of about 2^-53.
 *
 * @module
 */
import type { SchemaProblem } from "../schema/problems.ts";

type Json = Record<string, unknown>;

const isObject = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x);

export { hash53 } from "../store/number_set.ts";

/** Two FNV-1a lanes fed a value's canonical form piece by piece, so that no string of the whole is built. */
class Hasher {
  h1 = 0x811c9dc5;
  h2 = 0x01000193;

  text(s: string): void {
    let h1 = this.h1, h2 = this.h2;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 0x01000193);
      h2 = Math.imul(h2 ^ c, 0x5bd1e995);
    }
    // The length closes the piece: "ab" + "c" and "a" + "bc" differ.
    this.h1 = Math.imul(h1 ^ s.length, 0x01000193);
    this.h2 = Math.imul(h2 ^ s.length, 0x5bd1e995);
  }

  value(x: unknown): void {
    if (Array.isArray(x)) {
      this.text("[");
      for (const item of x) this.value(item);
      this.text("]");
    } else if (typeof x === "object" && x !== null) {
      const o = x as Json;
      this.text("{");
      for (const k of Object.keys(o).sort()) {
        this.text(k);
        this.value(o[k]);
      }
      this.text("}");
    } else if (typeof x === "string") {
      this.text("s");
      this.text(x);
    } else this.text(typeof x === "number" && Object.is(x, -0) ? "-0" : x === undefined ? "u" : String(x));
  }

  digest(): number {
    return (this.h1 >>> 0) * 0x200000 + ((this.h2 >>> 0) & 0x1fffff);
  }
}

/**
 * The digest of a JSON value (see the module doc).
 *
 * @example
 * ```ts
 * import { digestOf } from "./compact.ts";
 * digestOf({ a: 1, b: [2] }) === digestOf({ b: [2], a: 1 }); // true
 * ```
 */
export function digestOf(value: unknown): number {
  const h = new Hasher();
  h.value(value);
  return h.digest();
}

/**
 * A list of actions as compared: absent, digests (an array), or any other value kept as it is.
 */
export type ActionsDigest =
  | { kind: "absent" }
  | { kind: "array"; digests: Float64Array }
  | { kind: "other"; value: unknown };

/**
 * `outcomes` as compared: an object without its `actions` (`rest`) and the
 * actions' digests, or a value that is not an object, kept as it is (`raw`).
 */
export type CompactOutcomes = { rest: Json; actions: ActionsDigest } | { raw: unknown };

/** The digests of `actions` (see {@link ActionsDigest}). */
export function digestActions(actions: unknown): ActionsDigest {
  if (actions === undefined) return { kind: "absent" };
  if (!Array.isArray(actions)) return { kind: "other", value: actions };
  const digests = new Float64Array(actions.length);
  actions.forEach((a, i) => digests[i] = digestOf(a));
  return { kind: "array", digests };
}

/**
 * Set by a reader that parsed a large text in pieces (`large.ts`) on the
 * objects whose lists it cut out (left empty): `outcomes` gets the actions'
 * digests and compact records, `plan` the compact steps.
 */
export const PIECES: unique symbol = Symbol("noema.validate.pieces");

/** What {@link PIECES} holds. */
export interface Pieces {
  /** On `outcomes`: the digest of each action. */
  digests?: Float64Array;
  /**
   * On `outcomes`: each action as {@link compactAction} keeps it; on `plan` (and on a `plan` event's `payload`):
   * each step's `{ id, status }`.
   */
  records: Json[];
  /** On a `plan` event's `payload`: the schema problems of its `step_records`, named by their full path. */
  problems?: SchemaProblem[];
}

/** What was cut out of `x` (see {@link PIECES}), if anything. */
export function piecesOf(x: unknown): Pieces | undefined {
  return isObject(x) ? (x as { [PIECES]?: Pieces })[PIECES] : undefined;
}

/** `outcomes` split into its actions' digests and the rest (see {@link CompactOutcomes}). */
export function compactOutcomes(outcomes: unknown): CompactOutcomes {
  if (!isObject(outcomes)) return { raw: outcomes };
  const { actions, [PIECES]: _pieces, ...rest } = outcomes as Json & { [PIECES]?: Pieces };
  const digests = piecesOf(outcomes)?.digests;
  if (digests) return { rest, actions: { kind: "array", digests } };
  return { rest, actions: Object.hasOwn(outcomes, "actions") ? digestActions(actions) : { kind: "absent" } };
}

/** Whether two digested action lists are equal; `from` skips the first entries of `b`. */
export function sameActions(a: ActionsDigest, b: ActionsDigest, eq: (x: unknown, y: unknown) => boolean): boolean {
  if (a.kind === "absent" || b.kind === "absent") return a.kind === b.kind;
  if (a.kind === "other" || b.kind === "other") {
    return a.kind === "other" && b.kind === "other" && eq(a.value, b.value);
  }
  if (a.digests.length !== b.digests.length) return false;
  for (let i = 0; i < a.digests.length; i++) if (a.digests[i] !== b.digests[i]) return false;
  return true;
}

/** What the rules keep of each plan step. */
export const STEP_KEYS: readonly string[] = ["id", "status"];
/** What the rules keep of each action as it is (see {@link compactAction}). */
export const ACTION_KEYS: readonly string[] = ["id", "step_id", "timestamp", "result_status"];

/**
 * What the rules keep of one action: {@link ACTION_KEYS}, and its
 * `input_excerpt` as a digest (`input_excerpt_digest`), which is what
 * `trace.action_mirror` compares with its act event's.
 *
 * @example
 * ```ts
 * import { compactAction } from "./compact.ts";
 * compactAction({ id: "a", kind: "shell", input_excerpt: "ls" }); // { id: "a", input_excerpt_digest: … }
 * ```
 */
export function compactAction(a: unknown): Json {
  const out = pick(a, ACTION_KEYS);
  if (isObject(a) && Object.hasOwn(a, "input_excerpt")) out.input_excerpt_digest = digestOf(a.input_excerpt);
  return out;
}

/** What the cross-file rules keep of `state.json` (see the module doc). */
export interface CompactState {
  /**
   * `state.json` with `plan.steps` entries reduced to `{ id, status }` and
   * `outcomes.actions` entries by {@link compactAction} (an entry that is not
   * an object becomes `{}`).
   */
  value: Json;
  /** `outcomes` as compared with a projection. */
  outcomes: CompactOutcomes;
}

/**
 * The `keys` of `x` it has (none when `x` is not an object).
 *
 * @example
 * ```ts
 * import { pick } from "./compact.ts";
 * pick({ id: "a", kind: "act" }, ["id", "status"]); // { id: "a" }
 * ```
 */
export function pick(x: unknown, keys: readonly string[]): Json {
  const out: Json = {};
  if (!isObject(x)) return out;
  for (const k of keys) if (Object.hasOwn(x, k)) out[k] = x[k];
  return out;
}

/**
 * Reduces a parsed `state.json` to what the cross-file rules read; the
 * parsed tree can then be let go.
 *
 * @example
 * ```ts
 * import { compactState } from "./compact.ts";
 * const s = compactState({ plan: { steps: [{ id: "step-1", kind: "act", description: "x", status: "done" }] } });
 * s.value.plan; // { steps: [{ id: "step-1", status: "done" }] }
 * ```
 */
export function compactState(state: Json): CompactState {
  const value: Json = { ...state };
  if (isObject(state.plan) && Array.isArray(state.plan.steps)) {
    const steps = piecesOf(state.plan)?.records ?? state.plan.steps.map((s) => pick(s, STEP_KEYS));
    value.plan = { ...state.plan, steps };
  }
  const outcomes = compactOutcomes(state.outcomes);
  if (isObject(state.outcomes) && Array.isArray(state.outcomes.actions)) {
    const actions = piecesOf(state.outcomes)?.records ?? state.outcomes.actions.map(compactAction);
    value.outcomes = { ...state.outcomes, actions };
  }
  return { value, outcomes };
}

/** What the rules keep of a `run.state_projection` payload. */
export interface CompactProjection {
  links: unknown;
  actions_from: unknown;
  actions_total: unknown;
  outcomes: CompactOutcomes;
}

/**
 * Reduces a `run.state_projection` payload to what the projection rule compares.
 *
 * @example
 * ```ts
 * import { compactProjection } from "./compact.ts";
 * compactProjection({ links: {}, outcomes: { status: "ok", actions: [] } }).outcomes; // { rest: { status: "ok" }, … }
 * ```
 */
export function compactProjection(payload: Json): CompactProjection {
  return {
    links: payload.links,
    actions_from: payload.actions_from,
    actions_total: payload.actions_total,
    outcomes: compactOutcomes(payload.outcomes),
  };
}
