/**
 * Running the real `noema` CLI as a child process under the runtime running
 * the tests: Bun `bun src/cli/main.ts`, Deno `deno run -A src/cli/main.ts`.
 * When `NOEMA_TEST_BINARY` names an executable (`npm test` builds the single
 * binary and sets it for every Bun run and for the Deno runs of most files:
 * see `scripts/test.mjs`), that binary instead: the executable users
 * download, built from the same source, which starts with about a third of
 * Bun's CPU and a quarter of Deno's.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const REPO: string = fileURLToPath(new URL("../..", import.meta.url));
/** The CLI entry. */
export const MAIN: string = join(REPO, "src", "cli", "main.ts");
/** Whether the tests run under Deno. */
export const IS_DENO: boolean = "Deno" in globalThis;

/** The single binary the CLI runs as (`NOEMA_TEST_BINARY`), or null: the source. */
export const BINARY: string | null = process.env.NOEMA_TEST_BINARY || null;

/** Whether the CLI children run under Deno (the source: no {@link BINARY}), where their runtime shows. */
export const CLI_ON_DENO: boolean = IS_DENO && BINARY === null;

/** What a CLI run produced. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options of {@link cli}. */
export interface CliOptions {
  /** Extra environment; entries set to undefined are removed. */
  env?: Record<string, string | undefined>;
  /** Working directory. @default {REPO} */
  cwd?: string;
  /** Kill the child after this many ms. @default {60000} */
  timeoutMs?: number;
  /** Text on the child's stdin. @default {""} */
  input?: string;
  /** Run the source even where {@link BINARY} is set: for what depends on how noema was installed. @default {false} */
  source?: boolean;
}

/**
 * The command that runs a script under the runtime running this code (the
 * script's path goes after it): Bun `bun`, Deno `deno run -A` with the
 * repository's config.
 *
 * @example
 * ```ts
 * import { runtimeCommand } from "./helpers/cli.ts";
 * const [cmd, ...args] = [...runtimeCommand(), "/tmp/script.ts"];
 * ```
 */
export function runtimeCommand(): string[] {
  return IS_DENO ? [process.execPath, "run", "-A", "--quiet", "--config", join(REPO, "deno.json")] : [process.execPath];
}

/**
 * The command that starts the CLI: the binary of {@link BINARY} when there
 * is one, else the source under the runtime running this code.
 *
 * @example
 * ```ts
 * import { cliCommand } from "./helpers/cli.ts";
 * const [cmd, ...args] = cliCommand();
 * ```
 */
export function cliCommand(options: { source?: boolean } = {}): string[] {
  return BINARY === null || options.source ? [...runtimeCommand(), MAIN] : [BINARY];
}

/**
 * The command an agent's hook starts noema with, whichever runtime runs the
 * tests: the binary of {@link BINARY} when there is one, else `bun
 * bin/noema.ts` (the entry `install-hooks` registers from source, which tries
 * the session's resident hook server before loading the CLI).
 *
 * @example
 * ```ts
 * import { hookCommand } from "./helpers/cli.ts";
 * const [cmd, ...args] = [...hookCommand(), "hook", "claude-code", "--root", "/tmp/root"];
 * ```
 */
export function hookCommand(): string[] {
  return BINARY === null ? [join(REPO, "node_modules", ".bin", "bun"), join(REPO, "bin", "noema.ts")] : [BINARY];
}

/**
 * Runs the CLI with `args`.
 *
 * @example
 * ```ts
 * import { cli } from "./helpers/cli.ts";
 * const r = cli(["verify", "ep_1", "--json"], { env: { NOEMA_ROOT: "/tmp/root" } });
 * ```
 */
export function cli(args: string[], options: CliOptions = {}): CliResult {
  const env: Record<string, string> = {};
  for (
    const [k, v] of Object.entries({
      ...process.env,
      NO_COLOR: "1",
      NOEMA_ROOT: undefined,
      NOEMA_SIGNING_KEY: undefined,
      NOEMA_SIGNING_KID: undefined,
      NOEMA_SIGNING_KEY_FILE: undefined,
      ...options.env,
    })
  ) {
    if (v !== undefined) env[k] = v;
  }
  // Deno keeps its caches under HOME: a child given a HOME of its own would compile every module again (~0.3 s).
  if (IS_DENO && options.env?.HOME !== undefined && env.DENO_DIR === undefined) env.DENO_DIR = denoDir();
  const [cmd, ...argv] = [...cliCommand(options), ...args];
  const r = spawnSync(cmd, argv, {
    cwd: options.cwd ?? REPO,
    env,
    encoding: "utf8",
    input: options.input ?? "",
    maxBuffer: 256 << 20,
    timeout: options.timeoutMs ?? 60_000,
  });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The directory of Deno's caches for this process: `DENO_DIR`, else under `XDG_CACHE_HOME` or HOME's `.cache`. */
function denoDir(): string {
  if (process.env.DENO_DIR) return process.env.DENO_DIR;
  return join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "deno");
}

/**
 * Asserts a one-line usage error about a file: exit 2, stderr exactly one
 * line `noema: <file>: <what>`, no stack trace.
 *
 * @example
 * ```ts
 * import { assertOneLineError, cli } from "./helpers/cli.ts";
 * assertOneLineError(cli(["run", "t", "--policy", "gone.ts"]), "gone.ts", /plugin file not found/);
 * ```
 */
export function assertOneLineError(r: Pick<CliResult, "code" | "stderr">, file: string, what: RegExp): void {
  assert.equal(r.code, 2, r.stderr);
  const lines = r.stderr.trim().split("\n");
  assert.equal(lines.length, 1, `expected one line, got:\n${r.stderr}`);
  assert.ok(lines[0].startsWith(`noema: ${file}: `), lines[0]);
  assert.match(lines[0], what);
  assert.doesNotMatch(r.stderr, /^\s+at /m);
}
