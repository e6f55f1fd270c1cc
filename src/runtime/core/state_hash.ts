/**
 * The `state_hash` of an action candidate: the `sha256:` of the RFC 8785
 * canonical JSON of the decision state `{action, episode, facts, recent,
 * step}` (`episode` and `facts` enter by their own hashes, `recent` is the
 * ids of the last 10 actions).
 *
 * Every governed call computes one, so the text is assembled member by
 * member in canonical order instead of by the generic canonicalizer: the
 * keys of the state, the action and the step are known, and the step's
 * inputs and the action's input, usually one object, are written once, and
 * the strings that repeat from call to call (tool, kinds, the episode and
 * facts hashes, the command) keep their text from the last call. An
 * action or step with other keys goes through the generic path. The result
 * is the same text (`tests/canonical_json.test.ts` checks it).
 *
 * @module
 */
import type { PendingAction, PolicyStep } from "../../plugins/api.ts";
import { canonicalJson, canonicalNumber, canonicalString } from "../../store/canonical_json.ts";
import { canonicalHash, sha256 } from "../../store/hash.ts";
import { sameMembers } from "./same_members.ts";

/** What a candidate's state hash covers. */
export interface DecisionState {
  /** The episode's own canonical hash (task, settings, workspace). */
  episode: string;
  /** The canonical hash of the facts so far. */
  facts: string;
  /** Ids of the last 10 actions. */
  recent: readonly (string | undefined)[];
  step: PolicyStep;
  action: PendingAction;
}

const ACTION_KEYS = new Set(["command", "input", "kind", "tool"]);
const STEP_KEYS = ["description", "id", "index", "inputs", "kind", "total"];

const isObject = (v: unknown) =>
  typeof v === "object" && v !== null && typeof (v as { toJSON?: unknown }).toJSON !== "function";

function isAction(a: PendingAction): boolean {
  for (const k in a) if (!ACTION_KEYS.has(k)) return false;
  return typeof a.kind === "string" && typeof a.tool === "string" && isObject(a.input) &&
    (a.command === undefined || typeof a.command === "string");
}

function isStep(s: PolicyStep): boolean {
  let n = 0;
  for (const k in s) {
    if (!STEP_KEYS.includes(k)) return false;
    n++;
  }
  return n === STEP_KEYS.length && typeof s.description === "string" && typeof s.id === "string" &&
    typeof s.kind === "string" && typeof s.index === "number" && typeof s.total === "number" && isObject(s.inputs);
}

/** The canonical text of one string of the state, kept for the next call: most are the same from call to call. */
class LastText {
  #value: string | undefined;
  #text = "";

  of(value: string): string {
    if (value !== this.#value) {
      this.#text = canonicalString(value); // throws before anything is kept
      this.#value = value;
    }
    return this.#text;
  }
}

const last = {
  command: new LastText(),
  kind: new LastText(),
  tool: new LastText(),
  episode: new LastText(),
  facts: new LastText(),
  stepKind: new LastText(),
};

/** A number as canonical JSON: `String` writes a finite number as `JSON.stringify` does. */
function numberText(n: number): string {
  return Number.isFinite(n) ? String(n) : canonicalNumber(n);
}

/**
 * The members of the `recent` list, canonical: ids as strings, a missing one as `null`. `JSON.stringify` writes
 * a string as RFC 8785 does unless it holds a lone surrogate (escaped there, refused here): a list with any
 * escape goes member by member.
 */
function recentText(recent: readonly (string | undefined)[]): string {
  let plain = true;
  for (let i = 0; i < recent.length; i++) {
    const id = recent[i];
    if (typeof id !== "string" && id !== undefined) plain = false;
  }
  if (plain) {
    const text = JSON.stringify(recent);
    if (!text.includes("\\u")) return text.slice(1, -1);
  }
  let out = "";
  for (let i = 0; i < recent.length; i++) {
    const id = recent[i];
    out += (i === 0 ? "" : ",") + (typeof id === "string" ? canonicalString(id) : "null");
  }
  return out;
}

/**
 * `sha256:` of the canonical JSON of a decision state.
 *
 * @example
 * ```ts
 * import { decisionStateHash } from "./state_hash.ts";
 * decisionStateHash({
 *   episode: "sha256:…", facts: "sha256:…", recent: [],
 *   step: { id: "step-1", kind: "act", description: "ls", index: 0, total: 1, inputs: { command: "ls" } },
 *   action: { kind: "tool", tool: "Bash", input: { command: "ls" } },
 * }); // "sha256:…"
 * ```
 */
export function decisionStateHash(d: DecisionState): string {
  const { action, step } = d;
  if (!isAction(action) || !isStep(step) || !Array.isArray(d.recent)) return canonicalHash(d);
  const input = canonicalJson(action.input);
  const inputs = sameMembers(step.inputs, action.input) ? input : canonicalJson(step.inputs);
  const recent = recentText(d.recent);
  const text = `{"action":{${action.command === undefined ? "" : `"command":${last.command.of(action.command)},`}` +
    `"input":${input},"kind":${last.kind.of(action.kind)},"tool":${last.tool.of(action.tool)}},` +
    `"episode":${last.episode.of(d.episode)},"facts":${last.facts.of(d.facts)},"recent":[${recent}],` +
    `"step":{"description":${canonicalString(step.description)},"id":${canonicalString(step.id)},` +
    `"index":${numberText(step.index)},"inputs":${inputs},"kind":${last.stepKind.of(step.kind)},` +
    `"total":${numberText(step.total)}}}`;
  return sha256(text);
}
