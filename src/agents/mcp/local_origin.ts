/**
 * DNS-rebinding protection of the HTTP gateway: it listens on a loopback
 * address only, so a request whose `Host` (or `Origin`, when a browser sends
 * one) names another host came through a name that was made to point at this
 * machine (a web page's, say) and is refused. The upstream cannot do this
 * check through the gateway: the gateway asks it with its own `Host`.
 *
 * @module
 */

/** The host names of this machine's loopback. */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** The host name of `Host`-style text (`name:port`, `[v6]:port`), lower case. */
function hostName(text: string): string {
  const m = /^(\[[^\]]*\]|[^:]*)(:\d*)?$/.exec(text.trim());
  return (m ? m[1] : text).toLowerCase();
}

/**
 * Why a request to the loopback gateway is refused, or null: its `Host` or
 * `Origin` names a host other than loopback.
 *
 * @example
 * ```ts
 * import { foreignHost } from "./local_origin.ts";
 * foreignHost("127.0.0.1:8931", undefined); // null
 * foreignHost("evil.example:8931", undefined); // "Host evil.example:8931 is not this machine's loopback"
 * ```
 */
export function foreignHost(host: string | undefined, origin: string | undefined): string | null {
  if (host === undefined || !LOOPBACK.test(hostName(host))) {
    return `Host ${host ?? "(none)"} is not this machine's loopback`;
  }
  if (origin === undefined) return null;
  let originHost: string;
  try {
    originHost = new URL(origin).host;
  } catch {
    return `Origin ${origin} is not a URL`;
  }
  return LOOPBACK.test(hostName(originHost)) ? null : `Origin ${origin} is not this machine's loopback`;
}
