/**
 * `noema mcp --upstream URL --listen HOST:PORT`: the gateway over
 * Streamable HTTP. It listens on a loopback address and relays each HTTP
 * request to the upstream MCP endpoint (POST, GET, DELETE; the headers as
 * sent, `Mcp-Session-Id` and `Last-Event-ID` included), and each response
 * back (JSON, or an SSE stream event by event), with the same governance as
 * over stdio (`governed.ts`): a refused `tools/call` is answered by the
 * gateway and never reaches the upstream, a `tools/list` result is pinned and
 * filtered, a `tools/call` result recorded.
 *
 * One episode per MCP session (`Mcp-Session-Id` as the upstream assigns it;
 * a server that assigns none is one session), sealed when the client ends
 * the session (DELETE) or the gateway stops. Only loopback addresses: the
 * gateway has no authentication of its own; a request whose `Host` or
 * `Origin` names another host is refused (403, `local_origin.ts`).
 *
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Buffer } from "node:buffer";
import { nodeHttp } from "../../builtins.ts";
import { EXIT, NoemaError } from "../../errors.ts";
import { describeThrown } from "../../plugins/thrown.ts";
import { GovernedSession, type GovernedSettings, type Message } from "./governed.ts";
import { foreignHost } from "./local_origin.ts";
import { SseParser, sseText } from "./sse.ts";

/** How the HTTP gateway runs. */
export interface HttpGatewaySettings extends Omit<GovernedSettings, "fallbackName"> {
  /** The upstream MCP endpoint (`http://127.0.0.1:3000/mcp`). */
  upstream: string;
  /** Where to listen (a loopback address); port 0 picks a free one. */
  host: string;
  port: number;
  /** Called with the gateway's endpoint once it listens. */
  onListening?: (url: string) => void;
  /** Aborted (SIGTERM, SIGINT): the gateway stops, every session's episode sealed. */
  signal: AbortSignal;
}

/** Request headers not passed on (hop by hop, or recomputed). */
const DROP_REQUEST = new Set(["host", "connection", "content-length", "transfer-encoding", "accept-encoding"]);
/** Response headers not passed on (the body may change). */
const DROP_RESPONSE = new Set(["content-length", "transfer-encoding", "connection", "content-encoding"]);

const STATELESS = "";

/**
 * Serves until `signal` aborts; returns the ids of every episode it sealed.
 *
 * @example
 * ```ts
 * import { runHttpGateway } from "./http_gateway.ts";
 * const stop = new AbortController();
 * await runHttpGateway({ upstream: "http://127.0.0.1:3000/mcp", host: "127.0.0.1", port: 0, root: ".noema",
 *   session: { options: {} }, cwd: ".", log: console.error, signal: stop.signal });
 * ```
 */
export async function runHttpGateway(s: HttpGatewaySettings): Promise<string[]> {
  const gateway = new HttpGateway(s);
  const server = nodeHttp().createServer((req, res) => void gateway.handle(req, res));
  const host = s.host.includes(":") ? `[${s.host}]` : s.host;
  // A port in use is an error event, never the callback: unheard, it was an uncaught stack and a process that
  // hung on (deaf to SIGTERM). Now a one-line error, exit 1, as `noema serve` says it.
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(s.port, s.host, () => (server.off("error", reject), resolve()));
  }).catch((e: unknown) => {
    throw new NoemaError("listen_failed", `cannot listen on ${host}:${s.port}: ${describeThrown(e).message}`, {
      exitCode: EXIT.ERROR,
    });
  });
  const port = (server.address() as AddressInfo).port;
  s.onListening?.(`http://${host}:${port}${new URL(s.upstream).pathname}`);
  await new Promise<void>((r) => s.signal.aborted ? r() : s.signal.addEventListener("abort", () => r()));
  server.closeAllConnections?.();
  await new Promise<void>((r) => server.close(() => r()));
  return await gateway.endAll("noema mcp was stopped");
}

class HttpGateway {
  readonly #s: HttpGatewaySettings;
  readonly #sessions = new Map<string, GovernedSession>();
  /** Episodes sealed at the clients' DELETE. */
  readonly #sealed: string[] = [];

  constructor(s: HttpGatewaySettings) {
    this.#s = s;
  }

  #governed(id: string): GovernedSession {
    let g = this.#sessions.get(id);
    if (!g) {
      this.#sessions.set(id, g = new GovernedSession({ ...this.#s, fallbackName: new URL(this.#s.upstream).host }));
    }
    return g;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const foreign = foreignHost(header(req, "host"), header(req, "origin"));
    if (foreign !== null) {
      res.writeHead(403, { "content-type": "application/json" });
      const message = `noema mcp: ${foreign} (DNS-rebinding protection)`;
      return void res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id: null }));
    }
    try {
      const sid = header(req, "mcp-session-id") ?? STATELESS;
      if (req.method === "POST") return await this.#post(req, res, sid);
      const up = await fetch(this.#s.upstream, { method: req.method, headers: forwardHeaders(req) });
      const g = this.#governed(sid);
      if (req.method === "DELETE" && up.ok && sid !== STATELESS) {
        // Sealed before the client hears the session is over.
        this.#sessions.delete(sid);
        this.#sealed.push(...await g.end("the client ended the session", false));
      }
      await this.#relay(up, res, g);
    } catch (e) {
      if (!res.headersSent) res.writeHead(502, { "content-type": "text/plain" });
      res.end(`noema mcp: upstream ${this.#s.upstream}: ${describeThrown(e).message}\n`);
    }
  }

  async #post(req: IncomingMessage, res: ServerResponse, sid: string): Promise<void> {
    const body = await readBody(req);
    const g = sid === STATELESS ? this.#governed(STATELESS) : this.#governed(sid);
    // A batch holding a tools/call, text that is not JSON, a repeated key: answered here, never relayed (admit.ts).
    const routed = await g.clientMessage(body);
    if (routed === null) return void res.writeHead(202).end();
    if ("toClient" in routed) {
      res.writeHead(routed.status ?? 200, { "content-type": "application/json" });
      return void res.end(JSON.stringify(routed.toClient));
    }
    const up = await fetch(this.#s.upstream, { method: "POST", headers: forwardHeaders(req), body: routed.toServer });
    const assigned = up.headers.get("mcp-session-id");
    if (assigned && sid === STATELESS && !this.#sessions.has(assigned)) {
      this.#sessions.set(assigned, g); // the session the upstream opened with this initialize
      this.#sessions.delete(STATELESS);
    }
    await this.#relay(up, res, g);
  }

  /** The upstream's response, each JSON-RPC message in it passed through the session's governance. */
  async #relay(up: Response, res: ServerResponse, g: GovernedSession): Promise<void> {
    const headers: Record<string, string> = {};
    up.headers.forEach((v, k) => {
      if (!DROP_RESPONSE.has(k)) headers[k] = v;
    });
    // Read as clients read it: the SDK's by its media type in any case, Python's by how it starts.
    const type = (up.headers.get("content-type") ?? "").trim().toLowerCase();
    const sse = type.startsWith("text/event-stream");
    if (!sse && type.startsWith("application/json")) {
      const text = await up.text();
      // A batch too (the SDK's client takes an array of answers): each answer governed, none passed unread.
      const out = text.trim() === "" ? text : await g.serverMessage(text);
      res.writeHead(up.status, headers);
      return void res.end(out === null ? "" : typeof out === "string" ? out : JSON.stringify(out));
    }
    res.writeHead(up.status, headers);
    if (!up.body) return void res.end();
    if (!sse) {
      for await (const chunk of up.body) res.write(chunk);
      return void res.end();
    }
    res.flushHeaders();
    await relayEvents(up.body, res, g);
    res.end();
  }

  /** Seals every session's episode; their ids. */
  async endAll(why: string): Promise<string[]> {
    for (const g of this.#sessions.values()) this.#sealed.push(...await g.end(why, false));
    this.#sessions.clear();
    return this.#sealed;
  }
}

/**
 * Relays an SSE stream event by event, each parsed as a client parses it and written out again in plain form
 * (`sse.ts`): its data (one JSON-RPC message, or a batch) goes through governance, its other fields are kept.
 */
async function relayEvents(body: ReadableStream<Uint8Array>, res: ServerResponse, g: GovernedSession): Promise<void> {
  const decoder = new TextDecoder();
  const parser = new SseParser(async (e) => {
    const data = e.data === null || e.data.trim() === "" ? e.data : await g.serverMessage(e.data);
    res.write(
      sseText({ ...e, data: typeof data === "string" || data === null ? data : JSON.stringify(data as Message) }),
    );
  });
  for await (const chunk of body) await parser.push(decoder.decode(chunk, { stream: true }));
  await parser.end();
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function forwardHeaders(req: IncomingMessage): Headers {
  const h = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (DROP_REQUEST.has(k) || v === undefined) continue;
    h.set(k, Array.isArray(v) ? v.join(", ") : v);
  }
  return h;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Uint8Array[] = [];
  for await (const c of req) chunks.push(c as Uint8Array);
  return Buffer.concat(chunks).toString("utf8");
}
