/**
 * Who may use `noema serve`, and how a request proves it: bearer tokens
 * (`NOEMA_SERVE_TOKEN`, one token or several `label=token` pairs, the label
 * naming the decider of an approval), an HttpOnly SameSite=Strict cookie set
 * by the login form, the loopback rule (any other address needs a token) and
 * the same-origin check every state-changing request passes (CSRF).
 *
 * @module
 */
import { randomBytes, timingSafeEqual } from "node:crypto";
import { Buffer } from "node:buffer";
import { EXIT, NoemaError } from "../errors.ts";

/** The cookie the login form sets. */
export const COOKIE = "noema_token";

/** The tokens in force, each with the label that names its holder. */
export interface Tokens {
  /** `token → label`; empty when no token is in force (loopback only). */
  readonly byToken: ReadonlyMap<string, string>;
  /** A token generated at start (printed once), if one was. */
  readonly generated: string | null;
}

/**
 * Parses `NOEMA_SERVE_TOKEN`: `token` (label `token`), or `label=token`
 * pairs separated by commas. An empty entry (`","`, `"a=,"`: say, two unset
 * variables joined), a token shorter than 16 characters or a repeated one is
 * a usage error naming the entry: a value that holds no token never leaves
 * the server open. Only an empty (or blank) text means no token.
 *
 * @example
 * ```ts
 * import { parseTokens } from "./auth.ts";
 * parseTokens("ana=0123456789abcdef0123,bo=fedcba98765432100000").byToken.size; // 2
 * ```
 */
export function parseTokens(text: string): Tokens {
  const byToken = new Map<string, string>();
  if (text.trim() === "") return { byToken, generated: null };
  const entries = text.split(",").map((x) => x.trim());
  for (const [i, entry] of entries.entries()) {
    if (entry === "") throw usage(`NOEMA_SERVE_TOKEN entry ${i + 1} is empty (entries are separated by commas)`);
    const eq = entry.indexOf("=");
    const label = eq < 0 ? "token" : entry.slice(0, eq).trim();
    const token = eq < 0 ? entry : entry.slice(eq + 1).trim();
    const where = `NOEMA_SERVE_TOKEN entry ${i + 1}${eq < 0 ? "" : ` (${label})`}`;
    if (!/^[\w.@-]{1,64}$/.test(label)) throw usage(`${where}: a label is 1-64 letters, digits, '.', '@', '_', '-'`);
    if (!/^[A-Za-z0-9._~+/-]{16,}$/.test(token)) {
      throw usage(`${where}: a token is at least 16 characters of letters, digits and ._~+/-`);
    }
    if (byToken.has(token)) throw usage(`${where}: the same token is given twice`);
    byToken.set(token, label);
  }
  return { byToken, generated: null };
}

function usage(message: string): NoemaError {
  return new NoemaError("usage", message, { exitCode: EXIT.USAGE });
}

/**
 * A fresh random token (32 characters, base64url), labelled `token`.
 *
 * @example
 * ```ts
 * import { generatedTokens } from "./auth.ts";
 * generatedTokens().generated!.length; // 32
 * ```
 */
export function generatedTokens(): Tokens {
  const token = randomBytes(24).toString("base64url");
  return { byToken: new Map([[token, "token"]]), generated: token };
}

/**
 * Whether a host name or address is loopback (`127.0.0.0/8`, `::1`, `localhost`).
 *
 * @example
 * ```ts
 * import { isLoopback } from "./auth.ts";
 * isLoopback("127.0.0.1"); // true
 * isLoopback("0.0.0.0"); // false
 * ```
 */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a), y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The value of cookie `name` in a Cookie header, or null. */
function cookieValue(header: string | null | undefined, name: string): string | null {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** How a request identified itself. */
export interface Caller {
  /** The label of the token presented, or null without tokens in force. */
  label: string | null;
  /** How: a bearer header, the login cookie, or nothing (no tokens in force). */
  via: "bearer" | "cookie" | "none";
}

/**
 * The caller of a request: the label of the token it presents (bearer header
 * first, then the cookie), `{ via: "none" }` when no token is in force, or
 * null when tokens are in force and it presents none that is valid.
 *
 * @example
 * ```ts
 * import { callerOf, parseTokens } from "./auth.ts";
 * const t = parseTokens("ana=0123456789abcdef0123");
 * callerOf(t, "Bearer 0123456789abcdef0123", null); // { label: "ana", via: "bearer" }
 * ```
 */
export function callerOf(tokens: Tokens, authorization: string | null, cookie: string | null): Caller | null {
  if (tokens.byToken.size === 0) return { label: null, via: "none" };
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
  const fromCookie = cookieValue(cookie, COOKIE);
  for (const [token, label] of tokens.byToken) {
    if (bearer !== undefined && same(bearer, token)) return { label, via: "bearer" };
  }
  if (bearer !== undefined) return null;
  // The cookie holds a session of this server, never a token: a browser sends a 127.0.0.1 (or any host's) cookie to
  // every port of that host, so another local web server (an agent's dev server) opened in the same browser reads it.
  const session = fromCookie === null ? undefined : SESSIONS.get(fromCookie);
  if (session !== undefined && session.until > Date.now() && tokens.byToken.has(session.token)) {
    return { label: tokens.byToken.get(session.token)!, via: "cookie" };
  }
  return null;
}

/**
 * Why a state-changing request fails the same-origin check, or null when it
 * passes: a browser's `Sec-Fetch-Site` must be `same-origin` (or `none`, typed
 * by the user), and an `Origin` header must be this server's own origin
 * (`http://` + the Host header). A client that sends neither is not a
 * browser, and cannot be made to send a request by a page elsewhere.
 *
 * @example
 * ```ts
 * import { crossOriginProblem } from "./auth.ts";
 * crossOriginProblem({ origin: "http://evil.test", host: "127.0.0.1:7777", fetchSite: "cross-site" }); // "cross-site request"
 * ```
 */
export function crossOriginProblem(h: { origin: string | null; host: string | null; fetchSite: string | null }) {
  if (h.fetchSite !== null && h.fetchSite !== "same-origin" && h.fetchSite !== "none") return `${h.fetchSite} request`;
  if (h.origin !== null && (h.host === null || h.origin !== `http://${h.host}`)) {
    return `Origin ${h.origin} is not this server's origin`;
  }
  return null;
}

/**
 * The Set-Cookie value the login form answers with: a new session of this
 * server for the token (random, 12 hours; the token itself never leaves the
 * server in a cookie), HttpOnly, SameSite=Strict, the whole site.
 *
 * @example
 * ```ts
 * import { loginCookie } from "./auth.ts";
 * loginCookie("0123456789abcdef0123"); // "noema_token=<session id>; HttpOnly; SameSite=Strict; Path=/; Max-Age=43200"
 * ```
 */
export function loginCookie(token: string): string {
  const id = randomBytes(24).toString("base64url");
  SESSIONS.set(id, { token, until: Date.now() + SESSION_MS });
  return `${COOKIE}=${id}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_MS / 1000}`;
}

/** How long a sign-in lasts. */
const SESSION_MS = 12 * 3600_000;
/** The sessions the login form opened in this process (a restart signs everyone out). */
const SESSIONS = new Map<string, { token: string; until: number }>();
