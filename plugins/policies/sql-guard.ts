/**
 * SqlGuard: vetoes destructive SQL (DROP, TRUNCATE, DELETE or UPDATE without
 * WHERE, ALTER … DROP) in the pending action (`state.action.command` and every
 * string of its input), and hints when a SELECT has no LIMIT.
 *
 *     noema run examples/sql-vetoed.jsonc --policy plugins/policies/sql-guard.ts
 *
 * @module
 */
import { DirectedIntuition, type PolicyState } from "noema";

const DESTRUCTIVE: { pattern: RegExp; why: string }[] = [
  { pattern: /\bdrop\s+(table|database|schema|index|view)\b/i, why: "DROP removes data or schema" },
  { pattern: /\btruncate\s+(table\s+)?\w+/i, why: "TRUNCATE deletes every row" },
  { pattern: /\bdelete\s+from\s+[\w."]+\s*(;|$)(?![\s\S]*\bwhere\b)/i, why: "DELETE without WHERE deletes every row" },
  { pattern: /\bupdate\s+[\w."]+\s+set\b(?![\s\S]*\bwhere\b)/i, why: "UPDATE without WHERE changes every row" },
  { pattern: /\balter\s+table\s+[\w."]+\s+drop\b/i, why: "ALTER TABLE … DROP removes a column or constraint" },
];

/** Every string in a value, joined. */
function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(textOf).join(" ");
  if (typeof value === "object" && value !== null) return Object.values(value).map(textOf).join(" ");
  return "";
}

export default class SqlGuard extends DirectedIntuition {
  static override version = "1.0";

  advise(state: PolicyState) {
    const text = `${state.action.command} ${textOf(state.action.input)} ${state.step.description}`;
    for (const { pattern, why } of DESTRUCTIVE) {
      if (pattern.test(text)) {
        return this.veto({
          advice: `Destructive SQL blocked: ${why}.`,
          rationale: `matched ${pattern}`,
          confidence: 0.95,
          risk_tags: ["destructive", "sql"],
        });
      }
    }
    if (/\bselect\b[\s\S]+\bfrom\b/i.test(text) && !/\blimit\s+\d+/i.test(text)) {
      return this.hint({ advice: "SELECT without LIMIT may return a very large result.", confidence: 0.6 });
    }
  }
}
