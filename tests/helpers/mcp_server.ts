/**
 * A real MCP server (the `@modelcontextprotocol/server` SDK) over stdio, for
 * tests: tools `echo` ({text} → the text back) and `boom` (a tool error).
 * Run it as a child process: `bun tests/helpers/mcp_server.ts`.
 *
 * @module
 */
import { fromJsonSchema, McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";

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
await server.connect(new StdioServerTransport());
