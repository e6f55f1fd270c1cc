/**
 * Notices for the episodes a resident hook server keeps loaded: what its
 * background work (publishing to the shared store, the OpenTelemetry export)
 * has to say about one episode — the store or the collector failing — is
 * written into that episode as a `runtime` event at its next event (the next
 * hook call), as a run writes its own.
 *
 * @module
 */
import type { RuntimeNotices } from "../../runtime/core/options.ts";

/** One notice: a `runtime` event of this type and payload. */
export type Notice = ReturnType<RuntimeNotices["take"]>[number];

/**
 * Notices waiting, by episode id.
 *
 * @example
 * ```ts
 * import { EpisodeNotices } from "./notices.ts";
 * const notices = new EpisodeNotices();
 * notices.push("ep_01J…", { event_type: "otel.unavailable", payload: { endpoint: "http://127.0.0.1:4318/v1/traces" } });
 * notices.for("ep_01J…").take(); // [that notice], then []
 * ```
 */
export class EpisodeNotices {
  readonly #waiting = new Map<string, Notice[]>();

  /** Adds a notice for the episode `id`, written at its next event. */
  push(id: string, notice: Notice): void {
    const list = this.#waiting.get(id);
    if (list) list.push(notice);
    else this.#waiting.set(id, [notice]);
  }

  /** The queue the episode `id` takes its notices from (see `RunOptions.notices`). */
  for(id: string): RuntimeNotices {
    return {
      take: () => {
        const list = this.#waiting.get(id) ?? [];
        this.#waiting.delete(id);
        return list;
      },
    };
  }
}
