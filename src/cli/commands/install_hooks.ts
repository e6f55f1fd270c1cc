/**
 * `noema install-hooks claude-code|codex|gemini [--project|--user] [--uninstall]`:
 * registers `noema hook <agent>` in the agent CLI's hook settings (Claude
 * Code's `.claude/settings.json`, Codex's `.codex/hooks.json`, Gemini CLI's
 * `.gemini/settings.json`), so an interactive session is governed and
 * recorded as episodes.
 *
 * @module
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { installHooks } from "../../agents/claude_code/install.ts";
import { hookCommand, type HookGroup, hookSettings, INSTALL_EVENTS } from "../../agents/claude_code/settings.ts";
import {
  CODEX_INSTALL_EVENTS,
  codexHookCommand,
  codexHookSettings,
  codexHooksPath,
} from "../../agents/codex/settings.ts";
import {
  GEMINI_INSTALL_EVENTS,
  geminiHookCommand,
  geminiHookSettings,
  geminiSettingsPath,
} from "../../agents/gemini/settings.ts";
import { type CliContext, examples, type RegisterCommand } from "../context.ts";
import { usageError } from "../errors.ts";

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Where each agent keeps its hooks, and noema's registration for it. */
const AGENTS: Record<string, {
  path(user: boolean): string;
  hooks(args: string[]): Record<string, HookGroup[]>;
}> = {
  "claude-code": {
    path: (user) => join(user ? process.env.HOME || homedir() : process.cwd(), ".claude", "settings.json"),
    hooks: (args) => hookSettings(hookCommand(args), INSTALL_EVENTS),
  },
  codex: {
    path: (user) =>
      codexHooksPath({
        user,
        cwd: process.cwd(),
        home: process.env.HOME || homedir(),
        codexHome: process.env.CODEX_HOME,
      }),
    hooks: (args) => codexHookSettings(codexHookCommand(args), CODEX_INSTALL_EVENTS),
  },
  gemini: {
    path: (user) => geminiSettingsPath({ user, cwd: process.cwd(), home: process.env.HOME || homedir() }),
    hooks: (args) => geminiHookSettings(geminiHookCommand(args), GEMINI_INSTALL_EVENTS),
  },
};

/** Registers `noema install-hooks`. */
export const registerInstallHooks: RegisterCommand = (program, ctx: CliContext) => {
  program
    .command("install-hooks")
    .summary("register (or remove) noema's hook in Claude Code's, Codex's or Gemini CLI's settings")
    .description(
      "Add noema hook <agent> to the agent's hook settings, in the project (--project, the default) or for the " +
        "user (--user): claude-code .claude/settings.json (UserPromptSubmit, PreToolUse, PostToolUse, " +
        "PostToolUseFailure, Stop, SessionEnd); codex .codex/hooks.json or $CODEX_HOME/hooks.json " +
        "(UserPromptSubmit, PreToolUse, PostToolUse, Stop; trust them in Codex with /hooks); gemini " +
        ".gemini/settings.json (BeforeAgent, BeforeTool, AfterTool, AfterAgent, SessionEnd). " +
        "The rest of the file is kept; running it again changes nothing. --uninstall removes noema's entries.",
    )
    .argument("<agent>", `the agent CLI: ${Object.keys(AGENTS).join(", ")}`)
    .option("--project", "the project's settings (default)")
    .option("--user", "the user's settings (under $HOME)")
    .option("--uninstall", "remove noema's hook entries")
    .option("--policy <file>", "policy the hook consults (besides noema.jsonc and policies/); repeatable", collect)
    .option(
      "--print",
      "gemini only: Gemini runs headless (gemini -p), so an approval denies the call instead of asking",
    )
    .option("--json", "print what changed as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema install-hooks claude-code", "govern Claude Code in this project"],
        ["noema install-hooks claude-code --user --policy ~/policies/no-push.ts", "in every project"],
        ["noema install-hooks codex --user", "govern every Codex session (then trust the hooks with /hooks)"],
        ["noema install-hooks gemini", "govern Gemini CLI in this project"],
        ["noema install-hooks gemini --print", "for headless gemini -p runs"],
        ["noema install-hooks claude-code --uninstall", "remove the registration"],
      ),
    )
    .action((agent, opts) => {
      const target = Object.hasOwn(AGENTS, agent) ? AGENTS[agent] : undefined;
      if (!target) {
        throw usageError(
          `install-hooks supports ${Object.keys(AGENTS).join(", ")}, not ${JSON.stringify(agent)}`,
        );
      }
      if (opts.project && opts.user) throw usageError("--project and --user cannot be used together");
      const path = target.path(opts.user === true);
      if (opts.print && agent !== "gemini") throw usageError(`--print is for gemini, not ${agent}`);
      const policyArgs = [
        ...(opts.policy ?? []).flatMap((p) => ["--policy", resolve(p)]),
        ...(opts.print ? ["--print"] : []),
      ];
      const change = installHooks(path, target.hooks(policyArgs), { uninstall: opts.uninstall, agent });
      if (opts.json) return ctx.out.json(change);
      if (!change.written) {
        ctx.out.line(`${path}: ${opts.uninstall ? "no noema hook to remove" : "already installed"}; nothing changed`);
      } else if (opts.uninstall) ctx.out.line(`${path}: removed noema's hook from ${change.removed.join(", ")}`);
      else ctx.out.line(`${path}: noema hook ${agent} registered for ${change.added.join(", ")}`);
    });
};
