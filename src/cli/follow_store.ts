/**
 * `noema events ID --follow` over the shared store: prints a run of another
 * machine as the store receives it, with the same exits as a local follow
 * (0 when it ends or pauses, 130 on Ctrl-C).
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { EXIT, NoemaError } from "../errors.ts";
import { followStoreEvents, storeHasEpisode, waitForEpisode } from "../shared_store/follow_store.ts";
import type { SharedStore } from "../shared_store/shared_store.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir, resolveRoot, type RootOptions } from "../store/layout.ts";
import type { CliContext } from "./context.ts";

/**
 * Whether an episode argument names something under the local root (an id
 * there, a prefix, `last`, or a path): only a full id absent here is looked
 * up in the store.
 *
 * @example
 * ```ts
 * import { hasLocalEpisode } from "./follow_store.ts";
 * hasLocalEpisode("ep_01J…", { root: ".noema" });
 * ```
 */
export function hasLocalEpisode(ref: string, options: RootOptions): boolean {
  if (episodeIdProblem(ref) !== null || ref === "last") return true;
  return existsSync(join(episodesDir(resolveRoot(options)), ref));
}

/** How long following waits for an episode the store does not hold yet (a run that has just started elsewhere). */
const WAIT_FOR_EPISODE_MS = 10_000;

/**
 * Follows an episode from the store, calling `print` for each event. An
 * episode the store does not hold yet is waited for, up to 10 s, saying so
 * once on stderr.
 *
 * @example
 * ```ts
 * await followFromStore(ctx, store, "ep_01J…", (e, raw) => console.log(raw));
 * ```
 */
export async function followFromStore(
  ctx: CliContext,
  store: SharedStore,
  id: string,
  print: (e: Record<string, unknown>, raw: string) => void,
): Promise<void> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    // A run of another machine that has just started may not have published yet: wait for it, bounded.
    if (!(await storeHasEpisode(store, id))) {
      const s = WAIT_FOR_EPISODE_MS / 1000;
      ctx.out.note(`noema: ${id} is not in ${store.location} yet: waiting up to ${s} s for its run to publish`);
      if (!(await waitForEpisode(store, id, { timeoutMs: WAIT_FOR_EPISODE_MS, signal: controller.signal }))) {
        if (controller.signal.aborted) {
          ctx.exitCode = EXIT.INTERRUPTED;
          return;
        }
        throw new NoemaError(
          "not_found",
          `episode ${id} is neither under the local root nor in ${store.location} (waited ${s} s)`,
        );
      }
    }
    const it = followStoreEvents(store, id, { signal: controller.signal });
    let r = await it.next();
    for (; !r.done; r = await it.next()) {
      if (r.value.value === null) {
        throw new NoemaError("jsonl_json", "not a JSON object", {
          file: `${id}/events.jsonl (store)`,
          line: r.value.line,
        });
      }
      print(r.value.value, r.value.text);
      ctx.out.stdout.flush();
    }
    if (r.value === "aborted") ctx.exitCode = EXIT.INTERRUPTED;
    else if (r.value === "paused") ctx.out.note("noema: the run is paused, waiting for approval");
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
}
