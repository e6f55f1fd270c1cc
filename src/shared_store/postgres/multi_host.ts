/**
 * A URL naming several hosts (libpq's `postgres://u@h1:5432,h2:5432/db`):
 * each connection tries them in order and uses the first that accepts it, as
 * libpq does. The client is given a URL of the first host only, and a
 * `socket` function that makes the connection: the client's own several-host
 * mode never gives up when every host refuses (it retries them in a loop, and
 * the query waits forever), where this fails with the last host's error.
 *
 * @module
 */
import type { Socket } from "node:net";
import { nodeNet } from "../../builtins.ts";
import { join } from "node:path";

/** One host and port; a host starting with `/` is a Unix-socket directory. */
export interface HostPort {
  host: string;
  port: string;
}

/** Connects to one host, failing after `timeoutMs` (as `ETIMEDOUT`). */
function connectOne({ host, port }: HostPort, timeoutMs: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = host.startsWith("/")
      ? nodeNet().connect(join(host, `.s.PGSQL.${port}`))
      : nodeNet().connect(Number(port), host);
    const fail = (e: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(e);
    };
    const timer = setTimeout(
      () => fail(Object.assign(new Error(`connecting to ${host}:${port} timed out`), { code: "ETIMEDOUT" })),
      timeoutMs,
    );
    socket.once("error", fail);
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeListener("error", fail);
      resolve(socket);
    });
  });
}

/**
 * A connected socket to the first of `hosts` that accepts a connection, each
 * tried for at most `timeoutMs`; rejects with the last one's error (its
 * `code`, e.g. `ECONNREFUSED`, kept) when none does. The socket carries
 * `host` and `port`, which the client reads for TLS.
 *
 * @example
 * ```ts
 * import { connectFirstHost } from "./multi_host.ts";
 * const socket = await connectFirstHost([{ host: "db1", port: "5432" }, { host: "db2", port: "5432" }], 5000);
 * socket.destroy();
 * ```
 */
export async function connectFirstHost(hosts: HostPort[], timeoutMs: number): Promise<Socket> {
  let last: unknown = new Error("no host to connect to");
  for (const h of hosts) {
    try {
      const socket = await connectOne(h, timeoutMs);
      return Object.assign(socket, { host: h.host, port: Number(h.port) });
    } catch (e) {
      last = e;
    }
  }
  throw last;
}
