/**
 * `run()`: executes one episode and writes its artifacts.
 *
 * Event order: `start` → `observe` → `interpret` → `plan` → per step
 * (`direction`… → `action_candidate` → `governance` → `act`) → `verify` →
 * `reflect` → `learn` → `terminate` → `insight` (meta mode). `state.json` is
 * persisted after planning, at step boundaries (throttled so that persisting
 * costs a bounded share of the run) and at the end, each time followed by a
 * `run.state_projection` event. Then `summary.json`, then `manifest.json`.
 *
 * @module
 */
import type { RunResult } from "./engine.ts";
import { builtinDriver } from "../plugins/builtin.ts";
import { createEpisode } from "./core/create.ts";
import type { RunOptions } from "./core/options.ts";
import { checkTask, prepareEpisode } from "./core/prepare.ts";

export type { RunResult } from "./engine.ts";
export type { RunOptions, RunSettingsRecord } from "./core/options.ts";
export { createAdapter, learnedThresholds } from "./core/prepare.ts";

/**
 * Runs one episode toward a task and writes its artifacts under
 * `<root>/episodes/<episode_id>/`. Bad options and plugins that cannot be
 * loaded are errors before anything is written; once the episode has
 * started, every failure (adapter, policy, interruption) ends it with complete
 * terminal artifacts. A step that needs approval pauses the run: the result
 * has `status: "pending"`, exit code 4 and the checkpoint id.
 *
 * @example
 * ```ts
 * import { run } from "noema";
 * const r = await run("List the files", { using: "shell", steps: [{ kind: "act", description: "ls", inputs: { command: "ls" } }] });
 * console.log(r.episode_id, r.status, r.outcome);
 * ```
 */
export async function run(task: string, options: RunOptions = {}): Promise<RunResult> {
  checkTask(task); // before any driver starts anything
  // An external agent (e.g. claude-code) drives its own episode through hooks.
  const driver = typeof options.using === "string" ? await builtinDriver(options.using) : null;
  if (driver) return await driver.run(task, options);
  const prepared = await prepareEpisode(task, options);
  let created;
  try {
    created = await createEpisode(prepared);
  } catch (e) {
    await prepared.adapter.close?.();
    throw e;
  }
  const { engine, lock } = created;
  try {
    const executed = await engine.execute(0);
    return executed === "done" ? await engine.finish() : executed;
  } finally {
    engine.rec.close();
    engine.learnLog.close();
    lock.release();
    await prepared.adapter.close?.();
  }
}
