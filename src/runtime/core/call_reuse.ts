/**
 * A call id reused for another call. `EpisodeCore.propose` answers a call
 * sent again with its earlier decision (an agent may re-send a call it did
 * not hear back about); a call id already decided for another tool or input
 * must not inherit that decision (`toolu_1` allowed for `ls`, then sent with
 * `rm -rf v`). The call as first proposed (before a policy's patch) is kept
 * as a digest, so the check needs no second copy of its input.
 *
 * @module
 */
import { canonicalJson } from "../../store/canonical_json.ts";
import { sha256 } from "../../store/hash.ts";
import type { CallRecord } from "./progress_file.ts";

/** A call as proposed: its tool and input. */
export interface ProposedCall {
  tool: string;
  input: Record<string, unknown>;
}

/**
 * The digest of a call as proposed (its input with secrets masked: `EpisodeCore` passes it so), bound to its episode.
 *
 * @example
 * ```ts
 * import { proposalDigest } from "./call_reuse.ts";
 * proposalDigest("ep_1", { tool: "Bash", input: { command: "ls" } }); // "sha256:…"
 * ```
 */
export function proposalDigest(episodeId: string, call: ProposedCall): string {
  return sha256(`${episodeId}\0${call.tool}\0${canonicalJson(call.input)}`);
}

/**
 * Whether `call` is the call `known` was decided for (the same tool and input), so its decision may be given again.
 * The digest covers `call.masked` (its input with secrets masked); a record without a digest (written before there
 * was one, or rebuilt from the events) is compared with its recorded action, unmasked by `unmask`.
 *
 * @example
 * ```ts
 * import { sameCall } from "./call_reuse.ts";
 * // if (!sameCall("ep_1", known, { ...action, masked }, (v) => redactor.unmask(v).value)) refuse(…);
 * ```
 */
export function sameCall(
  episodeId: string,
  known: CallRecord,
  call: ProposedCall & { masked: ProposedCall },
  unmask: (input: Record<string, unknown>) => Record<string, unknown>,
): boolean {
  if (known.proposed !== undefined) return known.proposed === proposalDigest(episodeId, call.masked);
  return known.action.tool === call.tool && canonicalJson(unmask(known.action.input)) === canonicalJson(call.input);
}

/**
 * The reason given for a reused call id, naming the call it was first given to.
 *
 * @example
 * ```ts
 * import { reusedReason } from "./call_reuse.ts";
 * reusedReason("toolu_1", "step-1"); // "call id toolu_1 was already used by step-1 for another tool or input: …"
 * ```
 */
export function reusedReason(callId: string, firstStep: string): string {
  return `call id ${callId} was already used by ${firstStep} for another tool or input: a call id names one call, ` +
    "so this one is refused (send it with a new id)";
}
