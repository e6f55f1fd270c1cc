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
import { installHooks, registeredCommand } from "../../agents/claude_code/install.ts";
import { mergeHookArgs, parseHookArgs } from "../../agents/hook_args.ts";
import { resolveRunSettings } from "../../runtime/load_settings.ts";
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
        "PostToolUseFailure, PermissionDenied, Stop, SessionEnd); codex .codex/hooks.json or $CODEX_HOME/hooks.json " +
        "(UserPromptSubmit, PreToolUse, PostToolUse, Stop; trust them in Codex with /hooks); gemini " +
        ".gemini/settings.json (BeforeAgent, BeforeTool, AfterTool, AfterAgent, SessionEnd). " +
        "The rest of the file is kept; running it again changes nothing. --uninstall removes noema's entries.",
    )
    .argument("<agent>", `the agent CLI: ${Object.keys(AGENTS).join(", ")}`)
    .option("--project", "the project's settings (default)")
    .option("--user", "the user's settings (under $HOME)")
    .option("--uninstall", "remove noema's hook entries")
    .option(
      "--policy <file>",
      "policy the hook consults (besides noema.jsonc and policies/); repeatable; replaces the registered ones",
      collect,
    )
    .option("--no-policy", "register no --policy (removes those registered before)")
    .option(
      "--print",
      "gemini, claude-code: the agent runs headless (gemini -p, claude -p): an approval denies the call (Gemini) " +
        "or defers it and pauses the episode (Claude Code), and Claude Code's permission requests are answered " +
        "from noema's decisions instead of being denied for want of anyone to ask",
    )
    .option("--no-print", "gemini, claude-code: remove a registered --print")
    .option("--json", "print what changed as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema install-hooks claude-code", "govern Claude Code in this project"],
        ["noema install-hooks claude-code --user --policy ~/policies/no-push.ts", "in every project"],
        ["noema install-hooks codex --user", "govern every Codex session (then trust the hooks with /hooks)"],
        ["noema install-hooks gemini", "govern Gemini CLI in this project"],
        ["noema install-hooks gemini --print", "for headless gemini -p runs (the registered policies are kept)"],
        ["noema install-hooks claude-code --print", "for headless claude -p runs: approvals follow noema"],
        ["noema install-hooks claude-code --uninstall", "remove the registration"],
      ) +
        "\nInstalling again keeps what is registered (--policy files, --print) unless an option says otherwise.\n" +
        "Each policy is loaded first: a missing or broken one is refused (exit 2), never registered.\n",
    )
    .action(async (agent, opts) => {
      const target = Object.hasOwn(AGENTS, agent) ? AGENTS[agent] : undefined;
      if (!target) {
        throw usageError(
          `install-hooks supports ${Object.keys(AGENTS).join(", ")}, not ${JSON.stringify(agent)}`,
        );
      }
      if (opts.project && opts.user) throw usageError("--project and --user cannot be used together");
      const path = target.path(opts.user === true);
      if (opts.print !== undefined && agent === "codex") {
        throw usageError(`--print is for gemini and claude-code, not ${agent}`);
      }
      if (opts.uninstall) {
        const change = installHooks(path, target.hooks([]), { uninstall: true, agent });
        if (opts.json) return ctx.out.json(change);
        return ctx.out.line(
          change.written
            ? `${path}: removed noema's hook from ${change.removed.join(", ")}`
            : `${path}: no noema hook to remove; nothing changed`,
        );
      }
      const registered = ((c) => c === null ? null : parseHookArgs(c, agent))(registeredCommand(path, agent));
      const policies = opts.policy === false ? false : opts.policy?.map((p) => resolve(p));
      const args = mergeHookArgs(registered, { policies, print: opts.print });
      const kept = args.filter((_, i) => args[i - 1] === "--policy");
      // The project's own policies (noema.jsonc, policies/) are the hook's too, when it runs here.
      const local = opts.user ? [] : projectPolicies().filter((p): p is string => typeof p === "string");
      await checkPolicies([...kept, ...local]);
      const hooks = target.hooks(args);
      const change = installHooks(path, hooks, { agent });
      const command = Object.values(hooks)[0][0].hooks[0].command;
      const ungoverned = kept.length === 0 && projectPolicies().length === 0;
      if (opts.json) return ctx.out.json({ ...change, command, ungoverned });
      if (!change.written) ctx.out.line(`${path}: already installed; nothing changed`);
      else ctx.out.line(`${path}: noema hook ${agent} registered for ${change.added.join(", ")}`);
      ctx.out.line(`command: ${command}`);
      if (ungoverned) {
        ctx.out.line(
          "ungoverned: recorded only — no policy (--policy, or noema.jsonc here): every call is recorded, " +
            "none is checked",
        );
      }
    });
};

/** Loads each policy as the hook will (a missing or broken one is a located error, exit 2), then lets it go. */
async function checkPolicies(files: string[]): Promise<void> {
  if (files.length === 0) return;
  const { loadPolicyFile, registerPluginApi } = await import("../../plugins/loader.ts");
  await registerPluginApi();
  for (const file of files) {
    const policy = await loadPolicyFile(file);
    policy.close?.();
  }
}

/** The policies `noema.jsonc` in the current directory gives the hook (its `policies`, `policies_dir`), besides --policy. */
function projectPolicies(): readonly unknown[] {
  try {
    return resolveRunSettings({ taskOrFile: "-", options: {} }).options.policies ?? [];
  } catch {
    return []; // a broken noema.jsonc is the hook's to report
  }
}
