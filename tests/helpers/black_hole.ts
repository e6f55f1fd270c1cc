/**
 * A TCP proxy on 127.0.0.1 that can be told to stop forwarding without
 * closing anything: a black hole, as a cut network link looks to a client
 * (its connections stay open, its bytes are taken, nothing comes back, and
 * nothing is refused). Forwarding again ({@link BlackHoleProxy.restore})
 * is a link that came back: connections opened since are served.
 *
 * The proxy's own side of a cut connection stays up, so the server's TCP
 * keepalive, which on a real cut finds the peer gone and drops the session,
 * never fires here: with `serverKeepaliveMs`, the proxy closes the server's
 * side of each cut connection that long after the cut, as that keepalive
 * would (PostgreSQL: `tcp_keepalives_idle` + `_count` × `_interval`).
 *
 * @module
 */
import { connect, createServer, type Server, type Socket } from "node:net";

/** A running proxy. */
export interface BlackHoleProxy {
  /** The port it listens on (127.0.0.1). */
  port: number;
  /** Stops forwarding, both ways, on every connection (and does not forward new ones); closes nothing. */
  cut(): void;
  /** Forwards again, for connections opened from now on (those cut stay silent, as after a real cut). */
  restore(): void;
  /** Closes the proxy and every connection through it. */
  close(): Promise<void>;
}

/**
 * Starts a proxy to `127.0.0.1:targetPort`.
 *
 * @example
 * ```ts
 * import { blackHoleProxy } from "./helpers/black_hole.ts";
 * const proxy = await blackHoleProxy(5432);
 * const url = `postgres://noema@127.0.0.1:${proxy.port}/noema`;
 * proxy.cut(); // the link is cut: calls through it get no answer
 * await proxy.close();
 * ```
 */
export function blackHoleProxy(
  targetPort: number,
  options: { serverKeepaliveMs?: number } = {},
): Promise<BlackHoleProxy> {
  const sockets = new Set<Socket>();
  // Each connection's forwarding, as one flag: a connection cut once stays cut (its bytes are lost for good).
  const live = new Set<{ on: boolean; upstream?: Socket }>();
  const timers = new Set<ReturnType<typeof setTimeout>>();
  let cut = false;
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => {});
    const link: { on: boolean; upstream?: Socket } = { on: !cut };
    live.add(link);
    if (!link.on) return; // a new connection into the hole: accepted, never answered
    const upstream = connect(targetPort, "127.0.0.1");
    link.upstream = upstream;
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    upstream.on("error", () => client.destroy());
    client.on("data", (d) => link.on && upstream.write(d));
    upstream.on("data", (d) => link.on && client.write(d));
    // A closed side is passed on only while the link is up: over a cut link nothing arrives, not even a FIN.
    client.on("end", () => link.on && upstream.end());
    upstream.on("end", () => link.on && client.end());
  });
  return new Promise((resolve, reject) => {
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      resolve({
        port: (server.address() as { port: number }).port,
        cut() {
          cut = true;
          const links = [...live].filter((l) => l.on);
          for (const l of links) l.on = false;
          if (options.serverKeepaliveMs === undefined) return;
          const timer = setTimeout(() => {
            timers.delete(timer);
            for (const l of links) l.upstream?.destroy(); // the server found the peer gone
          }, options.serverKeepaliveMs);
          timers.add(timer);
        },
        restore() {
          cut = false;
        },
        close() {
          for (const t of timers) clearTimeout(t);
          for (const s of sockets) s.destroy();
          return new Promise((done) => server.close(() => done()));
        },
      });
    });
  });
}
