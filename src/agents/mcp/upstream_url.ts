/**
 * The HTTP gateway's upstream URL as it is shown (stderr, the answers the
 * gateway gives clients, the episode's records): without its userinfo
 * (`user:pass@`) and with its query replaced by `?…`, which is where a URL
 * carries secrets (`?api_key=…`). Every message that names the upstream, or
 * a URL it redirected to, names it through {@link shownUrl}; text that may
 * hold the URL (a runtime's fetch error quotes it) goes through
 * {@link withoutSecrets}.
 *
 * @module
 */

/**
 * A URL as shown: no userinfo, `?…` for a query, no fragment. Text that is no URL is shown as `(not a URL)`.
 *
 * @example
 * ```ts
 * import { shownUrl } from "./upstream_url.ts";
 * shownUrl("http://user:pw@127.0.0.1:3000/mcp?api_key=k"); // "http://127.0.0.1:3000/mcp?…"
 * shownUrl("http://127.0.0.1:3000/mcp"); // "http://127.0.0.1:3000/mcp"
 * ```
 */
export function shownUrl(url: string | URL): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return "(not a URL)";
  }
  const query = u.search !== "";
  u.username = "";
  u.password = "";
  u.search = "";
  u.hash = "";
  return u.href + (query ? "?…" : "");
}

/** The URLs in text, as a runtime quotes them (`for url (http://…)`, `"http://…"`). */
const URL_IN_TEXT = /\bhttps?:\/\/[^\s()<>"'`]+/gi;

/**
 * Text (a fetch error's message, say) with every URL in it shown by {@link shownUrl}, and any secret of `url` (its
 * user name, password or query, as written or decoded) still in it replaced by `…`.
 *
 * @example
 * ```ts
 * import { withoutSecrets } from "./upstream_url.ts";
 * const up = "http://u:pw123@127.0.0.1:2/mcp?key=SECRET";
 * withoutSecrets("error sending request for url (http://127.0.0.1:2/mcp?key=SECRET): refused", up);
 * // "error sending request for url (http://127.0.0.1:2/mcp?…): refused"
 * ```
 */
export function withoutSecrets(text: string, url: string): string {
  let out = text.replace(URL_IN_TEXT, (found) => shownUrl(found));
  let u: URL | null = null;
  try {
    u = new URL(url);
  } catch {
    return out;
  }
  const secrets = [u.username, u.password, u.search.slice(1)].flatMap((s) => [s, decoded(s)]);
  // Longest first (a query holds the password's text, say); a short one (a user name "a") would garble the text.
  for (const s of [...new Set(secrets)].filter((s) => s.length >= 3).sort((a, b) => b.length - a.length)) {
    out = out.split(s).join("…");
  }
  return out;
}

function decoded(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, " "));
  } catch {
    return s;
  }
}
