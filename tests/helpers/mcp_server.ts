/**
 * A real MCP server (the `@modelcontextprotocol/server` SDK) for tests, with
 * tools `echo` ({text} → the text back) and `boom` (a tool error). Run as a
 * script it serves stdio (`bun tests/helpers/mcp_server.ts`);
 * {@link startMcpHttpServer} serves Streamable HTTP on 127.0.0.1.
 *
 * @module
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Buffer } from "node:buffer";
import { createMcpHandler, fromJsonSchema, McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";

/** A fresh demo server. */
export function demoServer(): McpServer {
  const server = new McpServer({ name: "demo", version: "1.0.0" });
  server.registerTool(
    "echo",
    {
      description: "Echo a text back",
      inputSchema: fromJsonSchema<{ text: string }>({
        type: "object",
        properties: { text: { type: "string" } },
        required: ["text"],
      }),
    },
    ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }),
  );
  server.registerTool(
    "boom",
    { description: "Always fails", inputSchema: fromJsonSchema({ type: "object", properties: {} }) },
    () => ({ content: [{ type: "text", text: "boom failed on purpose" }], isError: true }),
  );
  return server;
}

/** Serves the demo server over Streamable HTTP at `http://127.0.0.1:PORT/mcp`. */
export async function startMcpHttpServer(): Promise<{ url: string; close(): Promise<void> }> {
  const handler = createMcpHandler(() => demoServer());
  const http = createServer(async (req, res) => {
    const chunks: Uint8Array[] = [];
    for await (const c of req) chunks.push(c as Uint8Array);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string") headers.set(k, v);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const response = await handler.fetch(
      new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body }),
    );
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) { for await (const c of response.body) res.write(c); }
    res.end();
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: () =>
      new Promise<void>((r) => {
        http.closeAllConnections?.();
        http.close(() => r());
      }),
  };
}

if (import.meta.main) await demoServer().connect(new StdioServerTransport());
