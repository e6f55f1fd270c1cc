/**
 * The command line that runs this very noema again (for hook
 * registrations): the compiled binary's path, or the runtime plus the CLI
 * entry when noema runs from source (Bun: `bun src/cli/main.ts`; Deno:
 * `deno run -A src/cli/main.ts`).
 *
 * @module
 */
import { existsSync } from "node:fs";
import process from "node:process";
import { nodeUrl } from "../builtins.ts";
import { shellQuote } from "../runtime/core/command.ts";

/**
 * The argv that starts noema: `NOEMA_HOOK_BIN` when set (a path to a noema
 * executable), the compiled binary, or runtime + entry from source.
 *
 * @example
 * ```ts
 * import { noemaArgv } from "./noema_command.ts";
 * const [cmd, ...args] = noemaArgv(); // e.g. ["/usr/local/bin/noema"]
 * ```
 */
export function noemaArgv(): string[] {
  const override = process.env.NOEMA_HOOK_BIN;
  if (override) return [override];
  if (isCompiledBinary()) return [process.execPath];
  const entry = nodeUrl().fileURLToPath(new URL("../cli/main.ts", import.meta.url));
  // Under Bun, the lean entry: a hook call tries its resident server before loading the CLI. With the flags of the
  // package's launcher (bin/noema.mjs): the governed project's .env and bunfig.toml (a preload!) are never read.
  const bin = nodeUrl().fileURLToPath(new URL("../../bin/noema.ts", import.meta.url));
  if (!("Deno" in globalThis) && existsSync(bin)) return [process.execPath, ...bunIsolationFlags(), bin];
  if ("Deno" in globalThis) {
    const config = nodeUrl().fileURLToPath(new URL("../../deno.json", import.meta.url));
    return [process.execPath, "run", "-A", "--quiet", ...(existsSync(config) ? ["--config", config] : []), entry];
  }
  return [process.execPath, ...bunIsolationFlags(), entry];
}

/**
 * The Bun flags noema runs from source with, as its launcher (`bin/noema.mjs`)
 * passes them: no `.env` file, no auto-install, and noema's own (empty)
 * `bunfig.toml` instead of the working directory's, whose `preload` would
 * run code in every call.
 *
 * @example
 * ```ts
 * import { bunIsolationFlags } from "./noema_command.ts";
 * bunIsolationFlags(); // ["--no-env-file", "--no-install", "--config=/…/noema/bin/bunfig.toml"]
 * ```
 */
export function bunIsolationFlags(): string[] {
  const config = nodeUrl().fileURLToPath(new URL("../../bin/bunfig.toml", import.meta.url));
  return ["--no-env-file", "--no-install", ...(existsSync(config) ? [`--config=${config}`] : [])];
}

/**
 * The shell command for `noema <args…>`, quoted.
 *
 * @example
 * ```ts
 * import { noemaCommand } from "./noema_command.ts";
 * noemaCommand(["hook", "claude-code"]); // "/usr/local/bin/noema hook claude-code"
 * ```
 */
export function noemaCommand(args: readonly string[]): string {
  return [...noemaArgv(), ...args].map(shellQuote).join(" ");
}

/**
 * Whether this noema is the single binary (`bun build --compile`): its modules live in Bun's embedded file system.
 *
 * @example
 * ```ts
 * import { isCompiledBinary } from "./noema_command.ts";
 * isCompiledBinary(); // false under `bun src/cli/main.ts`, true in dist/noema
 * ```
 */
export function isCompiledBinary(): boolean {
  return import.meta.url.includes("$bunfs") || import.meta.url.includes("~BUN");
}

/**
 * The portable shell command for `noema <args…>`, for a settings file a team shares (never a path into one clone
 * or one machine): from source or the npm package, the project's own noema through `npx --no-install noema`; from
 * the single binary, `noema` as found on `PATH` (where each teammate puts the binary: a machine with the binary
 * and no Node has no npx, and no project installs the binary). Then `|| exit 2`, so that a machine where noema is
 * not found blocks the call (an agent takes any other failing exit code as "go ahead") instead of letting it
 * through ungoverned.
 *
 * @example
 * ```ts
 * import { portableNoemaCommand } from "./noema_command.ts";
 * portableNoemaCommand(["hook", "claude-code"]); // "npx --no-install noema hook claude-code || exit 2"
 * // from dist/noema: "noema hook claude-code || exit 2"
 * ```
 */
export function portableNoemaCommand(args: readonly string[], binary: boolean = isCompiledBinary()): string {
  const noema = binary ? ["noema"] : ["npx", "--no-install", "noema"];
  return `${[...noema, ...args].map(shellQuote).join(" ")} || exit 2`;
}
