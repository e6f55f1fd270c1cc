/**
 * A scripted OTLP/HTTP trace receiver on 127.0.0.1 for the export tests: it
 * takes `POST /v1/traces` in both encodings the OTLP specification defines
 * for HTTP, `application/x-protobuf` (decoded here by a small protobuf wire
 * decoder of `ExportTraceServiceRequest`) and `application/json`, and keeps
 * every span in one plain shape. A script can make it slow, answer 503 with
 * `Retry-After`, or reject a request with 400.
 *
 * @module
 */
import http from "node:http";
import type { Socket } from "node:net";
import { gunzipSync } from "node:zlib";

/** A span as received, in either encoding. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  startNs: bigint;
  endNs: bigint;
  status: { code: number; message: string };
  attributes: Record<string, unknown>;
  events: { name: string; timeNs: bigint; attributes: Record<string, unknown> }[];
  resource: Record<string, unknown>;
  scope: string;
}

/** One request the receiver got. */
export interface ReceivedRequest {
  contentType: string;
  /** The request's headers. */
  headers: Record<string, string | string[] | undefined>;
  /** The status it was answered with. */
  status: number;
  spans: ReceivedSpan[];
}

/** What to answer to the `n`th request (0-based): a status, a `Retry-After` (s), a delay before answering (ms). */
export type ReceiverScript = (n: number) => { status?: number; retryAfter?: number; delayMs?: number };

/** A running receiver. */
export interface OtlpReceiver {
  /** The base URL (`http://127.0.0.1:PORT`): the traces URL is `${url}/v1/traces`. */
  url: string;
  requests: ReceivedRequest[];
  /** The spans of the requests answered 200. */
  spans(): ReceivedSpan[];
  /** Resolves when `pred` holds for the spans accepted so far (checked on each request), or rejects after `ms`. */
  waitFor(pred: (spans: ReceivedSpan[]) => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

// ---- protobuf wire decoding --------------------------------------------------------------------------------------

/** A protobuf field: number, wire type, and its value (varint/fixed as bigint, length-delimited as bytes). */
interface Field {
  no: number;
  wire: number;
  int: bigint;
  bytes: Uint8Array;
}

function* fields(buf: Uint8Array): Generator<Field> {
  let i = 0;
  const varint = (): bigint => {
    let v = 0n, shift = 0n;
    for (;;) {
      const b = buf[i++];
      if (b === undefined) throw new Error("protobuf: truncated varint");
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  };
  const fixed = (n: number): bigint => {
    let v = 0n;
    for (let k = n - 1; k >= 0; k--) v = (v << 8n) | BigInt(buf[i + k]);
    i += n;
    return v;
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3, wire = key & 7;
    if (wire === 0) yield { no, wire, int: varint(), bytes: new Uint8Array() };
    else if (wire === 1) yield { no, wire, int: fixed(8), bytes: new Uint8Array() };
    else if (wire === 5) yield { no, wire, int: fixed(4), bytes: new Uint8Array() };
    else if (wire === 2) {
      const len = Number(varint());
      yield { no, wire, int: 0n, bytes: buf.subarray(i, i + len) };
      i += len;
    } else throw new Error(`protobuf: wire type ${wire} not expected`);
  }
}

const utf8 = new TextDecoder();
const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");

function pbAnyValue(buf: Uint8Array): unknown {
  for (const f of fields(buf)) {
    if (f.no === 1) return utf8.decode(f.bytes);
    if (f.no === 2) return f.int !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.int));
    if (f.no === 4) return new Float64Array(new BigUint64Array([f.int]).buffer)[0];
    if (f.no === 5) return [...fields(f.bytes)].filter((x) => x.no === 1).map((x) => pbAnyValue(x.bytes));
    if (f.no === 6) return pbAttributes([...fields(f.bytes)].filter((x) => x.no === 1).map((x) => x.bytes));
    if (f.no === 7) return hex(f.bytes);
  }
  return null;
}

function pbAttributes(kvs: Uint8Array[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of kvs) {
    let key = "", value: unknown = null;
    for (const f of fields(kv)) {
      if (f.no === 1) key = utf8.decode(f.bytes);
      else if (f.no === 2) value = pbAnyValue(f.bytes);
    }
    out[key] = value;
  }
  return out;
}

function pbSpan(buf: Uint8Array, resource: Record<string, unknown>, scope: string): ReceivedSpan {
  const s: ReceivedSpan = {
    traceId: "",
    spanId: "",
    parentSpanId: "",
    name: "",
    kind: 0,
    startNs: 0n,
    endNs: 0n,
    status: { code: 0, message: "" },
    attributes: {},
    events: [],
    resource,
    scope,
  };
  const attrs: Uint8Array[] = [];
  for (const f of fields(buf)) {
    if (f.no === 1) s.traceId = hex(f.bytes);
    else if (f.no === 2) s.spanId = hex(f.bytes);
    else if (f.no === 4) s.parentSpanId = hex(f.bytes);
    else if (f.no === 5) s.name = utf8.decode(f.bytes);
    else if (f.no === 6) s.kind = Number(f.int);
    else if (f.no === 7) s.startNs = f.int;
    else if (f.no === 8) s.endNs = f.int;
    else if (f.no === 9) attrs.push(f.bytes);
    else if (f.no === 11) {
      const e = { name: "", timeNs: 0n, attributes: {} as Record<string, unknown> }, ea: Uint8Array[] = [];
      for (const g of fields(f.bytes)) {
        if (g.no === 1) e.timeNs = g.int;
        else if (g.no === 2) e.name = utf8.decode(g.bytes);
        else if (g.no === 3) ea.push(g.bytes);
      }
      e.attributes = pbAttributes(ea);
      s.events.push(e);
    } else if (f.no === 15) {
      for (const g of fields(f.bytes)) {
        if (g.no === 2) s.status.message = utf8.decode(g.bytes);
        else if (g.no === 3) s.status.code = Number(g.int);
      }
    }
  }
  s.attributes = pbAttributes(attrs);
  return s;
}

/**
 * The spans of a protobuf `ExportTraceServiceRequest`.
 *
 * @example
 * ```ts
 * const spans = decodeProtobufRequest(body);
 * ```
 */
export function decodeProtobufRequest(body: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of fields(body)) {
    if (rs.no !== 1) continue;
    let resource: Record<string, unknown> = {};
    const scopeSpans: Uint8Array[] = [];
    for (const f of fields(rs.bytes)) {
      if (f.no === 1) resource = pbAttributes([...fields(f.bytes)].filter((x) => x.no === 1).map((x) => x.bytes));
      else if (f.no === 2) scopeSpans.push(f.bytes);
    }
    for (const ss of scopeSpans) {
      let scope = "";
      for (const f of fields(ss)) {
        if (f.no === 1) { for (const g of fields(f.bytes)) if (g.no === 1) scope = utf8.decode(g.bytes); }
      }
      for (const f of fields(ss)) if (f.no === 2) out.push(pbSpan(f.bytes, resource, scope));
    }
  }
  return out;
}

// ---- JSON ---------------------------------------------------------------------------------------------------------

type JsonAny = Record<string, unknown>;

function jsonAnyValue(v: JsonAny | undefined): unknown {
  if (!v) return null;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("arrayValue" in v) return ((v.arrayValue as JsonAny).values as JsonAny[] ?? []).map(jsonAnyValue);
  if ("kvlistValue" in v) return jsonAttributes((v.kvlistValue as JsonAny).values as JsonAny[]);
  if ("bytesValue" in v) return v.bytesValue;
  return null;
}

function jsonAttributes(kvs: JsonAny[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of kvs ?? []) out[String(kv.key)] = jsonAnyValue(kv.value as JsonAny);
  return out;
}

/** OTLP/JSON ids are hex strings (the specification's exception to the protobuf JSON mapping). */
function jsonId(v: unknown): string {
  return typeof v === "string" ? v.toLowerCase() : "";
}

/**
 * The spans of an OTLP/JSON `ExportTraceServiceRequest` (also what `noema export otel --file` writes).
 *
 * @example
 * ```ts
 * const spans = decodeJsonRequest(JSON.parse(text));
 * ```
 */
export function decodeJsonRequest(body: JsonAny): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of (body.resourceSpans as JsonAny[]) ?? []) {
    const resource = jsonAttributes((rs.resource as JsonAny | undefined)?.attributes as JsonAny[]);
    for (const ss of (rs.scopeSpans as JsonAny[]) ?? []) {
      const scope = String((ss.scope as JsonAny | undefined)?.name ?? "");
      for (const s of (ss.spans as JsonAny[]) ?? []) {
        const status = (s.status ?? {}) as JsonAny;
        out.push({
          traceId: jsonId(s.traceId),
          spanId: jsonId(s.spanId),
          parentSpanId: jsonId(s.parentSpanId),
          name: String(s.name),
          kind: Number(s.kind ?? 0),
          startNs: BigInt(String(s.startTimeUnixNano ?? 0)),
          endNs: BigInt(String(s.endTimeUnixNano ?? 0)),
          status: { code: Number(status.code ?? 0), message: String(status.message ?? "") },
          attributes: jsonAttributes(s.attributes as JsonAny[]),
          events: ((s.events as JsonAny[]) ?? []).map((e) => ({
            name: String(e.name),
            timeNs: BigInt(String(e.timeUnixNano ?? 0)),
            attributes: jsonAttributes(e.attributes as JsonAny[]),
          })),
          resource,
          scope,
        });
      }
    }
  }
  return out;
}

// ---- the server ---------------------------------------------------------------------------------------------------

/**
 * Starts a receiver; `script` says how to answer each request (default: 200 at once).
 *
 * @example
 * ```ts
 * const r = await startOtlpReceiver();
 * // OTEL_EXPORTER_OTLP_ENDPOINT=r.url …
 * await r.close();
 * ```
 */
export async function startOtlpReceiver(script: ReceiverScript = () => ({})): Promise<OtlpReceiver> {
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();
  let n = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const step = script(n++);
      const answer = () => {
        const status = step.status ?? 200;
        const contentType = String(req.headers["content-type"] ?? "");
        let body: Uint8Array = Buffer.concat(chunks);
        if (req.headers["content-encoding"] === "gzip") body = gunzipSync(body);
        let spans: ReceivedSpan[] = [];
        let code = status;
        try {
          if (req.url !== "/v1/traces") code = 404;
          else if (contentType.startsWith("application/x-protobuf")) spans = decodeProtobufRequest(body);
          else if (contentType.startsWith("application/json")) spans = decodeJsonRequest(JSON.parse(utf8.decode(body)));
          else code = 415;
        } catch {
          code = 400;
        }
        requests.push({ contentType, headers: req.headers, status: code, spans });
        const headers: Record<string, string> = { "content-type": contentType || "application/json" };
        if (step.retryAfter !== undefined) headers["retry-after"] = String(step.retryAfter);
        res.writeHead(code, headers);
        res.end(contentType.startsWith("application/json") ? "{}" : "");
        for (const w of waiters) w();
      };
      if (step.delayMs) setTimeout(answer, step.delayMs);
      else answer();
    });
  });
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  const spans = () => requests.filter((r) => r.status === 200).flatMap((r) => r.spans);
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    spans,
    waitFor(pred, ms = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!pred(spans())) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the receiver did not get the spans in ${ms} ms (${spans().length} so far)`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
