/**
 * Following a run from another machine: its event lines as the shared store
 * receives them, woken by the store's notifications (LISTEN/NOTIFY), with
 * polling as the fallback for a lost one. It ends when the catalog says the
 * run ended or paused and every line is read.
 *
 * @module
 */
import type { SharedStore } from "./shared_store.ts";
import { parseObject } from "../json.ts";

/** One event line read while following. */
export interface StoreFollowedLine {
  /** 1-based line number. */
  line: number;
  /** The line as stored. */
  text: string;
  /** The parsed event, or null when the line is not a JSON object. */
  value: Record<string, unknown> | null;
}

/** Why following stopped: the run ended, paused for approval, or the follower was stopped. */
export type StoreFollowEnd = "terminal" | "paused" | "aborted";

/** Options of {@link followStoreEvents}. */
export interface StoreFollowOptions {
  /** Poll interval when no notification arrives, in ms. @default {1000} */
  pollMs?: number;
  /** Stops following. */
  signal?: AbortSignal;
}

const PAGE = 1000;

/** Options of {@link waitForEpisode}. */
export interface WaitForEpisodeOptions {
  /** How long to wait, in ms. */
  timeoutMs: number;
  /** Poll interval when no notification arrives, in ms. @default {250} */
  pollMs?: number;
  /** Stops waiting. */
  signal?: AbortSignal;
}

/**
 * Whether the store holds anything of an episode: its catalog row, or a
 * stream's lines (a run's first lines are stored before its catalog row).
 *
 * @example
 * ```ts
 * import { storeHasEpisode } from "./follow_store.ts";
 * await storeHasEpisode(store, "ep_01J…"); // true once its run published a line
 * ```
 */
export async function storeHasEpisode(store: SharedStore, id: string): Promise<boolean> {
  return (await store.get(id)) !== null || (await store.streams(id)).length > 0;
}

/**
 * Waits until the store holds an episode (a run of another machine that has
 * just started and not published yet), woken by the store's notifications,
 * polling as the fallback. True once it does; false when `timeoutMs` ran out
 * or `signal` aborted.
 *
 * @example
 * ```ts
 * import { waitForEpisode } from "./follow_store.ts";
 * if (!(await waitForEpisode(store, "ep_01J…", { timeoutMs: 10_000 }))) console.error("not there");
 * ```
 */
export async function waitForEpisode(store: SharedStore, id: string, options: WaitForEpisodeOptions): Promise<boolean> {
  const end = Date.now() + options.timeoutMs;
  let wake: (() => void) | null = null;
  const nudge = () => wake?.();
  const unsubscribe = await store.subscribe(id, nudge);
  options.signal?.addEventListener("abort", nudge);
  try {
    for (;;) {
      if (await storeHasEpisode(store, id)) return true;
      const left = end - Date.now();
      if (left <= 0 || options.signal?.aborted) return false;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, options.pollMs ?? 250));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  } finally {
    options.signal?.removeEventListener("abort", nudge);
    await unsubscribe();
  }
}

/**
 * Yields every stored event line of an episode, then new ones as they are
 * published, and returns why it stopped.
 *
 * @example
 * ```ts
 * import { followStoreEvents } from "./follow_store.ts";
 * const it = followStoreEvents(store, "ep_01J…");
 * for (let r = await it.next(); !r.done; r = await it.next()) console.log(r.value.text);
 * ```
 */
export async function* followStoreEvents(
  store: SharedStore,
  id: string,
  options: StoreFollowOptions = {},
): AsyncGenerator<StoreFollowedLine, StoreFollowEnd> {
  const pollMs = options.pollMs ?? 1000;
  let wake: (() => void) | null = null;
  const nudge = () => wake?.();
  const unsubscribe = await store.subscribe(id, nudge);
  options.signal?.addEventListener("abort", nudge);
  const dec = new TextDecoder();
  let seq = 1;
  try {
    for (;;) {
      if (options.signal?.aborted) return "aborted";
      // Read the catalog first: a run it calls ended had every line stored before it said so.
      const state = (await store.get(id))?.run_state;
      for (;;) {
        const lines = await store.readLines(id, "events.jsonl", seq, PAGE);
        for (const bytes of lines) {
          const text = dec.decode(bytes);
          yield { line: seq++, text, value: parseObject(text) };
        }
        if (lines.length < PAGE) break;
      }
      if (state === "terminal") return "terminal";
      if (state === "waiting_for_approval" || state === "paused") return "paused";
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => resolve(), pollMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      wake = null;
    }
  } finally {
    options.signal?.removeEventListener("abort", nudge);
    await unsubscribe();
  }
}
