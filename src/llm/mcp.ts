/**
 * MCP servers as tools: each server in `mcp_servers` is connected with the
 * MCP client SDK (stdio: `{command, args, env}`; Streamable HTTP: `{url,
 * headers}`), and its tools are offered as `mcp__<server>__<tool>` (cut to
 * 64 characters), governed like any other call. A tool result with
 * `isError` goes back to the model as a tool error.
 *
 * @module
 */
import type { Client } from "@modelcontextprotocol/client";
import { NoemaError } from "../errors.ts";
import { childEnv } from "../plugins/process.ts";
import { clip, type LlmTool, ToolError } from "./tools/tool.ts";

/** A configured MCP server. */
export type McpServerConfig =
  | { command: string; args?: string[]; env?: Record<string, string> }
  | { url: string; headers?: Record<string, string> };

/** Connected servers: their tools and a way to close them. */
export interface McpConnection {
  tools: LlmTool[];
  close(): Promise<void>;
}

function text(result: { content?: unknown[]; structuredContent?: unknown }): string {
  const parts = (result.content ?? []).map((c) => {
    const x = c as { type: string; text?: string };
    return x.type === "text" ? x.text ?? "" : `[${x.type} content]`;
  });
  return parts.join("\n");
}

/**
 * Connects every server and lists its tools. A server that cannot be started
 * or reached is a usage error naming it.
 *
 * @example
 * ```ts
 * import { connectMcpServers } from "noema";
 * const mcp = await connectMcpServers({ files: { command: "node", args: ["server.js"] } });
 * await mcp.close();
 * ```
 */
export async function connectMcpServers(servers: Record<string, McpServerConfig>): Promise<McpConnection> {
  const clients: Client[] = [];
  const tools: LlmTool[] = [];
  const close = async () => {
    for (const c of clients) await c.close().catch(() => {});
  };
  const entries = Object.entries(servers);
  // The MCP SDK is loaded when a server is configured (importing it costs ~0.1 s of CPU; most runs have none).
  const sdk = entries.length === 0 ? null : await import("@modelcontextprotocol/client");
  const stdio = entries.some(([, cfg]) => "command" in cfg) ? await import("@modelcontextprotocol/client/stdio") : null;
  try {
    for (const [name, cfg] of entries) {
      const client = new sdk!.Client({ name: "noema", version: "1.0" });
      const transport = "command" in cfg
        ? new stdio!.StdioClientTransport({
          command: cfg.command,
          args: cfg.args,
          // The SDK adds a safe few variables (PATH, HOME…) to these; no noema secret is among them.
          env: childEnv(cfg.env ?? {}),
          stderr: "ignore",
        })
        : new sdk!.StreamableHTTPClientTransport(new URL(cfg.url), { requestInit: { headers: cfg.headers } });
      let listed;
      try {
        await client.connect(transport);
        clients.push(client);
        listed = await client.listTools();
      } catch (e) {
        // Like a model server that cannot be reached: the run ends as an adapter error, with complete artifacts.
        throw new NoemaError("mcp_unreachable", `adapter.mcp_servers.${name}: cannot connect: ${(e as Error).message}`);
      }
      for (const t of listed.tools) {
        tools.push({
          name: `mcp__${name}__${t.name}`.slice(0, 64),
          description: t.description ?? `${t.name} (MCP server ${name})`,
          parameters: (t.inputSchema ?? { type: "object", properties: {} }) as Record<string, unknown>,
          command: (input) => `mcp ${name}.${t.name} ${JSON.stringify(input)}`,
          async execute(input, ctx) {
            const r = await client.callTool({ name: t.name, arguments: input }, { signal: ctx.signal });
            const out = text(r as { content?: unknown[] });
            if ((r as { isError?: boolean }).isError) throw new ToolError(clip(out, 8000), "McpToolError");
            return (r as { structuredContent?: unknown }).structuredContent ?? clip(out, 100_000);
          },
        });
      }
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { tools, close };
}
