/**
 * Episodes kept loaded by a resident hook server between calls. A call's
 * events are appended before it is answered; the state (`state.json`,
 * `core.json`) is written once no call came for {@link FLUSH_AFTER_MS} (at
 * least every {@link FLUSH_AT_LEAST_MS} during a burst), so a burst of calls
 * does not wait for it. The lock is kept while calls keep coming and released
 * after {@link RELEASE_AFTER_MS} without one (so other processes — a driver
 * finishing the episode, `noema approve` — get it quickly). The next call resumes the episode when nobody else wrote it
 * meanwhile; otherwise it is attached again from disk.
 *
 * @module
 */
import type { EpisodeHandle } from "../core.ts";
import { attachEpisode, type DriverOptions, openEpisode } from "../episodes.ts";
import type { EpisodeNotices } from "./notices.ts";

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
  readonly #notices: EpisodeNotices | undefined;
  readonly #loaded = new Map<string, EpisodeHandle>();
  readonly #inUse = new Set<EpisodeHandle>();
  #releaseTimer: ReturnType<typeof setTimeout> | undefined;
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  /** When the oldest unwritten change was made (performance.now), or null. */
  #unwrittenSince: number | null = null;

  /** `notices`: what the server's background work says about an episode, written into it at its next event. */
  constructor(options: { notices?: EpisodeNotices } = {}) {
    this.#notices = options.notices;
  }

  async attach(id: string, root: string): Promise<EpisodeHandle> {
    const cached = this.#loaded.get(id);
    if (cached && !cached.closed && cached.resume()) return this.#use(cached);
    this.#loaded.delete(id);
    return this.#use(await attachEpisode(id, { root, notices: this.#notices?.for(id) }));
  }

  async open(task: string, options: DriverOptions): Promise<EpisodeHandle> {
    const id = options.episode_id;
    const notices = this.#notices && typeof id === "string" ? { notices: this.#notices.for(id) } : {};
    return this.#use(await openEpisode(task, { ...options, ...notices }));
  }

  release(_episode: EpisodeHandle): void {
    // Kept until settle(): the answer goes out before the state is written.
  }

  #use(episode: EpisodeHandle): EpisodeHandle {
    episode.autoFlush = false; // settle() writes the state after each answer
    this.#loaded.set(episode.episodeId, episode);
    this.#inUse.add(episode);
    return episode;
  }

  /**
   * Writes the state of the episodes the last call used (drops finished
   * ones); their locks are released after {@link RELEASE_AFTER_MS} without calls.
   */
  settle(): void {
    this.#inUse.clear();
    for (const episode of [...this.#loaded.values()]) if (episode.closed) this.#loaded.delete(episode.episodeId);
    this.#unwrittenSince ??= performance.now();
    clearTimeout(this.#flushTimer);
    clearTimeout(this.#releaseTimer);
    if (performance.now() - this.#unwrittenSince >= FLUSH_AT_LEAST_MS) this.#flushIdle();
    else this.#flushTimer = setTimeout(() => this.#flushIdle(), FLUSH_AFTER_MS);
  }

  /** Writes the state of the loaded episodes no call is using; schedules the release of their locks. */
  #flushIdle(): void {
    if (this.#inUse.size > 0) return; // a call is under way: its settle() comes next
    for (const episode of [...this.#loaded.values()]) this.#safely(episode, () => episode.flush());
    this.#unwrittenSince = null;
    this.#releaseTimer = setTimeout(() => this.#releaseIdle(), RELEASE_AFTER_MS);
  }

  #releaseIdle(): void {
    if (this.#inUse.size > 0) return;
    for (const episode of [...this.#loaded.values()]) this.#safely(episode, () => episode.suspend());
  }

  /** Runs `work` on a loaded episode; one that is closed or fails is closed and forgotten. */
  #safely(episode: EpisodeHandle, work: () => void): void {
    try {
      if (!episode.closed) return work();
    } catch {
      episode.close();
    }
    this.#loaded.delete(episode.episodeId);
  }

  /** How many episodes are loaded. */
  get size(): number {
    return this.#loaded.size;
  }

  /** Closes every loaded episode (state written, policies stopped). */
  closeAll(): void {
    clearTimeout(this.#releaseTimer);
    clearTimeout(this.#flushTimer);
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

/** How long a resident server keeps an episode's lock after writing its state, for the next call. */
export const RELEASE_AFTER_MS = 200;
/** Quiet time after a call before a resident server writes the state. */
export const FLUSH_AFTER_MS = 30;
/** During a burst of calls, the state is written at least this often. */
export const FLUSH_AT_LEAST_MS = 500;
