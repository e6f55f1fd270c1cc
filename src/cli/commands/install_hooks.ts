/**
 * `noema install-hooks claude-code|codex|gemini [--project|--user] [--uninstall]`:
 * registers `noema hook <agent>` in the agent CLI's hook settings (Claude
 * Code's `.claude/settings.json`, Codex's `.codex/hooks.json`, Gemini CLI's
 * `.gemini/settings.json`), so an interactive session is governed and
 * recorded as episodes.
 *
 * @module
 */
import { Option } from "@commander-js/extra-typings";
import { homedir } from "node:os";
import { isAbsolute, join, relative, resolve } from "node:path";
import process from "node:process";
import { onPath } from "../../agents/claude_code/binary.ts";
import { installHooks, registeredCommand } from "../../agents/claude_code/install.ts";
import { mergeHookArgs, parseHookArgs } from "../../agents/hook_args.ts";
import { PROJECT_CONFIG, resolveRunSettings } from "../../runtime/load_settings.ts";
import { userRuleLayers } from "../../runtime/rules/load.ts";
import { NoemaError } from "../../errors.ts";
import { type HookGroup, hookSettings, INSTALL_EVENTS } from "../../agents/claude_code/settings.ts";
import { isCompiledBinary, noemaCommand, portableNoemaCommand } from "../../agents/noema_command.ts";
import { storeFromEnvironment } from "../store_option.ts";
import { CODEX_INSTALL_EVENTS, codexHookSettings, codexHooksPath } from "../../agents/codex/settings.ts";
import { GEMINI_INSTALL_EVENTS, geminiHookSettings, geminiSettingsPath } from "../../agents/gemini/settings.ts";
import { type CliContext, examples, type RegisterCommand } from "../context.ts";
import { HOOK_WAIT_MARGIN_S } from "../hook_wait.ts";
import { parseDuration } from "../time_args.ts";
import { usageError } from "../errors.ts";
import { ownEntry } from "../../json.ts";

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** Where an install goes: the user's file, the project's shared file, or (Claude Code) the project's local one. */
interface Where {
  user: boolean;
  shared: boolean;
}

/** Where each agent keeps its hooks, and noema's registration (with `command`) for it. */
const AGENTS: Record<string, {
  path(where: Where): string;
  hooks(command: string): Record<string, HookGroup[]>;
}> = {
  "claude-code": {
    path: ({ user, shared }) =>
      user
        ? join(process.env.HOME || homedir(), ".claude", "settings.json")
        : join(process.cwd(), ".claude", shared ? "settings.json" : "settings.local.json"),
    hooks: (command) => hookSettings(command, INSTALL_EVENTS),
  },
  codex: {
    path: ({ user }) =>
      codexHooksPath({
        user,
        cwd: process.cwd(),
        home: process.env.HOME || homedir(),
        codexHome: process.env.CODEX_HOME,
      }),
    hooks: (command) => codexHookSettings(command, CODEX_INSTALL_EVENTS),
  },
  gemini: {
    path: ({ user }) => geminiSettingsPath({ user, cwd: process.cwd(), home: process.env.HOME || homedir() }),
    hooks: (command) => geminiHookSettings(command, GEMINI_INSTALL_EVENTS),
  },
};

/**
 * Whether the install writes the portable command: a file in the project (shared with the team) gets
 * the portable command (`npx --no-install noema …`, from the binary `noema …`: {@link portableNoemaCommand}) and
 * project-relative policies; a file only this machine reads (Claude Code's
 * `settings.local.json`, the user's files) gets this noema's exact command. Codex and Gemini CLI have no per-machine
 * project file: their project install is the shared one.
 */
function isPortable(agent: string, where: Where): boolean {
  return !where.user && (where.shared || agent !== "claude-code");
}

/**
 * The hook's arguments with each `--policy` relative to the project (a policy outside it is a usage error, whose
 * way out is a per-machine install: Claude Code's without `--shared`, the others' `--user`).
 */
function projectRelativePolicies(args: string[], agent: string): string[] {
  const perMachine = agent === "claude-code" ? "install without --shared" : "install with --user";
  return args.map((a, i) => {
    if (args[i - 1] !== "--policy") return a;
    const rel = relative(process.cwd(), resolve(a));
    if (rel === "" || rel.startsWith("..") || isAbsolute(rel)) {
      throw usageError(
        `--policy ${a}: outside the project; a shared registration names project files only ` +
          `(a teammate's machine has no such path): copy it into the project, or ${perMachine}`,
      );
    }
    return rel;
  });
}

/** Notes that Claude Code's other project settings file registers noema's hook too (it would run twice). */
function otherProjectInstall(agent: string, where: Where): string | null {
  if (agent !== "claude-code" || where.user) return null;
  const other = AGENTS[agent].path({ user: false, shared: !where.shared });
  try {
    if (registeredCommand(other, agent) === null) return null;
  } catch {
    return null;
  }
  return `note: ${other} registers noema's hook too (Claude Code runs both): ` +
    `remove it with install-hooks claude-code${where.shared ? "" : " --shared"} --uninstall`;
}

/** Registers `noema install-hooks`. */
export const registerInstallHooks: RegisterCommand = (program, ctx: CliContext) => {
  program
    .command("install-hooks")
    .summary("register (or remove) noema's hook in Claude Code's, Codex's or Gemini CLI's settings")
    .description(
      "Add noema hook <agent> to the agent's hook settings, in the project (--project, the default) or for the " +
        "user (--user): claude-code .claude/settings.local.json (this machine's; --shared: .claude/settings.json, " +
        "the team's) or ~/.claude/settings.json (UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, " +
        "PermissionDenied, PermissionRequest, Stop, SessionEnd); codex .codex/hooks.json or $CODEX_HOME/hooks.json " +
        "(UserPromptSubmit, PreToolUse, PostToolUse, Stop; trust them in Codex with /hooks); gemini " +
        ".gemini/settings.json (BeforeAgent, BeforeTool, AfterTool, AfterAgent, SessionEnd). " +
        "A file in the project that the team shares (--shared; codex's and gemini's project files) gets a portable " +
        "command (npx --no-install noema hook <agent> … || exit 2; from the single binary, noema from PATH: " +
        "noema hook <agent> … || exit 2; --policy paths relative to the project); a " +
        "file only this machine reads gets this noema's own command. The rest of the file is kept; running it " +
        "again changes nothing. --uninstall removes noema's entries, and the file when nothing else is left.",
    )
    .argument("<agent>", `the agent CLI: ${Object.keys(AGENTS).join(", ")}`)
    .option("--project", "the project's settings (default)")
    .option("--user", "the user's settings (under $HOME)")
    .option(
      "--shared",
      "claude-code: the project's shared .claude/settings.json (default: .claude/settings.local.json, this " +
        "machine's), with a command that works on a teammate's machine: npx --no-install noema (from the single " +
        "binary: noema from PATH), project-relative " +
        "--policy paths (codex and gemini project installs are always shared)",
    )
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
    .option(
      "--wait <duration>",
      "claude-code only; needs a shared store (NOEMA_STORE or store in noema.jsonc, else exit 2): a call that needs approval waits (e.g. 10m) for a decision made on " +
        "any machine; the hook's timeout is set longer than the wait",
    )
    .option("--no-wait", "claude-code only: remove a registered --wait (a call that needs approval is asked again)")
    .addOption(
      new Option(
        "--approval-timeout <action>",
        "with --wait: when the wait runs out, deny the call or abort the episode",
      )
        .choices(["deny", "abort"] as const),
    )
    .option("--json", "print what changed as JSON")
    .addHelpText(
      "after",
      examples(
        ["noema install-hooks claude-code", "govern Claude Code in this project, on this machine"],
        ["noema install-hooks claude-code --shared --policy policies/no-push.ts", "for the team (commit the file)"],
        ["noema install-hooks claude-code --user --policy ~/policies/no-push.ts", "in every project"],
        ["noema install-hooks codex --user", "govern every Codex session (then trust the hooks with /hooks)"],
        ["noema install-hooks gemini", "govern Gemini CLI in this project"],
        ["noema install-hooks gemini --print", "for headless gemini -p runs (the registered policies are kept)"],
        ["noema install-hooks claude-code --wait 10m", "needs NOEMA_STORE: approvals from any machine, 10 min"],
        ["noema install-hooks claude-code --print", "for headless claude -p runs: approvals follow noema"],
        ["noema install-hooks claude-code --uninstall", "remove the registration"],
      ) +
        "\nInstalling again keeps what is registered (--policy files, --print) unless an option says otherwise.\n" +
        "Each policy is loaded first: a missing or broken one is refused (exit 2), never registered; so is a bad rule\n" +
        "in noema.jsonc's rules, its rules_file or the user's rules file (docs/rules.md).\n",
    )
    .action(async (agent, opts, cmd) => {
      const target = ownEntry(AGENTS, agent);
      if (!target) {
        throw usageError(
          `install-hooks supports ${Object.keys(AGENTS).join(", ")}, not ${JSON.stringify(agent)}`,
        );
      }
      // The global --project [name] takes the flag when given without a name.
      const project = opts.project || (cmd.optsWithGlobals() as { project?: unknown }).project === true;
      if (project && opts.user) throw usageError("--project and --user cannot be used together");
      if (opts.shared && opts.user) throw usageError("--shared and --user cannot be used together");
      const where: Where = { user: opts.user === true, shared: opts.shared === true };
      const path = target.path(where);
      if (opts.print !== undefined && agent === "codex") {
        throw usageError(`--print is for gemini and claude-code, not ${agent}`);
      }
      if ((opts.wait !== undefined || opts.approvalTimeout !== undefined) && agent !== "claude-code") {
        throw usageError(`--wait and --approval-timeout are for claude-code, not ${agent}`);
      }
      if (typeof opts.wait === "string") {
        parseDuration(opts.wait, "--wait");
        if (storeFromEnvironment() === null) {
          throw usageError(
            "--wait: no shared store is configured, so no decision could ever reach the waiting hook: set " +
              'NOEMA_STORE (in the agent\'s environment) or "store" in noema.jsonc, then install again (docs/store.md)',
          );
        }
      }
      const note = otherProjectInstall(agent, where);
      if (opts.uninstall) {
        const change = installHooks(path, target.hooks(""), { uninstall: true, agent });
        if (opts.json) return ctx.out.json(change);
        ctx.out.line(
          change.deleted
            ? `${path}: removed noema's hook from ${change.removed.join(", ")}; nothing else was left: file removed`
            : change.written
            ? `${path}: removed noema's hook from ${change.removed.join(", ")}`
            : `${path}: no noema hook to remove; nothing changed`,
        );
        if (note) ctx.out.line(note);
        return;
      }
      const registered = ((c) => c === null ? null : parseHookArgs(c, agent))(registeredCommand(path, agent));
      const policies = opts.policy === false ? false : opts.policy?.map((p) => resolve(p));
      const portable = isPortable(agent, where);
      const merged = withWait(
        mergeHookArgs(registered, { policies, print: opts.print }),
        opts.wait,
        opts.approvalTimeout,
      );
      const args = portable ? projectRelativePolicies(merged, agent) : merged;
      const kept = args.filter((_, i) => args[i - 1] === "--policy");
      // The project's own policies (noema.jsonc, policies/) are the hook's too, when it runs here.
      const local = opts.user ? [] : projectPolicies().filter((p): p is string => typeof p === "string");
      checkRules(opts.user === true);
      await checkPolicies([...kept, ...local]);
      // `|| exit 2` on every registration: a noema that cannot start (moved, uninstalled) or dies (OOM-killed, a
      // crash) must block the call; the agent runs it on any other failing exit code.
      const command = portable
        ? portableNoemaCommand(["hook", agent, ...args])
        : `${noemaCommand(["hook", agent, ...args])} || exit 2`;
      const hooks = withHookTimeout(target.hooks(command), args);
      const change = installHooks(path, hooks, { agent });
      const ungoverned = kept.length === 0 && projectPolicies().length === 0 && !hasRules(opts.user === true);
      if (opts.json) return ctx.out.json({ ...change, command, ungoverned });
      if (!change.written) ctx.out.line(`${path}: already installed; nothing changed`);
      else ctx.out.line(`${path}: noema hook ${agent} registered for ${change.added.join(", ")}`);
      ctx.out.line(`command: ${command}`);
      if (note) ctx.out.line(note);
      const onPath = portable && isCompiledBinary() ? noemaOnPathNote() : null;
      if (onPath) ctx.out.line(onPath);
      if (ungoverned) {
        ctx.out.line(
          "ungoverned: recorded only — no policy or rules (--policy, or noema.jsonc here): every call is recorded, " +
            "none is checked",
        );
      }
    });
};

/**
 * From the single binary, the portable command runs `noema` from `PATH`: a note when this machine's `PATH` has
 * none (the agent's every call would be blocked here too), else null.
 */
function noemaOnPathNote(): string | null {
  const names = process.platform === "win32" ? ["noema.exe", "noema"] : ["noema"];
  if (names.some((name) => onPath(name, process.env.PATH) !== null)) return null;
  return "note: the command runs noema from PATH, and this PATH has none: put the binary on PATH " +
    `(cp ${process.execPath} ~/bin/noema), here and on each teammate's machine, or the agent's every call is blocked`;
}

/** The hook's arguments with `--wait` (and `--approval-timeout`) as given: replaced, removed (`false`), or kept. */
function withWait(args: string[], wait: string | boolean | undefined, onTimeout: string | undefined): string[] {
  if (wait === undefined && onTimeout === undefined) return args;
  const kept: string[] = [];
  let registered: string | null = null, registeredTimeout: string | null = null;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--wait" && i + 1 < args.length) registered = args[++i];
    else if (args[i] === "--approval-timeout" && i + 1 < args.length) registeredTimeout = args[++i];
    else kept.push(args[i]);
  }
  const w = wait === false ? null : typeof wait === "string" ? wait : registered;
  if (w === null) return kept;
  const t = onTimeout ?? registeredTimeout;
  return [...kept, "--wait", w, ...(t !== null && t !== "deny" ? ["--approval-timeout", t] : [])];
}

/**
 * Claude Code kills a hook that outlives its timeout (60 s unless set): a hook that waits for decisions gets a
 * timeout longer than its wait.
 */
function withHookTimeout(hooks: Record<string, HookGroup[]>, args: string[]): Record<string, HookGroup[]> {
  const i = args.indexOf("--wait");
  if (i < 0) return hooks;
  const seconds = Math.ceil(parseDuration(args[i + 1], "--wait") / 1000) + HOOK_WAIT_MARGIN_S;
  const pre = hooks.PreToolUse;
  if (pre) hooks.PreToolUse = pre.map((g) => ({ ...g, hooks: g.hooks.map((h) => ({ ...h, timeout: seconds })) }));
  return hooks;
}

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

/**
 * Reads the rule sets the hook will read (the user's rules file; for a project install, noema.jsonc's `rules` and
 * `rules_file`): a bad one is refused now (a located error, exit 2), not found at the first tool call.
 */
function checkRules(user: boolean): void {
  userRuleLayers();
  if (user) return;
  try {
    resolveRunSettings({ taskOrFile: "-", options: {} });
  } catch (e) {
    const field = e instanceof NoemaError ? e.location.field ?? "" : "";
    const file = e instanceof NoemaError ? e.location.file ?? "" : "";
    // The rest of a broken noema.jsonc is the hook's to report; its rules (and the files they name) are checked here.
    if (/^rules(_file)?\b/.test(field) || file !== "" && resolve(file) !== resolve(PROJECT_CONFIG)) throw e;
  }
}

/** Whether the hook has rules to apply: the user's, or (project install) noema.jsonc's. */
function hasRules(user: boolean): boolean {
  if (user) return userRuleLayers().length > 0;
  try {
    return (resolveRunSettings({ taskOrFile: "-", options: {} }).options.rules?.length ?? 0) > 0;
  } catch {
    return false;
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
