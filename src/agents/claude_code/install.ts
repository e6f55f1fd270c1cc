/**
 * Installing noema's hook into a Claude Code settings file (for people who
 * use Claude Code interactively): adds or removes one `command` hook per
 * event, leaving the rest of the file (other hooks, permissions, comments,
 * formatting) as it was. Idempotent: installing twice changes nothing. An
 * uninstall that leaves the file an empty object removes the file.
 * Codex's `hooks.json` and Gemini CLI's `settings.json` have the same
 * `hooks` shape, so they are edited the same way (`agent` names whose
 * `noema hook <agent>` entries are noema's).
 *
 * @module
 */
import { existsSync, readFileSync, unlinkSync } from "node:fs";
import { applyEdits, type FormattingOptions, modify, parse, type ParseError } from "jsonc-parser";
import { EXIT, NoemaError } from "../../errors.ts";
import { writeFileAtomic } from "../../store/atomic.ts";
import type { HookGroup } from "./settings.ts";
import { noemaCommand } from "../noema_command.ts";

/** What an install or uninstall changed. */
export interface InstallChange {
  path: string;
  /** Events whose noema hook was added (or replaced by a different command). */
  added: string[];
  /** Events whose noema hook was removed. */
  removed: string[];
  /** Whether the file was written. */
  written: boolean;
  /** Whether an uninstall removed the file, left with nothing but noema's entries before (`{}` after). */
  deleted?: boolean;
}

const FORMAT: FormattingOptions = { insertSpaces: true, tabSize: 2, eol: "\n" };
/**
 * Whether a hook's command is noema's for `agent`: it runs `hook <agent>`, and it is noema that runs it (the name
 * `noema` in it, or the very command this noema writes). Another tool's `… hook claude-code` is not noema's.
 */
function isOurCommand(command: unknown, agent: string): boolean {
  if (typeof command !== "string") return false;
  const hook = new RegExp(`(^|\\s)hook\\s+${agent.replace(/[^a-z-]/g, "")}(\\s|$)`);
  return hook.test(command) && (/noema/i.test(command) || command.startsWith(noemaCommand([])));
}

function isOurs(group: HookGroup, agent: string): boolean {
  return Array.isArray(group?.hooks) && group.hooks.length > 0 &&
    group.hooks.every((h) => isOurCommand(h?.command, agent));
}

/** `group` without noema's hooks (a group noema's hook was merged into keeps the user's own), or null if none is left. */
function withoutOurs(group: HookGroup, agent: string): HookGroup | null {
  if (!Array.isArray(group?.hooks)) return group;
  const rest = group.hooks.filter((h) => !isOurCommand(h?.command, agent));
  if (rest.length === group.hooks.length) return group;
  return rest.length === 0 ? null : { ...group, hooks: rest };
}

function isEmptyObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}

function readSettings(path: string): { text: string; value: Record<string, unknown> } {
  if (!existsSync(path)) return { text: "{}\n", value: {} };
  const text = readFileSync(path, "utf8");
  const errors: ParseError[] = [];
  const value = parse(text, errors, { allowTrailingComma: true });
  if (errors.length > 0 || typeof value !== "object" || value === null || Array.isArray(value)) {
    const at = errors[0] ? `offset ${errors[0].offset}: ` : "";
    throw new NoemaError("bad_settings", `${at}not a JSON object; fix or move it first`, {
      file: path,
      exitCode: EXIT.USAGE,
    });
  }
  return { text, value };
}

/**
 * The command of noema's hook for `agent` registered in the settings file at
 * `path` (the first one found), or null.
 *
 * @example
 * ```ts
 * import { registeredCommand } from "./install.ts";
 * registeredCommand(".gemini/settings.json", "gemini"); // "/usr/local/bin/noema hook gemini --print"
 * ```
 */
export function registeredCommand(path: string, agent: string): string | null {
  const hooks = readSettings(path).value.hooks;
  if (typeof hooks !== "object" || hooks === null || Array.isArray(hooks)) return null;
  for (const groups of Object.values(hooks as Record<string, unknown>)) {
    if (!Array.isArray(groups)) continue;
    const ours = (groups as HookGroup[]).find((g) => isOurs(g, agent));
    if (ours) return ours.hooks[0].command;
  }
  return null;
}

/**
 * Adds (or with `uninstall`, removes) noema's hook for `events` in the
 * settings file at `path`. `agent` (default `claude-code`) says which
 * `noema hook <agent>` entries are noema's.
 *
 * @example
 * ```ts
 * import { installHooks } from "./install.ts";
 * const change = installHooks(".claude/settings.json", { "PreToolUse": [{ matcher: "*", hooks: [{ type: "command", command: "noema hook claude-code" }] }] });
 * console.log(change.added); // ["PreToolUse"]
 * ```
 */
export function installHooks(
  path: string,
  wanted: Record<string, HookGroup[]>,
  options: { uninstall?: boolean; agent?: string } = {},
): InstallChange {
  const agent = options.agent ?? "claude-code";
  let { text, value } = readSettings(path);
  const hooks = (value.hooks ?? {}) as Record<string, HookGroup[]>;
  if (typeof hooks !== "object" || Array.isArray(hooks)) {
    throw new NoemaError("bad_settings", "hooks: expected an object", { file: path, exitCode: EXIT.USAGE });
  }
  const change: InstallChange = { path, added: [], removed: [], written: false };
  const events = options.uninstall ? Object.keys(hooks) : Object.keys(wanted);
  for (const event of events) {
    const current = Array.isArray(hooks[event]) ? hooks[event] : [];
    const others = current.map((g) => withoutOurs(g, agent)).filter((g): g is HookGroup => g !== null);
    const next = options.uninstall ? others : [...others, ...wanted[event]];
    if (JSON.stringify(next) === JSON.stringify(current)) continue;
    (options.uninstall ? change.removed : change.added).push(event);
    const edits = modify(text, ["hooks", event], next.length > 0 ? next : undefined, { formattingOptions: FORMAT });
    text = applyEdits(text, edits);
  }
  if (options.uninstall && change.removed.length > 0) {
    const after = parse(text) as Record<string, unknown>;
    const left = after.hooks as Record<string, unknown> | undefined;
    if (left && Object.keys(left).length === 0) {
      text = applyEdits(text, modify(text, ["hooks"], undefined, { formattingOptions: FORMAT }));
    }
  }
  if (options.uninstall && change.removed.length > 0 && isEmptyObject(parse(text))) {
    unlinkSync(path); // a file holding only noema's hooks goes with them
    return { ...change, written: true, deleted: true };
  }
  if (change.added.length > 0 || change.removed.length > 0) {
    writeFileAtomic(path, text.endsWith("\n") ? text : `${text}\n`);
    change.written = true;
  }
  return change;
}
