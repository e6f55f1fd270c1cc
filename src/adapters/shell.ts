/**
 * The `shell` adapter: each `act` step runs a command in the workspace.
 *
 * A step's `inputs` give `command` (a shell command line) or `argv` (a
 * program and its arguments), and optionally `timeout_ms`. Arguments after
 * `--` on the command line are the command of steps that give none (an `act`
 * step with neither is refused before the run: `src/runtime/core/shell_plan.ts`). Steps of
 * other kinds (detect, verify, …) complete without running anything.
 *
 * Config (task file `adapter` object): `timeout_ms` (default 60000),
 * `env_allow` (names passed through from noema's environment; default PATH,
 * HOME, LANG, LC_ALL, TERM, TMPDIR, USER, SHELL), `env` (extra variables),
 * `excerpt_bytes` (default 4096); another key is refused when the settings
 * are read (`src/runtime/adapter_keys.ts`).
 *
 * @module
 */
import type { ActResult, AdapterPlugin } from "../plugins/api.ts";
import { pickEnv, processActResult, runProcess } from "../plugins/process.ts";
import { adapterNumberProblem, checkAdapterNumbers } from "../runtime/adapter_keys.ts";

const DEFAULT_ENV = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "SHELL"];

function strings(x: unknown): string[] | undefined {
  return Array.isArray(x) && x.every((s) => typeof s === "string") ? x as string[] : undefined;
}

const shell: AdapterPlugin = {
  name: "shell",
  version: "1.0",
  api: "1.0",
  kind: "shell",
  create(context) {
    const config = context.config;
    checkAdapterNumbers(config, ["timeout_ms", "excerpt_bytes"]);
    const envAllow = strings(config.env_allow) ?? DEFAULT_ENV;
    const extraEnv = (typeof config.env === "object" && config.env !== null ? config.env : {}) as Record<
      string,
      string
    >;
    const defaultTimeout = typeof config.timeout_ms === "number" ? config.timeout_ms : 60_000;
    const excerptBytes = typeof config.excerpt_bytes === "number" ? config.excerpt_bytes : 4096;
    return {
      async act(request): Promise<ActResult> {
        const input = request.action.input;
        const command = typeof input.command === "string" ? input.command : undefined;
        const argv = strings(input.argv);
        if (request.step.kind !== "act" && command === undefined && strings(input.argv) === undefined) {
          return { status: "ok", outcome: `nothing to run for a ${request.step.kind} step` };
        }
        if (command === undefined && argv === undefined) {
          return {
            status: "error",
            outcome: "no command",
            error: { type: "ConfigError", message: `step ${request.step.id} has no inputs.command or inputs.argv` },
          };
        }
        // Checked before the run (shell_plan.ts); a policy's intervention may still set it: refused, not run.
        const badTimeout = input.timeout_ms === undefined ? null : adapterNumberProblem("timeout_ms", input.timeout_ms);
        if (badTimeout) {
          return {
            status: "error",
            outcome: "bad timeout",
            error: { type: "ConfigError", message: `step ${request.step.id}: inputs.timeout_ms ${badTimeout}` },
          };
        }
        const timeoutMs = typeof input.timeout_ms === "number" ? input.timeout_ms : defaultTimeout;
        const r = await runProcess({
          shell: command,
          argv: command === undefined ? argv : undefined,
          cwd: request.workspace ?? undefined,
          env: { ...pickEnv(envAllow), ...extraEnv },
          timeoutMs,
          signal: request.signal,
          excerptBytes,
          onSpawn: request.onProcess,
        });
        return processActResult(r, { timeoutMs });
      },
    };
  },
};

export default shell;
