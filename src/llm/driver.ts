/**
 * The `llm` driver (`noema run --using llm`): with the episode core
 * (`src/runtime/core/episode_core.ts`) in place, the agent drives its own
 * episode: each tool call is proposed to the core and becomes an `act` step
 * with its verdict, an `ask` pauses the episode at the core's checkpoint
 * (`noema approve ID --resume` continues the same conversation, `reject`
 * gives the model the reason), and the episode finishes with the final
 * answer as its message. Until the core is there, the run falls back to the
 * plan-driven runtime with the `llm` adapter (the agent runs in the act step,
 * every call governed and listed in the act's output).
 *
 * Configuration and tool files are checked before anything is written.
 *
 * @module
 */
import { resolve } from "node:path";
import process from "node:process";
import type { Driver } from "../agents/driver.ts";
import { abortEnd, pausedCheckpoint, pausedResult, startEvent } from "../agents/driver.ts";
import { attachEpisode, openEpisode } from "../agents/episodes.ts";
import { EXIT, NoemaError } from "../errors.ts";
import type { RunResult } from "../runtime/engine.ts";
import { Redactor } from "../runtime/redact.ts";
import { pendingCheckpoint, type ResumeOptions } from "../runtime/resume.ts";
import type { RunOptions } from "../runtime/run.ts";
import { resolveRoot } from "../store/layout.ts";
import llmAdapter from "./adapter.ts";
import { type LlmConfig, parseLlmConfig } from "./config.ts";
import { driveLlmEpisode, type DriveResult, type EpisodeHandle, resumeLlmEpisode } from "./episode_driver.ts";
import { apiKeyEnv, requireApiKey } from "./provider.ts";
import type { ModelTurn } from "./model_log.ts";
import { readModelLog } from "./replay_model.ts";
import { readConversation } from "./conversation.ts";
import { resolveTools } from "./tools/registry.ts";
import { calledAs } from "../called_as.ts";

function isNoCore(e: unknown): boolean {
  return e instanceof NoemaError && e.code === "no_core";
}

function redactorFor(config: LlmConfig, secrets: readonly string[]): Redactor {
  const key = apiKeyEnv(config);
  return new Redactor({ secrets: [...secrets, ...(key ? [key] : [])] });
}

/**
 * The recorded turns a replay plays back (a replay resumed after a pause too); for a live model, none, and the
 * provider's API key must be set. A missing key or a damaged recording is a usage error, before anything is written.
 */
function recordedTurns(config: LlmConfig): ModelTurn[] | undefined {
  if (config.replay) return readModelLog(config.replay);
  requireApiKey(config);
  return undefined;
}

/** The RunResult of a drive: the finished run, or the pause. */
function resultOf(core: EpisodeHandle<RunResult>, drive: DriveResult<RunResult>): RunResult {
  if (drive.run) return drive.run;
  return pausedResult(core.episodeId, core.dir);
}

async function runLlm(task: string, options: RunOptions): Promise<RunResult> {
  if (typeof task !== "string" || task.trim() === "") {
    throw new NoemaError("usage", "the task must be a non-empty string", { exitCode: EXIT.USAGE });
  }
  const baseDir = options.base_dir ?? process.cwd();
  const config = parseLlmConfig({ base_dir: baseDir, ...(options.adapter ?? {}) });
  await resolveTools(config.tools, { baseDir: config.base_dir ?? baseDir }); // tool files load before anything is written
  const replay = recordedTurns(config);
  const redactor = redactorFor(config, options.secrets ?? []);
  // A conversation to continue is read before anything is written, like a recording.
  const continueFrom = config.continue_from
    ? redactor.unmask(readConversation(config.continue_from).messages).value
    : undefined;
  const workspace = resolve(options.workspace ?? process.cwd());
  // `onEvent` stays in: the CLI's live progress (each call's act line, each veto) follows the episode's events.
  const { using: _u, steps: _s, planner: _p, args: _a, adapter, signal, ...rest } = options;
  let core: EpisodeHandle<RunResult>;
  try {
    core = await openEpisode(task, { ...rest, root: resolveRoot(options), workspace, using: "llm", adapter });
  } catch (e) {
    if (!isNoCore(e)) throw e;
    // No episode core yet: the plan-driven runtime with the llm adapter in its act step.
    const { run } = await import("../runtime/run.ts");
    return await run(task, { ...options, using: llmAdapter });
  }
  try {
    const drive = await driveLlmEpisode(core, {
      task,
      config,
      workspace,
      redactor,
      replay,
      continueFrom,
      signal,
      prices: options.prices,
    });
    return resultOf(core, drive);
  } finally {
    core.close();
  }
}

async function resumeLlm(dir: string, options: ResumeOptions): Promise<RunResult> {
  const start = startEvent(dir);
  const settings = (start?.payload.settings ?? {}) as Record<string, unknown>;
  const root = resolve(dir, "..", "..");
  // A crashed run is refused before anything is attached (a failed command writes nothing).
  if (!options.abort) pausedCheckpoint(dir, "llm");
  const core = await attachEpisode(dir, { root }) as EpisodeHandle<RunResult>;
  try {
    if (options.abort) return await core.finish(abortEnd(dir));
    const pending = pendingCheckpoint(dir);
    if (!pending.approval) {
      throw new NoemaError(
        "no_decision",
        `checkpoint ${pending.checkpoint.checkpoint_id} has no decision yet: run ${calledAs()} approve ${core.episodeId} or ${calledAs()} reject ${core.episodeId}`,
        { exitCode: EXIT.NO_CHECKPOINT },
      );
    }
    const config = parseLlmConfig(settings.adapter ?? {});
    const replay = recordedTurns(config); // a usage error leaves the episode paused, to resume later
    const drive = await resumeLlmEpisode(core, {
      task: String(start?.payload.task ?? ""),
      config,
      workspace: String(settings.workspace ?? process.cwd()),
      redactor: redactorFor(config, Array.isArray(settings.secrets) ? settings.secrets.map(String) : []),
      replay,
      signal: options.signal,
    }, { approved: pending.approval.decision === "approved", reason: pending.approval.note ?? undefined });
    return resultOf(core, drive);
  } finally {
    core.close();
  }
}

/**
 * The `llm` driver.
 *
 * @example
 * ```ts
 * import { llmDriver } from "noema";
 * const r = await llmDriver.run("fix the test", { workspace: ".", adapter: { base_url: "http://127.0.0.1:11434/v1", model: "qwen2.5-coder" } });
 * ```
 */
export const llmDriver: Driver = { name: "llm", run: runLlm, resume: resumeLlm };
