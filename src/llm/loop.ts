/**
 * The agent loop: the AI SDK's own tool loop (`generateText`, or
 * `streamText` when `stream` is set) with the governed hooks spread in, so
 * every tool call is proposed, decided and recorded by the governor. noema
 * adds no loop of its own; it reads the outcome:
 *
 * - `done`: the model answered without asking for more tools (`text` is the final answer);
 * - `paused`: a call waits for approval (`pending`); `messages` is the whole
 *   conversation, to continue with {@link approvalMessages};
 * - `max_turns`: the model still wanted tools after `maxTurns` model calls;
 * - `error`: a model call failed (classified), or recording failed;
 *   `messages` is the conversation as the failed call was sent it.
 *
 * @module
 */
import type { LanguageModel, ModelMessage, ToolSet } from "ai";
import type { GovernedHooks, PendingToolApproval } from "./hooks.ts";
import { classifyModelError, type ModelFailure } from "./model_errors.ts";

/** Options of {@link runAgentLoop}. */
export interface LoopOptions {
  model: LanguageModel;
  tools: ToolSet;
  hooks: GovernedHooks;
  /** The conversation so far (the task as the first user message). */
  messages: ModelMessage[];
  /** System instruction. */
  system?: string;
  /** Model calls allowed. */
  maxTurns: number;
  maxTokens?: number;
  temperature?: number;
  /** Use streamText. @default {false} */
  stream?: boolean;
  /** Per model call. @default {120000} */
  timeoutMs?: number;
  /** Retries of 429/5xx/unreachable (the SDK's backoff, honouring retry-after). @default {2} */
  maxRetries?: number;
  /** Where errors say the server is. */
  baseUrl?: string;
  signal?: AbortSignal;
}

/** What {@link runAgentLoop} returns. */
export interface LoopResult {
  status: "done" | "paused" | "max_turns" | "error";
  /** The final answer (status done), or the last text. */
  text: string;
  /**
   * The whole conversation after the run (input messages plus the model's and the tools'); after a failed model
   * call, the conversation that call was sent.
   */
  messages: ModelMessage[];
  /** Model calls made. */
  turns: number;
  /** Calls waiting for approval (status paused). */
  pending: PendingToolApproval[];
  /** What failed (status error or max_turns). */
  error: ModelFailure | null;
}

/**
 * Runs the loop until the model answers, a call needs approval, the turns
 * run out or a call fails. Never throws for model or tool failures.
 *
 * @example
 * ```ts
 * import { governedHooks, PolicyGovernor, runAgentLoop } from "noema";
 * // const r = await runAgentLoop({ model, tools, hooks: governedHooks(gov), messages: [{ role: "user", content: "hi" }], maxTurns: 10 });
 * ```
 */
export async function runAgentLoop(o: LoopOptions): Promise<LoopResult> {
  // The AI SDK is loaded on first use: importing it takes ~0.1 s of CPU, which "noema" need not cost everyone.
  const { generateText, isStepCount, streamText } = await import("ai");
  const { toolApproval, experimental_refineToolInput, onToolExecutionStart, onToolExecutionEnd } = o.hooks;
  // The conversation as the model call in progress was sent it: on a failure, what a continuation sends again.
  let sent: ModelMessage[] = [], calls = 0;
  const common = {
    model: o.model,
    tools: o.tools,
    system: o.system,
    messages: o.messages,
    stopWhen: isStepCount(o.maxTurns),
    maxOutputTokens: o.maxTokens,
    temperature: o.temperature,
    maxRetries: o.maxRetries ?? 2,
    timeout: { stepMs: o.timeoutMs ?? 120_000 },
    abortSignal: o.signal,
    toolApproval,
    experimental_refineToolInput,
    onToolExecutionStart,
    onToolExecutionEnd,
    prepareStep: ({ responseMessages }: { responseMessages: ModelMessage[] }) => {
      sent = responseMessages;
      calls++;
      return undefined;
    },
  };
  let steps: { finishReason: string }[], text: string, responseMessages: ModelMessage[];
  try {
    if (o.stream) {
      let failure: unknown = null;
      const r = streamText({
        // deno-lint-ignore no-explicit-any
        ...(common as any),
        onError: ({ error }: { error: unknown }) => void (failure ??= error),
      });
      await r.consumeStream();
      if (failure) throw failure;
      steps = await r.steps;
      text = await r.text;
      responseMessages = await r.responseMessages;
    } else {
      // deno-lint-ignore no-explicit-any
      const r = await generateText(common as any);
      steps = r.steps;
      text = r.text;
      // Every step's messages (and those of resumed approvals), not only the last step's.
      responseMessages = r.responseMessages;
    }
  } catch (e) {
    await o.hooks.settle();
    return {
      status: "error",
      text: "",
      messages: [...o.messages, ...sent],
      turns: Math.max(0, calls - 1),
      pending: [],
      error: classifyModelError(e, o.baseUrl ?? "the model server"),
    };
  }
  await o.hooks.settle();
  const messages = [...o.messages, ...responseMessages];
  const base = { text, messages, turns: steps.length, pending: o.hooks.pending };
  if (o.hooks.failures.length > 0) {
    const f = o.hooks.failures[0];
    return {
      ...base,
      status: "error",
      error: { type: "RecordFailed", message: `recording a tool call failed: ${f.message}` },
    };
  }
  if (o.hooks.pending.length > 0) return { ...base, status: "paused", error: null };
  if (steps.at(-1)?.finishReason === "tool-calls") {
    return {
      ...base,
      status: "max_turns",
      error: {
        type: "LlmMaxTurns",
        message: `the model still wanted tools after max_turns (${o.maxTurns}) model calls`,
      },
    };
  }
  return { ...base, status: "done", error: null };
}

/**
 * The tool message that answers pending approvals: appended to a paused
 * conversation, it lets the next {@link runAgentLoop} run (approved) or
 * refuse (rejected, with the reason the model reads) the waiting calls.
 * `reason` is one text for every call, or a text per call id.
 *
 * @example
 * ```ts
 * import { approvalMessages } from "noema";
 * // const next = [...paused.messages, ...approvalMessages(paused.messages, ["call_1"], true)];
 * // approvalMessages(paused.messages, ["call_1"], false, { call_1: "not on main" });
 * ```
 */
export function approvalMessages(
  messages: readonly ModelMessage[],
  callIds: readonly string[],
  approved: boolean,
  reason?: string | Readonly<Record<string, string>>,
): ModelMessage[] {
  const content: { type: "tool-approval-response"; approvalId: string; approved: boolean; reason?: string }[] = [];
  for (const m of messages) {
    if (m.role !== "assistant" || typeof m.content === "string") continue;
    for (const part of m.content) {
      const p = part as { type: string; toolCallId?: string; approvalId?: string; isAutomatic?: boolean };
      if (p.type === "tool-approval-request" && !p.isAutomatic && callIds.includes(p.toolCallId!)) {
        const why = typeof reason === "string"
          ? reason
          : reason && Object.hasOwn(reason, p.toolCallId!)
          ? reason[p.toolCallId!]
          : undefined;
        content.push({
          type: "tool-approval-response",
          approvalId: p.approvalId!,
          approved,
          ...(why ? { reason: why } : {}),
        });
      }
    }
  }
  return content.length === 0 ? [] : [{ role: "tool", content } as ModelMessage];
}
