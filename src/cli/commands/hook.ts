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
import { existsSync, readFileSync } from "node:fs";
import { DIALECTS } from "../../agents/dialects.ts";
import { handleHookEvent, type HookSettings } from "../../agents/hook_runner.ts";
import type { HookEvent } from "../../agents/event.ts";
import { hookScope, serverEnabled, socketPath } from "../../agents/server/address.ts";
import { prereadStdin, serverAbsent } from "../../agents/server/client.ts";
import { serveHooks } from "../../agents/server/server.ts";
import { startServer } from "../../agents/server/spawn.ts";
import process from "node:process";
import { EXIT, NoemaError } from "../../errors.ts";
import { resolveRunSettings } from "../../runtime/load_settings.ts";
import type { RunOptions } from "../../runtime/run.ts";
import { resolveRoot } from "../../store/layout.ts";
import { type CliContext, examples, globalOptions, type RegisterCommand } from "../context.ts";
import { resolveEpisodeRef } from "../episode_ref.ts";
import { usageError } from "../errors.ts";
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

function readStdin(): string {
  try {
    return readFileSync(0, "utf8");
  } catch (e) {
    throw new NoemaError("bad_hook_input", `stdin: cannot read: ${(e as Error).message}`, { exitCode: EXIT.USAGE });
  }
}

function parseEvent(text: string): unknown {
  if (text.trim() === "") throw new NoemaError("bad_hook_input", "stdin: empty; expected one JSON hook event");
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new NoemaError("bad_hook_input", `stdin: not JSON: ${(e as Error).message}`, { exitCode: EXIT.USAGE });
  }
}

/** Every failure of the hook exits 2 (blocking), whatever its usual code. */
function failClosed(e: unknown): NoemaError {
  if (e instanceof NoemaError) {
    return e.exitCode === EXIT.USAGE ? e : new NoemaError(e.code, e.detail, { ...e.location, exitCode: EXIT.USAGE });
  }
  const message = e instanceof Error ? e.message : String(e);
  return new NoemaError("hook_failed", `hook failed (the call is blocked): ${message}`, { exitCode: EXIT.USAGE });
}

/** Registers `noema hook`. */
export const registerHook: RegisterCommand = (program, ctx: CliContext) => {
  const command = program
    .command("hook")
    .summary("answer one agent hook event from stdin (Claude Code, Codex, Gemini CLI)")
    .description(
      "Read one hook event (JSON) from stdin: a tool call is put through the policies of the session's episode " +
        "and the verdict printed in the agent's dialect; results are recorded; Stop/SessionEnd finish the episode. " +
        "Any error exits 2, which blocks the call.",
    )
    .argument("<agent>", `the agent CLI: ${Object.keys(DIALECTS).join(", ")}`);
  const gated = addLimitOptions(addModeOptions(addPolicyOption(command)));
  addMetaOptions(gated, "the workspace verification checks (default: the agent's cwd)")
    .addOption(verifyFileExistsOption("when the episode ends"))
    .addOption(verifyCommandOption())
    .option(
      "--episode <id>",
      "record into this episode (id, unique prefix or 'last') instead of the session's (used by noema run)",
    )
    .option("--print", "the agent runs unattended (claude -p): approvals defer the call and pause the episode")
    .option("--grant", "answer allow when noema lets a call go ahead (noema's policies are the permission gate)")
    .option("--no-finish", "do not finish the episode at Stop/SessionEnd (the driver finishes it)")
    .addHelpText(
      "after",
      examples(
        ["noema install-hooks claude-code --project", "register this hook in .claude/settings.json"],
        ["echo '{…PreToolUse…}' | noema hook claude-code --policy policies/no-push.ts", "one event by hand"],
      ) + "\nExit codes: 0 answered (the answer, if any, on stdout), 2 blocked: bad input or any error.\n" +
        "The first call of a session starts a background server that answers the next ones quickly (the episode and\n" +
        "policies stay loaded); it stops after 10 idle minutes. NOEMA_HOOK_SERVER=0 turns it off (docs/cli.md).\n",
    )
    .action(async (agent, opts, cmd) => {
      const dialect = DIALECTS[agent];
      const g = globalOptions(cmd);
      /** The settings of one call (the workspace defaults to the agent's cwd). */
      const settingsFor = (event: HookEvent): HookSettings => {
        const flags: RunOptions = {
          ...gateRunOptions(opts),
          workspace: opts.workspace ?? event.cwd ?? undefined,
          root: g.root,
        };
        const verify = verifyFlags(opts);
        const { options } = resolveRunSettings({ taskOrFile: "-", options: flags });
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
        };
      };
      const argv = process.argv.slice(process.argv.indexOf("hook"));
      const socket = process.env.NOEMA_HOOK_SERVE;
      if (socket && dialect) {
        // This process is the resident server of this command line (see src/agents/server/server.ts).
        const { registerPluginApi } = await import("../../plugins/loader.ts");
        await registerPluginApi();
        await serveHooks({
          socket,
          argv,
          handle: async (stdin, episodes) => {
            try {
              const event = dialect.parse(parseEvent(stdin));
              if (!event) return { stdout: null, exitCode: 0 };
              const answer = await handleHookEvent(dialect, event, { ...settingsFor(event), episodes });
              if (answer.exitCode === EXIT.USAGE) throw new NoemaError("blocked", answer.stderr ?? "blocked");
              return answer;
            } catch (e) {
              return { stdout: null, stderr: `noema: ${failClosed(e).message}`, exitCode: 2 };
            }
          },
        });
        return;
      }
      try {
        if (!dialect) {
          throw usageError(`unknown agent ${JSON.stringify(agent)}; expected ${Object.keys(DIALECTS).join(", ")}`);
        }
        const payload = parseEvent(prereadStdin ?? readStdin());
        const event = dialect.parse(payload);
        if (!event) return; // an event noema does not act on: no opinion
        const settings = settingsFor(event);
        const { registerPluginApi } = await import("../../plugins/loader.ts");
        await registerPluginApi();
        const answer = await handleHookEvent(dialect, event, settings);
        if (answer.stdout !== null) ctx.out.line(answer.stdout);
        // The next calls of this session go to a resident server, which keeps the episode loaded.
        if (serverEnabled() && serverAbsent) {
          const scope = hookScope(argv, payload);
          const path = scope === null ? null : socketPath(argv, scope);
          if (path !== null) startServer(argv, path);
        }
        if (answer.exitCode === EXIT.USAGE) throw new NoemaError("blocked", answer.stderr ?? "blocked");
      } catch (e) {
        throw failClosed(e);
      }
    });
};
