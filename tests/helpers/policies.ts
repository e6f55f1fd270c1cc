/**
 * Policies several tests share: inline policy objects (`{ name, version,
 * advise }`) handed to `PolicyGovernor.create`, and the policy files the
 * real-agent tests (Claude Code, Codex, Gemini CLI) govern their shell calls with.
 *
 * @module
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PolicyObject } from "../../src/plugins/api.ts";

/**
 * Policy files on a shell call's `command`, one file each (they import
 * nothing): `no-forbidden.ts` vetoes "forbidden", `rewrite.ts` rewrites
 * "original" to "governed", `gate.ts` asks a human about "deploy", and
 * `throws.ts` throws on "boom".
 */
export const AGENT_POLICIES: Readonly<Record<string, string>> = {
  "no-forbidden.ts": `export default { name: "NoForbidden", version: "1.0", api: "1.0",
    advise(s) { const c = String(s.action.input.command ?? "");
      return c.includes("forbidden") ? { kind: "veto", advice: "forbidden files stay untouched", confidence: 0.95 } : undefined; } };`,
  "rewrite.ts": `export default { name: "Rewrite", version: "1.0", api: "1.0",
    advise(s) { const c = String(s.action.input.command ?? "");
      return c.includes("original") ? { kind: "intervention", advice: "say governed instead",
        patch: { command: c.replace("original", "governed") }, confidence: 0.9 } : undefined; } };`,
  "gate.ts": `export default { name: "Gate", version: "1.0", api: "1.0",
    advise(s) { const c = String(s.action.input.command ?? "");
      return /deploy/.test(c) ? { kind: "veto", advice: "deploys need a human", confidence: 0.9, requires_approval: true } : undefined; } };`,
  "throws.ts": `export default { name: "Throws", version: "1.0", api: "1.0",
    advise(s) { if (String(s.action.input.command ?? "").includes("boom")) throw new Error("policy bug"); } };`,
};

/**
 * Writes {@link AGENT_POLICIES} into a new directory `dir`; returns `dir`.
 *
 * @example
 * ```ts
 * import { writeAgentPolicies } from "./helpers/policies.ts";
 * const policyDir = writeAgentPolicies("/tmp/t/policies");
 * ```
 */
export function writeAgentPolicies(dir: string): string {
  mkdirSync(dir);
  for (const [name, text] of Object.entries(AGENT_POLICIES)) writeFileSync(join(dir, name), text);
  return dir;
}

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
