/**
 * Which local user sent a request over loopback: the owner of the client's
 * end of the TCP connection, read from the kernel's socket tables
 * (`/proc/net/tcp`, `/proc/net/tcp6`, Linux). Without tokens, `noema serve`
 * answers only requests from its own user, so another account on the
 * machine (say, an agent run as another user, as docs/security.md advises)
 * can neither read the episodes nor decide an approval in this user's name.
 *
 * @module
 */
import { existsSync, readFileSync } from "node:fs";
import process from "node:process";

/** The two ends of one TCP connection a request came on, as the server sees them. */
export interface Connection {
  /** The client's port. */
  remotePort: number;
  /** The server's own port (the one it listens on). */
  localPort: number;
}

const TABLES = ["/proc/net/tcp", "/proc/net/tcp6"];
/** `st` of an established connection in the socket tables. */
const ESTABLISHED = "01";

/**
 * Whether this system lets noema tell which user a loopback connection
 * belongs to (Linux's socket tables are readable).
 *
 * @example
 * ```ts
 * import { canTellPeerUser } from "./peer_user.ts";
 * canTellPeerUser(); // true on Linux
 * ```
 */
export function canTellPeerUser(): boolean {
  return process.platform === "linux" && existsSync(TABLES[0]);
}

/** The port of an `ADDRESS:PORT` field of the socket tables (the port in hex). */
function portOf(field: string | undefined): number {
  return field === undefined ? NaN : parseInt(field.slice(field.lastIndexOf(":") + 1), 16);
}

/**
 * The uid owning the client's end of a loopback connection: the socket whose
 * local port is the client's and whose remote port is the server's, in state
 * established. Null when it cannot be told: no such socket, two owners, or
 * the tables cannot be read.
 *
 * @example
 * ```ts
 * import { peerUid } from "./peer_user.ts";
 * peerUid({ remotePort: 50312, localPort: 7777 }); // 1000, the uid of the browser that connected
 * ```
 */
export function peerUid(c: Connection): number | null {
  const uids = new Set<number>();
  for (const table of TABLES) {
    let text: string;
    try {
      text = readFileSync(table, "latin1");
    } catch {
      continue; // no IPv6 table: the IPv4 one says
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 8 || f[3] !== ESTABLISHED) continue;
      if (portOf(f[1]) === c.remotePort && portOf(f[2]) === c.localPort) uids.add(Number(f[7]));
    }
  }
  return uids.size === 1 ? [...uids][0] : null;
}

/**
 * Why a loopback request from `c` is refused by a server without tokens, or
 * null when it comes from the server's own user.
 *
 * @example
 * ```ts
 * import { otherUserProblem } from "./peer_user.ts";
 * otherUserProblem({ remotePort: 50312, localPort: 7777 }); // null for a request of this process's own user
 * ```
 */
export function otherUserProblem(c: Connection): string | null {
  const own = process.getuid?.();
  const uid = peerUid(c);
  if (uid === null) return "cannot tell which local user sent this request (its connection is not in /proc/net/tcp)";
  if (own !== undefined && uid !== own) {
    return `the request comes from another local user (uid ${uid}); without NOEMA_SERVE_TOKEN this server answers ` +
      `only its own user (uid ${own})`;
  }
  return null;
}
