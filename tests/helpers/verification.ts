/**
 * The `verification` object of a summary for a run that had no assertions,
 * as the contract spells it (agent-run-artifacts.md, summary.json).
 *
 * @module
 */

/**
 * `summary.json` `verification` when nothing was to be verified.
 *
 * @example
 * ```ts
 * import { VERIFICATION_NOT_PROVIDED } from "./helpers/verification.ts";
 * const verification = { ...VERIFICATION_NOT_PROVIDED, provided: true, passed: true };
 * ```
 */
export const VERIFICATION_NOT_PROVIDED = {
  provided: false,
  passed: null,
  assertions: [],
  workspace_diff: null,
  snapshots: null,
  policy: { ignore: [".git"], symlinks: "skip" },
  error: null,
};
