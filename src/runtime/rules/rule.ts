/**
 * Permission rules in Claude Code's syntax: `Tool` or `Tool(specifier)`.
 *
 * - `Bash(npm run test)` is that exact command; `Bash(git push:*)` is `git
 *   push` and every command that starts with `git push ` (the `:*` only at
 *   the end); a `*` anywhere matches any text (`Bash(git * main)`), and a
 *   single trailing ` *` is optional (`Bash(ls *)` matches `ls` and `ls -la`,
 *   not `lsof`).
 * - `Read(...)`, `Edit(...)`, `Write(...)` (and the other file tools) take a
 *   gitignore-style path pattern: `//abs/path`, `~/in/home`, `/from/the/rules/file`,
 *   `./from/the/cwd` or `name` (any depth below the cwd).
 * - `WebFetch(domain:example.com)`; `mcp__server`, `mcp__server__tool`,
 *   `mcp__server__*`; a bare tool name, or `Tool(*)`, matches every call.
 *
 * @module
 */

import { matchesNothingProblem } from "./empty_rule.ts";

/** A rule read from its text. */
export interface ParsedRule {
  /** The text as written. */
  text: string;
  /** The tool name (`Bash`, `Edit`, `mcp__github__*`…). */
  tool: string;
  /** What is inside the parentheses, or null for a bare tool name (and for `Tool(*)`). */
  specifier: string | null;
}

/** The tools whose specifier is a path pattern. */
export const PATH_TOOLS = new Set([
  "Read",
  "Edit",
  "Write",
  "MultiEdit",
  "NotebookEdit",
  "NotebookRead",
  "Glob",
  "Grep",
  "LS",
]);

/**
 * Tool names of Claude Code's vocabulary: a rule naming one in the wrong case is an error, a name that is none of
 * these (nor `mcp__…`, nor another agent's) a warning (`warnings.ts`), each with a did-you-mean.
 */
export const KNOWN_TOOLS = [
  "Bash",
  ...PATH_TOOLS,
  "WebFetch",
  "WebSearch",
  "Task",
  "Agent",
  "Skill",
  "TodoWrite",
  "BashOutput",
  "KillShell",
  "SlashCommand",
  "ExitPlanMode",
  "KillBash",
  "ListMcpResourcesTool",
  "ReadMcpResourceTool",
];

const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_.-]*$/;
const MCP_NAME = /^mcp__[A-Za-z0-9_.*-]+$/;

/**
 * What is wrong with a rule's text, or null when it is a valid rule.
 *
 * @example
 * ```ts
 * import { ruleProblem } from "./rule.ts";
 * ruleProblem("Bash(git push:*)"); // null
 * ruleProblem("Bash(git push"); // 'missing ")" at the end'
 * ```
 */
export function ruleProblem(text: string): string | null {
  const t = text.trim();
  if (t === "") return "a rule must not be empty";
  const open = t.indexOf("(");
  const tool = open === -1 ? t : t.slice(0, open);
  if (!TOOL_NAME.test(tool) && !MCP_NAME.test(tool)) {
    return `"${tool}" is not a tool name (Bash, Read, Edit, Write, WebFetch, mcp__server__tool…)`;
  }
  const known = KNOWN_TOOLS.find((k) => k.toLowerCase() === tool.toLowerCase());
  if (known !== undefined && known !== tool) return `unknown tool "${tool}" (did you mean "${known}"?)`;
  if (open === -1) return null;
  if (!t.endsWith(")")) return 'missing ")" at the end';
  if (tool.startsWith("mcp__")) return "an mcp__ rule takes no parentheses (mcp__server or mcp__server__tool)";
  const spec = t.slice(open + 1, -1).trim();
  if (spec === "") return `empty parentheses: write "${tool}" for every call, or "${tool}(...)" with a pattern`;
  if (tool === "Bash" && spec.includes(":*") && !spec.endsWith(":*")) return '":*" may only end a Bash pattern';
  const nothing = matchesNothingProblem(tool, spec);
  if (nothing !== null) return nothing;
  if (tool === "WebFetch" && spec !== "*" && !/^domain:[A-Za-z0-9*.-]+$/.test(spec)) {
    return 'a WebFetch rule takes "domain:example.com"';
  }
  return null;
}

/**
 * Reads a rule (see {@link ruleProblem} for what is valid; throws on an invalid one).
 *
 * @example
 * ```ts
 * import { parseRule } from "./rule.ts";
 * parseRule("Bash(git push:*)"); // { text: "Bash(git push:*)", tool: "Bash", specifier: "git push:*" }
 * ```
 */
export function parseRule(text: string): ParsedRule {
  const problem = ruleProblem(text);
  if (problem !== null) throw new Error(problem);
  const t = text.trim();
  const open = t.indexOf("(");
  if (open === -1) return { text, tool: t, specifier: null };
  const spec = t.slice(open + 1, -1).trim();
  return { text, tool: t.slice(0, open), specifier: spec === "*" ? null : spec };
}
