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
