/**
 * What of a client's message the gateway relays at all. The gateway governs
 * what it reads as a `tools/call`; the server acts on what *it* reads. So a
 * message the two could read differently is never relayed:
 *
 * - text that is not JSON (`JSON.parse` refuses it; a more lenient server,
 *   say one that takes `NaN` or a trailing comma, might run it): answered
 *   with a JSON-RPC parse error (-32700);
 * - a key repeated in one object, escaped or not (`JSON.parse` keeps the last
 *   `"method"`, other readers the first) or nesting deeper than 256:
 *   answered with an invalid-request error (-32600);
 * - a batch (over HTTP; stdio splits batches first) holding a `tools/call`,
 *   or anything but request objects: an invalid-request error;
 * - a `tools/call` without an `id` (a notification: no one could be told it
 *   was refused, and a lenient server might run it): dropped, and logged.
 * - a request whose `id` is not a string, a number or null (JSON-RPC's
 *   ids): an invalid-request error. The gateway tells ids apart by their JSON
 *   text, a server by its own notion (Python's `True == 1`), so two requests
 *   in flight under `true` and `1` would be one to the server, and the answer
 *   to one recorded as the other's.
 * - a `tools/call` whose tool the gateway cannot name as the server might
 *   (`params.name` not a non-empty string: a server that looks a tool up by
 *   `tools[name]` finds `"rm"` under `["rm"]`), or whose `arguments` are not
 *   an object (policies would see none): an invalid-params error (-32602).
 *
 * A conforming client sends none of these (a batch holding a call aside,
 * which protocol version 2025-06-18 dropped with batches), so it loses
 * nothing.
 *
 * @module
 */
import { scanJson } from "../../store/json_scan.ts";

/** A message the gateway relays: its parsed value (an object, or a batch's array). */
export type Admitted = { ok: true; value: unknown };
/** A message the gateway does not relay: the error to answer with (null: no answer, a notification), and why. */
export type Refused = { ok: false; answer: Record<string, unknown> | null; why: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function rpcError(id: unknown, code: number, message: string): Record<string, unknown> {
  const safeId = typeof id === "string" || typeof id === "number" ? id : null;
  return { jsonrpc: "2.0", id: safeId, error: { code, message: `noema mcp: ${message}` } };
}

function refuse(id: unknown, code: number, why: string): Refused {
  return { ok: false, answer: rpcError(id, code, `${why}; not relayed`), why };
}

/** Whether a request's id is one JSON-RPC allows (or absent: a notification). */
function idOk(id: unknown): boolean {
  return id === undefined || id === null || typeof id === "string" || typeof id === "number";
}

/** Why a batch is not relayed, or null when it may be. */
function batchProblem(items: unknown[]): string | null {
  for (const m of items) {
    if (!isObject(m)) return "a JSON-RPC batch may hold only message objects";
    if (m.method === "tools/call") return "a JSON-RPC batch holding tools/call is not relayed";
    if (typeof m.method === "string" && !idOk(m.id)) return "an id must be a string, a number or null";
  }
  return null;
}

/** Why a tools/call's params are not what the gateway governs and the server runs alike, or null. */
function callParamsProblem(params: unknown): string | null {
  if (!isObject(params)) return "tools/call needs params, an object";
  if (typeof params.name !== "string" || params.name === "") {
    return "params.name of tools/call must be a non-empty string";
  }
  if (params.arguments !== undefined && !isObject(params.arguments)) {
    return "params.arguments of tools/call must be an object";
  }
  return null;
}

/**
 * Decides whether a client's message (one line, or one HTTP body) may be
 * relayed.
 *
 * @example
 * ```ts
 * import { admit } from "./admit.ts";
 * admit('{"jsonrpc":"2.0","id":1,"method":"tools/list"}').ok; // true
 * admit('{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}').ok; // false
 * ```
 */
export function admit(text: string): Admitted | Refused {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return refuse(null, -32700, "parse error: the message is not JSON");
  }
  const id = isObject(value) ? value.id : null;
  const scan = scanJson(text);
  if (scan.tooDeep) return refuse(id, -32600, `invalid request: nested deeper than ${scan.tooDeep.depth}`);
  const dup = scan.duplicates[0];
  if (dup) {
    const where = dup.path === "" ? "" : ` in ${dup.path}`;
    // The id itself may be the repeated key: then no id is trusted.
    return refuse(
      dup.path === "" && dup.key === "id" ? null : id,
      -32600,
      `invalid request: key "${dup.key}"${where} repeated`,
    );
  }
  if (Array.isArray(value)) {
    const problem = batchProblem(value);
    return problem === null ? { ok: true, value } : refuse(null, -32600, `invalid request: ${problem}`);
  }
  if (!isObject(value)) return refuse(null, -32600, "invalid request: a message must be a JSON object");
  if (typeof value.method === "string" && !idOk(value.id)) {
    return refuse(null, -32600, "invalid request: an id must be a string, a number or null");
  }
  if (value.method === "tools/call") {
    if (value.id === undefined) {
      return { ok: false, answer: null, why: "a tools/call without an id (a notification) is not relayed" };
    }
    const problem = callParamsProblem(value.params);
    if (problem !== null) return refuse(value.id, -32602, `invalid params: ${problem}`);
  }
  return { ok: true, value };
}
