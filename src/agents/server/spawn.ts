/**
 * Starting a resident hook server in the background: the same executable
 * and hook command line, with `NOEMA_HOOK_SERVE` naming the socket, detached
 * from the agent's process group so that it outlives the hook call.
 *
 * @module
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { childEnv } from "../../plugins/process.ts";
import { bunIsolationFlags } from "../noema_command.ts";

/**
 * The command that runs this noema again: the binary itself, or Bun with
 * the script it runs. Null under other runtimes (Deno's flags cannot be
 * recovered), where every hook call is handled in its own process.
 *
 * @example
 * ```ts
 * import { selfCommand } from "./spawn.ts";
 * console.log(selfCommand()); // ["/usr/local/bin/noema"] or ["/…/bun", "/…/src/cli/main.ts"]
 * ```
 */
export function selfCommand(): string[] | null {
  if ((globalThis as { Bun?: unknown }).Bun === undefined) return null;
  const script = process.argv[1] ?? "";
  // In a compiled binary the entry is embedded (/$bunfs/…): the executable is the whole command.
  if (script.startsWith("/$bunfs/") || script.startsWith("B:/~BUN/")) return [process.execPath];
  // From source: the flags this process runs with, and those that keep the project's .env and bunfig.toml out.
  const own = process.execArgv.filter((a) => !/^--(config|env-file|no-env-file|no-install)\b/.test(a));
  const flags = [...own, ...bunIsolationFlags()];
  return script === "" ? null : [process.execPath, ...flags, script];
}

/**
 * Starts a server for `argv` (a `noema hook …` command line) on `socket`;
 * returns whether a process was started.
 *
 * @example
 * ```ts
 * import { startServer } from "./spawn.ts";
 * // startServer(["hook", "claude-code", "--policy", "p.ts"], "/tmp/noema-hooks-1000/ab.sock");
 * ```
 */
export function startServer(argv: readonly string[], socket: string): boolean {
  const self = selfCommand();
  if (self === null) return false;
  try {
    const child = spawn(self[0], [...self.slice(1), ...argv], {
      detached: true,
      stdio: "ignore",
      // noema itself, sealing what the hook would have sealed: it keeps the hook's environment (the agent's own).
      env: childEnv({ ...process.env, NOEMA_HOOK_SERVE: socket }, { noema: true }),
    });
    child.on("error", () => {});
    child.unref();
    return true;
  } catch {
    return false;
  }
}
