/**
 * The process of a run's live export: `noema __otel-live` (internal; started
 * by the run, see `src/channels.ts`). It takes the messages of
 * `live_serve.ts` one per line on stdin and answers one per line on stdout.
 *
 * When its stdin closes (the run ended and no longer listens, or died), it
 * says nothing more and goes on alone: with what it was asked to finish, or,
 * when the run died before asking, with every span the files hold, the root
 * left out (the run's resume sends it). Then it exits.
 *
 * @module
 */
import process from "node:process";
import { createInterface } from "node:readline";
import { unidleThisProcess } from "../../priority.ts";
import { serveLiveExport } from "./live_serve.ts";

/** The (hidden) command that starts a live export's process: `noema __otel-live`. */
export const LIVE_EXPORT_COMMAND = "__otel-live";

/**
 * Serves one live export on stdin and stdout; resolves with the exit code
 * once it finished.
 *
 * @example
 * ```ts
 * // what `noema __otel-live` does
 * const code = await serveLiveExportProcess();
 * ```
 */
export async function serveLiveExportProcess(): Promise<number> {
  let listened = true; // the run still reads what this says
  process.stdout.on("error", () => (listened = false));
  let finishAsked = false;
  const server = serveLiveExport((m) => {
    if (listened) process.stdout.write(`${JSON.stringify(m)}\n`);
  }, () => {
    finishAsked = true;
    unidleThisProcess();
  });
  const lines = createInterface({ input: process.stdin });
  lines.on("line", (text) => server.take(text));
  lines.on("close", () => {
    listened = false;
    if (!finishAsked) server.take(JSON.stringify({ type: "finish", root: false, url: "" }));
  });
  await server.done;
  lines.close();
  return 0;
}
