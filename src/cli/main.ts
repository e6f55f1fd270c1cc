/**
 * The `noema` command line: builds the commander program from the command
 * list in `./commands/index.ts` and runs it, turning every error into one
 * line on stderr and an exit code (0 ok, 1 error, 2 usage, 3 vetoed, 4 paused).
 *
 * Runs under Bun (`bun src/cli/main.ts`, `bin/noema.ts`) and Deno
 * (`deno run -A src/cli/main.ts`).
 *
 * @module
 */
import { Command, CommanderError, type CommandUnknownOpts } from "@commander-js/extra-typings";
import { existsSync } from "node:fs";
import process from "node:process";
import { EXIT, type ExitCode, NoemaError } from "../errors.ts";
import { COMMANDS, loadCommands } from "./commands/index.ts";
import type { RegisterCommand } from "./context.ts";
import { versionText } from "./commands/version.ts";
import { type CliContext, examples } from "./context.ts";
import { reportError } from "./errors.ts";
import { exitProcess, guardExits } from "../plugins/exit_guard.ts";
import { runBackgroundCommand } from "./background_commands.ts";
import { createOutput, type Output } from "./output.ts";

/** A usage error a command raised about one of its options (`--policy-timeout must be …`): it names no file. */
function isOptionUsageError(e: unknown): e is NoemaError {
  return e instanceof NoemaError && e.exitCode === EXIT.USAGE && e.location.file === undefined &&
    /^--[a-z]/.test(e.detail) && !e.detail.includes("--help");
}

/** Commander's error text made one line: without `error: `, its suggestion kept. */
function oneLineError(text: string): string {
  return text.replace(/^error:\s*/i, "").split("\n").map((l) => l.trim()).filter(Boolean).join(" ");
}

/**
 * Builds the program with the given commands registered (see
 * `loadCommands`). Usage errors are collected into `usage.message` instead
 * of being printed, so the caller can print them as one line.
 *
 * @example
 * ```ts
 * import { buildProgram } from "./main.ts";
 * import { loadCommands } from "./commands/index.ts";
 * import { createOutput } from "./output.ts";
 * const program = buildProgram({ out: createOutput(), exitCode: 0 }, await loadCommands(null));
 * console.log(program.commands.map((c) => c.name()));
 * ```
 */
export function buildProgram(
  ctx: CliContext,
  registers: readonly RegisterCommand[],
  usage: { message: string | null } = { message: null },
): Command {
  const { out } = ctx;
  const program = new Command()
    .name("noema")
    .description(
      "Run AI-agent episodes through adapters, with policy plugins consulted before every action, and record each one " +
        "as plain JSON artifacts; read, check and explore them.",
    )
    .version(versionText(), "-V, --version", "print noema and contract versions")
    .option("--root <dir>", "episodes root (default: $NOEMA_ROOT or ./.noema)")
    .option(
      "--store <url>",
      "shared store, postgres://… or file:///dir (default: $NOEMA_STORE; none: local files only)",
    )
    .option(
      // Its value is optional for commander only: install-hooks has a flag of that name (its project's settings).
      "--project [name]",
      "the project runs are published under and the one the store's readers see (default: $NOEMA_PROJECT, else " +
        "noema.jsonc's project; none: every project)",
    )
    .option("--all-projects", "list, approvals, serve, pull and store prune see every project")
    .option(
      "--otel <url>",
      "export runs live as OpenTelemetry traces to this OTLP/HTTP collector (default: $OTEL_EXPORTER_OTLP_ENDPOINT)",
    )
    .option("--debug", "show stack traces of internal errors")
    .helpOption("-h, --help", "show help")
    .configureHelp({
      showGlobalOptions: true,
      // Descriptions are written as paragraphs broken for the source; help wraps them to the terminal's width.
      commandDescription: (cmd) => cmd.description().replace(/([^\n])\n(?!\n)/g, "$1 "),
    })
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (s) => out.stdout.write(s),
      writeErr: (s) => out.stderr.write(s),
      outputError: (s) => {
        usage.message = oneLineError(s);
      },
    })
    .addHelpText(
      "after",
      examples(
        ['noema run "Say hello"', "run an episode (minimal adapter and planner)"],
        ["noema run examples/sql-vetoed.jsonc", "a task file; sql-guard vetoes it (exit 3)"],
        ["noema list --status vetoed --since 7d", "the newest episodes, filtered"],
        ["noema view last", "a dashboard of the newest episode (or an id, or a unique id prefix)"],
        ["noema events last --follow", "follow a live run"],
        ['noema policy test my-policy.ts --command "rm -rf /"', "a policy's verdict on an action"],
        ["noema events ep_01K9… --phase act --json", "act events as NDJSON"],
        ["noema validate ep_01K9…", "check an episode against the contract"],
        ["NOEMA_ROOT=.noesis noema list", "runs written by noesis"],
      ) +
        "\nExit codes: 0 ok, 1 error (or validate found problems), 2 usage, 3 vetoed, 4 paused,\n" +
        "5-10 approve/reject/resume refused (see noema resume --help), 11 no space left on the device,\n" +
        "130 interrupted (Ctrl-C).\n" +
        "Output: JSON is indented on a terminal and one line when piped; colour only on a terminal\n" +
        "and without NO_COLOR. More on a command: noema help <command> (or noema <command> --help).\n",
    );
  for (const register of registers) register(program, ctx);
  addStoreHooks(program, out);
  return program;
}

/** What runs around every command: the project in force, ids only the store holds pulled, pending runs published. */
function addStoreHooks(program: Command, out: CliContext["out"]): void {
  // The project in force is checked before anything runs, and passed on in NOEMA_PROJECT: the processes a run starts
  // (its publishing process, a background sync) publish its episode under it.
  program.hook("preAction", async (_program, action) => {
    const given = action.optsWithGlobals().project !== undefined || !!process.env.NOEMA_PROJECT;
    if (!given && !existsSync("noema.jsonc")) return;
    // A hook answers its agent at once: it reads no settings file for this (its publishing takes NOEMA_PROJECT as it
    // is, a valid name or none).
    if (action.name() === "hook") return;
    const { projectOf } = await import("./store_option.ts");
    const project = projectOf(action as unknown as CommandUnknownOpts);
    if (project !== null) process.env.NOEMA_PROJECT = project;
  });
  // A read command given an id that only the shared store holds reads a pulled copy.
  program.hook("preAction", async (_program, action) => {
    if (!storeMayBeSet(action)) return; // no store: no cost
    const { pullMissingEpisodes } = await import("./store_pull.ts");
    await pullMissingEpisodes(action as unknown as CommandUnknownOpts);
  });
  // The command that runs: after it fails, `main` still hands on what earlier runs left pending (`publishAfter`).
  program.hook("preAction", (_program, action) => {
    started = action;
  });
  // With a store: after any command, publish what earlier runs could not (bounded, never failing the command).
  program.hook("postAction", async (_program, action) => {
    await publishAfter(action as unknown as CommandUnknownOpts, out, false);
  });
}

/** The command the last parse ran (its `preAction`), for {@link publishAfter} after it failed. */
let started: CommandUnknownOpts | null = null;

/**
 * With a store configured, after a command: the episodes earlier runs left pending are published (see
 * `publishPendingAfter`). After one that `failed` (a resume refused because the run is sealed), a run-ending command
 * still hands them to a background `noema sync`, as it does when it succeeds; other failed commands publish nothing.
 */
async function publishAfter(action: CommandUnknownOpts, out: CliContext["out"], failed: boolean): Promise<void> {
  if (!storeMayBeSet(action)) return;
  const [{ storeUrlOf }, { publishPendingAfter }, { resolveRoot }] = await Promise.all([
    import("./store_option.ts"),
    import("./store_publish.ts"),
    import("../store/layout.ts"),
  ]);
  const pick = storeUrlOf(action);
  const root = resolveRoot({ root: action.optsWithGlobals().root as string | undefined });
  if (pick) await publishPendingAfter(action, out, pick, root, { failed });
}

/**
 * Whether a store may be configured (`--store`, `NOEMA_STORE`, or a `noema.jsonc` that may name one). A hook call
 * never opens the store around its answer: the agent waits on it. Its episode is marked pending, and the resident
 * hook server publishes it (a hook process publishing too would race that server for the episode's lease).
 */
function storeMayBeSet(action: { name(): string; optsWithGlobals(): Record<string, unknown> }): boolean {
  if (action.name() === "hook") return false;
  return !!process.env.NOEMA_STORE || action.optsWithGlobals().store !== undefined || existsSync("noema.jsonc");
}

/** The first word of `argv` that is not an option (nor the value of `--root`, `--store` or `--otel`): the command it names, if any. */
function commandWord(argv: readonly string[]): string | null {
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--root" || argv[i] === "--store" || argv[i] === "--otel" || argv[i] === "--project") i++;
    else if (!argv[i].startsWith("-")) return argv[i];
  }
  return null;
}

/**
 * `noema --project list`: with no command named, the word after `--project` (whose value commander takes as optional,
 * for install-hooks) is a command, so no project name was given. The problem to say, or null.
 */
function projectTakesCommand(argv: readonly string[]): string | null {
  const at = argv.indexOf("--project");
  const word = at < 0 ? undefined : argv[at + 1];
  if (word === undefined || commandWord(argv) !== null || !COMMANDS.some((c) => c.names.includes(word))) return null;
  return `--project needs a project name: '${word}' is a command (noema --project NAME ${word})`;
}

/** The commands a command line needs: the one it names (all for help and unknown words; none for `--version`). */
function commandsFor(argv: readonly string[]): Promise<RegisterCommand[]> {
  const word = commandWord(argv);
  const has = (...flags: string[]) => flags.some((f) => argv.includes(f));
  if (word === null && has("-V", "--version") && !has("-h", "--help")) return Promise.resolve([]);
  return loadCommands(word);
}

/** Commands that may load plugin files from disk. */
const PLUGIN_COMMANDS: ReadonlySet<string> = new Set(["run", "resume", "approve", "reject", "policy", "mcp"]);

/** The name of the command `argv` names (by its name or an alias), or null: for hints and plugin loading. */
function commandIn(program: Command, argv: readonly string[]): string | null {
  const word = commandWord(argv);
  const cmd = word === null ? undefined : program.commands.find((c) => c.name() === word || c.aliases().includes(word));
  return cmd ? cmd.name() : null;
}

/** The subcommand of `cmd` named `word` (by its name or an alias). */
const subcommand = (cmd: CommandUnknownOpts, word: string | null): CommandUnknownOpts | undefined =>
  word === null ? undefined : cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));

/**
 * The command `argv` names, subcommands included (`policy test`), or null: the help page a usage error points at
 * is the one of the command that failed.
 */
function commandPathIn(program: Command, argv: readonly string[]): string | null {
  const names: string[] = [];
  let cmd: CommandUnknownOpts = program as unknown as CommandUnknownOpts, rest = [...argv];
  for (let word = commandWord(rest), sub = subcommand(cmd, word); sub; sub = subcommand(cmd, word)) {
    names.push(sub.name());
    [cmd, rest] = [sub, rest.slice(rest.indexOf(word!) + 1)];
    word = commandWord(rest);
  }
  return names.length > 0 ? names.join(" ") : null;
}

/** For `noema help WORD` where WORD names no command: the usage error to print (commander prints the whole help). */
async function unknownHelpTopic(program: Command, argv: readonly string[]): Promise<string | null> {
  if (commandWord(argv) !== "help") return null;
  const topic = commandWord(argv.slice(argv.indexOf("help") + 1));
  const root = program as unknown as CommandUnknownOpts;
  if (topic === null || subcommand(root, topic) !== undefined) return null;
  const { didYouMean } = await import("../runtime/jsonc.ts");
  const hint = didYouMean(topic, root.commands.map((c) => c.name()));
  return `unknown command '${topic}'${hint ? ` (Did you mean ${hint}?)` : ""}`;
}

/**
 * Runs the CLI on `argv` (without the runtime and script) and returns the
 * exit code. Never throws; never calls `process.exit`.
 *
 * @example
 * ```ts
 * import { main } from "./main.ts";
 * const code = await main(["list", "--limit", "5"]);
 * ```
 */
export async function main(
  argv: readonly string[] = process.argv.slice(2),
  out: Output = createOutput(),
): Promise<ExitCode> {
  // Internal: a run's live OpenTelemetry export or live publishing (not commands of the CLI).
  const background = await runBackgroundCommand(argv[0]);
  if (background !== null) return background as ExitCode;
  const debug = argv.includes("--debug") || ["1", "true", "yes"].includes(process.env.NOEMA_DEBUG ?? "");
  const ctx: CliContext = { out, exitCode: EXIT.OK };
  const usage: { message: string | null } = { message: null };
  let program: Command | null = null;
  started = null;
  try {
    program = buildProgram(ctx, await commandsFor(argv), usage);
    if (argv.length === 0) {
      program.outputHelp();
      out.flush();
      return EXIT.OK;
    }
    if (PLUGIN_COMMANDS.has(commandIn(program, argv) ?? "")) {
      // Plugin files (policies, adapters, planners, assertion plugins) import "noema": serve it before any loads.
      // A plugin that ends the process would leave its episode unsealed: its exit throws instead (a failed plugin).
      guardExits();
      const { registerPluginApi } = await import("../plugins/loader.ts");
      await registerPluginApi();
    }
    const swallowed = projectTakesCommand(argv);
    if (swallowed !== null) {
      out.note(`noema: ${swallowed} (see 'noema --help')`);
      out.flush();
      return EXIT.USAGE;
    }
    const unknownTopic = await unknownHelpTopic(program, argv);
    if (unknownTopic !== null) {
      out.note(`noema: ${unknownTopic} (see 'noema --help')`);
      out.flush();
      return EXIT.USAGE;
    }
    await program.parseAsync([...argv], { from: "user" });
    out.flush();
    // A command sets ctx.exitCode (or, equivalently, process.exitCode).
    const fromProcess = Number(process.exitCode ?? 0);
    return ctx.exitCode !== EXIT.OK
      ? ctx.exitCode
      : (Number.isInteger(fromProcess) ? fromProcess : EXIT.ERROR) as ExitCode;
  } catch (e) {
    const hint = () => {
      const cmd = program ? commandPathIn(program, argv) : null;
      return ` (see 'noema ${cmd ? `${cmd} ` : ""}--help')`;
    };
    if (e instanceof CommanderError && usage.message !== null) out.note(`noema: ${usage.message}${hint()}`);
    // A command's own usage error (an option's value, options that do not go together) points to its help too, as
    // commander's do; one about a file names the file instead.
    const told = isOptionUsageError(e) ? new NoemaError(e.code, e.message + hint(), { exitCode: e.exitCode }) : e;
    const code = reportError(told, out, { debug });
    try {
      out.flush();
    } catch {
      // stdout went away: nothing more to say.
    }
    // A store setting or root that cannot be read: the command's own error is what is said.
    if (started !== null) await publishAfter(started, out, true).catch(() => {});
    return code;
  }
}

if (import.meta.main) {
  exitProcess(await main());
}
