/**
 * A real MCP server (the `@modelcontextprotocol/server` SDK, stdio) for the
 * gateway tests, serving a directory: `write_file` ({path, content}: writes
 * it), `read_file` ({path}: its text; annotated `readOnlyHint`), `delete_all`
 * (does nothing; for deny rules), `crash` (the server exits mid-call), `slow` (answers once a file `release` exists), a resource `notes://readme` and a prompt
 * `greet`. Every tool call it receives is appended to the calls log (one JSON
 * line: {tool, arguments}), so a test can tell what reached the server.
 *
 * Run: `bun tests/helpers/mcp_fs_server.ts DIR CALLS_LOG`. With
 * `MCP_WRITE_DESCRIPTION` set, write_file's description is that text (a
 * server that changed its tool after it was pinned).
 *
 * @module
 */
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { fromJsonSchema, McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";

const [dir, callsLog] = process.argv.slice(2);

function logged(tool: string, args: unknown): void {
  appendFileSync(callsLog, JSON.stringify({ tool, arguments: args }) + "\n");
}

const server = new McpServer({ name: "test-fs", version: "1.0.0" });
server.registerTool(
  "write_file",
  {
    description: process.env.MCP_WRITE_DESCRIPTION ?? "Write a text file in the served directory",
    inputSchema: fromJsonSchema<{ path: string; content: string }>({
      type: "object",
      properties: { path: { type: "string" }, content: { type: "string" } },
      required: ["path", "content"],
    }),
    annotations: { destructiveHint: true },
  },
  ({ path, content }) => {
    logged("write_file", { path, content });
    writeFileSync(join(dir, path), content);
    return {
      content: [{ type: "text", text: `wrote ${content.length} bytes to ${path}` }],
      structuredContent: { path, bytes: content.length },
    };
  },
);
server.registerTool(
  "read_file",
  {
    description: "Read a text file in the served directory",
    inputSchema: fromJsonSchema<{ path: string }>({
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
    }),
    annotations: { readOnlyHint: true },
  },
  ({ path }) => {
    logged("read_file", { path });
    try {
      return { content: [{ type: "text", text: readFileSync(join(dir, path), "utf8") }] };
    } catch (e) {
      return { content: [{ type: "text", text: `cannot read ${path}: ${(e as Error).message}` }], isError: true };
    }
  },
);
server.registerTool(
  "delete_all",
  { description: "Delete every file (does nothing here)", inputSchema: fromJsonSchema({ type: "object" }) },
  () => {
    logged("delete_all", {});
    return { content: [{ type: "text", text: "deleted nothing" }] };
  },
);
server.registerTool(
  "crash",
  { description: "Exit the server mid-call", inputSchema: fromJsonSchema({ type: "object" }) },
  () => {
    logged("crash", {});
    process.exit(3);
  },
);
server.registerTool(
  "slow",
  {
    description: "Answer once the file named release exists in the served directory",
    inputSchema: fromJsonSchema({ type: "object" }),
  },
  async () => {
    logged("slow", {});
    while (!existsSync(join(dir, "release"))) await new Promise((r) => setTimeout(r, 20));
    return { content: [{ type: "text", text: "released" }] };
  },
);
server.registerResource(
  "readme",
  "notes://readme",
  { title: "Readme", mimeType: "text/plain" },
  (uri) => ({ contents: [{ uri: uri.href, text: "the readme resource, served as is" }] }),
);
server.registerPrompt(
  "greet",
  { description: "A greeting" },
  () => ({ messages: [{ role: "user", content: { type: "text", text: "hello from the prompt" } }] }),
);
await server.connect(new StdioServerTransport());
