/**
 * One governed LLM agent run: the configured model (or a replay of a
 * recorded one), the tools (built-in, user files, MCP servers), the governed
 * hooks and the loop, with every model call recorded in `model.jsonl` and
 * the conversation kept for an approval pause.
 *
 * @module
 */
import { dirname, join } from "node:path";
import process from "node:process";
import type { ModelMessage } from "ai";
import { episodeRoot, mkdirBelow } from "../store/nofollow.ts";
import { ArtifactSink } from "../runtime/artifact_sink.ts";
import type { Redactor } from "../runtime/redact.ts";
import { commandOf, toAiSdkTools } from "./ai_tools.ts";
import type { LlmConfig } from "./config.ts";
import { CONVERSATION_FILE } from "./conversation.ts";
import type { Governor } from "./governor.ts";
import { governedHooks, type PendingToolApproval } from "./hooks.ts";
import { approvalMessages, type LoopResult, runAgentLoop } from "./loop.ts";
import { connectMcpServers } from "./mcp.ts";
import { MODEL_LOG, modelRecorder, type ModelTurn, type UsageTotals } from "./model_log.ts";
import type { PriceTable } from "../runtime/cost/prices.ts";
import { createLlmModel } from "./provider.ts";
import { replayModel } from "./replay_model.ts";
import { dryRunResults } from "./dry_run.ts";
import { resolveTools } from "./tools/registry.ts";
import type { LlmTool } from "./tools/tool.ts";

/** The default system instruction. */
export const DEFAULT_SYSTEM = "You are a careful software agent working in a workspace directory. " +
  "Use the tools to inspect and change files and to run commands; paths are relative to the workspace. " +
  "When a tool call is refused, read the reason and adapt. When the task is done, answer with a short summary.";

/** Options of {@link runLlmAgent}. */
export interface LlmAgentOptions {
  task: string;
  config: LlmConfig;
  governor: Governor;
  /** The workspace the tools are confined to. */
  workspace: string;
  /** The episode directory (model.jsonl and the conversation go there). */
  episodeDir: string;
  redactor: Redactor;
  /** Replay these recorded turns instead of calling the model. */
  replay?: readonly ModelTurn[];
  /** The user's model prices for the cost estimate (`noema.jsonc` `prices`); a resumed run keeps its first part's. */
  prices?: PriceTable;
  /** Continue a paused conversation: approve or reject the waiting calls. */
  resume?: {
    messages: ModelMessage[];
    turns: number;
    /** The calls the paused run left waiting. */
    pending: PendingToolApproval[];
    /** The token usage before the pause. */
    usage?: UsageTotals;
    approved: boolean;
    reason?: string;
  };
  /**
   * Continue this conversation (`noema run --continue`: the one a run that failed saved): the model is called with
   * it instead of the task. @default {a new conversation: the task}
   */
  continueFrom?: ModelMessage[];
  /** Extra tools (library use). */
  extraTools?: readonly LlmTool[];
  signal?: AbortSignal;
}

/** What {@link runLlmAgent} returns. */
export interface LlmAgentResult extends LoopResult {
  usage: UsageTotals;
  /** Turns used so far, across pauses. */
  total_turns: number;
}

/**
 * The waiting calls of a rejected resume, proposed again under the keys they
 * were proposed under: the SDK never shows a rejected call to the hooks, so
 * this is where the governor learns of the rejection (the episode core reads
 * the approval record: a `run.resume` event and the step vetoed). Returns
 * the reason each call's model reads: the governor's ("Rejected by NAME:
 * note") when it denied the call, else the one given.
 */
async function rejectWaiting(
  governor: Governor,
  resume: NonNullable<LlmAgentOptions["resume"]>,
  byName: ReadonlyMap<string, LlmTool>,
): Promise<Record<string, string>> {
  const reasons: Record<string, string> = {};
  for (const p of resume.pending) {
    const key = p.key ?? p.call_id;
    const d = await governor.propose({
      kind: "tool",
      tool: p.tool,
      input: p.input,
      command: commandOf(byName.get(p.tool), p.tool, p.input),
      call_id: key,
    });
    const reason = d.verdict === "deny" && d.reason ? d.reason : resume.reason;
    if (reason) reasons[p.call_id] = reason;
  }
  return reasons;
}

/** The conversation a run starts from: a paused one with its approval answers, one to continue, or the task. */
async function startMessages(o: LlmAgentOptions, byName: ReadonlyMap<string, LlmTool>): Promise<ModelMessage[]> {
  if (!o.resume) return o.continueFrom ? [...o.continueFrom] : [{ role: "user", content: o.task }];
  const answers = o.resume.approved ? o.resume.reason : await rejectWaiting(o.governor, o.resume, byName);
  const waiting = o.resume.pending.map((p) => p.call_id);
  return [...o.resume.messages, ...approvalMessages(o.resume.messages, waiting, o.resume.approved, answers)];
}

/** Writes `llm/conversation.json` (masked): the conversation, the calls waiting for approval, the usage so far. */
function saveConversation(sink: ArtifactSink, episodeDir: string, r: LoopResult, usage: UsageTotals): void {
  mkdirBelow(join(episodeDir, dirname(CONVERSATION_FILE)), episodeRoot(episodeDir));
  sink.writeJson(CONVERSATION_FILE, {
    schema_version: "llm-conversation/1.0",
    turns: r.turns,
    pending: r.pending,
    usage,
    messages: r.messages,
  });
}

/**
 * Runs the agent to its end, a pause, or a failure.
 *
 * @example
 * ```ts
 * import { parseLlmConfig, PolicyGovernor, Redactor, runLlmAgent } from "noema";
 * // const r = await runLlmAgent({ task: "fix the test", config, governor, workspace: ".", episodeDir: dir, redactor: new Redactor() });
 * ```
 */
export async function runLlmAgent(o: LlmAgentOptions): Promise<LlmAgentResult> {
  const c = o.config;
  const abort = new AbortController();
  const onAbort = () => abort.abort();
  o.signal?.addEventListener("abort", onAbort, { once: true });
  const tools: LlmTool[] = [
    ...await resolveTools(c.tools, { baseDir: c.base_dir ?? process.cwd(), shell: c.shell }),
    ...(o.extraTools ?? []),
  ];
  const mcp = await connectMcpServers(c.mcp_servers ?? {});
  tools.push(...mcp.tools);
  const byName = new Map(tools.map((t) => [t.name, t]));
  const sink = new ArtifactSink(o.episodeDir, o.redactor);
  const log = sink.jsonl(MODEL_LOG);
  const totals: UsageTotals = { input_tokens: 0, output_tokens: 0, total_tokens: 0, model_calls: 0 };
  if (o.resume?.usage) Object.assign(totals, o.resume.usage);
  if (o.prices && !totals.prices) totals.prices = o.prices;
  try {
    // A resumed replay goes on from the turns its first part replayed (each one counted in the usage).
    const base = o.replay ? replayModel(o.replay, o.redactor, totals.model_calls) : createLlmModel(c);
    const { wrapLanguageModel } = await import("ai"); // loaded on first use (see runAgentLoop)
    const model = wrapLanguageModel({
      // deno-lint-ignore no-explicit-any
      model: base as any,
      middleware: modelRecorder(log, totals),
    });
    const hooks = governedHooks(o.governor, {
      command: (name, input) => commandOf(byName.get(name), name, input),
      resumed: o.resume?.pending,
    });
    const previous = o.resume?.turns ?? 0;
    const messages = await startMessages(o, byName);
    const result = await runAgentLoop({
      model,
      tools: toAiSdkTools(tools, { workspace: o.workspace, signal: abort.signal }, {
        hints: hooks.hintsFor,
        review: hooks.reviewResult,
        // A dry-run replay executes nothing: each allowed call gets the recorded run's result.
        dryRun: o.replay && c.replay_dry_run ? dryRunResults(o.replay) : undefined,
      }),
      hooks,
      messages,
      system: c.system ?? DEFAULT_SYSTEM,
      maxTurns: Math.max(1, c.max_turns - previous),
      maxTokens: c.max_tokens,
      temperature: c.temperature,
      stream: c.stream,
      timeoutMs: c.timeout_ms,
      maxRetries: o.replay ? 0 : c.max_retries,
      baseUrl: c.base_url ?? c.provider,
      signal: abort.signal,
    });
    const total = previous + result.turns;
    if (result.status === "paused") {
      // The turn's other calls have run and been recorded: the episode pauses now, its checkpoint the last event.
      const checkpoint = o.governor.pauseDeferred?.();
      if (checkpoint) { for (const p of result.pending) p.checkpoint_id ??= checkpoint; }
    }
    // Paused: what approve --resume continues. Failed or out of turns: what run --continue picks up.
    if (result.status !== "done") saveConversation(sink, o.episodeDir, { ...result, turns: total }, totals);
    return { ...result, usage: totals, total_turns: total };
  } finally {
    o.signal?.removeEventListener("abort", onAbort);
    log.close();
    await mcp.close();
  }
}
