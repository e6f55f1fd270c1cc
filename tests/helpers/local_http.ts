/**
 * What the scripted model servers (OpenAI Chat Completions, OpenAI
 * Responses, Anthropic Messages, Gemini) share: reading a request body, and
 * listening on a free port of 127.0.0.1 with a `close` that does not wait for
 * kept-alive connections.
 *
 * @module
 */
import type { IncomingMessage, Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Buffer } from "node:buffer";

/**
 * The whole body of a request, as UTF-8 text.
 *
 * @example
 * ```ts
 * import { readBody } from "./local_http.ts";
 * // createServer(async (req, res) => { const body = JSON.parse(await readBody(req)); … })
 * ```
 */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** A server listening on 127.0.0.1. */
export interface LocalServer {
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  /** Closes the server and every connection still open. */
  close(): Promise<void>;
}

/**
 * Starts `server` on a free port of 127.0.0.1.
 *
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * import { listenLocal } from "./local_http.ts";
 * const local = await listenLocal(createServer((_req, res) => res.end("ok")));
 * await fetch(local.origin);
 * await local.close();
 * ```
 */
export async function listenLocal(server: Server): Promise<LocalServer> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/**
 * A port of 127.0.0.1 where connections are refused at once and that no test's server can be given: below 1024,
 * where nothing listens on a test machine, while the tests' servers listen on port 0 (the kernel picks from the
 * ephemeral range). A port freed by closing a server is not such a port: another test file's server can be given it
 * a moment later, and then it answers (it happened: a hook server's exports for a "down" collector reached another
 * file's receiver, failing both tests). Port 2 is another such port, for a second host that is down.
 *
 * @example
 * ```ts
 * import { REFUSED_PORT } from "./local_http.ts";
 * const down = `http://127.0.0.1:${REFUSED_PORT}`; // ECONNREFUSED
 * ```
 */
export const REFUSED_PORT = 1;
