/**
 * Cross-field rules of `summary.json` that a schema of independent fields
 * cannot say: `flags.mode: "minimal"` has no `insight` and no
 * `flags.direction` (both are meta mode only).
 *
 * (A section that is present with a required field missing, such as
 * `flags` without `mode` or `episode` without `id`, is a schema problem:
 * each section's schema lists its required fields.)
 *
 * @module
 */
import type { SchemaName } from "../schema/registry.ts";
import type { RuleId } from "./rules.ts";

/** One problem: the rule, the field path, what is wrong. */
export interface SectionProblem {
  rule: RuleId;
  path: string;
  message: string;
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
  if (name !== "summary") return [];
  const out: SectionProblem[] = [];
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
