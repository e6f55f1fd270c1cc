/**
 * The id noema gives a Gemini CLI tool call, which has none of its own in
 * the hook payloads: a hash of its session, tool and input, so `BeforeTool`
 * and `AfterTool` of one call meet.
 *
 * @module
 */
import { canonicalHash } from "../../store/hash.ts";

/**
 * The call id of a Gemini tool call.
 *
 * @example
 * ```ts
 * import { geminiCallId } from "./call_id.ts";
 * geminiCallId("s1", "run_shell_command", { command: "ls" }); // "gem_…"
 * ```
 */
export function geminiCallId(session: string, tool: string, input: Record<string, unknown>): string {
  return `gem_${canonicalHash({ session, tool, input }).slice(-16)}`;
}
