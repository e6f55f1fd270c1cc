/**
 * The stdio side of the raw MCP servers of the tests (`mcp_raw_server.ts`,
 * `mcp_hostile_server.ts`): JSON-RPC messages as lines, no SDK. Every line
 * received is appended to a log (a test looks for what reached the server),
 * a line that is JSON is handed on, and the process ends with its stdin.
 *
 * @module
 */
import { appendFileSync } from "node:fs";
import process from "node:process";

/**
 * Writes one message to the client, as a line.
 *
 * @example
 * ```ts
 * import { send } from "./raw_jsonrpc_stdio.ts";
 * send({ jsonrpc: "2.0", id: 1, result: {} });
 * ```
 */
export function send(message: unknown): void {
  process.stdout.write(JSON.stringify(message) + "\n");
}

/**
 * Reads stdin's lines for ever: each appended to `log`, each JSON object given to `handle`; exits when stdin ends.
 *
 * @example
 * ```ts
 * import { serveLines } from "./raw_jsonrpc_stdio.ts";
 * serveLines("/tmp/server.log", (m) => console.error(m.method));
 * ```
 */
export function serveLines(log: string, handle: (message: Record<string, unknown>) => void): void {
  let rest = "";
  process.stdin.on("data", (d: Uint8Array) => {
    rest += new TextDecoder().decode(d);
    const lines = rest.split("\n");
    rest = lines.pop()!;
    for (const line of lines.filter(Boolean)) {
      appendFileSync(log, line + "\n");
      let m: unknown;
      try {
        m = JSON.parse(line);
      } catch {
        continue; // logged: a test looks for what reached the server
      }
      if (typeof m === "object" && m !== null) handle(m as Record<string, unknown>);
    }
  });
  process.stdin.on("end", () => process.exit(0));
}
