/**
 * What an agent reads for a call it made while the episode waits for a
 * human's decision about another one (a later call of the same turn): the
 * call is neither proposed nor run, and may be made again once that is
 * decided (the checkpoint stays the episode's last event).
 *
 * @module
 */

/**
 * The reason a held-back call is refused with.
 *
 * @example
 * ```ts
 * import { heldCallReason } from "./held_call.ts";
 * heldCallReason({ tool: "write_file", step_id: "step-2" });
 * // "not run: the episode is waiting for a human to approve write_file (step-2); call it again once that is decided"
 * ```
 */
export function heldCallReason(waiting: { tool: string; step_id: string } | null): string {
  const what = waiting ? `${waiting.tool} (${waiting.step_id})` : "another call";
  return `not run: the episode is waiting for a human to approve ${what}; call it again once that is decided`;
}
