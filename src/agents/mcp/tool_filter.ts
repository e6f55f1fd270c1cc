/**
 * Which tools `noema mcp` leaves out of `tools/list`: those a deny rule
 * always denies, whatever the arguments. That is a rule of an enforced rule
 * set that names the tool with no specifier (`mcp__fs__write_file`,
 * `mcp__fs__*`, `mcp__fs`, or a bare file rule such as `Edit`, which covers
 * every MCP tool): deny beats ask and allow, so no call of it can pass. A
 * rule with a path specifier depends on the arguments, and a set's `default`
 * can be overridden by allow rules: those tools stay listed and each call is
 * decided as it comes.
 *
 * @module
 */
import { decideLayer } from "../../runtime/rules/match.ts";
import { parseRule } from "../../runtime/rules/rule.ts";
import type { RuleLayer } from "../../runtime/rules/schema.ts";
import { ruleTarget } from "../../runtime/rules/tools.ts";

/**
 * The deny rule that always denies `tool` (its text and where it is), or null.
 *
 * @example
 * ```ts
 * import { toLayer } from "../../runtime/rules/schema.ts";
 * import { alwaysDenied } from "./tool_filter.ts";
 * const layer = toLayer({ deny: ["mcp__fs__write_file"] }, { source: "noema.jsonc", field: "rules", base: "/p" });
 * alwaysDenied([layer], "mcp__fs__write_file", "/p")?.rule; // "mcp__fs__write_file"
 * ```
 */
export function alwaysDenied(
  layers: readonly RuleLayer[] | undefined,
  tool: string,
  cwd: string,
): { rule: string; source: string; field: string } | null {
  // No arguments: a rule that matches anyway matches every call of the tool.
  const target = ruleTarget({ kind: "tool", tool, input: {}, command: "" }, cwd);
  if (target === null) return null;
  for (const layer of layers ?? []) {
    if (layer.mode !== "enforce") continue;
    const d = decideLayer(layer, target, { cwd });
    if (d.effect !== "deny" || d.rule === null) continue;
    if (parseRule(d.rule.rule).specifier !== null) continue;
    return { rule: d.rule.rule, source: layer.source, field: d.rule.field };
  }
  return null;
}
