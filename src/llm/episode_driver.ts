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
import { join } from "node:path";
import type { ModelMessage } from "ai";
import { NoemaError } from "../errors.ts";
import { describeThrown } from "../plugins/thrown.ts";
import type { Redactor } from "../runtime/redact.ts";
import { type LlmAgentResult, runLlmAgent } from "./agent.ts";
import { CONVERSATION_FILE, readConversation } from "./conversation.ts";
import type { LlmConfig } from "./config.ts";
import type { Governor } from "./governor.ts";
import type { ModelTurn, UsageTotals } from "./model_log.ts";
import type { PriceTable } from "../runtime/cost/prices.ts";
import { usageMetrics } from "../runtime/cost/metrics.ts";
import type { CostMetrics, TokenMetrics } from "../schema/summary.ts";

/** What the driver needs of an open episode (the episode core satisfies it). */
export interface EpisodeHandle<R = unknown> extends Governor {
  readonly episodeId: string;
  readonly dir: string;
  finish(end?: {
    adapter_result?: "success" | "error" | "skipped";
    message?: string;
    error?: { type: string; message: string };
    answer?: string;
    metrics?: { tokens: TokenMetrics; cost?: CostMetrics };
    /** End the run as `aborted` (`resume --abort`). */
    aborted?: boolean;
  }): Promise<R>;
  close(): void;
  /** Events of `propose`/`record` wait for `beforeExecute` (which the hooks call before each allowed call runs). */
  batchEvents?: boolean;
}

/** Options of {@link driveLlmEpisode}. */
export interface DriveOptions {
  task: string;
  config: LlmConfig;
  workspace: string;
  redactor: Redactor;
  replay?: readonly ModelTurn[];
  /** The user's model prices (`noema.jsonc` `prices`) for `metrics.cost`. */
  prices?: PriceTable;
  /** The conversation to continue (`noema run --continue`), secrets restored. @default {a new conversation} */
  continueFrom?: ModelMessage[];
  signal?: AbortSignal;
}

/** What {@link driveLlmEpisode} returns: the agent's result and, unless paused, the finished run. */
export interface DriveResult<R> {
  agent: LlmAgentResult;
  run: R | null;
}

async function end<R>(core: EpisodeHandle<R>, agent: LlmAgentResult): Promise<DriveResult<R>> {
  if (agent.status === "paused") return { agent, run: null };
  const metrics = usageOf(agent.usage);
  // A model that ended saying nothing: the message says so (the answer, recorded as given, is blank).
  const message = agent.text.trim() === "" ? "The model ended without a final answer." : agent.text;
  const run = agent.status === "done"
    ? await core.finish({ adapter_result: "success", message, answer: agent.text, metrics })
    : await core.finish({
      adapter_result: "error",
      message: agent.error?.message,
      error: agent.error ?? undefined,
      metrics,
    });
  return { agent, run };
}

/**
 * Token usage for summary.json `metrics.tokens` and, when every model call's
 * model is known, the cost estimate (`metrics.cost`): the one function every
 * agent's turns are priced with.
 */
function usageOf(u: UsageTotals): { tokens: TokenMetrics; cost?: CostMetrics } {
  const tokens = { input: u.input_tokens, output: u.output_tokens, total: u.total_tokens, model_calls: u.model_calls };
  const calls = Object.values(u.models ?? {}).reduce((n, m) => n + m.model_calls, 0);
  // A conversation saved before per-model usage was kept: the totals only, no cost.
  if (u.models === undefined || calls !== u.model_calls) return { tokens };
  return usageMetrics(u.models, u.prices);
}

/** A PascalCase error type from a NoemaError code: `mcp_unreachable` → `McpUnreachable`. */
const typeOfCode = (code: string) => code.split("_").map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join("");

/**
 * Runs the agent. What it throws instead of returning (an MCP server that cannot be reached, say) becomes an
 * error result, so the episode still ends, with complete artifacts, instead of being left behind unfinished.
 */
async function runAgent(o: Parameters<typeof runLlmAgent>[0]): Promise<LlmAgentResult> {
  try {
    return await runLlmAgent(o);
  } catch (e) {
    const error = e instanceof NoemaError ? { type: typeOfCode(e.code), message: e.detail } : describeThrown(e);
    const usage = { input_tokens: 0, output_tokens: 0, total_tokens: 0, model_calls: 0, ...o.resume?.usage };
    const turns = o.resume?.turns ?? 0;
    return { status: "error", text: "", messages: [], turns: 0, pending: [], error, usage, total_turns: turns };
  }
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
  core.batchEvents = true; // the hooks write the events before each call runs
  const agent = await runAgent({ ...o, governor: core, episodeDir: core.dir });
  return await end(core, agent);
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
  const saved = readConversation(join(core.dir, CONVERSATION_FILE));
  const { value: messages } = o.redactor.unmask(saved.messages);
  const { value: pending } = o.redactor.unmask(saved.pending);
  core.batchEvents = true;
  const agent = await runAgent({
    ...o,
    governor: core,
    episodeDir: core.dir,
    resume: {
      messages,
      turns: saved.turns,
      pending,
      usage: saved.usage,
      approved: decision.approved,
      reason: decision.reason,
    },
  });
  return await end(core, agent);
}
