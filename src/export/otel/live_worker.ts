/**
 * The thread of a live export (started by {@link OtelLiveSink} in `live.ts`
 * for the hook server, a process that lives on): it follows the episode's
 * files and sends their spans, so the serving thread only says "something
 * was written". The messages are those of `live_serve.ts`.
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import { BACKGROUND_NICE, lowerThisThread, unidleThread } from "../../priority.ts";
import { serveLiveExport } from "./live_serve.ts";

// First, before the OpenTelemetry SDK is loaded: on a busy machine the serving thread goes first.
// While it serves, only on CPU time nothing else wants; at a finish (when it is waited for), a normal share.
const tid = lowerThisThread(BACKGROUND_NICE, true);
const server = serveLiveExport((m) => parentPort!.postMessage(JSON.stringify(m)), () => unidleThread(tid));
parentPort!.on("message", (text: string) => server.take(text));
