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
import {
  createMcpHandler,
  fromJsonSchema,
  McpServer,
  WebStandardStreamableHTTPServerTransport,
} from "@modelcontextprotocol/server";
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

/** A fetch-style handler: stateless (a new server per request, SSE answers) unless `sessions`. */
type Handler = { fetch(request: Request): Promise<Response> };

/**
 * A stateful handler: `initialize` opens a session (its `Mcp-Session-Id`), later requests name it, DELETE ends
 * it; answers are JSON (not SSE).
 */
function sessionHandler(): Handler {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  return {
    async fetch(request) {
      const id = request.headers.get("mcp-session-id");
      const known = id === null ? undefined : sessions.get(id);
      if (known) return await known.handleRequest(request);
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (sid) => void sessions.set(sid, transport),
        onsessionclosed: (sid) => void sessions.delete(sid),
      });
      await demoServer().connect(transport);
      return await transport.handleRequest(request);
    },
  };
}

/**
 * Serves the demo server over Streamable HTTP at `http://127.0.0.1:PORT/mcp`: stateless with SSE answers, or with
 * `{ sessions: true }` stateful with JSON answers.
 */
export async function startMcpHttpServer(
  options: { sessions?: boolean } = {},
): Promise<{ url: string; close(): Promise<void> }> {
  const handler: Handler = options.sessions ? sessionHandler() : createMcpHandler(() => demoServer());
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
