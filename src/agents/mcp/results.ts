/**
 * Tool results on the MCP wire, as `noema mcp` records and answers them: a
 * server's `tools/call` response as the episode's act result, what a policy's
 * review lets the client see of it, and the tool result a refused call gets
 * (`isError: true` with noema's reason: the model reads it, where a JSON-RPC
 * error would never reach it).
 *
 * @module
 */
import type { RecordedResult } from "../core.ts";
import type { RecordedReview } from "../../runtime/review_record.ts";

/** A `tools/call` result, as the gateway reads it. */
export interface ToolResult {
  content?: unknown[];
  structuredContent?: unknown;
  isError?: boolean;
}

/** The text parts of a result's content, joined (other parts named by their type). */
function contentText(result: ToolResult): string {
  const parts = Array.isArray(result.content) ? result.content : [];
  return parts.map((c) => {
    const x = c as { type?: unknown; text?: unknown };
    return x?.type === "text" && typeof x.text === "string" ? x.text : `[${String(x?.type)} content]`;
  }).join("\n");
}

/**
 * The act result of a server's response to `tools/call`: ok with the whole
 * result as output, an error (`McpToolError`) when it says `isError`, or the
 * JSON-RPC error (`McpError`) when the server answered with one.
 *
 * @example
 * ```ts
 * import { callResult } from "./results.ts";
 * callResult({ jsonrpc: "2.0", id: 1, result: { content: [{ type: "text", text: "ok" }] } }, 3).status; // "ok"
 * ```
 */
export function callResult(msg: Record<string, unknown>, durationMs: number): RecordedResult {
  const duration_ms = Math.max(0, Math.round(durationMs));
  const error = msg.error as { code?: unknown; message?: unknown } | undefined;
  if (error !== undefined || typeof msg.result !== "object" || msg.result === null) {
    const message = typeof error?.message === "string" ? error.message : "the server's response has no result";
    return {
      status: "error",
      error: { type: "McpError", message: `${message} (code ${String(error?.code)})` },
      duration_ms,
    };
  }
  const result = msg.result as ToolResult;
  if (result.isError === true) {
    const text = contentText(result);
    return {
      status: "error",
      output: result,
      error: { type: "McpToolError", message: text.slice(0, 2000) },
      duration_ms,
    };
  }
  return { status: "ok", output: result, duration_ms };
}

/**
 * What the client gets instead of the server's response when a policy's
 * review redacted or blocked the result (enforced), or null: the response as
 * the server sent it.
 *
 * @example
 * ```ts
 * import { deliveredResult } from "./results.ts";
 * deliveredResult({ jsonrpc: "2.0", id: 1, result: {} }, null); // null
 * ```
 */
export function deliveredResult(
  msg: Record<string, unknown>,
  review: RecordedReview | null,
): Record<string, unknown> | null {
  if (review === null || !review.enforced) return null;
  if (review.decision === "block") {
    return refusal(msg.id, `noema (${review.policy_id ?? "review"}): result withheld: ${review.reason ?? "blocked"}`);
  }
  if (review.decision !== "redact") return null;
  const shown = review.shown as ToolResult | string | null;
  const result: ToolResult = typeof shown === "object" && shown !== null && Array.isArray(shown.content)
    ? shown
    : { content: [{ type: "text", text: typeof shown === "string" ? shown : JSON.stringify(shown) }] };
  return { jsonrpc: "2.0", id: msg.id, result };
}

/**
 * The tool result a refused call gets.
 *
 * @example
 * ```ts
 * import { refusal } from "./results.ts";
 * refusal(7, "noema (Rules@1.0): denied").result; // { content: [{ type: "text", text: "noema (Rules@1.0): denied" }], isError: true }
 * ```
 */
export function refusal(id: unknown, text: string): Record<string, unknown> & { result: ToolResult } {
  return { jsonrpc: "2.0", id, result: { content: [{ type: "text", text }], isError: true } };
}
