/**
 * The model turns of an episode, whatever recorded them, in one shape: the
 * `chat {model}` spans are made from these. Today the llm agent's
 * `model.jsonl` is the one source (one line per model call, requests
 * recorded as deltas); another record of model turns (a Claude Code
 * transcript read into the episode) is mapped by adding its file and a case
 * to {@link modelTurnOf}.
 *
 * @module
 */

/** One model call, as the spans need it. */
export interface ModelTurnRecord {
  /** 1, 2, … within the episode: the span's key. */
  turn: number;
  /** `gen_ai.provider.name`: `openai`, `anthropic`, … */
  provider: string | null;
  /** The model asked for. */
  model: string | null;
  /** The model that answered, when the response names it. */
  responseModel: string | null;
  /** The response id, when recorded. */
  responseId: string | null;
  /** When the call started (ISO 8601). */
  startedAt: string;
  /** How long it took, in ms. */
  durationMs: number;
  inputTokens: number | null;
  outputTokens: number | null;
  cacheReadTokens: number | null;
  cacheWriteTokens: number | null;
  reasoningTokens: number | null;
  /** Why the model stopped, e.g. `stop`, `tool_calls`. */
  finishReasons: string[];
  /** The call's error, when it failed. */
  error: { type: string; message: string } | null;
  /** The whole prompt (as the file has it: masked), for content capture. */
  input: unknown;
  /** The model's output (as the file has it: masked), for content capture. */
  output: unknown;
}

/** The files of an episode that hold model turns, in the order they are read. */
export const MODEL_TURN_FILES: readonly string[] = ["model.jsonl"];

/** Reads successive lines of one model-turn file into records (a request recorded as a delta needs the previous one). */
export interface ModelTurnReader {
  /** The record of the next line, or null for a line that is not a model turn. */
  next(line: Record<string, unknown>): ModelTurnRecord | null;
}

/**
 * A reader of the lines of `file` (one of {@link MODEL_TURN_FILES}).
 *
 * @example
 * ```ts
 * const reader = modelTurnReader("model.jsonl");
 * const turn = reader.next(JSON.parse(line));
 * ```
 */
export function modelTurnReader(file: string): ModelTurnReader {
  let prompt: unknown[] = [];
  return {
    next(line) {
      if (file !== "model.jsonl") return null;
      const request = (line.request ?? {}) as { prompt?: unknown; prompt_from?: number };
      const own = Array.isArray(request.prompt) ? request.prompt : [];
      prompt = typeof request.prompt_from === "number" ? [...prompt.slice(0, request.prompt_from), ...own] : own;
      return modelTurnOf(line, prompt);
    },
  };
}

function num(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

function str(v: unknown): string | null {
  return typeof v === "string" && v !== "" ? v : null;
}

/** `openai.chat` → `openai`, `openai-compatible.chat` → `openai-compatible`. */
function providerName(p: unknown): string | null {
  const s = str(p);
  return s === null ? null : s.split(".")[0];
}

/** The AI SDK's finish reason, a string or `{unified, raw}`. */
function finishReasons(v: unknown): string[] {
  if (typeof v === "string") return [v];
  const u = (v as { unified?: unknown } | null)?.unified;
  return typeof u === "string" ? [u] : [];
}

type Tokens = Pick<
  ModelTurnRecord,
  "inputTokens" | "outputTokens" | "cacheReadTokens" | "cacheWriteTokens" | "reasoningTokens"
>;

/**
 * A turn's token counts from either usage shape `model.jsonl` holds: the AI
 * SDK's (`{inputTokens: {total, cacheRead, cacheWrite}, outputTokens: {total,
 * reasoning}}`, the llm agent) or Anthropic's (`{input_tokens, output_tokens,
 * cache_creation_input_tokens, cache_read_input_tokens}`, the turns read from
 * a Claude Code transcript), where the input total counts the cache tokens as
 * the summary's `metrics.tokens` does.
 */
function tokensOf(raw: unknown): Tokens {
  const u = (raw ?? {}) as Record<string, unknown>;
  if ("input_tokens" in u || "output_tokens" in u) {
    const input = num(u.input_tokens),
      write = num(u.cache_creation_input_tokens),
      read = num(u.cache_read_input_tokens);
    return {
      inputTokens: input === null ? null : input + (write ?? 0) + (read ?? 0),
      outputTokens: num(u.output_tokens),
      cacheReadTokens: read,
      cacheWriteTokens: write,
      reasoningTokens: null,
    };
  }
  const i = (u.inputTokens ?? {}) as { total?: unknown; cacheRead?: unknown; cacheWrite?: unknown };
  const o = (u.outputTokens ?? {}) as { total?: unknown; reasoning?: unknown };
  return {
    inputTokens: num(i.total),
    outputTokens: num(o.total),
    cacheReadTokens: num(i.cacheRead),
    cacheWriteTokens: num(i.cacheWrite),
    reasoningTokens: num(o.reasoning),
  };
}

/**
 * One `model.jsonl` line (see `src/llm/model_log.ts`) as a record; `prompt` is its whole request prompt.
 *
 * @example
 * ```ts
 * modelTurnOf({ turn: 1, provider: "openai.chat", model: "gpt", started_at: "…", duration_ms: 5, response: null }, []);
 * ```
 */
export function modelTurnOf(line: Record<string, unknown>, prompt: unknown): ModelTurnRecord | null {
  const turn = num(line.turn), startedAt = str(line.started_at);
  if (turn === null || startedAt === null) return null;
  const response = (line.response ?? null) as
    | { content?: unknown; finish_reason?: unknown; usage?: Record<string, unknown>; id?: unknown; model?: unknown }
    | null;
  const tokens = tokensOf(response?.usage);
  const error = line.error as { type?: unknown; message?: unknown } | null | undefined;
  return {
    turn,
    provider: providerName(line.provider),
    model: str(line.model),
    responseModel: str(response?.model),
    responseId: str(response?.id),
    startedAt,
    durationMs: num(line.duration_ms) ?? 0,
    ...tokens,
    finishReasons: finishReasons(response?.finish_reason),
    error: error ? { type: String(error.type ?? "error"), message: String(error.message ?? "") } : null,
    input: prompt,
    output: response?.content ?? null,
  };
}
