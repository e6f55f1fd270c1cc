/**
 * A task file of shell steps, one step per command, as the backtest tests
 * record their episodes from.
 *
 * @module
 */
import { writeFileSync } from "node:fs";

/**
 * Writes a task file at `path` running `commands` through the shell adapter
 * (`rules_file` relative to the task file, like a user's); returns `path`.
 *
 * @example
 * ```ts
 * import { writeShellTask } from "./shell_task.ts";
 * writeShellTask("/tmp/t/task.json", "episode 0", ["pwd", "id"], { rules_file: "rules.jsonc" });
 * ```
 */
export function writeShellTask(
  path: string,
  task: string,
  commands: readonly string[],
  more: Record<string, unknown> = {},
  description: (command: string, index: number) => string = (_, i) => `step ${i}`,
): string {
  const steps = commands.map((command, i) => ({
    kind: "act",
    description: description(command, i),
    inputs: { command },
  }));
  writeFileSync(path, JSON.stringify({ task, using: "shell", ...more, steps }));
  return path;
}
