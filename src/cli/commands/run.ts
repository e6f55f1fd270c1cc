/**
 * `noema run`: execute an episode toward a task, or a JSONC task file.
 *
 * @module
 */
import { exitProcess } from "../../plugins/exit_guard.ts";
import { type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { existsSync, type Stats, statSync } from "node:fs";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";
import { run } from "../../drivers.ts";
import type { RunOptions } from "../../runtime/run.ts";
import { parseJsoncFile } from "../../runtime/jsonc.ts";
import { isTaskFileArg, PROJECT_CONFIG, resolveRunSettings } from "../../runtime/load_settings.ts";
import { locatedAtField, locatedInTaskFile } from "../task_file_errors.ts";
import { applyLlmFlags } from "../../llm/run_flags.ts";
import {
  checkRoot,
  type CliContext,
  examples,
  type GlobalOptions,
  globalOptions,
  type RegisterCommand,
} from "../context.ts";
import { collect } from "../args.ts";
import { resolveEpisodeRef } from "../episode_ref.ts";
import { stoppedForSpace, usageError } from "../errors.ts";
import { neutralize, oneLine } from "../output.ts";
import { printRunResult } from "../run_result.ts";
import { storeUrlOf } from "../store_option.ts";
import { liveOtelFor, otelSettingsOf } from "../otel_option.ts";
import type { OtelSettings } from "../../export/otel/config.ts";
import { joinNotices } from "../../export/otel/run_hooks.ts";
import { startLivePublishing } from "../store_publish.ts";
import { waitAndResume } from "../run_wait.ts";
import { parseDuration } from "../time_args.ts";
import { episodeDirFor, resolveRoot } from "../../store/layout.ts";
import {
  addLimitOptions,
  addMetaOptions,
  addModeOptions,
  addPolicyOption,
  gateRunOptions,
  numberOption,
  verifyCommandOption,
  verifyFileExistsOption,
  verifyFlags,
} from "../run_options.ts";

/**
 * A task argument that names a file (ends in .json/.jsonc, or is one word
 * with a slash) that does not exist is a typo, not a task: exit 2. One that
 * names a directory, FIFO or device is not a task file either (nor a task).
 */
function checkTaskArg(arg: string): void {
  const named = /\.jsonc?$/i.test(arg) || (/^\S+$/.test(arg) && /[\\/]/.test(arg));
  if (!named) return;
  if (!existsSync(arg)) throw usageError(`${arg}: task file not found`);
  const st = statSync(arg);
  if (!st.isFile()) throw usageError(`${arg}: not a task file: it is ${fileKind(st)}, not a regular file`);
}

/** What a non-regular file is, for an error message. */
function fileKind(st: Stats): string {
  if (st.isDirectory()) return "a directory";
  if (st.isFIFO()) return "a FIFO";
  if (st.isCharacterDevice() || st.isBlockDevice()) return "a device";
  if (st.isSocket()) return "a socket";
  return "not a regular file";
}

/** Long options common enough in other programs' command lines not to warn about after `--`. */
const COMMON_FLAGS = new Set(["--json", "--quiet", "--text", "--tag", "--seed", "--mode", "--workspace", "--help"]);

/**
 * Warns when words after `--` (which go to the adapter) are noema's own run
 * options, e.g. `--verify-file-exists` given to `sh` instead of to noema.
 */
function warnOwnFlagsAfterDashes(ctx: CliContext, cmd: CommandUnknownOpts, args: readonly string[]): void {
  const own = new Set(cmd.options.map((o) => o.long).filter((f): f is string => !!f && !COMMON_FLAGS.has(f)));
  const found = [...new Set(args.map((a) => a.split("=")[0]).filter((a) => own.has(a)))];
  if (found.length === 0) return;
  ctx.out.note(
    `noema: warning: ${found.join(", ")} after -- ${
      found.length === 1 ? "goes" : "go"
    } to the adapter, not to noema; put noema's options before --`,
  );
}

/**
 * Refuses (a usage error) words after the task that were not put after `--`: `noema run Say hello` would record the
 * task "Say" and run `hello` (the shell adapter) or drop it (minimal). The adapter's arguments come after `--`.
 */
function refuseWordsWithoutDashes(cmd: CommandUnknownOpts, task: string | undefined, args: readonly string[]): void {
  if (args.length === 0) return;
  let root: { parent: unknown; rawArgs?: string[] } = cmd as never;
  while (root.parent) root = root.parent as never;
  if ((root.rawArgs ?? []).includes("--")) return;
  throw usageError(
    `the task is one argument, and ${JSON.stringify(args.join(" "))} came after it without --: quote the whole task ` +
      `(${
        JSON.stringify([task, ...args].join(" "))
      }), or put the adapter's arguments after -- (see 'noema run --help')`,
  );
}

const STATUS_MARK: Record<string, string> = { done: "✓", failed: "✗", skipped: "–", vetoed: "⊘" };

/** `noema run`'s arguments, options and help text. */
function runCommand(program: CommandUnknownOpts) {
  const base = program
    .command("run")
    .description("run an episode toward a task (or a JSONC task file) and record its artifacts")
    .argument("[task]", "the task, or a path to a .jsonc task file")
    .argument("[args...]", "arguments for the adapter, after --")
    .option(
      "--using <adapter>",
      "adapter: minimal (default), shell, command, scripted, llm (noema's agent), claude-code, or a .ts file",
    );
  const withModel = addPolicyOption(base)
    .option(
      "--model <provider:model>",
      "LLM agent model, e.g. ollama:qwen2.5-coder, openai:gpt-4o (implies --using llm)",
    )
    .option("--base-url <url>", "LLM agent: the model server's base URL, e.g. http://127.0.0.1:11434/v1")
    .option(
      "--replay <episode>",
      "re-run an llm episode (id, prefix or 'last'): its recorded model turns (no network), under the policies; " +
        "its tools run again FOR REAL in the workspace unless --dry-run",
    )
    .option(
      "--dry-run",
      "with --replay: consult the policies and record their verdicts, but execute no tool (each call gets its " +
        "recorded result): a what-if that does not touch the workspace",
    )
    .option(
      "--continue <episode>",
      "pick up the conversation of an llm episode a failure stopped (server down, timeout, max_turns…) in a new one",
    )
    .option("--planner <file>", "planner plugin (.ts); default: the minimal planner, or the task file's steps");
  const withDirMin = addModeOptions(withModel).option(
    "--dir-min <confidence>",
    "direction_min_confidence: verdicts below it are not applied (default 0.5)",
    numberOption("--dir-min", 0, 1),
  );
  const withSeed = addLimitOptions(withDirMin).option(
    "--seed <n>",
    "seed for reproducibility (default 0)",
    numberOption("--seed", -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true),
  );
  return addMetaOptions(withSeed, "the directory the adapter works in")
    .option("--episode-id <id>", "use this episode id instead of a new ep_<ULID>")
    .option(
      "--pause-on-veto",
      "pause for approval (exit 4) instead of ending the run when an enforced veto blocks an action",
    )
    .option(
      "--wait [duration]",
      "with a shared store: a pause for approval waits for a decision made on any machine (default 1h; outages of the " +
        "store are waited out), then resumes",
    )
    .addOption(
      new Option("--approval-timeout <action>", "when --wait runs out: deny the call, or abort the run")
        .choices(["deny", "abort"] as const).default("deny" as const),
    )
    .option("--verify-file <file>", "assertions from a JSONC list (file_exists, file_contains, only_modified, …)")
    .addOption(verifyFileExistsOption("after the run"))
    .option("--verify-file-absent <path>", "assert the file does not exist after the run; repeatable", collect)
    .option("--verify-file-contains <path>", "assert the file contains the matching --text; repeatable", collect)
    .option("--text <text>", "the text for each --verify-file-contains, in order; repeatable", collect)
    .option("--verify-only-modified <path...>", "assert only these paths or globs changed")
    .option("--verify-no-modifications", "assert the workspace did not change")
    .addOption(verifyCommandOption())
    .option(
      "--verify-ignore <name>",
      "a path segment the snapshots ignore (besides .git, node_modules, .noema); repeatable",
      collect,
    )
    .option(
      "--json",
      'print {"episode_id", "episode_dir", "status", "outcome", "exit_code", "blocked", "error", "program_exit_code", "message", "answer"}',
    )
    .option("-q, --quiet", "print only the episode id")
    .addHelpText(
      "after",
      examples(
        ['noema run "Say hello"', "minimal adapter and planner: detect → act → verify"],
        ["noema run examples/safe-shell.jsonc", "a task file: steps, adapter, policies, tags"],
        ['noema run "fix the test" --using command -- my-agent --task "{task}"', "record an existing agent CLI's run"],
        [
          'noema run "fix the test" --model ollama:qwen2.5-coder --workspace .',
          "noema's own agent; each tool call governed",
        ],
        [
          "noema run --replay last --policy new-policy.ts --dry-run",
          "would this policy have blocked what the agent did? (no tool runs)",
        ],
        ["noema run --continue last", "pick up an agent run a failure stopped (server down, max_turns…)"],
        ["noema run examples/sql-vetoed.jsonc; echo $?", "a vetoed run exits 3"],
        ['noema run "deploy" --policy plugins/policies/approval-gate.ts --json', "machine-readable result"],
      ) +
        "\nExit codes: 0 ok, 1 error (or verification failed), 2 usage (also: a task file that does not exist),\n" +
        "3 vetoed, 4 paused for approval, 11 no space left on the device (noema resume continues the run),\n" +
        "130 interrupted (Ctrl-C).\n" +
        "Settings: noema.jsonc in the current directory (and the folder its policies_dir names) < the task file\n" +
        '< flags. A ./policies/ folder is loaded only with "policies_dir": "policies" in noema.jsonc; every\n' +
        "plugin file noema.jsonc loads is named on stderr. noema's options go before --: what follows -- goes\n" +
        "to the adapter.\n",
    );
}

/** The options `noema run` parses. */
type RunCliOptions = ReturnType<ReturnType<typeof runCommand>["opts"]>;

/** Registers `noema run`. */
export const registerRun: RegisterCommand = (program, ctx: CliContext) => {
  runCommand(program).action(async (taskArg, args, opts, cmd) => {
    const g = globalOptions(cmd);
    const flags: RunOptions = {
      ...gateRunOptions(opts),
      using: opts.using,
      planner: opts.planner,
      direction_min_confidence: opts.dirMin,
      seed: opts.seed,
      workspace: opts.workspace,
      episode_id: opts.episodeId,
      pause_on_veto: opts.pauseOnVeto,
      args: args.length > 0 ? args : undefined,
      root: g.root,
    };
    if (taskArg !== undefined) checkTaskArg(taskArg);
    refuseWordsWithoutDashes(cmd, taskArg, args);
    warnOwnFlagsAfterDashes(ctx, cmd, args);
    const { task, options } = runSettings(ctx, taskArg, flags, opts, g);
    // noema.jsonc's `root` (the flag and NOEMA_ROOT were checked with the global options).
    if (options.root !== undefined && options.root !== g.root) checkRoot(options.root, `${PROJECT_CONFIG} root`);
    if (opts.json && opts.quiet) throw usageError("--json and --quiet cannot be used together");
    if (opts.wait !== undefined && storeUrlOf(cmd) === null) {
      throw usageError("--wait waits for a decision in the shared store: give --store or set NOEMA_STORE");
    }
    if (typeof opts.wait === "string") parseDuration(opts.wait, "--wait");
    try {
      await runInterruptible(ctx, task, options, opts, g.root, storeUrlOf(cmd), otelSettingsOf(cmd, ctx.out));
    } catch (e) {
      // A task file's value refused as the run starts (an unknown adapter, a policy or workspace not there): at its
      // place in the file, as the file's own mistakes are said.
      let located = taskArg !== undefined && isTaskFileArg(taskArg) ? locatedInTaskFile(e, taskArg) : e;
      // An error naming a field of another file it read (a --verify-file's assertion): that field's line too.
      if (located instanceof NoemaError && located.location.file !== undefined) {
        located = locatedAtField(located, located.location.file);
      }
      // A --workspace that is not a directory: an option's value, whose help says how to give it.
      if (located instanceof NoemaError && located.code === "bad_workspace" && located.location.file === undefined) {
        throw new NoemaError(located.code, `${located.detail} (see 'noema run --help')`, {
          exitCode: located.exitCode,
        });
      }
      throw located;
    }
  });
};

/**
 * The run's task and options: noema.jsonc and the task file under the flags (its notices on stderr),
 * the LLM flags, then the assertions of `--verify-file` and the other `--verify-*` flags.
 */
function runSettings(
  ctx: CliContext,
  taskArg: string | undefined,
  flags: RunOptions,
  opts: RunCliOptions,
  g: GlobalOptions,
): { task: string; options: RunOptions } {
  const flagSpecs = verifyFlags(opts);
  // Without a task (a replay or a continuation takes the recorded one), noema.jsonc and policies/ still apply.
  const resolved = resolveRunSettings({ taskOrFile: taskArg ?? "(replay)", options: flags });
  for (const n of [...resolved.notices, ...resolved.warnings]) ctx.out.note(`noema: ${n}`);
  const { task, options } = applyLlmFlags(taskArg === undefined ? undefined : resolved.task, resolved.options, {
    model: opts.model,
    baseUrl: opts.baseUrl,
    replay: opts.replay === undefined ? undefined : resolveEpisodeRef(opts.replay, g),
    dryRun: opts.dryRun,
    continue: opts.continue === undefined ? undefined : resolveEpisodeRef(opts.continue, g),
  });
  if (opts.verifyFile !== undefined) {
    const list = parseJsoncFile(opts.verifyFile);
    if (!Array.isArray(list)) throw usageError(`${opts.verifyFile}: expected a JSON list of assertions`);
    options.verify = [...(options.verify ?? []), ...list];
    options.verify_source = opts.verifyFile;
  }
  if (flagSpecs.length > 0) options.verify = [...(options.verify ?? []), ...flagSpecs];

  if (opts.verifyIgnore) options.verify_ignore = opts.verifyIgnore;
  return { task, options };
}

/**
 * Runs the episode and prints its result. The first SIGINT/SIGTERM stops it after the current
 * action; a second one exits at once (130). On a terminal, progress goes to stderr.
 */
async function runInterruptible(
  ctx: CliContext,
  task: string,
  options: RunOptions,
  opts: RunCliOptions,
  root: string | undefined,
  store: { url: string; from: string } | null = null,
  otelSettings: OtelSettings | null = null,
): Promise<void> {
  const out = ctx.out;
  const progress = !opts.json && !opts.quiet && out.stderr.isTTY;
  const controller = new AbortController();
  let interrupts = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    interrupts++;
    if (interrupts > 1) exitProcess(EXIT.INTERRUPTED);
    out.note(`noema: ${sig}: stopping the run and the action running (again to quit at once)`);
    controller.abort();
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  const publishing = store === null
    ? null
    : await startLivePublishing(out, resolveRoot({ root: options.root ?? root }), store);
  const otel = liveOtelFor(otelSettings, options.root ?? root, out);
  const live = progress ? liveProgress(ctx) : { onSnapshotProgress: undefined, onEvent: undefined };
  const note = replayNote(opts);
  let started: string | null = null; // the episode, once it started
  try {
    let result = await run(task, {
      ...options,
      signal: controller.signal,
      ...live,
      onEvent: (e) => {
        if (e.phase === "start" && typeof e.payload.episode_id === "string") started = e.payload.episode_id;
        // Said once the episode starts (not before a usage error): whether the replay acts on the workspace.
        if (note !== null && e.phase === "start") out.note(note);
        live.onEvent?.(e);
        publishing?.onEvent(e);
        otel?.onEvent(e);
      },
      notices: joinNotices(publishing?.notices, otel?.notices),
    }).catch((e) => {
      // Resumable only once its directory is in place (the disk may fill while it is being created).
      const recorded = started !== null &&
        existsSync(episodeDirFor(started, resolveRoot({ root: options.root ?? root })));
      throw stoppedForSpace(e, recorded ? started : null);
    });
    await publishing?.finish(result.episode_id, result.status === "pending");
    await otel?.finish(result.episode_id);
    if (result.status === "pending" && opts.wait !== undefined && store !== null) {
      result = await waitAndResume(ctx, result, {
        store,
        root: resolveRoot({ root: options.root ?? root }),
        timeoutMs: opts.wait === true ? 3_600_000 : parseDuration(opts.wait, "--wait"),
        onTimeout: opts.approvalTimeout,
        signal: controller.signal,
        onEvent: live.onEvent,
        otel: (id) => liveOtelFor(otelSettings, options.root ?? root, out, id),
      });
    }
    printRunResult(ctx, result, { json: opts.json, quiet: opts.quiet, root, interrupted: interrupts > 0 });
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}

/** What a replay says on stderr when it starts: whether its tools act on the workspace. */
function replayNote(opts: RunCliOptions): string | null {
  if (opts.replay === undefined) return null;
  return opts.dryRun
    ? "noema: dry run: the policies are consulted, no tool is executed (each call gets its recorded result)"
    : "noema: replay: the recorded tool calls run again in the workspace (--dry-run executes none)";
}

/**
 * The live progress on stderr: a snapshot's hashing on one rewritten line, then a line for the
 * start, each act and each veto.
 */
function liveProgress(ctx: CliContext): Required<Pick<RunOptions, "onSnapshotProgress" | "onEvent">> {
  const out = ctx.out;
  const c = out.errColor;
  let statusLine = false; // a snapshot progress line is showing on stderr
  return {
    onSnapshotProgress: (which, files) => {
      out.stderr.write(`\r\x1b[2K  snapshot ${which}: ${files} files hashed…`);
      out.stderr.flush();
      statusLine = true;
    },
    onEvent: (e) => {
      if (statusLine) {
        out.stderr.write("\r\x1b[2K");
        out.stderr.flush();
        statusLine = false;
      }
      if (e.phase === "start") {
        out.note(c.dim(`▶ ${String(e.payload.episode_id)}  ${oneLine(String(e.payload.task))}`));
      }
      if (e.phase === "act") {
        const p = e.payload;
        const mark = STATUS_MARK[String(p.step_status)] ?? "·";
        out.note(
          `  ${mark} ${neutralize(String(p.step_id))}  ${c.dim(oneLine(String(p.input_excerpt)))}  ${
            neutralize(String(p.outcome))
          }  ${c.dim(`${p.duration_ms} ms`)}`,
        );
      }
      if (e.phase === "governance" && e.payload.decision === "veto") {
        const failed = String(e.payload.rule ?? "").startsWith("policy.failure:");
        const err = (e.payload.error ?? {}) as { at?: unknown };
        const what = failed
          ? `policy failed: ${oneLine(String(e.payload.message))}${
            typeof err.at === "string" ? ` (at ${neutralize(err.at)})` : ""
          }`
          : `veto: ${oneLine(String(e.payload.message))}`;
        out.note(`  ${c.red("⊘")} ${neutralize(String(e.payload.step_id))}  ${c.red(what)}`);
      }
    },
  };
}
