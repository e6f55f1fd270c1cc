/**
 * Rules that can match nothing: written, they look like a guard, yet no call
 * would ever meet them (`Bash(:*)` is "every command that starts with the
 * empty word followed by a space", which no command is). Such a rule is an
 * error at load, so a deny that protects nothing is never trusted.
 *
 * - `Bash(:*)` (and `Bash(  :*)`): an empty command prefix;
 * - `Read(//)` (and `///`…): an empty absolute path after `//`.
 *
 * @module
 */
import { normalizeCommand } from "./pattern.ts";

/** The tools whose specifier is a path pattern (as in `rule.ts`). */
const PATH_TOOL = /^(Read|Edit|Write|MultiEdit|NotebookEdit|NotebookRead|Glob|Grep|LS)$/;

/**
 * Why the rule `tool(spec)` (spec trimmed, not empty) can match nothing, or null when it can match something.
 *
 * @example
 * ```ts
 * import { matchesNothingProblem } from "./empty_rule.ts";
 * matchesNothingProblem("Bash", ":*"); // '"Bash(:*)": an empty command prefix matches no command: …'
 * matchesNothingProblem("Bash", "git push:*"); // null
 * ```
 */
export function matchesNothingProblem(tool: string, spec: string): string | null {
  if (tool === "Bash" && spec.endsWith(":*") && normalizeCommand(spec.slice(0, -2)) === "") {
    return `"${tool}(${spec})": an empty command prefix matches no command: write "Bash" for every command, ` +
      'or a prefix ("Bash(git push:*)")';
  }
  if (PATH_TOOL.test(tool) && /^\/\/+$/.test(spec)) {
    return `"${tool}(${spec})": an empty path after "//" matches no file: write "${tool}(//abs/path)", ` +
      `or "${tool}" for every file`;
  }
  return null;
}
