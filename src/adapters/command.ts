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
 * Config: `command` (argv array, instead of `--`), `timeout_ms` (default
 * 3600000), `excerpt_bytes` (default 8192), `tee` (copy output to stderr
 * live; default false).
 *
 * @module
 */
import type { ActResult, AdapterPlugin } from "../plugins/api.ts";
import { processActResult, runProcess } from "../plugins/process.ts";
import process from "node:process";

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
    const timeoutMs = typeof config.timeout_ms === "number" ? config.timeout_ms : 3_600_000;
    const excerptBytes = typeof config.excerpt_bytes === "number" ? config.excerpt_bytes : 8192;
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
          tee: config.tee === true,
        });
        return processActResult(r, { label: argv[0], timeoutMs, extra: { argv } });
      },
    };
  },
};

export default command;
