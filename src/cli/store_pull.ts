/**
 * Read commands over the shared store: an episode id that is not under the
 * local root but is in the store (`--store`, `NOEMA_STORE`) is pulled first,
 * byte-identical, so `view`, `events`, `validate`, `verify`, `report`… read
 * it exactly as they read a local run. A copy pulled while its run was still
 * going is pulled again when the store has more of it; a local run is never
 * replaced.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { refreshablePull } from "../shared_store/pulled.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir, resolveRoot } from "../store/layout.ts";
import { globalOptions } from "./context.ts";
import { storeUrlOf, withStore } from "./store_option.ts";

/** The commands whose episode arguments may come from the store. */
export const STORE_READ_COMMANDS: ReadonlySet<string> = new Set([
  "view",
  "events",
  "summary",
  "state",
  "plan",
  "validate",
  "verify",
  "report",
  "diff",
]);

/**
 * Pulls each episode argument of a read command that is missing locally and
 * present in the store. Does nothing without a store.
 *
 * @example
 * ```ts
 * // program.hook("preAction", (_p, action) => pullMissingEpisodes(action));
 * ```
 */
export async function pullMissingEpisodes(cmd: CommandUnknownOpts): Promise<void> {
  if (!STORE_READ_COMMANDS.has(cmd.name()) || storeUrlOf(cmd) === null) return;
  if (cmd.name() === "events" && cmd.opts().follow) return; // a live run is followed from the store, not copied
  const root = resolveRoot(globalOptions(cmd));
  const parent = episodesDir(root);
  const ids = cmd.args.filter((a) => episodeIdProblem(a) === null && a !== "last");
  const missing = ids.filter((a) => !existsSync(join(parent, a)));
  // A copy pulled while its run was still going is read as the store has it now.
  const stale = ids.filter((a) => !missing.includes(a) && refreshablePull(root, a) !== null);
  if (missing.length === 0 && stale.length === 0) return;
  const { pullEpisode } = await import("../shared_store/pull.ts");
  await withStore(cmd, async (store) => {
    for (const id of missing) {
      if ((await store.streams(id)).length === 0 && (await store.listFiles(id)).length === 0) continue;
      await pullEpisode(store, id, root);
    }
    for (const id of stale) await pullEpisode(store, id, root, { refresh: true });
  }, { scoped: true });
}
