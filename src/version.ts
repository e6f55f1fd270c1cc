/**
 * Versions of noema and of the artifact contract it reads and writes.
 *
 * @module
 */

/** The version of noema itself. Kept in step with `package.json` by a test. */
export const NOEMA_VERSION = "0.1.0";

/**
 * The versions of every artifact shape in the contract.
 *
 * @example
 * ```ts
 * import { CONTRACT_VERSIONS } from "noema";
 * console.log(CONTRACT_VERSIONS.event); // "1.3.0"
 * ```
 */
export const CONTRACT_VERSIONS = {
  /** Schema version of one `events.jsonl` record. */
  event: "1.3.0",
  /** `state.json` `version` (backwards-compatible identifier). */
  state: "1.0",
  /** `state.json` `state_schema_version` (semantic version of the contract). */
  state_schema: "1.0.0",
  /** `summary.json` `schema_version`. */
  summary: "1.3.0",
  /** `manifest.json` `schema_version`. */
  manifest: "manifest/1.0",
  /** `schema_version` of one `learn.jsonl` line. */
  learn: "learn/1.0",
  /** `schema_version` of the `action_candidate` payload written by noema. */
  action_candidate: "action_candidate/1.0",
} as const;
