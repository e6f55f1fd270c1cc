/**
 * `noema hook claude-code|codex|gemini`: the command an agent CLI runs at
 * each hook event. It reads one event from stdin, puts tool calls through
 * the episode's policies and prints the agent's answer.
 *
 * Fail closed: any error (unreadable or malformed stdin, a missing policy,
 * an internal error) exits 2 with the reason on stderr, which blocks the
 * call. It never exits with another non-zero code, because the agents treat
 * those as "go ahead".
 *
 * @module
 */
import { existsSync } from "node:fs";
import { DIALECTS } from "../../agents/dialects.ts";
import { readHookStdin } from "../../agents/hook_stdin.ts";
import { handleHookEvent, type HookSettings } from "../../agents/hook_runner.ts";
import type { Dialect } from "../../agents/dialect.ts";
import type { HookAnswer, HookEvent } from "../../agents/event.ts";
import { hookScope, serverEnabled, socketPath } from "../../agents/server/address.ts";
import { prereadStdin, serverAbsent, serverTimeSpentMs } from "../../agents/server/client.ts";
import { serveHooks, serverLog } from "../../agents/server/server.ts";
import { sessionEpisode } from "../../store/session_index.ts";
import { hookPublisher, markHookEpisode } from "../hook_publish.ts";
import { hookApprovalWait, hookDecisionPull } from "../hook_wait.ts";
import { parseDuration } from "../time_args.ts";
import { hookOtelExporter } from "../../export/otel/hook_export.ts";
import { otelUnavailableNotice, unavailableMessage } from "../../export/otel/run_hooks.ts";
import { EpisodeNotices } from "../../agents/server/notices.ts";
import { startServer } from "../../agents/server/spawn.ts";
import process from "node:process";
import { resolve } from "node:path";
import { EXIT, NoemaError } from "../../errors.ts";
import { guardExits, holdHookExit, hookAnswered } from "../../plugins/exit_guard.ts";
import { resolveRunSettings } from "../../runtime/load_settings.ts";
import type { RunOptions } from "../../runtime/run.ts";
import { isInside, resolveRoot } from "../../store/layout.ts";
import { type CommandUnknownOpts, Option } from "@commander-js/extra-typings";
import { type CliContext, examples, type GlobalOptions, globalOptions, type RegisterCommand } from "../context.ts";
import { resolveEpisodeRef } from "../episode_ref.ts";
import { usageError } from "../errors.ts";
import { MAX_JSON_DEPTH, tooDeep } from "../../store/json_scan.ts";
import { currentDir, hookProjectDir } from "../hook_project.ts";
import {
  addLimitOptions,
  addMetaOptions,
  addModeOptions,
  addPolicyOption,
  gateRunOptions,
  verifyCommandOption,
  verifyFileExistsOption,
  verifyFlags,
} from "../run_options.ts";

/** All of stdin, within bounds (see agents/hook_stdin.ts); unreadable or unended stdin is a usage error. */
async function readStdin(): Promise<string> {
  try {
    return await readHookStdin();
  } catch (e) {
    throw new NoemaError("bad_hook_input", (e as Error).message, { exitCode: EXIT.USAGE });
  }
}

/** The hook event stdin holds: one JSON value (empty or not JSON is an error). */
function parseEvent(text: string): unknown {
  if (text.trim() === "") throw new NoemaError("bad_hook_input", "stdin: empty; expected one JSON hook event");
  // Walking a value nested 200,000 levels deep (masking, hashing, recording) would overflow the stack: refuse first.
  const deep = tooDeep(text, MAX_JSON_DEPTH);
  if (deep !== null) {
    throw new NoemaError("bad_hook_input", `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, {
      file: "stdin",
      line: deep.line,
      exitCode: EXIT.USAGE,
    });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new NoemaError("bad_hook_input", `stdin: not JSON: ${(e as Error).message}`, { exitCode: EXIT.USAGE });
  }
}

/**
 * Answers one event: a dialect that must find its calls again (Gemini CLI
 * sends no call id) maps a result to its decided call first, and remembers
 * a call whose input noema rewrote.
 */
async function answerEvent(dialect: Dialect, event: HookEvent, settings: HookSettings): Promise<HookAnswer> {
  if (event.kind === "post_tool" && dialect.callOf) event = { ...event, call_id: dialect.callOf(settings.root, event) };
  const answer = await handleHookEvent(dialect, event, settings);
  if (event.kind === "pre_tool") dialect.answered?.(settings.root, event, answer);
  return answer;
}

/** Every failure of the hook exits 2 (blocking), whatever its usual code. */
function failClosed(e: unknown): NoemaError {
  if (e instanceof NoemaError) {
    return e.exitCode === EXIT.USAGE ? e : new NoemaError(e.code, e.detail, { ...e.location, exitCode: EXIT.USAGE });
  }
  const message = e instanceof Error ? e.message : String(e);
  return new NoemaError("hook_failed", `hook failed (the call is blocked): ${message}`, { exitCode: EXIT.USAGE });
}

/** `noema hook`'s argument, options and help text. */
function hookCommand(program: CommandUnknownOpts) {
  const command = program
    .command("hook")
    .summary("answer one agent hook event from stdin (Claude Code, Codex, Gemini CLI)")
    .description(
      "Read one hook event (JSON) from stdin: a tool call is put through the policies of the session's episode " +
        "and the verdict printed in the agent's dialect; results are recorded; Stop/SessionEnd finish the episode. " +
        "Claude Code's PermissionRequest is answered from the decision on its call, and its transcript's model " +
        "turns and tokens are recorded (model.jsonl, metrics.tokens, metrics.cost). " +
        "Any error exits 2, which blocks the call.",
    )
    .argument("<agent>", `the agent CLI: ${Object.keys(DIALECTS).join(", ")}`);
  const gated = addLimitOptions(addModeOptions(addPolicyOption(command)));
  return addMetaOptions(gated, "the workspace verification checks (default: the agent's project directory)")
    .addOption(verifyFileExistsOption("when the episode ends"))
    .addOption(verifyCommandOption())
    .option(
      "--episode <id>",
      "record into this episode (id, unique prefix or 'last') instead of the session's (used by noema run)",
    )
    .option(
      "--print",
      "the agent runs unattended (claude -p, gemini -p): an approval defers the call and pauses the episode " +
        "(Claude Code) or denies it, saying so (Gemini CLI)",
    )
    .option("--grant", "answer allow when noema lets a call go ahead (noema's policies are the permission gate)")
    .option("--no-finish", "do not finish the episode at Stop/SessionEnd (the driver finishes it)")
    .option(
      "--wait <duration>",
      "with a shared store: a call that needs approval pauses the episode and the hook waits (e.g. 10m) for a " +
        "decision made on any machine (noema approve ID --store …); keep the agent's hook timeout longer",
    )
    .addOption(
      new Option("--approval-timeout <action>", "when --wait runs out: deny the call, or abort the episode")
        .choices(["deny", "abort"] as const).default("deny" as const),
    )
    .addHelpText(
      "after",
      examples(
        ["noema install-hooks claude-code --project", "register this hook in .claude/settings.json"],
        ["noema install-hooks codex", "register noema hook codex in .codex/hooks.json"],
        ["echo '{…PreToolUse…}' | noema hook claude-code --policy policies/no-push.ts", "one event by hand"],
      ) +
        "\nExit codes: 0 answered (the answer, if any, on stdout), 2 blocked: bad input or any error, a policy that\n" +
        "ends the process, or a stdin that does not end (NOEMA_HOOK_STDIN_IDLE_MS, default 3000; NOEMA_HOOK_STDIN_MAX_MS,\n" +
        "default 20000).\n" +
        "The first call of a session starts a background server that answers the next ones quickly (the episode and\n" +
        "policies stay loaded); it stops after 10 idle minutes. NOEMA_HOOK_SERVER=0 turns it off (docs/cli.md).\n",
    );
}

/** The options `noema hook` parses. */
type HookCliOptions = ReturnType<ReturnType<typeof hookCommand>["opts"]>;

/** The settings of one hook call, from its event. */
type SettingsFor = (event: HookEvent) => HookSettings;

/** Registers `noema hook`. */
export const registerHook: RegisterCommand = (program, ctx: CliContext) => {
  hookCommand(program).action(async (agent, opts, cmd) => {
    const dialect = DIALECTS[agent];
    // From the project's directory, wherever the agent's shell moved to: its noema.jsonc, its root, relative paths of
    // the registered command (see hook_project.ts). A resident server started from here works from here too.
    const project = hookProjectDir();
    if (project !== null && project !== currentDir()) process.chdir(project);
    const g = globalOptions(cmd);
    const settingsFor: SettingsFor = (event) => hookSettings(opts, g, event, project);
    // The whole command line, global options (--root) included: the server started for it must serve the same.
    const argv = process.argv.includes("hook") ? process.argv.slice(2) : ["hook", agent];
    const socket = process.env.NOEMA_HOOK_SERVE;
    if (socket && dialect) {
      // This process is the resident server of this command line (see src/agents/server/server.ts): a policy's
      // exit is refused (its call is denied), so the server outlives it.
      guardExits();
      await serveResident(dialect, socket, argv, settingsFor, resolveRoot({ root: g.root }));
      return;
    }
    // Whatever ends this process before the answer is printed (a policy's process.exit, an uncaught error), it exits 2.
    holdHookExit();
    try {
      if (!dialect) {
        throw usageError(`unknown agent ${JSON.stringify(agent)}; expected ${Object.keys(DIALECTS).join(", ")}`);
      }
      await answerOne(ctx, dialect, argv, settingsFor);
    } catch (e) {
      throw failClosed(e);
    }
  });
};

/** The settings of one call: the flags over noema.jsonc (the workspace defaults to the agent's project). */
function hookSettings(
  opts: HookCliOptions,
  g: GlobalOptions,
  event: HookEvent,
  project: string | null,
): HookSettings {
  const flags: RunOptions = {
    ...gateRunOptions(opts),
    // The project the agent works in, not the directory its shell last moved to (that is the call's, event.cwd).
    workspace: opts.workspace ?? (event.cwd === null ? undefined : workspaceOf(event.cwd, project)),
    root: g.root,
  };
  const verify = verifyFlags(opts);
  const { options, warnings } = resolveRunSettings({ taskOrFile: "-", options: flags });
  // Likely mistakes in the rules (an unknown tool name): said on stderr, which does not change the hook's answer.
  for (const w of warnings) process.stderr.write(`noema: ${w}\n`);
  for (const p of options.policies ?? []) {
    if (typeof p === "string" && !existsSync(p)) {
      throw new NoemaError("not_found", "policy file not found", { file: p, exitCode: EXIT.USAGE });
    }
  }
  if (verify.length > 0) options.verify = [...(options.verify ?? []), ...verify];
  const { using: _u, steps: _s, planner: _p, args: _a, root, ...rest } = options;
  const hookRoot = resolveRoot({ root: typeof root === "string" ? root : g.root });
  return {
    root: hookRoot,
    options: rest as HookSettings["options"],
    episode: opts.episode === undefined ? undefined : resolveEpisodeRef(opts.episode, { root: hookRoot }),
    finish: opts.finish,
    print: opts.print === true,
    grant: opts.grant === true,
    // A run's hooks (--episode) never wait: the run itself waits for its decisions (noema run --wait).
    awaitDecision: opts.wait === undefined || opts.episode !== undefined
      ? undefined
      // A server that died while this call waited there: only what is left of the wait (the agent's timeout is set
      // from the full one).
      : hookApprovalWait(
        hookRoot,
        Math.max(0, parseDuration(opts.wait, "--wait") - serverTimeSpentMs()),
        opts.approvalTimeout,
      ),
    // A decision made in the store while no hook waits for it is brought in at the session's next call.
    pullDecision: opts.episode === undefined ? hookDecisionPull(hookRoot) : undefined,
  };
}

/**
 * The workspace of a call made from `cwd`: the project when `cwd` is in it (the agent's shell moved within it), else
 * `cwd` itself (an agent working elsewhere than the hook's folder says, e.g. a caller that runs hooks from afar).
 */
function workspaceOf(cwd: string, project: string | null): string {
  return project !== null && isInside(project, resolve(cwd)) ? project : cwd;
}

/** Serves this command line's calls on `socket` as the resident server; each failure is answered with exit 2. */
async function serveResident(
  dialect: Dialect,
  socket: string,
  argv: string[],
  settingsFor: SettingsFor,
  root: string,
): Promise<void> {
  const { registerPluginApi, policyFilesInWorkers } = await import("../../plugins/loader.ts");
  await registerPluginApi();
  policyFilesInWorkers(); // a policy looping for ever is stopped at its timeout, never wedges the hook
  // With a shared store: the episodes served are published as they grow, and at the end whatever calls answered in
  // their own process left pending under this root.
  // What goes wrong in the background (the store, the collector) is said once in the server's log and written into
  // the episode as a runtime event at its next call.
  const notices = new EpisodeNotices();
  const publisher = hookPublisher(root, serverLog, (id, n) => notices.push(id, n));
  // With OTEL_EXPORTER_OTLP_ENDPOINT: the episodes served are exported as they grow.
  const otel = hookOtelExporter((id, f) => {
    serverLog(`OpenTelemetry export of ${id}: ${unavailableMessage(f)}`);
    notices.push(id, otelUnavailableNotice(f));
  });
  await serveHooks({
    socket,
    argv,
    notices,
    handle: async (stdin, episodes, gone, outside) => {
      try {
        const event = dialect.parse(parseEvent(stdin));
        if (!event) return { stdout: null, exitCode: 0 };
        const settings = { ...settingsFor(event), episodes, signal: gone, outside };
        const answer = await answerEvent(dialect, event, settings);
        const id = publisher || otel ? hookEpisodeId(dialect, event, settings) : null;
        if (id !== null) publisher?.served(settings.root, id);
        if (id !== null) otel?.served(settings.root, id);
        if (answer.exitCode === EXIT.USAGE) throw new NoemaError("blocked", answer.stderr ?? "blocked");
        return answer;
      } catch (e) {
        return { stdout: null, stderr: `noema: ${failClosed(e).message}`, exitCode: 2 };
      }
    },
  });
  await publisher?.close();
  await otel?.close();
}

/** The episode a hook call wrote to: the one `--episode` names, or the session's. */
function hookEpisodeId(dialect: Dialect, event: HookEvent, s: HookSettings): string | null {
  if (s.episode !== undefined) return s.episode;
  try {
    return sessionEpisode(s.root, dialect.name, event.session_id)?.episode_id ?? null;
  } catch {
    return null;
  }
}

/**
 * Answers the one event on stdin (an event noema does not act on gets no answer), then starts the
 * resident server for the session's next calls when there is none; a block throws.
 */
async function answerOne(ctx: CliContext, dialect: Dialect, argv: string[], settingsFor: SettingsFor): Promise<void> {
  const payload = parseEvent(prereadStdin ?? await readStdin());
  const event = dialect.parse(payload);
  if (!event) return hookAnswered(0); // an event noema does not act on: no opinion
  const settings = settingsFor(event);
  const { registerPluginApi, policyFilesInWorkers } = await import("../../plugins/loader.ts");
  await registerPluginApi();
  policyFilesInWorkers(); // a policy looping for ever is stopped at its timeout, never wedges the hook
  const answer = await answerEvent(dialect, event, settings);
  markHookEpisode(settings.root, () => hookEpisodeId(dialect, event, settings)); // published by the server or sync
  if (answer.stdout !== null) ctx.out.line(answer.stdout);
  if (answer.exitCode === 0) {
    ctx.out.flush();
    hookAnswered(0);
  }
  // The next calls of this session go to a resident server, which keeps the episode loaded (none after its end).
  if (serverEnabled() && serverAbsent && event.kind !== "stop" && event.kind !== "session_end") {
    const scope = hookScope(argv, payload);
    const path = scope === null ? null : socketPath(argv, scope);
    if (path !== null) startServer(argv, path);
  }
  if (answer.exitCode === EXIT.USAGE) throw new NoemaError("blocked", answer.stderr ?? "blocked");
}
