/**
 * The hook registration noema adds to Codex CLI: one `command` hook per
 * event in a `hooks.json` (`.codex/hooks.json` in a project,
 * `$CODEX_HOME/hooks.json` for the user), the same shape as Claude Code's
 * `hooks`. No matcher: a group without one matches every tool (Codex's
 * matchers are regular expressions, where `*` alone is not valid).
 *
 * Codex runs a hook only once it is trusted (`/hooks` in the Codex TUI, or
 * `codex exec --dangerously-bypass-hook-trust` for automation that vets its
 * hooks itself).
 *
 * @module
 */
import { join } from "node:path";
import type { HookGroup } from "../claude_code/settings.ts";
import { noemaCommand } from "../noema_command.ts";

/** The events an installed hook registers: the first prompt opens the episode, `Stop` finishes it. */
export const CODEX_INSTALL_EVENTS: readonly string[] = ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"];

/**
 * The `hooks` object registering `command` for `events`.
 *
 * @example
 * ```ts
 * import { codexHookSettings, CODEX_INSTALL_EVENTS } from "./settings.ts";
 * const file = { hooks: codexHookSettings("noema hook codex", CODEX_INSTALL_EVENTS) };
 * ```
 */
export function codexHookSettings(command: string, events: readonly string[]): Record<string, HookGroup[]> {
  return Object.fromEntries(events.map((e) => [e, [{ hooks: [{ type: "command" as const, command }] }]]));
}

/**
 * The hook command: `noema hook codex` with `args`, as this noema is invoked.
 *
 * @example
 * ```ts
 * import { codexHookCommand } from "./settings.ts";
 * codexHookCommand(["--policy", "/p/no-push.ts"]);
 * ```
 */
export function codexHookCommand(args: readonly string[] = []): string {
  return noemaCommand(["hook", "codex", ...args]);
}

/**
 * Where Codex reads hooks: `.codex/hooks.json` under `cwd`, or the user's
 * `$CODEX_HOME/hooks.json` (default `~/.codex`).
 *
 * @example
 * ```ts
 * import { codexHooksPath } from "./settings.ts";
 * codexHooksPath({ user: false, cwd: "/w", home: "/h" }); // "/w/.codex/hooks.json"
 * ```
 */
export function codexHooksPath(where: { user: boolean; cwd: string; home: string; codexHome?: string }): string {
  if (!where.user) return join(where.cwd, ".codex", "hooks.json");
  return join(where.codexHome || join(where.home, ".codex"), "hooks.json");
}
