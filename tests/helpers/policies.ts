/**
 * Inline policy objects (`{ name, version, advise }`) that several tests
 * hand to `PolicyGovernor.create`.
 *
 * @module
 */
import type { PolicyObject } from "../../src/plugins/api.ts";

/**
 * Vetoes every `write_file` call and asks for a human's approval: the call
 * pauses the episode.
 *
 * @example
 * ```ts
 * import { PolicyGovernor } from "../../src/llm/policy_governor.ts";
 * import { WRITE_NEEDS_APPROVAL } from "./helpers/policies.ts";
 * const gov = await PolicyGovernor.create({ policies: [WRITE_NEEDS_APPROVAL] });
 * ```
 */
export const WRITE_NEEDS_APPROVAL: PolicyObject = {
  name: "Gate",
  version: "1.0",
  advise: (s) =>
    s.action.tool === "write_file"
      ? { kind: "veto", advice: "writes need a human", requires_approval: true }
      : undefined,
};
