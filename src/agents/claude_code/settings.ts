/**
 * The hook registration noema adds to Claude Code's settings: one
 * `command` hook per event, running `noema hook claude-code`. Used by
 * `noema run --using claude-code` (passed with `--settings`, the user's own
 * settings untouched) and by `noema install-hooks claude-code`.
 *
 * @module
 */
import { noemaCommand } from "../noema_command.ts";

/** A hook group in Claude Code's settings. */
export interface HookGroup {
  matcher?: string;
  hooks: { type: "command"; command: string; timeout?: number }[];
}

/** Events whose matcher is a tool name pattern. */
const TOOL_EVENTS = new Set([
  "PreToolUse",
  "PostToolUse",
  "PostToolUseFailure",
  "PermissionDenied",
  "PermissionRequest",
]);

/**
 * The events `noema run --using claude-code` registers: the run itself opens and finishes the episode (`Stop`
 * reads the model turns so far and names the transcript).
 */
export const RUN_EVENTS: readonly string[] = [
  "PreToolUse",
  "PostToolUse",
  "PostToolUseFailure",
  "PermissionDenied",
  "Stop",
];

/** The events an installed hook registers: the session opens and finishes its episode. */
export const INSTALL_EVENTS: readonly string[] = [
  "UserPromptSubmit",
  "PreToolUse",
  "PostToolUse",
  "PostToolUseFailure",
  "PermissionDenied",
  // Where Claude Code would prompt (and, in print mode, deny for want of anyone to ask): answered from noema's
  // decision on the call, so that headless approvals follow the policies.
  "PermissionRequest",
  "Stop",
  "SessionEnd",
];

/**
 * The `hooks` object registering `command` for `events`.
 *
 * @example
 * ```ts
 * import { hookSettings, RUN_EVENTS } from "./settings.ts";
 * const settings = { hooks: hookSettings("noema hook claude-code", RUN_EVENTS) };
 * ```
 */
export function hookSettings(command: string, events: readonly string[]): Record<string, HookGroup[]> {
  const hooks: Record<string, HookGroup[]> = {};
  for (const event of events) {
    hooks[event] = [{ ...(TOOL_EVENTS.has(event) ? { matcher: "*" } : {}), hooks: [{ type: "command", command }] }];
  }
  return hooks;
}

/**
 * The hook command: `noema hook claude-code` with `args`, as this noema is invoked.
 *
 * @example
 * ```ts
 * import { hookCommand } from "./settings.ts";
 * hookCommand(["--episode", "ep_1", "--print"]);
 * ```
 */
export function hookCommand(args: readonly string[] = []): string {
  return noemaCommand(["hook", "claude-code", ...args]);
}
