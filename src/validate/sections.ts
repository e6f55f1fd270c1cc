/**
 * Rules about whole sections of `state.json` and `summary.json` that a schema
 * of independent fields cannot say:
 *
 * - a section whose fields the contract requires is there: `state.json`
 *   `episode`, `goal` and `plan`; `summary.json` `flags` and `metrics` (the
 *   contract leaves the section's own "Required" open, but a file without it
 *   cannot carry its required fields, and `episode.started_at` is what the
 *   start-event rule checks). Reported under the file's schema rule;
 * - `flags.mode: "minimal"` has no `insight` and no `flags.direction` (both
 *   are meta mode only);
 * - `metrics.success` against `outcome`, `duration_sec` against
 *   `metrics.latencies.total_ms` (`summary_rules.ts`).
 *
 * (A section that is present with a required field missing, such as
 * `flags` without `mode` or `episode` without `id`, is a schema problem:
 * each section's schema lists its required fields.)
 *
 * @module
 */
import type { SchemaName } from "../schema/registry.ts";
import type { RuleId } from "./rules.ts";
import { summaryConsistency } from "./summary_rules.ts";

/** One problem: the rule, the field path, what is wrong. */
export interface SectionProblem {
  rule: RuleId;
  path: string;
  message: string;
}

/** The sections of each artifact whose fields the contract requires. */
export const REQUIRED_SECTIONS: Readonly<Partial<Record<SchemaName, readonly string[]>>> = Object.freeze({
  state: Object.freeze(["episode", "goal", "plan"]),
  summary: Object.freeze(["flags", "metrics"]),
});

/**
 * The required sections (see {@link REQUIRED_SECTIONS}) `value` lacks, as
 * problems of the file's schema rule.
 *
 * @example
 * ```ts
 * import { missingSections } from "./sections.ts";
 * missingSections("summary", { flags: { intuition: false, mode: "minimal" } });
 * // [{ rule: "summary.schema", path: "metrics", message: "required section is missing (…)" }]
 * ```
 */
export function missingSections(name: SchemaName, value: Record<string, unknown>): SectionProblem[] {
  const out: SectionProblem[] = [];
  for (const key of REQUIRED_SECTIONS[name] ?? []) {
    if (value[key] !== undefined) continue;
    out.push({
      rule: `${name}.schema` as RuleId,
      path: key,
      message: "required section is missing (the contract requires fields in it)",
    });
  }
  return out;
}

/**
 * The cross-field problems of one parsed artifact.
 *
 * @example
 * ```ts
 * import { checkSections } from "./sections.ts";
 * checkSections("summary", { flags: { intuition: false, mode: "minimal" }, insight: {} });
 * // [{ rule: "summary.mode", path: "insight", message: "…" }]
 * ```
 */
export function checkSections(name: SchemaName, value: Record<string, unknown>): SectionProblem[] {
  const out = missingSections(name, value);
  if (name !== "summary") return out;
  out.push(...summaryConsistency(value));
  const flags = value.flags;
  if (typeof flags !== "object" || flags === null || (flags as Record<string, unknown>).mode !== "minimal") return out;
  if ("insight" in value && value.insight !== undefined) {
    out.push({
      rule: "summary.mode",
      path: "insight",
      message: 'present, but flags.mode is "minimal" (meta mode only)',
    });
  }
  if ("direction" in flags && (flags as Record<string, unknown>).direction !== undefined) {
    out.push({
      rule: "summary.mode",
      path: "flags.direction",
      message: 'present, but flags.mode is "minimal" (meta mode only)',
    });
  }
  return out;
}
