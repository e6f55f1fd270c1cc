/**
 * `noema install-hooks claude-code [--project|--user] [--uninstall]`:
 * registers `noema hook claude-code` in a Claude Code settings file, so an
 * interactive Claude Code session is governed and recorded as episodes.
 *
 * @module
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { installHooks } from "../../agents/claude_code/install.ts";
import { hookCommand, hookSettings, INSTALL_EVENTS } from "../../agents/claude_code/settings.ts";
import { type CliContext, examples, type RegisterCommand } from "../context.ts";
import { usageError } from "../errors.ts";

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Registers `noema install-hooks`. */
export const registerInstallHooks: RegisterCommand = (program, ctx: CliContext) => {
  program
    .command("install-hooks")
    .summary("register (or remove) noema's hook in Claude Code's settings")
    .description(
      "Add noema hook claude-code for UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, Stop and " +
        "SessionEnd to .claude/settings.json (--project, the default) or ~/.claude/settings.json (--user). " +
        "The rest of the file is kept; running it again changes nothing. --uninstall removes noema's entries.",
    )
    .argument("<agent>", "the agent CLI: claude-code")
    .option("--project", "the project's .claude/settings.json (default)")
    .option("--user", "the user's ~/.claude/settings.json")
    .option("--uninstall", "remove noema's hook entries")
    .option("--policy <file>", "policy the hook consults (besides noema.jsonc and policies/); repeatable", collect)
    .option("--json", "print what changed as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema install-hooks claude-code", "govern Claude Code in this project"],
        ["noema install-hooks claude-code --user --policy ~/policies/no-push.ts", "in every project"],
        ["noema install-hooks claude-code --uninstall", "remove the registration"],
      ),
    )
    .action((agent, opts) => {
      if (agent !== "claude-code") throw usageError(`install-hooks supports claude-code, not ${JSON.stringify(agent)}`);
      if (opts.project && opts.user) throw usageError("--project and --user cannot be used together");
      const path = opts.user
        ? join(process.env.HOME || homedir(), ".claude", "settings.json")
        : join(process.cwd(), ".claude", "settings.json");
      const policyArgs = (opts.policy ?? []).flatMap((p) => ["--policy", resolve(p)]);
      const change = installHooks(path, hookSettings(hookCommand(policyArgs), INSTALL_EVENTS), {
        uninstall: opts.uninstall,
      });
      if (opts.json) return ctx.out.json(change);
      if (!change.written) {
        ctx.out.line(`${path}: ${opts.uninstall ? "no noema hook to remove" : "already installed"}; nothing changed`);
      } else if (opts.uninstall) ctx.out.line(`${path}: removed noema's hook from ${change.removed.join(", ")}`);
      else ctx.out.line(`${path}: noema hook claude-code registered for ${change.added.join(", ")}`);
    });
};
