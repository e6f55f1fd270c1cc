/**
 * The short text that stands for a tool call (what policies see as
 * `action.command`): the core's display of the input, with the dialects'
 * shapes normalized first (Codex sends a shell command as an argv array in
 * `command`).
 *
 * @module
 */
import { displayCommand } from "../runtime/core/command.ts";

/**
 * The display of a tool call's input: the shell command of a shell tool
 * (`Bash`, `run_shell_command`; Codex's array `command` is quoted like an
 * argv), as is; else the path, URL or pattern it works on, else compact JSON
 * cut to 200 characters.
 *
 * @example
 * ```ts
 * import { commandOf } from "./display.ts";
 * commandOf({ command: "npm test" }); // "npm test"
 * commandOf({ file_path: "/w/a.txt", content: "…" }); // "/w/a.txt"
 * ```
 */
export function commandOf(input: Record<string, unknown>): string {
  const { command, cmd } = input;
  const argv = Array.isArray(command) ? command : Array.isArray(cmd) ? cmd : null;
  const normalized = argv ? { argv } : typeof cmd === "string" && command === undefined ? { command: cmd } : input;
  return displayCommand(normalized, 200);
}
