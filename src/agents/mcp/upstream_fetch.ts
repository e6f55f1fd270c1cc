/**
 * One exchange of the HTTP gateway with its upstream, and what is known of
 * it when it fails. A redirect is never followed (a 307 would re-send a call
 * to another origin, a 303 turn it into a GET): a 3xx answer is a failure
 * naming where it pointed. A POST is sent once (under Deno, on a connection of
 * its own: see `sentOnce`). A failed exchange is recorded as one of two
 * things, never more than is known:
 *
 * - `NotDelivered`: the request did not reach the server (the connection was
 *   refused or never made: ECONNREFUSED, a host that does not resolve or
 *   cannot be reached, a connect timeout), so the call was not made;
 * - `NoUsableAnswer`: anything else (a connection reset mid-answer, an
 *   answer that is not JSON, too big, of another media type, a redirect):
 *   the server may have run the call.
 *
 * @module
 */
import { describeThrown } from "../../plugins/thrown.ts";
import { shownUrl, withoutSecrets } from "./upstream_url.ts";

/** What the record says of a call whose exchange with the upstream failed (an act's `error`). */
export interface LostCall {
  type: "NotDelivered" | "NoUsableAnswer";
  message: string;
}

/** The upstream answered with a redirect, which the gateway does not follow. */
export class UpstreamRedirect extends Error {
  override name = "UpstreamRedirect";
}

/**
 * `fetch` of the upstream without following redirects: a 3xx answer (its body dropped) throws
 * {@link UpstreamRedirect}, naming where it pointed as {@link shownUrl} shows it.
 *
 * @example
 * ```ts
 * import { fetchUpstream } from "./upstream_fetch.ts";
 * const res = await fetchUpstream("http://127.0.0.1:3000/mcp", { method: "GET" });
 * ```
 */
export async function fetchUpstream(url: string, init: RequestInit): Promise<Response> {
  const res = await fetch(url, { ...init, redirect: "manual", ...(init.method === "POST" ? sentOnce() : {}) });
  if (res.type !== "opaqueredirect" && (res.status < 300 || res.status > 399)) return res;
  await res.body?.cancel().catch(() => {});
  const location = res.headers.get("location");
  let to = "no Location";
  if (location !== null) to = `a redirect to ${shownUrl(URL.canParse(location, url) ? new URL(location, url) : "")}`;
  throw new UpstreamRedirect(`answered HTTP ${res.status} (${to}); redirects are not followed`);
}

let unpooled: unknown;

/**
 * Under Deno, a client that keeps no idle connection for a POST: Deno's pooled `fetch` sends a request again when
 * the kept-alive connection it went on closes before an answer (a call the server ran, run a second time); on a
 * connection of its own it is sent once. Bun's `fetch` sends it once as it is.
 */
function sentOnce(): { client?: unknown } {
  const deno = (globalThis as { Deno?: { createHttpClient?(o: { poolMaxIdlePerHost: number }): unknown } }).Deno;
  if (typeof deno?.createHttpClient !== "function") return {};
  unpooled ??= deno.createHttpClient({ poolMaxIdlePerHost: 0 });
  return { client: unpooled };
}

/** Error codes (Node, Bun) and message parts (Deno) of a request that never reached the server. */
const NOT_REACHED_CODES = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
  "ConnectionRefused",
  "FailedToOpenSocket",
]);
const NOT_REACHED_TEXT =
  /client error \(Connect\)|tcp connect error|dns error|failed to lookup address|Requests to port \d+ are blocked|includes credentials/i;

/** The errors of a thrown value: it and its causes (a few deep). */
function chain(e: unknown): unknown[] {
  const out: unknown[] = [];
  for (let c = e; c !== null && c !== undefined && out.length < 4; c = (c as { cause?: unknown }).cause) {
    out.push(c);
    if (typeof c !== "object") break;
  }
  return out;
}

/**
 * Whether a failed `fetch` never reached the server: the connection was refused or could not be made (Node's and
 * Bun's error codes, Deno's `client error (Connect)`), or the request was refused before any was sent.
 *
 * @example
 * ```ts
 * import { notReached } from "./upstream_fetch.ts";
 * notReached(Object.assign(new TypeError("Unable to connect"), { code: "ECONNREFUSED" })); // true
 * notReached(Object.assign(new TypeError("socket closed"), { code: "ECONNRESET" })); // false
 * ```
 */
export function notReached(e: unknown): boolean {
  if (e instanceof UpstreamRedirect) return false;
  return chain(e).some((c) => {
    const code = typeof c === "object" ? (c as { code?: unknown }).code : undefined;
    return (typeof code === "string" && NOT_REACHED_CODES.has(code)) ||
      NOT_REACHED_TEXT.test(describeThrown(c).message);
  });
}

/** A failed exchange in words: the error's message and its causes', the upstream's secrets left out. */
export function failureText(e: unknown, upstream: string): string {
  const messages = chain(e).map((c) => describeThrown(c).message).filter((m) => m !== "");
  return withoutSecrets([...new Set(messages)].join(": ") || "failed", upstream);
}

/**
 * What the record says of a call whose request failed (`e`, thrown by {@link fetchUpstream} or while its answer was
 * read): not delivered, when it never reached the server; else no usable answer.
 *
 * @example
 * ```ts
 * import { lostCall } from "./upstream_fetch.ts";
 * const refused = Object.assign(new TypeError("Unable to connect"), { code: "ECONNREFUSED" });
 * lostCall(refused, "http://127.0.0.1:3000/mcp").type; // "NotDelivered"
 * ```
 */
export function lostCall(e: unknown, upstream: string): LostCall {
  const why = failureText(e, upstream);
  return notReached(e)
    ? { type: "NotDelivered", message: `the request did not reach the server (${why}): the call was not made` }
    : noUsableAnswer(why);
}

/**
 * A call the server's answer did not answer usably (`why`): it may have acted.
 *
 * @example
 * ```ts
 * import { noUsableAnswer } from "./upstream_fetch.ts";
 * noUsableAnswer("HTTP 200, text/html"); // { type: "NoUsableAnswer", message: "no usable answer came (HTTP 200, …" }
 * ```
 */
export function noUsableAnswer(why: string): LostCall {
  return { type: "NoUsableAnswer", message: `no usable answer came (${why}): the server may have acted` };
}
