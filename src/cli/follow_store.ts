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
import { followStoreEvents } from "../shared_store/follow_store.ts";
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

/**
 * Follows an episode from the store, calling `print` for each event.
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
  // A run's first lines are stored before its catalog row (its first whole publish comes a little later).
  if ((await store.get(id)) === null && (await store.streams(id)).length === 0) {
    throw new NoemaError("not_found", `episode ${id} is neither under the local root nor in ${store.location}`);
  }
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
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
