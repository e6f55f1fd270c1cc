/**
 * A quick look at whether a collector is there at all: a TCP connection to the
 * host and port of its URL. A run starts it with its live export, so that a
 * collector that is down (connection refused, host unknown) is said and
 * recorded even when the run ends before the export's own retries give up
 * (they go on until the export timeout, after a short run has ended).
 *
 * @module
 */
import { nodeNet } from "../../builtins.ts";
import type { ExportFailure } from "./exporter.ts";

/**
 * Resolves to the failure when no connection to the collector at `url` can be made, or null when one can or when
 * the answer did not come within `boundMs` (a slow network is the export's to judge, not this look's).
 *
 * @example
 * ```ts
 * import { probeCollector } from "./probe.ts";
 * const down = await probeCollector("http://127.0.0.1:4318/v1/traces", 1000);
 * ```
 */
export function probeCollector(url: string, boundMs: number): Promise<ExportFailure | null> {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve(null);
  }
  const port = Number(target.port || (target.protocol === "https:" ? 443 : 80));
  const host = target.hostname.replace(/^\[(.*)\]$/, "$1");
  return new Promise((resolve) => {
    const socket = nodeNet().connect({ host, port });
    const done = (r: ExportFailure | null) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done(null), boundMs);
    socket.once("connect", () => done(null));
    socket.once("error", (e) => done({ url, message: `cannot connect: ${(e as Error).message}` }));
    socket.unref();
  });
}
