/**
 * The hook registration noema adds to Gemini CLI's `settings.json`
 * (`.gemini/settings.json` in a project, `~/.gemini/settings.json` for the
 * user): one `command` hook per event, matcher `*` on the tool events.
 *
 * @module
 */
import { join } from "node:path";
import type { HookGroup } from "../claude_code/settings.ts";
import { noemaCommand } from "../noema_command.ts";

/** The events an installed hook registers: the prompt opens the episode, `AfterAgent`/`SessionEnd` finish it. */
export const GEMINI_INSTALL_EVENTS: readonly string[] = [
  "BeforeAgent",
  "BeforeTool",
  "AfterTool",
  "AfterAgent",
  "SessionEnd",
];

const TOOL_EVENTS = new Set(["BeforeTool", "AfterTool"]);

/**
 * The `hooks` object registering `command` for `events`.
 *
 * @example
 * ```ts
 * import { geminiHookSettings, GEMINI_INSTALL_EVENTS } from "./settings.ts";
 * const settings = { hooks: geminiHookSettings("noema hook gemini", GEMINI_INSTALL_EVENTS) };
 * ```
 */
export function geminiHookSettings(command: string, events: readonly string[]): Record<string, HookGroup[]> {
  return Object.fromEntries(events.map((e) => [e, [{
    ...(TOOL_EVENTS.has(e) ? { matcher: "*" } : {}),
    hooks: [{ type: "command" as const, command }],
  }]]));
}

/**
 * The hook command: `noema hook gemini` with `args`, as this noema is invoked.
 *
 * @example
 * ```ts
 * import { geminiHookCommand } from "./settings.ts";
 * geminiHookCommand(["--print"]); // for `gemini -p`: approvals block instead of asking
 * ```
 */
export function geminiHookCommand(args: readonly string[] = []): string {
  return noemaCommand(["hook", "gemini", ...args]);
}

/**
 * Where Gemini CLI reads settings: `.gemini/settings.json` under `cwd`, or `~/.gemini/settings.json`.
 *
 * @example
 * ```ts
 * import { geminiSettingsPath } from "./settings.ts";
 * geminiSettingsPath({ user: true, cwd: "/w", home: "/h" }); // "/h/.gemini/settings.json"
 * ```
 */
export function geminiSettingsPath(where: { user: boolean; cwd: string; home: string }): string {
  return join(where.user ? where.home : where.cwd, ".gemini", "settings.json");
}
