/**
 * The `shell` tool: runs a command line with `/bin/sh -c` in the workspace,
 * with a timeout, an environment allow-list and limited output.
 *
 * @module
 */
import * as v from "valibot";
import { pickEnv, runProcess } from "../../plugins/process.ts";
import { fromValibot, type LlmTool } from "./tool.ts";

/** Settings of the shell tool (adapter config `shell`). */
export interface ShellToolOptions {
  /** @default {60000} */
  timeout_ms?: number;
  /** Variables passed through from noema's environment. @default {PATH, HOME, LANG, LC_ALL, TERM, TMPDIR, USER, SHELL} */
  env_allow?: readonly string[];
  /** Bytes of the end of stdout and of stderr returned to the model. @default {8192} */
  output_bytes?: number;
}

/** Environment variables the shell tool passes through by default. */
export const DEFAULT_SHELL_ENV = ["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "USER", "SHELL"] as const;

const Input = v.strictObject({
  command: v.pipe(v.string(), v.minLength(1), v.description("The command line (run by /bin/sh -c in the workspace).")),
  timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.description("Timeout in milliseconds."))),
});

/**
 * Creates the shell tool.
 *
 * @example
 * ```ts
 * import { shellTool } from "noema";
 * const t = shellTool({ timeout_ms: 10_000 });
 * ```
 */
export function shellTool(options: ShellToolOptions = {}): LlmTool {
  const { parameters, validate } = fromValibot(Input);
  const maxTimeout = options.timeout_ms ?? 60_000;
  return {
    name: "shell",
    description: "Run a shell command in the workspace and get its exit code, stdout and stderr (tails).",
    parameters,
    validate,
    command: (input) => String(input.command),
    async execute(input, ctx) {
      const r = await runProcess({
        shell: String(input.command),
        cwd: ctx.workspace,
        env: pickEnv(options.env_allow ?? DEFAULT_SHELL_ENV),
        timeoutMs: Math.min(typeof input.timeout_ms === "number" ? input.timeout_ms : maxTimeout, maxTimeout),
        signal: ctx.signal,
        excerptBytes: options.output_bytes ?? 8192,
      });
      // Stopped because the run was (Ctrl-C, SIGTERM, the caller's signal): the call failed, it did not finish.
      if (r.aborted) {
        throw Object.assign(new Error(`the run was interrupted; the command was stopped`), { name: "Aborted" });
      }
      const out: Record<string, unknown> = { exit_code: r.exit_code, stdout: r.stdout, stderr: r.stderr };
      if (r.stdout_bytes > r.stdout.length) out.stdout_bytes = r.stdout_bytes;
      if (r.stderr_bytes > r.stderr.length) out.stderr_bytes = r.stderr_bytes;
      if (r.timed_out) out.timed_out = true;
      if (r.signal) out.signal = r.signal;
      if (r.spawn_error) out.spawn_error = r.spawn_error;
      return out;
    },
  };
}
