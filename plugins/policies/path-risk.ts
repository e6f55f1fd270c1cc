/**
 * PathRisk: watches the paths an action writes to. It vetoes writes outside
 * the workspace (absolute paths elsewhere, `..` escapes) and hints on writes
 * to sensitive paths (`.env`, keys, `.git/`, CI config, lock files).
 *
 * It reads `inputs.writes` (a list of paths) when a step declares it, the
 * `file_path` of an agent's Edit/Write call, and otherwise looks for
 * redirections and common write commands (`>`, `>>`, `tee`, `cp`, `mv`, `rm`,
 * `touch`, `sed -i`) in `state.action.command` (the command line, whether the
 * step gave `command` or `argv`).
 *
 * @module
 */
import { DirectedIntuition, type PolicyState } from "noema";
import { isAbsolute, normalize, relative, resolve } from "node:path";

const SENSITIVE = [
  /(^|\/)\.env(\.|$)/,
  /(^|\/)\.git\//,
  /id_(rsa|ed25519)/,
  /\.(pem|key)$/,
  /(^|\/)\.github\/workflows\//,
  /(^|\/)(package-lock\.json|yarn\.lock|pnpm-lock\.yaml)$/,
];

function writtenPaths(input: Readonly<Record<string, unknown>>, command: string): string[] {
  if (Array.isArray(input.writes)) return input.writes.filter((p): p is string => typeof p === "string");
  // Agent tool calls (Edit, Write, NotebookEdit) name the file they write.
  if (typeof input.file_path === "string") return [input.file_path];
  if (typeof input.notebook_path === "string") return [input.notebook_path];
  const out: string[] = [];
  for (const m of command.matchAll(/>>?\s*([^\s;&|]+)/g)) out.push(m[1]);
  for (
    const m of command.matchAll(
      /\b(?:tee(?:\s+-a)?|touch|rm(?:\s+-[rf]+)?|sed\s+-i(?:\s+'[^']*'|\s+"[^"]*"|\s+\S+)?)\s+([^\s;&|]+)/g,
    )
  ) out.push(m[1]);
  for (const m of command.matchAll(/\b(?:cp|mv)\s+(?:-\w+\s+)*\S+\s+([^\s;&|]+)/g)) out.push(m[1]);
  return out.filter((p) => p !== "/dev/null" && !p.startsWith("&"));
}

export default class PathRisk extends DirectedIntuition {
  static override version = "1.0";

  advise(state: PolicyState) {
    const paths = writtenPaths(state.action.input, state.action.command);
    if (paths.length === 0) return;
    const ws = state.workspace ?? ".";
    for (const p of paths) {
      const abs = isAbsolute(p) ? normalize(p) : resolve(ws, p);
      const rel = relative(resolve(ws), abs);
      if (rel.startsWith("..") || isAbsolute(rel)) {
        return this.veto({
          advice: `Write outside the workspace blocked: ${p}`,
          confidence: 0.9,
          risk_tags: ["write_outside_workspace"],
        });
      }
    }
    const sensitive = paths.filter((p) => SENSITIVE.some((re) => re.test(p)));
    if (sensitive.length > 0) {
      return this.hint({
        advice: `Writes to sensitive paths: ${sensitive.join(", ")}`,
        confidence: 0.7,
        risk_tags: ["sensitive_path"],
      });
    }
  }
}
