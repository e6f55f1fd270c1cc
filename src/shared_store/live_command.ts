/**
 * The name of the hidden command that starts a run's publishing process
 * (`live_process.ts`), in a module of its own: the CLI recognises it on every
 * call without loading the store client (about 10 MB of modules under Bun).
 *
 * @module
 */

/**
 * The (hidden) command that starts a run's publishing process: `noema __store-live`.
 *
 * @example
 * ```ts
 * import { LIVE_PUBLISH_COMMAND } from "./live_command.ts";
 * LIVE_PUBLISH_COMMAND; // "__store-live"
 * ```
 */
export const LIVE_PUBLISH_COMMAND = "__store-live";
