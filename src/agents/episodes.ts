/**
 * Opening and joining episodes from outside the engine, through the episode
 * core ({@link EpisodeCore}): `open` creates an episode whose
 * plan grows with each proposed action, `attach` joins one that another
 * process created (waiting briefly for its lock).
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { RuntimeNotices } from "../runtime/core/options.ts";
import type { RunOptions } from "../runtime/run.ts";
import { ARTIFACTS } from "../store/layout.ts";
import { EpisodeCore } from "../runtime/core/episode_core.ts";
import type { EpisodeHandle } from "./core.ts";

/** The settings an external driver opens an episode with (those of `run`, minus plan and adapter). */
export type DriverOptions = Omit<RunOptions, "steps" | "planner" | "using" | "args" | "adapter"> & {
  /** The label recorded as the episode's `using` (e.g. `claude-code`). */
  using: string;
  /** Settings of the driver, recorded in the start event (e.g. the agent's session id). */
  adapter?: Record<string, unknown>;
};

/**
 * Opens a new episode toward `task`; the caller proposes and records actions, then finishes or closes it.
 *
 * @example
 * ```ts
 * import { openEpisode } from "./episodes.ts";
 * const ep = await openEpisode("fix the test", { using: "claude-code", policies: ["policies/no-push.ts"] });
 * ep.close();
 * ```
 */
export async function openEpisode(task: string, options: DriverOptions): Promise<EpisodeHandle> {
  // The driver's settings (`adapter`: claude's path, the session id) are recorded in the start event's settings.
  return await EpisodeCore.open(task, options as Parameters<typeof EpisodeCore.open>[1]);
}

/**
 * Joins a non-terminal episode by id or directory.
 *
 * @example
 * ```ts
 * import { attachEpisode } from "./episodes.ts";
 * const ep = await attachEpisode("ep_01K…", { root: ".noema" });
 * ep.close();
 * ```
 */
export async function attachEpisode(
  ref: string,
  options: { root?: string; notices?: RuntimeNotices } = {},
): Promise<EpisodeHandle> {
  return await EpisodeCore.attach(ref, options);
}

/**
 * Whether an episode directory is sealed (it has its manifest: terminal).
 *
 * @example
 * ```ts
 * import { isSealed } from "./episodes.ts";
 * isSealed(".noema/episodes/ep_1"); // false while it runs
 * ```
 */
export function isSealed(dir: string): boolean {
  return existsSync(join(dir, ARTIFACTS.manifest));
}
