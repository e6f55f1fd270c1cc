/**
 * Publishing from the hook path (an interactive agent session governed by
 * `noema install-hooks`), when a shared store is configured (`NOEMA_STORE` or
 * `store` in `noema.jsonc`):
 *
 * - a hook call answered in its own process marks the session's episode as
 *   pending (a file write: the call is never slowed by the database);
 * - the resident hook server publishes the episodes it serves after each
 *   answer, in the background (see {@link LivePublisher}), and, when it stops,
 *   whatever is still pending under its root.
 *
 * A store that cannot be reached changes nothing for the agent: the calls are
 * answered as without a store, and `noema sync` publishes later.
 *
 * @module
 */
import { join } from "node:path";
import { LivePublisher } from "../shared_store/live.ts";
import { openSharedStore } from "../shared_store/open.ts";
import { clearPending, markPending, pendingIds } from "../shared_store/pending.ts";
import { EpisodePublisher } from "../shared_store/publish.ts";
import { markPublished } from "../shared_store/published.ts";
import { LeaseHeldError, type SharedStore } from "../shared_store/shared_store.ts";
import { episodesDir } from "../store/layout.ts";
import type { Notice } from "../agents/server/notices.ts";
import { storeFromEnvironment } from "./store_option.ts";
import { handOff, publishPending, storeLocation, storeUnavailableNotice } from "./store_publish.ts";

/**
 * Marks an episode a hook call wrote as pending, when a store is configured
 * (nothing otherwise, and never an error for the call).
 *
 * @example
 * ```ts
 * markHookEpisode(".noema", () => "ep_01J…");
 * ```
 */
export function markHookEpisode(root: string, idOf: () => string | null): void {
  try {
    const pick = storeFromEnvironment();
    if (pick === null) return;
    const id = idOf();
    if (id !== null) markPending(root, id);
    if (id !== null) markPublished(root, id, storeLocation(pick)); // decisions on it go through the store
  } catch {
    // a bad store setting is reported by the commands that use it; a hook call is never failed by it
  }
}

/**
 * The resident server's publisher: `served(root, id)` after each answer;
 * `close()` when the server stops. `note` hears what it did (the server's
 * log); `notice` gets the store's failure, once, for the episode being served
 * (a `store.unavailable` runtime event, as a run records).
 *
 * @example
 * ```ts
 * const pub = hookPublisher(".noema");
 * pub?.served(".noema", "ep_01J…");
 * await pub?.close();
 * ```
 */
export function hookPublisher(
  root: string,
  note: (line: string) => void = () => {},
  notice: (id: string, n: Notice) => void = () => {},
): { served(root: string, id: string): void; close(): Promise<void> } | null {
  let pick;
  try {
    pick = storeFromEnvironment();
  } catch {
    return null;
  }
  if (pick === null) return null;
  let store: Promise<SharedStore> | null = null;
  const live = new Map<string, LivePublisher>();
  const roots = new Set<string>([root]);
  let down = false;
  const open = () => store ??= openSharedStore(pick.url, pick.from);
  const location = storeLocation(pick);
  // The store failing is said once: in the server's log, and in the episode being served (a runtime event).
  const unreachable = (id: string, e: Error) => {
    if (down) return;
    down = true;
    note(`store unreachable: ${e.message}`);
    notice(id, storeUnavailableNotice(location, e));
  };
  return {
    served(at, id) {
      if (down) return;
      roots.add(at);
      markPending(at, id);
      markPublished(at, id, location); // decisions on it go through the store
      const key = `${at}\0${id}`;
      if (!live.has(key)) {
        void open().then((s) => {
          if (live.has(key) || down) return;
          const p = new LivePublisher(new EpisodePublisher(s, join(episodesDir(at), id), id), {
            // Another process of this session publishing it (`noema sync`): not the store down; the next call, or
            // the end, publishes it again (the marker stays).
            onUnavailable: (e) => {
              if (e instanceof LeaseHeldError) {
                note(`publishing ${id}: ${e.message}`);
                live.delete(key);
              } else unreachable(id, e);
            },
          });
          live.set(key, p);
          p.kick();
        }, (e) => unreachable(id, e as Error));
        return;
      }
      live.get(key)!.kick();
    },
    async close() {
      const pending = [...roots].some((r) => pendingIds(r).length > 0);
      if (live.size === 0 && !pending) return; // nothing to publish: no connection opened
      try {
        const s = await open();
        for (const [key, p] of live) {
          const [at, id] = key.split("\0");
          if (await p.finish(5_000)) {
            clearPending(at, id);
            note(`published ${id}`);
          } else if (!down) {
            handOff(at, id, pick); // still publishing (a slow store): a background sync finishes it
            note(`handed ${id} over to a background sync`);
          }
        }
        for (const at of roots) {
          if (!down) await publishPending(s, at, 10_000).catch((e) => note(`publishing what is pending: ${e.message}`));
        }
        await s.close();
      } catch (e) {
        note(`store unreachable at the end, the episodes stay pending: ${(e as Error).message}`); // for noema sync
      }
    },
  };
}
