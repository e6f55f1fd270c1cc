/**
 * A driver runs an external agent as one episode (`noema run "<task>"
 * --using <driver>`), and continues it after an approval (`noema approve ID
 * --resume`), instead of executing a plan step by step.
 *
 * @module
 */
import { closeSync, readSync } from "node:fs";
import { basename, join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import type { RunResult } from "../runtime/engine.ts";
import type { CoreEnd } from "../runtime/core/episode_core.ts";
import { pendingCheckpoint, type ResumeOptions } from "../runtime/resume.ts";
import type { RunOptions } from "../runtime/run.ts";
import { ARTIFACTS } from "../store/layout.ts";
import { openRegularFile } from "../store/regular_file.ts";
import { calledAs } from "../called_as.ts";

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
    fd = openRegularFile(join(dir, ARTIFACTS.events)); // a FIFO would block
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

/**
 * How `resume --abort` ends an agent episode, as it ends a plan-driven
 * one: `aborted`, with an `Aborted` error that says whether the run was
 * waiting for approval or had crashed (stopped without ending: noema was
 * killed). `noema run --continue` can pick such a run up.
 *
 * @example
 * ```ts
 * import { abortEnd } from "./driver.ts";
 * await episode.finish(abortEnd(".noema/episodes/ep_1"));
 * ```
 */
export function abortEnd(dir: string): Pick<CoreEnd, "aborted" | "message" | "error"> {
  const step = pausedAt(dir);
  const message = step === null
    ? "Aborted after an interruption: the run stopped without ending (noema was killed or crashed)."
    : `Aborted while waiting for approval at ${step}.`;
  return { aborted: true, message, error: { type: "Aborted", message } };
}

/** The step a paused episode waits at, or null when it is not paused (it crashed). */
function pausedAt(dir: string): string | null {
  try {
    return pendingCheckpoint(dir).checkpoint.pending.step_id;
  } catch {
    return null;
  }
}

/**
 * The error `resume` (without `--abort`) gives for an agent episode that is
 * not paused: a crashed agent run cannot go on in place (its conversation
 * was cut mid-call); it is sealed with `--abort`, then continued.
 *
 * @example
 * ```ts
 * import { notPausedError } from "./driver.ts";
 * throw notPausedError("ep_1", "llm");
 * ```
 */
export function notPausedError(id: string, using: string): NoemaError {
  const next = using === "llm"
    ? `, then continue its conversation in a new episode: ${calledAs()} run --continue ${id}`
    : "";
  return new NoemaError(
    "not_paused",
    `episode ${id} is not waiting for approval: its ${using} run stopped without ending (noema was killed or crashed). ` +
      `An agent run cannot go on in place; end it as aborted: ${calledAs()} resume ${id} --abort${next}`,
    { exitCode: EXIT.NO_CHECKPOINT },
  );
}

/**
 * The checkpoint of a paused agent episode, checked before anything is
 * attached or written; a crashed one gets {@link notPausedError}.
 *
 * @example
 * ```ts
 * import { pausedCheckpoint } from "./driver.ts";
 * pausedCheckpoint(".noema/episodes/ep_1", "llm").checkpoint.checkpoint_id;
 * ```
 */
export function pausedCheckpoint(dir: string, using: string): ReturnType<typeof pendingCheckpoint> {
  try {
    return pendingCheckpoint(dir);
  } catch (e) {
    if (e instanceof NoemaError && e.code === "not_paused") throw notPausedError(basename(dir), using);
    throw e;
  }
}
