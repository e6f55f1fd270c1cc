/**
 * A driver runs an external agent as one episode (`noema run "<task>"
 * --using <driver>`), and continues it after an approval (`noema approve ID
 * --resume`), instead of executing a plan step by step.
 *
 * @module
 */
import { closeSync, openSync, readSync } from "node:fs";
import { join } from "node:path";
import { EXIT } from "../errors.ts";
import type { RunResult } from "../runtime/engine.ts";
import { pendingCheckpoint, type ResumeOptions } from "../runtime/resume.ts";
import type { RunOptions } from "../runtime/run.ts";
import { ARTIFACTS } from "../store/layout.ts";

/** An external agent driver. */
export interface Driver {
  /** The `using` name. */
  readonly name: string;
  run(task: string, options: RunOptions): Promise<RunResult>;
  /** Continues a paused episode after its decision (or ends it with `abort`). */
  resume(dir: string, options: ResumeOptions): Promise<RunResult>;
}

/**
 * The `start` event of an episode (its first line), or null when unreadable.
 *
 * @example
 * ```ts
 * import { startEvent } from "./driver.ts";
 * startEvent(".noema/episodes/ep_1")?.payload;
 * ```
 */
export function startEvent(dir: string): { payload: Record<string, unknown> } | null {
  let fd: number;
  try {
    fd = openSync(join(dir, ARTIFACTS.events), "r");
  } catch {
    return null;
  }
  try {
    const buf = new Uint8Array(1 << 20);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const line = new TextDecoder().decode(buf.subarray(0, n)).split("\n")[0];
    const e = JSON.parse(line);
    return e?.phase === "start" && typeof e.payload === "object" ? e : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

/**
 * The `using` label an episode recorded, or null.
 *
 * @example
 * ```ts
 * import { episodeUsing } from "./driver.ts";
 * episodeUsing(".noema/episodes/ep_1"); // "claude-code"
 * ```
 */
export function episodeUsing(dir: string): string | null {
  const using = startEvent(dir)?.payload.using;
  return typeof using === "string" ? using : null;
}

/**
 * The artifact paths of an episode, as a RunResult lists them.
 *
 * @example
 * ```ts
 * import { resultPaths } from "./driver.ts";
 * resultPaths("/w/.noema/episodes/ep_1").events; // "/w/.noema/episodes/ep_1/events.jsonl"
 * ```
 */
export function resultPaths(dir: string): RunResult["paths"] {
  return {
    events: join(dir, ARTIFACTS.events),
    learn: join(dir, ARTIFACTS.learn),
    state: join(dir, ARTIFACTS.state),
    summary: join(dir, ARTIFACTS.summary),
    manifest: join(dir, ARTIFACTS.manifest),
  };
}

/**
 * The RunResult of a driver's episode that paused on its pending checkpoint
 * (status `pending`, exit code 4); the checkpoint is read from the episode.
 *
 * @example
 * ```ts
 * import { pausedResult } from "./driver.ts";
 * pausedResult("ep_1", "/w/.noema/episodes/ep_1").checkpoint_id; // "ck_…"
 * ```
 */
export function pausedResult(episodeId: string, dir: string): RunResult {
  const pending = pendingCheckpoint(dir);
  return {
    episode_id: episodeId,
    episode_dir: dir,
    status: "pending",
    outcome: null,
    adapter_result: null,
    exit_code: EXIT.PAUSED,
    checkpoint_id: pending.checkpoint.checkpoint_id,
    pending: pending.checkpoint.pending,
    paths: resultPaths(dir),
  };
}
