/**
 * Drives an episode of the episode core (`EpisodeCore`, see
 * `src/runtime/core/episode_core.ts`) with the LLM agent: each tool call is
 * proposed to the core (it becomes an `act` step with its verdict) and
 * recorded there; the run then finishes the episode with the final answer
 * as the message, or the classified error. An `ask` verdict pauses the
 * episode at the core's checkpoint; the conversation is saved in
 * `llm/conversation.json`, and {@link resumeLlmEpisode} continues the same
 * conversation after `noema approve` / `noema reject`.
 *
 * The core is typed structurally ({@link EpisodeHandle}), so this module
 * needs nothing from it but its interface.
 *
 * @module
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { DIR_MODE } from "../store/atomic.ts";
import { ArtifactSink } from "../runtime/artifact_sink.ts";
import type { ModelMessage } from "ai";
import { readJsonFile } from "../store/json_file.ts";
import type { Redactor } from "../runtime/redact.ts";
import { CONVERSATION_FILE, type LlmAgentResult, runLlmAgent } from "./agent.ts";
import type { LlmConfig } from "./config.ts";
import type { Governor } from "./governor.ts";
import type { PendingToolApproval } from "./hooks.ts";
import type { ModelTurn } from "./model_log.ts";

/** What the driver needs of an open episode (the episode core satisfies it). */
export interface EpisodeHandle<R = unknown> extends Governor {
  readonly episodeId: string;
  readonly dir: string;
  finish(end?: {
    adapter_result?: "success" | "error" | "skipped";
    message?: string;
    error?: { type: string; message: string };
  }): Promise<R>;
  close(): void;
}

/** Options of {@link driveLlmEpisode}. */
export interface DriveOptions {
  task: string;
  config: LlmConfig;
  workspace: string;
  redactor: Redactor;
  replay?: readonly ModelTurn[];
  signal?: AbortSignal;
}

/** What {@link driveLlmEpisode} returns: the agent's result and, unless paused, the finished run. */
export interface DriveResult<R> {
  agent: LlmAgentResult;
  run: R | null;
}

/** Where a finished LLM episode keeps its token usage (the episode core's summary has no field for it yet). */
export const USAGE_FILE = "llm/usage.json";

async function end<R>(core: EpisodeHandle<R>, agent: LlmAgentResult, redactor: Redactor): Promise<DriveResult<R>> {
  if (agent.status === "paused") return { agent, run: null };
  mkdirSync(join(core.dir, "llm"), { recursive: true, mode: DIR_MODE });
  new ArtifactSink(core.dir, redactor).writeJson(USAGE_FILE, {
    schema_version: "llm-usage/1.0",
    ...agent.usage,
    turns: agent.total_turns,
    status: agent.status,
  });
  const run = agent.status === "done"
    ? await core.finish({ adapter_result: "success", message: agent.text })
    : await core.finish({ adapter_result: "error", message: agent.error?.message, error: agent.error ?? undefined });
  return { agent, run };
}

/**
 * Runs the agent in an open episode and finishes it (unless it paused).
 *
 * @example
 * ```ts
 * import { driveLlmEpisode } from "noema";
 * // const core = await EpisodeCore.open(task, options);
 * // const { agent, run } = await driveLlmEpisode(core, { task, config, workspace, redactor });
 * ```
 */
export async function driveLlmEpisode<R>(core: EpisodeHandle<R>, o: DriveOptions): Promise<DriveResult<R>> {
  const agent = await runLlmAgent({ ...o, governor: core, episodeDir: core.dir });
  return await end(core, agent, o.redactor);
}

/** The conversation a paused LLM episode saved. */
export interface SavedConversation {
  schema_version: string;
  turns: number;
  pending: PendingToolApproval[];
  messages: ModelMessage[];
}

/**
 * Continues a paused LLM episode (attached again) with the same
 * conversation: the waiting calls approved (they run) or rejected (the
 * model reads `reason`).
 *
 * @example
 * ```ts
 * import { resumeLlmEpisode } from "noema";
 * // const core = await EpisodeCore.attach(id);
 * // await resumeLlmEpisode(core, { task, config, workspace, redactor }, { approved: true });
 * ```
 */
export async function resumeLlmEpisode<R>(
  core: EpisodeHandle<R>,
  o: DriveOptions,
  decision: { approved: boolean; reason?: string },
): Promise<DriveResult<R>> {
  const saved = readJsonFile(join(core.dir, CONVERSATION_FILE)) as unknown as SavedConversation;
  const { value: messages } = o.redactor.unmask(saved.messages);
  const { value: pending } = o.redactor.unmask(saved.pending);
  const agent = await runLlmAgent({
    ...o,
    governor: core,
    episodeDir: core.dir,
    resume: {
      messages,
      turns: saved.turns,
      pending,
      approved: decision.approved,
      reason: decision.reason,
    },
  });
  return await end(core, agent, o.redactor);
}
