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
import { runChannel } from "../../channels.ts";
import { unidleThisProcess } from "../../priority.ts";
import { serveLiveExport } from "./live_serve.ts";

export { LIVE_EXPORT_COMMAND } from "./live_command.ts";

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
  let finishAsked = false;
  const channel = runChannel({
    line: (text) => server.take(text),
    closed: () => {
      if (!finishAsked) server.take(JSON.stringify({ type: "finish", root: false, url: "" }));
    },
  });
  const server = serveLiveExport((m) => channel.post(m), () => {
    finishAsked = true;
    unidleThisProcess();
  });
  await server.done;
  channel.close();
  return 0;
}
