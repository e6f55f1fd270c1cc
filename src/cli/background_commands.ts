/**
 * noema's internal background commands, not commands of the CLI (not in
 * `--help`): a run's live OpenTelemetry export (`noema __otel-live`) and its
 * live publishing to the shared store (`noema __store-live`), each a process
 * started by the run (see `src/channels.ts`). Each loads only what it needs.
 *
 * @module
 */
import { LIVE_EXPORT_COMMAND } from "../export/otel/live_command.ts";
import { LIVE_PUBLISH_COMMAND } from "../shared_store/live_command.ts";

/**
 * Serves the background command `command` names, and resolves with its exit
 * code; null when `command` is not one.
 *
 * @example
 * ```ts
 * import { runBackgroundCommand } from "./background_commands.ts";
 * const code = await runBackgroundCommand(process.argv[2]);
 * if (code !== null) process.exit(code);
 * ```
 */
export async function runBackgroundCommand(command: string | undefined): Promise<number | null> {
  if (command === LIVE_EXPORT_COMMAND) {
    const { serveLiveExportProcess } = await import("../export/otel/live_process.ts");
    return await serveLiveExportProcess();
  }
  if (command === LIVE_PUBLISH_COMMAND) {
    const { serveLivePublishProcess } = await import("../shared_store/live_process.ts");
    return await serveLivePublishProcess();
  }
  return null;
}
