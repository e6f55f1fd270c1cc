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
import { MAX_LINE_BYTES } from "./lines.ts";
import { SseParser, sseText } from "./sse.ts";
import { RELAYED_TYPE, unrelayedBody } from "./body_type.ts";
import { failureText, fetchUpstream, lostCall, noUsableAnswer } from "./upstream_fetch.ts";
import { shownUrl } from "./upstream_url.ts";

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

/**
 * Request headers not passed on (hop by hop, or recomputed: a body relayed goes as the UTF-8 JSON it was ruled on,
 * `body_type.ts`).
 */
const DROP_REQUEST = new Set([
  "host",
  "connection",
  "content-length",
  "transfer-encoding",
  "accept-encoding",
  "content-type",
  "content-encoding",
]);
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
  /** The sessions by the id the upstream assigned them (`STATELESS`: an upstream that assigns none). */
  readonly #sessions = new Map<string, GovernedSession>();
  /** Episodes sealed at the clients' DELETE, and of initializes that opened no session. */
  readonly #sealed: string[] = [];

  constructor(s: HttpGatewaySettings) {
    this.#s = s;
  }

  #newSession(): GovernedSession {
    return new GovernedSession({ ...this.#s, fallbackName: new URL(this.#s.upstream).host });
  }

  /**
   * The session a request names: one the upstream assigned through this gateway, or, for a request naming none,
   * the upstream's one session when it assigns none. Null for an id this gateway never saw assigned (forged, or
   * from before it started): the client is told the session is not found (404), which makes it initialize again.
   */
  #sessionOf(sid: string): GovernedSession | null {
    if (sid !== STATELESS) return this.#sessions.get(sid) ?? null;
    let g = this.#sessions.get(STATELESS);
    if (!g) this.#sessions.set(STATELESS, g = this.#newSession());
    return g;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const foreign = foreignHost(header(req, "host"), header(req, "origin"));
    if (foreign !== null) return answer(res, 403, `${foreign} (DNS-rebinding protection)`);
    // The client stopped waiting (its connection closed before the answer ended): the upstream request is dropped
    // too (a resumable stream is then replayed to the client's GET, and governed there), a call being decided given up.
    const gone = new AbortController();
    res.on("close", () => res.writableFinished || gone.abort());
    try {
      const sid = header(req, "mcp-session-id") ?? STATELESS;
      if (req.method === "POST") return await this.#post(req, res, sid, gone.signal);
      const g = this.#sessionOf(sid);
      if (g === null) return notFound(res, sid);
      const up = await fetchUpstream(this.#s.upstream, {
        method: req.method,
        headers: forwardHeaders(req),
        signal: gone.signal,
      });
      if (req.method === "DELETE" && up.ok && sid !== STATELESS) {
        // Sealed before the client hears the session is over.
        this.#sessions.delete(sid);
        this.#sealed.push(...await g.end("the client ended the session", false));
      }
      await this.#relay(up, res, g);
    } catch (e) {
      if (gone.signal.aborted) return void res.end(); // the client left: nobody to tell
      this.#failed(res, e);
    }
  }

  /**
   * An exchange that failed: the client told, unless its answer had begun (then it is ended there). The upstream is
   * named as shown (`upstream_url.ts`: no userinfo, no query), in the error's text too.
   */
  #failed(res: ServerResponse, e: unknown): void {
    const why = `upstream ${shownUrl(this.#s.upstream)}: ${failureText(e, this.#s.upstream)}`;
    if (res.headersSent) {
      this.#s.log(`noema mcp: ${why}`);
      return void res.end(); // never text inside an event stream: the client reads it as a broken stream
    }
    answer(res, 502, why);
  }

  async #post(req: IncomingMessage, res: ServerResponse, sid: string, gone: AbortSignal): Promise<void> {
    // A body the upstream could read otherwise than as the UTF-8 JSON ruled on (another charset, a content coding).
    const refused = unrelayedBody(header(req, "content-type"), header(req, "content-encoding"));
    if (refused !== null) return void (req.resume(), answer(res, 415, refused));
    const body = await readBody(req, MAX_LINE_BYTES);
    if (body === null) return answer(res, 413, `a body over ${MAX_LINE_BYTES} bytes is not relayed`);
    // Each initialize without a session is a session of its own until the upstream says which (never a slot that
    // clients connecting at once share, or that one failed request holds for all).
    const fresh = sid === STATELESS && isInitialize(body);
    const g = fresh ? this.#newSession() : this.#sessionOf(sid);
    if (g === null) return notFound(res, sid);
    let kept = !fresh;
    try {
      // A batch holding a tools/call, text that is not JSON, a repeated key: answered here, never relayed (admit.ts).
      const routed = await g.clientMessage(body, gone);
      if (routed === null) return void res.writeHead(202).end();
      if ("toClient" in routed) {
        res.writeHead(routed.status ?? 200, { "content-type": "application/json" });
        return void res.end(JSON.stringify(routed.toClient));
      }
      let up: Response;
      try {
        const headers = forwardHeaders(req);
        headers.set("content-type", RELAYED_TYPE); // the text ruled on, as UTF-8 (fetch encodes a string so)
        up = await fetchUpstream(this.#s.upstream, { method: "POST", headers, body: routed.toServer, signal: gone });
      } catch (e) {
        // Said not delivered only when it never reached the server; else the server may have acted.
        await g.settle(body, lostCall(e, this.#s.upstream));
        throw e;
      }
      if (fresh) kept = await this.#opened(up, g);
      const type = up.headers.get("content-type") ?? "no Content-Type";
      let streamed: boolean;
      try {
        streamed = await this.#relay(up, res, g);
      } catch (e) {
        // Lost while its answer was read (a reset, the client gone); an event stream the client may resume is not.
        if (!isEventStream(up)) {
          await g.settle(body, noUsableAnswer(`HTTP ${up.status}, ${type}: ${this.#lost(e, gone)}`));
        }
        throw e;
      }
      // Answered otherwise than by a stream the client may resume: what it did not answer, it never will.
      if (!streamed) await g.settle(body, noUsableAnswer(`HTTP ${up.status}, ${type}: no answer to it was relayed`));
    } finally {
      if (!kept) this.#sealed.push(...await g.end("the upstream opened no session", false));
    }
  }

  /** Why an answer being read was lost. */
  #lost(e: unknown, gone: AbortSignal): string {
    return gone.aborted ? "the client left before the answer came" : failureText(e, this.#s.upstream);
  }

  /**
   * Keeps a fresh initialize's session under the id the upstream assigned it; whether it was kept. An upstream that
   * assigns none has one session: the first initialized one goes on (a later initialize's is sealed at once).
   */
  async #opened(up: Response, g: GovernedSession): Promise<boolean> {
    if (!up.ok) return false;
    const assigned = up.headers.get("mcp-session-id") ?? STATELESS;
    const before = this.#sessions.get(assigned);
    if (before?.initialized) return false;
    this.#sessions.set(assigned, g);
    if (before) this.#sealed.push(...await before.end("a new session replaced it", false));
    return true;
  }

  /**
   * The upstream's response, each JSON-RPC message in it passed through the session's governance; true when it was
   * an event stream (which the client may resume).
   */
  async #relay(up: Response, res: ServerResponse, g: GovernedSession): Promise<boolean> {
    const headers: Record<string, string> = {};
    up.headers.forEach((v, k) => {
      if (!DROP_RESPONSE.has(k)) headers[k] = v;
    });
    // Read as clients read it: the SDK's by its media type in any case, Python's by how it starts.
    const type = (up.headers.get("content-type") ?? "").trim().toLowerCase();
    const sse = isEventStream(up);
    if (!sse && type.startsWith("application/json")) {
      const text = await bodyText(up, MAX_LINE_BYTES);
      if (text === null) {
        answer(res, 502, `the upstream's answer is over ${MAX_LINE_BYTES} bytes: not relayed`);
        return false;
      }
      // A batch too (the SDK's client takes an array of answers): each answer governed, none passed unread.
      const out = text.trim() === "" ? text : await g.serverMessage(text);
      res.writeHead(up.status, headers);
      res.end(out === null ? "" : typeof out === "string" ? out : JSON.stringify(out));
      return false;
    }
    res.writeHead(up.status, headers);
    if (!up.body) {
      res.end();
      return false;
    }
    if (!sse) {
      for await (const chunk of up.body) res.write(chunk);
      res.end();
      return false;
    }
    res.flushHeaders();
    await relayEvents(up.body, res, g, this.#s.log);
    res.end();
    return true;
  }

  /** Seals every session's episode; their ids. */
  async endAll(why: string): Promise<string[]> {
    const sessions = [...this.#sessions.values()];
    this.#sessions.clear();
    // At once: a call waiting for a decision is given up as each session ends, none waits for another's.
    for (const sealed of await Promise.all(sessions.map((g) => g.end(why, false)))) this.#sealed.push(...sealed);
    return this.#sealed;
  }
}

/** A JSON-RPC error as the gateway's own answer (`status`: its HTTP status). */
function answer(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: `noema mcp: ${message}` }, id: null }));
}

/** A session id this gateway never saw assigned: not found (the client initializes a new session). */
function notFound(res: ServerResponse, sid: string): void {
  answer(res, 404, `session ${JSON.stringify(sid)} not found: initialize a new one`);
}

/** Whether a client's message is one `initialize` request (the start of a session). */
function isInitialize(body: string): boolean {
  try {
    const v = JSON.parse(body);
    return typeof v === "object" && v !== null && !Array.isArray(v) && v.method === "initialize" && v.id !== undefined;
  } catch {
    return false;
  }
}

/**
 * Relays an SSE stream event by event, each parsed as a client parses it and written out again in plain form
 * (`sse.ts`): its data (one JSON-RPC message, or a batch) goes through governance, its other fields are kept.
 */
async function relayEvents(
  body: ReadableStream<Uint8Array>,
  res: ServerResponse,
  g: GovernedSession,
  log: (line: string) => void,
): Promise<void> {
  const decoder = new TextDecoder();
  const parser = new SseParser(async (e) => {
    if (e.oversized) log(`noema mcp: an event over ${MAX_LINE_BYTES} characters from the upstream; its data dropped`);
    const data = e.data === null || e.data.trim() === "" ? e.data : await g.serverMessage(e.data);
    res.write(
      sseText({ ...e, data: typeof data === "string" || data === null ? data : JSON.stringify(data as Message) }),
    );
  }, MAX_LINE_BYTES);
  for await (const chunk of body) await parser.push(decoder.decode(chunk, { stream: true }));
  await parser.end();
}

/** Whether an answer is an event stream (its media type read in any case). */
function isEventStream(up: Response): boolean {
  return (up.headers.get("content-type") ?? "").trim().toLowerCase().startsWith("text/event-stream");
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

/** A request's body as text; null when it is over `max` bytes (the rest is read and dropped). */
async function readBody(req: IncomingMessage, max: number): Promise<string | null> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Uint8Array).byteLength;
    if (size <= max) chunks.push(c as Uint8Array);
  }
  return size > max ? null : Buffer.concat(chunks).toString("utf8");
}

/** A response's body as text; null when it is over `max` bytes (not read further). */
async function bodyText(up: Response, max: number): Promise<string | null> {
  if (!up.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const c of up.body) {
    size += c.byteLength;
    if (size > max) {
      await up.body.cancel().catch(() => {});
      return null;
    }
    chunks.push(c);
  }
  return Buffer.concat(chunks).toString("utf8");
}
