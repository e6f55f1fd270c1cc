/**
 * The short text that stands for a tool call (what policies see as
 * `action.command`, and what progress lines show): the shell command for
 * shell tools, else the tool and the salient field of its input.
 *
 * @module
 */

const MAX = 200;
/** Input fields that say what a call is about, in order of preference. */
const SALIENT = ["command", "cmd", "file_path", "path", "notebook_path", "pattern", "url", "query", "prompt"];

function clip(text: string): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > MAX ? `${one.slice(0, MAX - 1)}…` : one;
}

/**
 * The display of a tool call: the command of a shell tool (`Bash`,
 * `run_shell_command`, Codex's `shell`), else `Tool <salient field>`, else
 * `Tool {json}`; at most 200 characters on one line.
 *
 * @example
 * ```ts
 * import { commandOf } from "./display.ts";
 * commandOf("Bash", { command: "npm test" }); // "npm test"
 * commandOf("Write", { file_path: "/w/a.txt", content: "…" }); // "Write /w/a.txt"
 * ```
 */
export function commandOf(tool: string, input: Record<string, unknown>): string {
  const command = input.command ?? input.cmd;
  if (typeof command === "string") return clip(command);
  if (Array.isArray(command) && command.every((c) => typeof c === "string")) return clip(command.join(" "));
  for (const key of SALIENT) {
    const value = input[key];
    if (typeof value === "string" && value !== "") return clip(`${tool} ${value}`);
  }
  return clip(`${tool} ${JSON.stringify(input)}`);
}
