/**
 * Episodes kept loaded by a resident hook server between calls: each is
 * suspended (state written, lock released) once a call was answered, and
 * resumed by the next call when nobody else wrote it meanwhile; otherwise
 * it is attached again from disk.
 *
 * @module
 */
import type { EpisodeHandle } from "../core.ts";
import { attachEpisode, type DriverOptions, openEpisode } from "../episodes.ts";

/** How the hook runner gets and lets go of episodes (see `HookSettings.episodes`). */
export interface EpisodeSource {
  attach(id: string, root: string): Promise<EpisodeHandle>;
  open(task: string, options: DriverOptions): Promise<EpisodeHandle>;
  /** The runner is done with the episode for this call. */
  release(episode: EpisodeHandle): void;
}

/**
 * One process per call: attach, then close.
 *
 * @example
 * ```ts
 * import { DIRECT } from "./episodes.ts";
 * // const ep = await DIRECT.attach("ep_01…", ".noema"); …; DIRECT.release(ep);
 * ```
 */
export const DIRECT: EpisodeSource = {
  attach: (id, root) => attachEpisode(id, { root }),
  open: (task, options) => openEpisode(task, options),
  release: (episode) => episode.close(),
};

/**
 * The episodes of a resident server: loaded once, suspended after each call
 * ({@link ResidentEpisodes.settle}, after the answer was sent).
 *
 * @example
 * ```ts
 * import { ResidentEpisodes } from "./episodes.ts";
 * const episodes = new ResidentEpisodes();
 * // handleHookEvent(dialect, event, { ...settings, episodes }); reply; episodes.settle();
 * episodes.closeAll();
 * ```
 */
export class ResidentEpisodes implements EpisodeSource {
  readonly #loaded = new Map<string, EpisodeHandle>();
  readonly #inUse = new Set<EpisodeHandle>();

  async attach(id: string, root: string): Promise<EpisodeHandle> {
    const cached = this.#loaded.get(id);
    if (cached && !cached.closed && cached.resume()) return this.#use(cached);
    this.#loaded.delete(id);
    return this.#use(await attachEpisode(id, { root }));
  }

  async open(task: string, options: DriverOptions): Promise<EpisodeHandle> {
    return this.#use(await openEpisode(task, options));
  }

  release(_episode: EpisodeHandle): void {
    // Kept until settle(): the answer goes out before the state is written.
  }

  #use(episode: EpisodeHandle): EpisodeHandle {
    this.#loaded.set(episode.episodeId, episode);
    this.#inUse.add(episode);
    return episode;
  }

  /** Writes the state of the episodes used by the last call and releases their locks (or drops finished ones). */
  settle(): void {
    for (const episode of this.#inUse) {
      if (episode.closed) this.#loaded.delete(episode.episodeId);
      else {
        try {
          episode.suspend();
        } catch {
          episode.close();
          this.#loaded.delete(episode.episodeId);
        }
      }
    }
    this.#inUse.clear();
  }

  /** How many episodes are loaded. */
  get size(): number {
    return this.#loaded.size;
  }

  /** Closes every loaded episode (state written, policies stopped). */
  closeAll(): void {
    for (const episode of this.#loaded.values()) {
      try {
        if (episode.closed) continue;
        if (episode.resume(2000)) episode.close();
      } catch {
        // another process holds it: nothing of ours is unwritten (suspend flushed)
      }
    }
    this.#loaded.clear();
  }
}
