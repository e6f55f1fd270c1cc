/**
 * Starting and stopping the HTTP server under the runtime at hand (Bun's
 * `Bun.serve`, Deno's `Deno.serve`; the single binary is Bun), and the
 * `--listen` address: `HOST:PORT`, port 0 for any free port, the address
 * actually bound returned.
 *
 * @module
 */
import { EXIT, NoemaError } from "../errors.ts";
import type { Connection } from "./peer_user.ts";

/** A running server. */
export interface RunningServer {
  /** The URL it answers at (the port actually bound). */
  url: string;
  /** Stops it: open streams are closed. */
  stop(): Promise<void>;
}

/**
 * Parses `--listen`: `HOST:PORT`, `[IPv6]:PORT`, or a bare port (loopback).
 *
 * @example
 * ```ts
 * import { parseListen } from "./server.ts";
 * parseListen("127.0.0.1:0"); // { host: "127.0.0.1", port: 0 }
 * ```
 */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s\[\]]*)):(\d{1,5})$/.exec(text.trim()) ??
    /^()()(\d{1,5})$/.exec(text.trim());
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) {
    throw new NoemaError("usage", `--listen must be HOST:PORT (127.0.0.1:7777, [::1]:0), got ${JSON.stringify(text)}`, {
      exitCode: EXIT.USAGE,
    });
  }
  return { host: m[1] ?? (m[2] || "127.0.0.1"), port };
}

/**
 * Serves `fetch` on `host:port`; `fetch` is also told the connection each
 * request came on (null when the runtime does not say).
 *
 * @example
 * ```ts
 * import { startServer } from "./server.ts";
 * const s = await startServer("127.0.0.1", 0, () => new Response("hi"));
 * await s.stop();
 * ```
 */
export async function startServer(
  host: string,
  port: number,
  fetch: (req: Request, connection: Connection | null) => Response | Promise<Response>,
): Promise<RunningServer> {
  // deno-lint-ignore no-explicit-any
  const g = globalThis as any;
  const shown = host.includes(":") ? `[${host}]` : host;
  const connection = (remotePort: unknown, localPort: unknown): Connection | null =>
    typeof remotePort === "number" && typeof localPort === "number" ? { remotePort, localPort } : null;
  try {
    if (g.Bun) {
      const s = g.Bun.serve({
        hostname: host,
        port,
        // deno-lint-ignore no-explicit-any
        fetch: (req: Request, server: any) => fetch(req, connection(server.requestIP(req)?.port, server.port)),
        idleTimeout: 0,
        development: false,
        // Said outright: in noema, Bun set SO_REUSEPORT, so a second serve on a port in use shared it (requests
        // dealt between two servers, maybe of two roots) instead of failing (exit 1, docs/cli.md).
        reusePort: false,
      });
      return { url: `http://${shown}:${s.port}`, stop: async () => void await s.stop(true) };
    }
    if (g.Deno) {
      const ready = Promise.withResolvers<void>();
      let localPort: number | undefined;
      const s = g.Deno.serve(
        { hostname: host, port, onListen: (addr: { port: number }) => (localPort = addr.port, ready.resolve()) },
        // deno-lint-ignore no-explicit-any
        (req: Request, info: any) => fetch(req, connection(info?.remoteAddr?.port, localPort)),
      );
      await ready.promise;
      return {
        url: `http://${shown}:${s.addr.port}`,
        stop: async () => {
          await s.shutdown();
        },
      };
    }
  } catch (e) {
    throw new NoemaError("listen_failed", `cannot listen on ${shown}:${port}: ${(e as Error).message}`, {
      exitCode: EXIT.ERROR,
    });
  }
  throw new NoemaError("unsupported", "noema serve runs under Bun or Deno (or the noema binary)", {
    exitCode: EXIT.ERROR,
  });
}
