/**
 * Which request bodies the HTTP gateway relays: JSON in UTF-8, as sent (no
 * content coding). The gateway reads a body as UTF-8 and rules on that text;
 * an upstream that honours another charset (`express.json()` decodes
 * `charset=utf-7`, say) or a content coding would read other text than the
 * gateway ruled on, and run a call that was never decided (`d+AGE-nger` is
 * `danger` in UTF-7). So such a body is refused (415), and the body relayed
 * is always sent as `Content-Type: application/json`, the bytes ruled on.
 *
 * @module
 */

/** The Content-Type the gateway sends every body it relays with. */
export const RELAYED_TYPE = "application/json";

/**
 * Why a request body with these `Content-Type` and `Content-Encoding` headers is not relayed (415), or null: it is
 * `application/json` (in any case), with no charset or `utf-8`, and no content coding (or `identity`).
 *
 * @example
 * ```ts
 * import { unrelayedBody } from "./body_type.ts";
 * unrelayedBody("application/json; charset=UTF-8", undefined); // null
 * unrelayedBody("application/json; charset=utf-7", undefined); // "a body in charset utf-7 is not relayed: …"
 * unrelayedBody("application/json", "gzip"); // "a body with Content-Encoding gzip is not relayed: …"
 * ```
 */
export function unrelayedBody(type: string | undefined, encoding: string | undefined): string | null {
  const only = "only JSON in UTF-8, as sent, is relayed (the upstream could read it otherwise than it was ruled on)";
  const coding = (encoding ?? "").trim().toLowerCase();
  if (coding !== "" && coding !== "identity") {
    return `a body with Content-Encoding ${JSON.stringify(encoding)} is not relayed: ${only}`;
  }
  if (type === undefined) return `a body without a Content-Type is not relayed: ${only}`;
  const [media, ...params] = type.split(";");
  if (media.trim().toLowerCase() !== RELAYED_TYPE) {
    return `a body of Content-Type ${JSON.stringify(type)} is not relayed: ${only}`;
  }
  for (const param of params) {
    const eq = param.indexOf("=");
    if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== "charset") continue;
    const charset = param.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
    if (charset.toLowerCase() !== "utf-8") {
      return `a body in charset ${JSON.stringify(charset)} is not relayed: ${only}`;
    }
  }
  return null;
}
