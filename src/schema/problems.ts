/**
 * Turning valibot issues into short, located problems (`field: problem`).
 *
 * @module
 */
import type * as v from "valibot";
import { jsonType } from "../json.ts";
import { isUnknownKeyIssue } from "./unknown_key.ts";

/** One schema problem: the dotted field path (empty for the root) and what is wrong. */
export interface SchemaProblem {
  /** Dotted path of the field, e.g. `payload.proposal_ids[2]`; `""` for the value itself. */
  path: string;
  /** What is wrong, in words a user can act on. */
  message: string;
}

/**
 * Dotted path of a valibot issue, e.g. `payload.steps[0]`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { issuePath } from "./problems.ts";
 * const r = v.safeParse(v.object({ a: v.string() }), { a: 1 });
 * if (!r.success) console.log(issuePath(r.issues[0])); // "a"
 * ```
 */
export function issuePath(issue: v.BaseIssue<unknown>, prefix = ""): string {
  let out = prefix;
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * Converts valibot issues (including nested union issues) to problems.
 * A missing required field reads `required field is missing`; a wrong type
 * reads `expected string, got number`; a key a strict object does not know
 * reads `unknown key`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { toProblems } from "./problems.ts";
 * const r = v.safeParse(v.object({ id: v.string() }), {});
 * if (!r.success) console.log(toProblems(r.issues)); // [{ path: "id", message: "required field is missing" }]
 * ```
 */
export function toProblems(issues: readonly v.BaseIssue<unknown>[], prefix = ""): SchemaProblem[] {
  const out: SchemaProblem[] = [];
  for (const issue of issues) {
    const path = issuePath(issue, prefix);
    let message: string;
    if (isUnknownKeyIssue(issue)) {
      message = "unknown key"; // valibot's `expected never`, the key being the issue's input
    } else if (issue.kind === "schema" && issue.input === undefined && (issue.path?.length ?? 0) > 0) {
      message = "required field is missing";
    } else if (issue.kind === "schema" && issue.expected && !issue.message.startsWith("must")) {
      message = `expected ${issue.expected}, got ${
        issue.type === "picklist" || issue.type === "literal" ? JSON.stringify(issue.input) : jsonType(issue.input)
      }`;
    } else {
      message = issue.message;
    }
    out.push({ path, message });
  }
  return out;
}
