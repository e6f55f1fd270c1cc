/**
 * The CLI's top-level error handling: every failure becomes one line on
 * stderr and an exit code.
 *
 * - a {@link NoemaError}: `noema: <message>`, exit with its `exitCode`;
 * - a commander usage error (unknown option, missing argument, bad choice):
 *   `noema: <message> (see 'noema <cmd> --help')`, exit 2;
 * - a closed stdout pipe (`noema events … | head`): nothing, exit 0;
 * - a full disk (`ENOSPC`, `EDQUOT`) noema did not name the file of: `noema: no space left on the device: …`, exit 11;
 * - anything else: `noema: internal error: <message>`, with the stack only
 *   under `--debug` (or `NOEMA_DEBUG=1`), exit 1.
 *
 * @module
 */
import { CommanderError } from "@commander-js/extra-typings";
import { EXIT, type ExitCode, NoemaError } from "../errors.ts";
import { BrokenPipeError, neutralize, type Output } from "./output.ts";
import { basename } from "node:path";
import { isDiskFull } from "../store/disk_full.ts";
import { calledAs } from "../called_as.ts";

/**
 * A usage error raised by a command (bad option value and the like): exit 2.
 *
 * @example
 * ```ts
 * import { usageError } from "./errors.ts";
 * throw usageError("--limit must be a positive integer, got \"x\"");
 * ```
 */
export function usageError(message: string): NoemaError {
  return new NoemaError("usage", message, { exitCode: EXIT.USAGE });
}

/** Commander codes that mean "done, nothing wrong" (help or version was shown). */
const COMMANDER_OK = new Set(["commander.helpDisplayed", "commander.version", "commander.help"]);

/**
 * Reports an error on stderr and returns the exit code to use.
 *
 * @example
 * ```ts
 * import { createOutput } from "./output.ts";
 * import { reportError } from "./errors.ts";
 * const code = reportError(new Error("boom"), createOutput(), { debug: false }); // prints "noema: internal error: boom", returns 1
 * ```
 */
export function reportError(error: unknown, out: Output, options: { debug: boolean }): ExitCode {
  if (error instanceof BrokenPipeError || (error as { code?: unknown } | null)?.code === "EPIPE") return EXIT.OK;
  try {
    out.stdout.flush();
  } catch (e) {
    if (e instanceof BrokenPipeError) return EXIT.OK;
  }
  if (error instanceof NoemaError) {
    // Messages quote recorded data (a decider's claimed name, a file's content): its control characters are shown,
    // never sent to the terminal.
    out.note(`noema: ${neutralize(error.message)}`);
    if (options.debug && error.stack) out.note(error.stack);
    return error.exitCode;
  }
  if (error instanceof CommanderError) {
    // The message was already printed by the program's outputError hook.
    if (COMMANDER_OK.has(error.code)) return error.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    return EXIT.USAGE;
  }
  const message = error instanceof Error ? error.message : String(error);
  if (isDiskFull(error)) {
    // A write noema does not name the file of: still the disk, not a bug.
    out.note(`noema: no space left on the device: ${message}`);
    return EXIT.DISK_FULL;
  }
  out.note(`noema: internal error: ${message}`);
  if (options.debug) {
    if (error instanceof Error && error.stack) out.note(error.stack);
  } else {
    out.note("noema: run again with --debug for the stack trace");
  }
  return EXIT.ERROR;
}

/**
 * A run (or resume) of episode `episodeId` that stopped on a full disk, said
 * as such: what could not be written, that the episode is resumable, and how
 * (exit {@link EXIT.DISK_FULL}); with `episodeId` null (no episode directory
 * was in place), that nothing was recorded. Any other error is returned as it is.
 *
 * @example
 * ```ts
 * import { stoppedForSpace } from "./errors.ts";
 * try { await run(task); } catch (e) { throw stoppedForSpace(e, "ep_01K9…"); }
 * ```
 */
export function stoppedForSpace(error: unknown, episodeId: string | null): unknown {
  if (!isDiskFull(error) && (error as { code?: unknown } | null)?.code !== "disk_full") return error;
  const e = error as NoemaError & { code: string };
  const file = e instanceof NoemaError ? e.location.file : (e as { path?: string }).path;
  const cause = String((e.cause as { code?: unknown } | undefined)?.code ?? (isDiskFull(e) ? e.code : "ENOSPC"));
  const where = episodeId === null ? "" : ` of episode ${episodeId}`;
  // The file as the episode names it: not the temporary it was being written as (`state.json.tmp-staged-…`).
  const what = file ? ` writing ${basename(file).replace(/\.tmp-.*$/, "")}${where}` : where;
  // No episode (the disk filled before its directory was in place): nothing was recorded, so nothing resumes.
  const then = episodeId === null
    ? ": the run stopped before its episode was recorded (nothing was written to resume); free space, then run it again"
    : `: the run stopped there, its episode resumable; free space, then ${calledAs()} resume ${episodeId} continues it`;
  return new NoemaError("disk_full", `no space left on the device (${cause})${what}${then}`, {
    exitCode: EXIT.DISK_FULL,
    cause: error,
  });
}
