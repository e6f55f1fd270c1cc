/**
 * Read operations on one episode: state, summary, events, plan.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import type { EventRecord } from "../schema/event.ts";
import type { Plan } from "../schema/plan.ts";
import { readJsonFile } from "../store/json_file.ts";
import { readJsonl } from "../store/jsonl.ts";
import { ARTIFACTS, type EpisodeLocation, locateEpisode, type RootOptions } from "../store/layout.ts";
import { PlanProjector } from "./plan.ts";
import { crashedWhileSealing, sealingNote } from "./sealing.ts";

/** Absolute paths of an episode's artifacts. */
export interface EpisodePaths {
  /** The episode directory. */
  dir: string;
  /** `events.jsonl`. */
  events: string;
  /** `learn.jsonl`. */
  learn: string;
  /** `state.json`. */
  state: string;
  /** `summary.json` (terminal runs). */
  summary: string;
  /** `manifest.json` (terminal runs). */
  manifest: string;
}

/**
 * Paths of every artifact of an episode directory.
 *
 * @example
 * ```ts
 * import { episodePaths } from "noema";
 * episodePaths("/tmp/runs/episodes/ep_1").summary; // "/tmp/runs/episodes/ep_1/summary.json"
 * ```
 */
export function episodePaths(dir: string): EpisodePaths {
  return {
    dir,
    events: join(dir, ARTIFACTS.events),
    learn: join(dir, ARTIFACTS.learn),
    state: join(dir, ARTIFACTS.state),
    summary: join(dir, ARTIFACTS.summary),
    manifest: join(dir, ARTIFACTS.manifest),
  };
}

function located(ref: string | EpisodeLocation, options: RootOptions): EpisodeLocation {
  return typeof ref === "string" ? locateEpisode(ref, options) : ref;
}

/**
 * Reads `state.json` of an episode (by id or directory path). The object is
 * returned as written: unknown fields are kept.
 *
 * @example
 * ```ts
 * import { readState } from "noema";
 * const state = readState("ep_01K9RBBMXXRSFWR49SXFGF4SPR");
 * console.log(state.outcomes?.status);
 * ```
 */
export function readState(ref: string | EpisodeLocation, options: RootOptions = {}): Record<string, unknown> & {
  outcomes?: { status?: string };
} {
  const loc = located(ref, options);
  const path = join(loc.dir, ARTIFACTS.state);
  return readJsonFile(path, path, { noFollow: true }); // an episode's own file: a link planted there is not read
}

/**
 * Reads `summary.json` of an episode. A run that has not finished has none:
 * that is a clear error saying so.
 *
 * @example
 * ```ts
 * import { readSummary } from "noema";
 * console.log(readSummary("ep_01K9RBBMXXRSFWR49SXFGF4SPR").outcome);
 * ```
 */
export function readSummary(ref: string | EpisodeLocation, options: RootOptions = {}): Record<string, unknown> {
  const loc = located(ref, options);
  const path = join(loc.dir, ARTIFACTS.summary);
  if (!existsSync(path)) {
    const why = crashedWhileSealing(loc.dir) ? sealingNote(loc.id) : "the run is not terminal (yet)";
    throw new NoemaError("not_terminal", `episode ${loc.id} has no summary.json: ${why}`, { exitCode: EXIT.ERROR });
  }
  return readJsonFile(path, path, { noFollow: true });
}

/** Options for {@link readEvents}. */
export interface ReadEventsOptions extends RootOptions {
  /** Only events of this phase. */
  phase?: string;
}

/**
 * Streams the events of an episode in file order. A damaged line throws a
 * {@link NoemaError} naming the file and line (`noema validate` lists every
 * problem instead); a torn final line is reported as torn.
 *
 * @example
 * ```ts
 * import { readEvents } from "noema";
 * for (const e of readEvents("ep_01K9RBBMXXRSFWR49SXFGF4SPR", { phase: "act" })) console.log(e.payload);
 * ```
 */
export function* readEvents(ref: string | EpisodeLocation, options: ReadEventsOptions = {}): Generator<EventRecord> {
  const loc = located(ref, options);
  const path = join(loc.dir, ARTIFACTS.events);
  if (!existsSync(path)) throw new NoemaError("not_found", "file not found", { file: path });
  for (const entry of readJsonl(path, { noFollow: true })) {
    if (entry.problem) {
      throw new NoemaError(`jsonl_${entry.problem}`, entry.message, { file: path, line: entry.line });
    }
    if (options.phase === undefined || entry.value.phase === options.phase) yield entry.value as EventRecord;
  }
}

/**
 * Rebuilds an episode's plan from `events.jsonl` (see {@link PlanProjector}).
 * Returns `null` when the log has no `plan` event.
 *
 * @example
 * ```ts
 * import { readPlan } from "noema";
 * readPlan("ep_01K9RBBMXXRSFWR49SXFGF4SPR")?.steps.map((s) => s.status);
 * ```
 */
export function readPlan(ref: string | EpisodeLocation, options: RootOptions = {}): Plan | null {
  const p = new PlanProjector();
  for (const e of readEvents(ref, options)) p.add(e);
  return p.plan();
}
