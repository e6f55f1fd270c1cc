/**
 * Warnings about rules that load but are likely mistakes. A rule may name any tool (another agent's, a custom
 * tool's), so a name outside Claude Code's vocabulary is not an error, as a name in the wrong case is (`bash(ls)`):
 * it is a warning, with the known name it is closest to (`Bsh(git push)`: did you mean "Bash"?), since such a rule
 * matches no call of the tool meant.
 *
 * @module
 */
import { didYouMean } from "../jsonc.ts";
import { KNOWN_TOOLS } from "./rule.ts";
import type { RuleLayer } from "./schema.ts";
import { isAgentToolName } from "./tools.ts";

/**
 * What is likely wrong with a valid rule, or null: a tool name that is neither one of Claude Code's, nor an
 * `mcp__` name, nor another agent's that the rules map (`run_shell_command`, `apply_patch`…).
 *
 * @example
 * ```ts
 * import { ruleWarning } from "./warnings.ts";
 * ruleWarning("Bsh(git push)"); // 'unknown tool "Bsh" (did you mean "Bash"?): the rule matches only …'
 * ruleWarning("Bash(git push)"); // null
 * ```
 */
export function ruleWarning(text: string): string | null {
  const t = text.trim();
  const open = t.indexOf("(");
  const tool = open === -1 ? t : t.slice(0, open);
  if (tool.startsWith("mcp__") || KNOWN_TOOLS.includes(tool) || isAgentToolName(tool)) return null;
  const hint = didYouMean(tool, KNOWN_TOOLS);
  return `unknown tool "${tool}"${hint ? ` (did you mean "${hint}"?)` : ""}: the rule matches only calls of a tool ` +
    "named so exactly";
}

/**
 * The warnings of loaded rule sets, each saying where (`/p/noema.jsonc: rules.deny[0]: "Bsh(git push)": …`).
 *
 * @example
 * ```ts
 * import { ruleWarnings } from "./warnings.ts";
 * import { toLayer } from "./schema.ts";
 * ruleWarnings([toLayer({ deny: ["Bsh(x)"] }, { source: "/p/noema.jsonc", field: "rules", base: "/p" })]);
 * // ['warning: /p/noema.jsonc: rules.deny[0]: "Bsh(x)": unknown tool "Bsh" (did you mean "Bash"?): …']
 * ```
 */
export function ruleWarnings(layers: readonly RuleLayer[]): string[] {
  const out: string[] = [];
  for (const l of layers) {
    for (const r of l.rules) {
      const w = ruleWarning(r.rule);
      if (w !== null) out.push(`warning: ${l.source}: ${r.field}: "${r.rule}": ${w}`);
    }
  }
  return out;
}
