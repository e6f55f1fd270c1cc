/**
 * The worker side of {@link BackgroundLivePublisher} (`live_background.ts`):
 * a run's live publishing off its main thread, where no process of its own
 * can be started. Its first message is the {@link LivePublishingStart}, as
 * JSON text; then those of `live_serve.ts`.
 *
 * @module
 */
import { parentPort } from "node:worker_threads";
import { lowerThisThread } from "../priority.ts";
import { type LivePublishingServer, serveLivePublishing } from "./live_serve.ts";

// First, before the publisher and the database client are loaded: on a busy machine the run's own thread goes first.
lowerThisThread();
let server: LivePublishingServer | null = null;
parentPort!.on("message", (text: string) => {
  if (server !== null) return server.take(text);
  server = serveLivePublishing(JSON.parse(text), (m) => parentPort!.postMessage(JSON.stringify(m)));
});
