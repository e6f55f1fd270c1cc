/**
 * What every command receives: the output, and a way to read the global
 * options (`--root`, `--debug`) wherever they were given on the command line.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import process from "node:process";
import { usageError } from "./errors.ts";
import type { ExitCode } from "../errors.ts";
import type { RootOptions } from "../store/layout.ts";
import type { Output } from "./output.ts";

/** Shared state of one CLI invocation. */
export interface CliContext {
  /** Where commands write. */
  out: Output;
  /** Exit code when the action returns normally (e.g. 1 when `validate` finds problems). @default {0} */
  exitCode: ExitCode;
}

/** The global options, as parsed. */
export interface GlobalOptions extends RootOptions {
  /** Print stack traces of internal errors. */
  debug: boolean;
}

/**
 * A command's global options (`--root` and `--debug` may come before or after
 * the command name).
 *
 * @example
 * ```ts
 * // inside an action: (episode, opts, cmd) => readState(episode, globalOptions(cmd))
 * ```
 */
export function globalOptions(cmd: CommandUnknownOpts): GlobalOptions {
  const all = cmd.optsWithGlobals() as Record<string, unknown>;
  const root = typeof all.root === "string" ? all.root : undefined;
  if (root !== undefined) checkRoot(root, "--root");
  else if (process.env.NOEMA_ROOT) checkRoot(process.env.NOEMA_ROOT, "NOEMA_ROOT");
  return root === undefined ? { debug: all.debug === true } : { root, debug: all.debug === true };
}

/**
 * A root that is a file, or lies below one, is a usage error naming where it came from (it would
 * otherwise surface as ENOTDIR from whatever reads or writes first). A root that does not exist yet
 * is fine: a run creates it.
 *
 * @example
 * ```ts
 * import { checkRoot } from "./context.ts";
 * checkRoot(".noema", "--root"); // returns, or throws "--root .noema: not a directory"
 * ```
 */
export function checkRoot(root: string, source: string): void {
  const full = resolve(root);
  for (let p = full;; p = dirname(p)) {
    let st;
    try {
      st = statSync(p);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if ((code === "ENOENT" || code === "ENOTDIR") && dirname(p) !== p) continue;
      throw usageError(`${source} ${root}: cannot use it as the episodes root: ${(e as Error).message}`);
    }
    if (st.isDirectory()) return;
    const what = p === full ? "it is not a directory" : `${p} is not a directory`;
    throw usageError(`${source} ${root}: cannot use it as the episodes root: ${what}`);
  }
}

/**
 * A command module: registers one command (with its options, help text and
 * action) on the program. Add a file under `src/cli/commands/` exporting one
 * of these, and list it in `src/cli/commands/index.ts`.
 */
export type RegisterCommand = (program: CommandUnknownOpts, ctx: CliContext) => void;

/**
 * Formats the "Examples:" block appended to a command's `--help`.
 *
 * @example
 * ```ts
 * import { examples } from "./context.ts";
 * examples(["noema list --limit 5", "list the five newest episodes"]);
 * ```
 */
export function examples(...pairs: [command: string, what: string][]): string {
  const width = Math.max(...pairs.map(([c]) => c.length));
  return "\nExamples:\n" + pairs.map(([c, w]) => `  $ ${c.padEnd(width)}  # ${w}`).join("\n") + "\n";
}
