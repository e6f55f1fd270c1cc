/**
 * The `command` adapter: wraps any external agent CLI as the episode's
 * action, so an existing agent's run is recorded as a noema episode:
 *
 *     noema run "fix the failing test" --using command -- my-agent --task "{task}"
 *
 * The command runs once, for the `act` step (the other steps of the plan
 * complete without side effects). `{task}` and `{episode_id}` in arguments are
 * replaced; the child also gets `NOEMA_TASK`, `NOEMA_EPISODE_ID`,
 * `NOEMA_EPISODE_DIR` and `NOEMA_WORKSPACE`. It inherits noema's environment
 * (agents need their API keys; values of variables named as secrets are
 * masked in the artifacts). Its output is recorded as excerpts.
 *
 * It feels like running the program directly:
 *
 * - **stdin** is passed through: the program reads noema's own stdin when
 *   that is a terminal, a pipe or a file (`echo yes | noema run … -- agent`,
 *   `noema run … -- agent < prompt.txt`, or typing in a terminal); with
 *   stdin at /dev/null or closed it reads nothing. On a terminal it runs as
 *   a foreground program in noema's process group (it gets Ctrl-C; noema
 *   then ends the run as aborted).
 * - **output** is shown live on a terminal: when noema's stderr is a
 *   terminal, the program's stdout and stderr are copied to it as they
 *   arrive (to stderr, so `noema run --json` keeps stdout clean), and are
 *   recorded as excerpts either way.
 * - its **exit code** is the act event's `exit_code` (and
 *   `program_exit_code` in `noema run --json`); a non-zero exit fails the
 *   step.
 *
 * Config: `command` (argv array, instead of `--`), `timeout_ms` (default
 * 3600000), `excerpt_bytes` (default 8192), `stdin` (`auto`: pass noema's
 * stdin through unless it is /dev/null or closed; `inherit`: always;
 * `none`: an empty stdin; default `auto`), `tee` (copy the output to stderr
 * live; default: when stderr is a terminal); another key is refused when the
 * settings are read (`src/runtime/adapter_keys.ts`).
 *
 * @module
 */
import type { ActResult, AdapterPlugin } from "../plugins/api.ts";
import { processActResult, runProcess, stdinKind } from "../plugins/process.ts";
import process from "node:process";
import { nodeTty } from "../builtins.ts";
import { checkAdapterNumbers } from "../runtime/adapter_keys.ts";

const STDIN_MODES = ["auto", "inherit", "none"] as const;

/** Whether the program gets noema's stdin, from the `stdin` config (see the module doc). */
function passStdin(mode: unknown): boolean {
  if (mode !== undefined && !STDIN_MODES.includes(mode as typeof STDIN_MODES[number])) {
    throw new Error(
      `the command adapter's stdin must be one of ${STDIN_MODES.join(", ")}, got ${JSON.stringify(mode)}`,
    );
  }
  if (mode === "none") return false;
  return mode === "inherit" || stdinKind() !== "none";
}

const command: AdapterPlugin = {
  name: "command",
  version: "1.0",
  api: "1.0",
  kind: "command",
  create(context) {
    const config = context.config;
    const base = context.args.length > 0
      ? [...context.args]
      : Array.isArray(config.command)
      ? config.command.map(String)
      : [];
    if (base.length === 0) {
      throw new Error('the command adapter needs a command: noema run "<task>" --using command -- <program> [args…]');
    }
    checkAdapterNumbers(config, ["timeout_ms", "excerpt_bytes"]);
    const timeoutMs = typeof config.timeout_ms === "number" ? config.timeout_ms : 3_600_000;
    const excerptBytes = typeof config.excerpt_bytes === "number" ? config.excerpt_bytes : 8192;
    const stdin = passStdin(config.stdin) ? "inherit" : "empty";
    const tee = typeof config.tee === "boolean" ? config.tee : nodeTty().isatty(2);
    return {
      async act(request): Promise<ActResult> {
        if (request.step.kind !== "act") {
          return { status: "ok", outcome: `nothing to run for a ${request.step.kind} step` };
        }
        // The action input's argv (the command line's arguments, possibly changed by a policy) wins.
        const input = request.action.input;
        const chosen = Array.isArray(input.argv) && input.argv.length > 0 ? input.argv.map(String) : base;
        const argv = chosen.map((a) =>
          a.replaceAll("{task}", request.task).replaceAll("{episode_id}", request.episode_id)
        );
        const r = await runProcess({
          argv,
          cwd: request.workspace ?? undefined,
          env: {
            ...process.env as Record<string, string>,
            NOEMA_TASK: request.task,
            NOEMA_EPISODE_ID: request.episode_id,
            NOEMA_EPISODE_DIR: context.episode_dir,
            NOEMA_WORKSPACE: request.workspace ?? "",
          },
          timeoutMs,
          signal: request.signal,
          excerptBytes,
          stdin,
          tee,
          onSpawn: request.onProcess,
        });
        return processActResult(r, { label: argv[0], timeoutMs, extra: { argv } });
      },
    };
  },
};

export default command;
