/**
 * A minimal MCP server speaking raw JSON-RPC lines on stdio (no SDK), for
 * the gateway's pass-through of what a server starts: its tool `ask` sends a
 * progress notification and a `sampling/createMessage` request to the
 * client, waits for the client's answer, and returns the sampled text as the
 * tool's result. Every line it receives is appended to the log given as its
 * argument.
 *
 * Run: `bun tests/helpers/mcp_raw_server.ts LOG`.
 *
 * @module
 */
import process from "node:process";
import { send, serveLines } from "./raw_jsonrpc_stdio.ts";

const [log] = process.argv.slice(2);
/** The tools/call waiting for the client's answer to our sampling request. */
let waiting: unknown = null;

function handle(m: Record<string, unknown>): void {
  const params = (m.params ?? {}) as Record<string, unknown>;
  if (m.method === "initialize") {
    send({
      jsonrpc: "2.0",
      id: m.id,
      result: {
        protocolVersion: params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "raw", version: "1" },
      },
    });
  } else if (m.method === "tools/list") {
    send({
      jsonrpc: "2.0",
      id: m.id,
      result: { tools: [{ name: "ask", description: "Ask the client's model", inputSchema: { type: "object" } }] },
    });
  } else if (m.method === "tools/call") {
    const token = ((params._meta ?? {}) as Record<string, unknown>).progressToken;
    if (token !== undefined) {
      send({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, progress: 1 } });
    }
    waiting = m.id;
    send({
      jsonrpc: "2.0",
      id: "sampling-1",
      method: "sampling/createMessage",
      params: { messages: [{ role: "user", content: { type: "text", text: "say hi" } }], maxTokens: 10 },
    });
  } else if (m.id === "sampling-1" && m.method === undefined) {
    const text = ((m.result as Record<string, unknown>)?.content as { text?: string })?.text ?? "?";
    send({ jsonrpc: "2.0", id: waiting, result: { content: [{ type: "text", text: `sampled: ${text}` }] } });
  } else if (m.id !== undefined && typeof m.method === "string") {
    send({ jsonrpc: "2.0", id: m.id, result: {} });
  }
}

serveLines(log, handle);
