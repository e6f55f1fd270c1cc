/**
 * The gateway's own policy, `McpGateway@1.0`, consulted with the others on
 * each `tools/call`: it vetoes a tool whose description, schemas, title or annotations
 * changed since it was pinned (`tool_changed`, see `pins.ts`), and passes
 * the tool's annotations (`readOnlyHint`, `destructiveHint`…) on as a hint,
 * never as trust: a server may say anything about its own tools.
 *
 * @module
 */
import type { PolicyObject, PolicyState, Verdict } from "../../plugins/api.ts";

/** What the policy asks the gateway about a tool (by its name on the server). */
export interface GateLookup {
  /** Why the tool is blocked (its pin and the digest seen), or null. */
  changed(tool: string): string | null;
  /** The annotations the server listed for the tool, or null. */
  annotations(tool: string): Record<string, unknown> | null;
}

/** The policy's id. */
export const GATE_POLICY_ID = "McpGateway@1.0";

/**
 * The gateway policy for calls of the tools of the server `server()` names.
 *
 * @example
 * ```ts
 * import { gatePolicy } from "./gate_policy.ts";
 * const p = gatePolicy(() => "fs", { changed: () => null, annotations: () => ({ readOnlyHint: true }) });
 * p.name; // "McpGateway"
 * ```
 */
export function gatePolicy(server: () => string, lookup: GateLookup): PolicyObject {
  return {
    name: "McpGateway",
    version: "1.0",
    advise(state: PolicyState): Verdict | undefined {
      const prefix = `mcp__${server()}__`;
      if (!state.action.tool.startsWith(prefix)) return undefined;
      const tool = state.action.tool.slice(prefix.length);
      const changed = lookup.changed(tool);
      if (changed !== null) {
        return {
          kind: "veto",
          advice: `tool_changed: ${changed}`,
          confidence: 1,
          risk_tags: ["tool_changed"],
          rationale:
            "MCP tool pinning: a tool's description, schemas, title or annotations changed after it was first seen",
        };
      }
      const notes = lookup.annotations(tool);
      if (notes === null || Object.keys(notes).length === 0) return undefined;
      return {
        kind: "hint",
        advice: `the server says (untrusted annotations): ${JSON.stringify(notes)}`,
        confidence: 1,
        risk_tags: Object.entries(notes).filter(([, v]) => v === true).map(([k]) => `mcp:${k}`),
      };
    },
  };
}
