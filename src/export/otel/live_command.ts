/**
 * The name of the hidden command that starts a run's live export process
 * (`live_process.ts`), in a module of its own: the CLI recognises it on every
 * call without loading the exporter (about 10 MB of modules under Bun).
 *
 * @module
 */

/**
 * The (hidden) command that starts a live export's process: `noema __otel-live`.
 *
 * @example
 * ```ts
 * import { LIVE_EXPORT_COMMAND } from "./live_command.ts";
 * LIVE_EXPORT_COMMAND; // "__otel-live"
 * ```
 */
export const LIVE_EXPORT_COMMAND = "__otel-live";
