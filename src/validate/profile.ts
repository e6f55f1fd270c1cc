/**
 * The `noema` profile of `noema validate` (`--profile noema`): what noema
 * itself writes where the contract leaves the shape open. An episode written
 * by another conforming implementation passes the contract and may get these
 * as warnings; noema's own episodes get none. Warnings never make an episode
 * invalid unless `--strict` is given.
 *
 * Each warning names one of {@link PROFILE_RULES}. The shapes are noema's own
 * valibot schemas (`src/schema/`), the single source of truth.
 *
 * @module
 */
import * as v from "valibot";
import { Timestamp } from "../schema/common.ts";
import { toProblems } from "../schema/problems.ts";
import { OutcomeError } from "../schema/state.ts";
import { AssertionResult } from "../schema/summary.ts";

/**
 * Every rule of the `noema` profile, with what it expects.
 *
 * @example
 * ```ts
 * import { PROFILE_RULES } from "noema";
 * console.log(PROFILE_RULES["noema.outcome_error"]);
 * ```
 */
export const PROFILE_RULES = {
  "noema.outcome_error": "a non-null state.json outcomes.error is {type, message} (or a string), as noema writes it",
  "noema.assertion": "each summary.json verification.assertions item is {name, target, passed, reason}",
  "noema.workspace_diff":
    "each item of verification.workspace_diff added, modified, deleted is a workspace-relative path (a string)",
  "noema.timestamp": "a belief's or a fact's timestamp in state.json is an ISO 8601 date-time (on the calendar)",
  "noema.plan_fields": "a terminal run's state.json plan carries source and updated_at (optional in the contract)",
  "noema.action_fields":
    "an outcomes.actions record carries the step_id, result_status and input_excerpt its act event has",
  "noema.approval": "each approvals/<id>.json is a decision (approved or rejected) on checkpoints/<id>.json of this " +
    "episode, naming both, bound to its pending action by checkpoint_digest (what resume and attest require); one a " +
    "resume used is what the run.resume event named by its consumed_by recorded; each decision a run.resume event " +
    "applied has its approvals/<id>.json, saying it was used",
  "noema.checkpoint":
    "each checkpoints/<id>.json is the checkpoint a run.checkpoint event of events.jsonl announced: " +
    "the same id, offset and pending action, step, kind, policy and reason (what approve and resume require); " +
    "each run.checkpoint event has its checkpoints/<id>.json",
} as const;

/** A rule id of the `noema` profile. */
export type ProfileRuleId = keyof typeof PROFILE_RULES;

/**
 * The profiles `noema validate` knows: the contract alone, or the contract plus noema's own expectations.
 *
 * @example
 * ```ts
 * import { PROFILES, validate } from "noema";
 * for (const profile of PROFILES) console.log(profile, validate("last", { profile }).warning_count);
 * ```
 */
export const PROFILES = ["contract", "noema"] as const;
/** A validation profile. */
export type Profile = (typeof PROFILES)[number];

/** One profile finding: the field path and what noema expects there. */
export interface ProfileFinding {
  rule: ProfileRuleId;
  path: string;
  message: string;
}

type Json = Record<string, unknown>;
const isObject = (x: unknown): x is Json => typeof x === "object" && x !== null && !Array.isArray(x);

/** The problems of `value` against noema's `schema` (`what` it is, in words), each under `prefix`. */
function findings(
  rule: ProfileRuleId,
  prefix: string,
  schema: v.GenericSchema,
  value: unknown,
  what: string,
): ProfileFinding[] {
  const r = v.safeParse(schema, value);
  if (r.success) return [];
  return toProblems(r.issues, prefix).map((p) => ({
    rule,
    path: p.path,
    message: `${p.message} (the contract allows it; noema writes ${what})`,
  }));
}

/**
 * The `noema` profile's findings in a parsed `state.json`: `outcomes.error`,
 * belief and fact timestamps.
 *
 * @example
 * ```ts
 * import { stateProfile } from "./profile.ts";
 * stateProfile({ outcomes: { status: "error", error: 42 } })[0].rule; // "noema.outcome_error"
 * ```
 */
export function stateProfile(state: Json): ProfileFinding[] {
  const out: ProfileFinding[] = [];
  const outcomes = state.outcomes;
  if (isObject(outcomes) && outcomes.error !== undefined && outcomes.error !== null) {
    if (!v.is(OutcomeError, outcomes.error)) {
      const shown = JSON.stringify(outcomes.error);
      out.push({
        rule: "noema.outcome_error",
        path: "outcomes.error",
        message: `${shown.length > 60 ? shown.slice(0, 57) + "…" : shown} is neither {type, message} nor a string ` +
          "(the contract allows any value; noema writes {type, message})",
      });
    }
  }
  const timestamps = (list: unknown, path: string) => {
    if (!Array.isArray(list)) return;
    list.forEach((item, i) => {
      if (isObject(item) && typeof item.timestamp === "string") {
        out.push(...findings("noema.timestamp", `${path}[${i}].timestamp`, Timestamp, item.timestamp, "ISO 8601 UTC"));
      }
    });
  };
  timestamps(state.beliefs, "beliefs");
  timestamps(isObject(state.memory) ? state.memory.facts : undefined, "memory.facts");
  return out;
}

/**
 * The `noema` profile's findings in a parsed `summary.json`: assertion items
 * and workspace diff items.
 *
 * @example
 * ```ts
 * import { summaryProfile } from "./profile.ts";
 * summaryProfile({ verification: { assertions: [{ ok: true }] } })[0].rule; // "noema.assertion"
 * ```
 */
export function summaryProfile(summary: Json): ProfileFinding[] {
  const out: ProfileFinding[] = [];
  const ver = summary.verification;
  if (!isObject(ver)) return out;
  if (Array.isArray(ver.assertions)) {
    ver.assertions.forEach((a, i) =>
      out.push(
        ...findings(
          "noema.assertion",
          `verification.assertions[${i}]`,
          AssertionResult,
          a,
          "{name, target, passed, reason}",
        ),
      )
    );
  }
  const diff = ver.workspace_diff;
  if (isObject(diff)) {
    for (const list of ["added", "modified", "deleted"]) {
      const items = diff[list];
      if (!Array.isArray(items)) continue;
      items.forEach((item, i) => {
        if (typeof item === "string") return;
        out.push({
          rule: "noema.workspace_diff",
          path: `verification.workspace_diff.${list}[${i}]`,
          message: `is ${JSON.stringify(item)}, not a path string (the contract allows any item; noema writes paths)`,
        });
      });
    }
  }
  return out;
}
