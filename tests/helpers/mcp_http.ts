/**
 * Helpers of the HTTP gateway tests (`noema mcp --upstream URL`): the real
 * CLI started in front of an upstream, one raw POST to it, and a raw
 * Streamable-HTTP upstream that reads a request's body in the charset its
 * `Content-Type` names (as `express.json()` does, UTF-7 included), records
 * every request and tools/call it gets, and lets a test answer a call as it
 * likes (a fault, a stream).
 *
 * @module
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, request, type ServerResponse } from "node:http";
import { Buffer } from "node:buffer";
import { cliCommand } from "./cli.ts";
import { env, withBound } from "./mcp_gateway.ts";
import { listenLocal } from "./local_http.ts";

/**
 * Starts `noema mcp … --upstream URL --listen 127.0.0.1:0`; `url` resolves with its endpoint once it listens.
 *
 * @example
 * ```ts
 * const gw = startGateway(base, root, upstream.url, ["--name", "m"]);
 * const url = new URL(await gw.url);
 * await gw.stop();
 * ```
 */
export function startGateway(base: string, root: string, upstream: string, flags: string[]) {
  const [command, ...args] = [...cliCommand(), "mcp", ...flags, "--upstream", upstream, "--listen", "127.0.0.1:0"];
  const child = spawn(command, args, { cwd: base, env: env(root), stdio: ["ignore", "pipe", "pipe"] });
  let err = "";
  const exited = new Promise<number | null>((r) => child.on("exit", (code) => r(code)));
  const url = withBound(
    new Promise<string>((resolve, reject) => {
      child.stderr!.on("data", (d: Uint8Array) => {
        err += new TextDecoder().decode(d);
        const m = /listening on (http:\/\/\S+)/.exec(err);
        if (m) resolve(m[1]);
      });
      void exited.then((code) => reject(new Error(`noema mcp exited ${code}: ${err}`)));
    }),
    "listening",
  );
  return { url, stop: () => (child.kill("SIGTERM"), withBound(exited, "exit")), stderr: () => err };
}

/** What a raw request got back. */
export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * One raw request to the gateway (POST unless `method` says otherwise): its status, headers and body. Sent with
 * `Content-Type: application/json` unless `headers` names another (or `null`: none).
 *
 * @example
 * ```ts
 * const r = await rawPost(url, JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }));
 * ```
 */
export function rawPost(
  url: URL,
  body: string | Uint8Array,
  headers: Record<string, string | null> = {},
  method = "POST",
): Promise<RawAnswer> {
  const all: Record<string, string | null> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...headers,
  };
  const sent = Object.fromEntries(Object.entries(all).filter((e): e is [string, string] => e[1] !== null));
  return withBound(
    new Promise<RawAnswer>((resolve, reject) => {
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method, headers: sent }, (res) => {
        const chunks: Uint8Array[] = [];
        res.on("data", (d: Uint8Array) => chunks.push(d));
        res.on(
          "end",
          () =>
            resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString("utf8") }),
        );
      });
      req.on("error", reject);
      req.end(body);
    }),
    `${method} ${url}`,
  );
}

/** A JSON-RPC message the raw upstream got. */
export type UpstreamMessage = Record<string, unknown> & { id?: unknown; method?: string; params?: unknown };

/** A raw upstream: what it got, and how to stop it. */
export interface RawUpstream {
  /** `http://127.0.0.1:PORT/mcp`. */
  url: string;
  /** Every request, in order: its method, headers and body (as it read it). */
  requests: { method: string; headers: IncomingHttpHeaders; body: string }[];
  /** Every tools/call it ran (read in the request's charset): the tool's name and arguments. */
  calls: { name: string; arguments: unknown }[];
  close(): Promise<void>;
}

/** Answers a tools/call the test's way (true), or leaves it to the default answer (false). */
export type CallAnswer = (call: UpstreamMessage, res: ServerResponse) => boolean;

/** The tools the raw upstream lists. */
export const UPSTREAM_TOOLS = ["safe", "danger", "read_file", "reset", "garbage", "html", "notify_after"];

/**
 * Starts a raw upstream on 127.0.0.1: `initialize` opens a session (`Mcp-Session-Id`), a notification gets 202,
 * `tools/list` lists {@link UPSTREAM_TOOLS}, a tools/call is recorded, then answered by `answer` or as JSON
 * (`ran NAME`). Its body is read in the charset the request's `Content-Type` names (UTF-8 when none), as
 * `express.json()` reads it.
 *
 * @example
 * ```ts
 * const up = await startRawUpstream();
 * // … a gateway in front of up.url …
 * await up.close();
 * ```
 */
export async function startRawUpstream(answer: CallAnswer = () => false): Promise<RawUpstream> {
  const requests: RawUpstream["requests"] = [];
  const calls: RawUpstream["calls"] = [];
  const server = createServer(async (req, res) => {
    const chunks: Uint8Array[] = [];
    for await (const c of req) chunks.push(c as Uint8Array);
    let body: string;
    try {
      body = decodeBody(req, Buffer.concat(chunks));
    } catch {
      return void res.writeHead(415).end();
    }
    requests.push({ method: req.method ?? "", headers: req.headers, body });
    if (req.method !== "POST") return void res.writeHead(405).end();
    const m = JSON.parse(body) as UpstreamMessage;
    if (m.id === undefined) return void res.writeHead(202).end();
    const json = (result: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(200, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }));
    };
    if (m.method === "initialize") {
      const result = {
        protocolVersion: "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "m", version: "1" },
      };
      return json(result, { "mcp-session-id": `S-${requests.length}` });
    }
    if (m.method === "tools/list") {
      return json({
        tools: UPSTREAM_TOOLS.map((name) => ({ name, description: name, inputSchema: { type: "object" } })),
      });
    }
    if (m.method !== "tools/call") return json({});
    const params = m.params as { name: string; arguments?: unknown };
    calls.push({ name: params.name, arguments: params.arguments });
    if (!answer(m, res)) json({ content: [{ type: "text", text: `ran ${params.name}` }] });
  });
  const local = await listenLocal(server);
  return { url: `${local.origin}/mcp`, requests, calls, close: () => local.close() };
}

/** A request's body in the charset its Content-Type names; throws for a charset it does not know. */
function decodeBody(req: IncomingMessage, bytes: Uint8Array): string {
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers["content-type"] ?? "")?.[1].toLowerCase();
  if (charset === "utf-7") return decodeUtf7(Buffer.from(bytes).toString("latin1"));
  return new TextDecoder(charset ?? "utf-8").decode(bytes);
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** UTF-7 (RFC 2152) as `iconv-lite` reads it: `+…-` is base64 of UTF-16 code units, `+-` a plus sign. */
export function decodeUtf7(text: string): string {
  return text.replace(/\+([A-Za-z0-9+/]*)-?/g, (all, b64: string) => {
    if (b64 === "") return all === "+-" ? "+" : all;
    let bits = 0, count = 0, out = "";
    for (const c of b64) {
      bits = ((bits << 6) | BASE64.indexOf(c)) & 0x3fffff;
      count += 6;
      if (count >= 16) {
        count -= 16;
        out += String.fromCharCode((bits >> count) & 0xffff);
      }
    }
    return out;
  });
}

/** A JSON-RPC tools/call request. */
export function toolCall(id: number, name: string, args: Record<string, unknown> = {}): string {
  return JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
}

/**
 * Opens a session through the gateway (initialize, then notifications/initialized): the headers that name it.
 *
 * @example
 * ```ts
 * const session = await openSession(url);
 * await rawPost(url, toolCall(2, "safe"), session);
 * ```
 */
export async function openSession(url: URL): Promise<Record<string, string>> {
  const init = await rawPost(
    url,
    JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    }),
  );
  const sid = init.headers["mcp-session-id"];
  if (init.status !== 200 || typeof sid !== "string") throw new Error(`initialize: ${init.status} ${init.body}`);
  const session = { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" };
  await rawPost(url, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }), session);
  return session;
}
