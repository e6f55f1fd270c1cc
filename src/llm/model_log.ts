/**
 * `model.jsonl`: every model request and response of an LLM run, one line per
 * model call, with secrets masked (the API key never appears: requests are
 * recorded as the SDK's prompt, not as HTTP headers).
 *
 * A line: `{turn, mode, provider, model, started_at, duration_ms, request:
 * {prompt, prompt_from?, tools, tools_same?, settings}, response: {content,
 * finish_reason, usage} | null, error: {type, message, status?} | null}`.
 * `content` is the model's output in the AI SDK's LanguageModelV4 form
 * (tool-call `input` as the JSON text the model sent), which is what exact
 * replay plays back.
 *
 * A conversation only grows, so a request is recorded as a delta: with
 * `prompt_from: N`, `prompt` holds the messages after the first N messages of
 * the previous turn's prompt, and `tools_same: true` stands for the previous
 * turn's tools. The file grows with the conversation, not with its square;
 * {@link expandTurns} rebuilds the whole requests.
 *
 * @module
 */
import type { LanguageModelMiddleware } from "ai";
import type { JsonlAppender } from "../store/jsonl.ts";
import type { Redactor } from "../runtime/redact.ts";
import { addUsage } from "../runtime/cost/metrics.ts";
import type { PriceTable } from "../runtime/cost/prices.ts";
import type { ModelUsage } from "../schema/summary.ts";

/** The artifact file name. */
export const MODEL_LOG = "model.jsonl";

type Params = Parameters<NonNullable<LanguageModelMiddleware["wrapGenerate"]>>[0]["params"];

/** One recorded model call. */
export interface ModelTurn {
  turn: number;
  mode: "generate" | "stream";
  provider: string;
  model: string;
  started_at: string;
  duration_ms: number;
  request: {
    prompt: unknown;
    tools: unknown;
    settings: Record<string, unknown>;
    /** The prompt continues the first `prompt_from` messages of the previous turn's prompt. */
    prompt_from?: number;
    /** The tools are the previous turn's. */
    tools_same?: boolean;
  };
  response: { content: unknown[]; finish_reason: unknown; usage: unknown } | null;
  error: { type: string; message: string; status?: number } | null;
}

/** Token usage summed over the turns of a run. */
export interface UsageTotals {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  model_calls: number;
  /** The same per model id, cache tokens apart (absent in conversations saved before it was kept). */
  models?: Record<string, ModelUsage>;
  /** The user's model prices the run started with (`noema.jsonc` `prices`), kept across an approval pause. */
  prices?: PriceTable;
}

function toolsOf(params: Params) {
  return (params.tools ?? []).map((t) => {
    const x = t as { type: string; name: string; description?: string; inputSchema?: unknown };
    return { type: x.type, name: x.name, description: x.description ?? null, parameters: x.inputSchema ?? null };
  });
}

function settingsOf(params: Params): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (const k of ["maxOutputTokens", "temperature", "toolChoice", "seed"] as const) {
    if (params[k] !== undefined) settings[k] = JSON.parse(JSON.stringify(params[k]));
  }
  return settings;
}

/** The whole request of a model call, as comparable JSON (masked like the log when a redactor is given). */
export function requestOf(params: Params, redactor: Redactor | null): ModelTurn["request"] {
  const text = JSON.stringify({ prompt: params.prompt, tools: toolsOf(params), settings: settingsOf(params) });
  const request = JSON.parse(text);
  return redactor && redactor.mightContain(text) ? redactor.redact(request).value : request;
}

/**
 * Rebuilds whole requests from delta-recorded turns (see the module doc).
 *
 * @example
 * ```ts
 * import { expandTurns } from "noema";
 * // const turns = expandTurns(recordedLines);
 * ```
 */
export function expandTurns(turns: readonly ModelTurn[]): ModelTurn[] {
  let prompt: unknown[] = [], tools: unknown = null;
  return turns.map((t) => {
    const r = t.request;
    const own = Array.isArray(r.prompt) ? r.prompt : [];
    prompt = r.prompt_from === undefined ? own : [...prompt.slice(0, r.prompt_from), ...own];
    tools = r.tools_same ? tools : r.tools;
    return { ...t, request: { prompt, tools, settings: r.settings } };
  });
}

/**
 * Whether two JSON values have the same JSON text, without writing either
 * out (members whose value is undefined count as absent). The same object
 * on both sides is equal at once.
 */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return typeof a === "number" && typeof b === "number" && JSON.stringify(a) === JSON.stringify(b);
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>, y = b as Record<string, unknown>;
  let n = 0;
  for (const k in x) {
    const v = x[k];
    if (v === undefined || !Object.hasOwn(x, k)) continue;
    n++;
    if (!Object.hasOwn(y, k) || !sameJson(v, y[k])) return false;
  }
  for (const k in y) if (y[k] !== undefined && Object.hasOwn(y, k)) n--;
  return n === 0;
}

/**
 * Records requests as deltas against the previous turn's. The previous
 * turn's messages are kept as the SDK gave them and compared structurally;
 * the SDK rebuilds each turn's prompt around the same inner objects, so most
 * of a long conversation is found unchanged by identity, without serialising
 * it again. (A message changed in place after it was sent would go
 * unnoticed: give the SDK new message objects to rewrite history, as
 * `prepareStep` does.)
 */
class DeltaRequests {
  #prompt: readonly unknown[] = [];
  #tools = "";
  /**
   * The JSON text of a call's request, as a delta (see {@link ModelTurn.request}):
   * only the messages after the unchanged ones are written out, once, now.
   */
  delta(params: Params): string {
    const prompt = params.prompt as readonly unknown[];
    let k = 0;
    while (k < prompt.length && k < this.#prompt.length && sameJson(prompt[k], this.#prompt[k])) k++;
    const tools = JSON.stringify(toolsOf(params));
    const same = tools === this.#tools;
    this.#prompt = prompt;
    this.#tools = tools;
    return `{"prompt":${JSON.stringify(k > 0 ? prompt.slice(k) : prompt)},"tools":${same ? "null" : tools},` +
      `"settings":${JSON.stringify(settingsOf(params))}${k > 0 ? `,"prompt_from":${k}` : ""}` +
      `${same ? ',"tools_same":true' : ""}}`;
  }
}

function errorOf(e: unknown): ModelTurn["error"] {
  const err = e as { name?: string; message?: string; statusCode?: number };
  const out: NonNullable<ModelTurn["error"]> = { type: err?.name ?? "Error", message: err?.message ?? String(e) };
  if (typeof err?.statusCode === "number") out.status = err.statusCode;
  return out;
}

/** Folds stream parts into LanguageModelV4 content (text and reasoning joined, tool calls whole). */
// deno-lint-ignore no-explicit-any
export function contentOfParts(parts: any[]): { content: unknown[]; finish_reason: unknown; usage: unknown } {
  const content: Record<string, unknown>[] = [];
  const open = new Map<string, Record<string, unknown>>();
  let finish: unknown = null, usage: unknown = null;
  for (const p of parts) {
    if (p.type === "text-start" || p.type === "reasoning-start") {
      const c = { type: p.type === "text-start" ? "text" : "reasoning", text: "" };
      open.set(`${c.type}:${p.id}`, c);
      content.push(c);
    } else if (p.type === "text-delta" || p.type === "reasoning-delta") {
      const c = open.get(`${p.type === "text-delta" ? "text" : "reasoning"}:${p.id}`);
      if (c) c.text += p.delta;
    } else if (p.type === "tool-call") {
      const { type, toolCallId, toolName, input } = p;
      content.push({ type, toolCallId, toolName, input });
    } else if (p.type === "finish") {
      finish = p.finishReason;
      usage = p.usage;
    }
  }
  return { content, finish_reason: finish, usage };
}

/**
 * A middleware that appends one line per model call to `log` and sums token
 * usage into `totals`. Give it a masking appender (`ArtifactSink.jsonl`) so
 * secrets never reach the file. Lines are numbered (`turn`) on from
 * `totals.model_calls`, so a run resumed with the usage of its first part
 * goes on numbering where that part stopped.
 *
 * @example
 * ```ts
 * import { wrapLanguageModel } from "ai";
 * import { ArtifactSink, modelRecorder, Redactor } from "noema";
 * // const log = new ArtifactSink(episodeDir, new Redactor({ secrets: ["API_KEY"] })).jsonl("model.jsonl");
 * // const model = wrapLanguageModel({ model: base, middleware: modelRecorder(log) });
 * ```
 */
export function modelRecorder(
  log: JsonlAppender,
  totals: UsageTotals = { input_tokens: 0, output_tokens: 0, total_tokens: 0, model_calls: 0 },
): LanguageModelMiddleware & { totals: UsageTotals } {
  let turn = totals.model_calls;
  const requests = new DeltaRequests();
  /** The start of a line, up to its request (the request is written out when the call starts). */
  const head = (mode: ModelTurn["mode"], params: Params, model: { provider: string; modelId: string }) => {
    const first = JSON.stringify({
      turn: ++turn,
      mode,
      provider: model.provider,
      model: model.modelId,
      started_at: new Date().toISOString(),
    });
    return `${first.slice(0, -1)},"request":${requests.delta(params)}`;
  };
  /** Appends the line (one JSON text, built once: the appender masks it) and sums its usage. */
  const write = (
    start: string,
    t0: number,
    response: ModelTurn["response"],
    error: ModelTurn["error"],
    modelId: string,
  ) => {
    log.appendRaw(
      `${start},"duration_ms":${Math.round(performance.now() - t0)},"response":${JSON.stringify(response)},` +
        `"error":${JSON.stringify(error)}}`,
    );
    const u = response?.usage as
      | {
        inputTokens?: { total?: number; cacheRead?: number; cacheWrite?: number };
        outputTokens?: { total?: number };
      }
      | undefined;
    totals.model_calls++;
    totals.input_tokens += u?.inputTokens?.total ?? 0;
    totals.output_tokens += u?.outputTokens?.total ?? 0;
    totals.total_tokens = totals.input_tokens + totals.output_tokens;
    addUsage(totals.models ??= {}, modelId, {
      input: u?.inputTokens?.total ?? 0,
      output: u?.outputTokens?.total ?? 0,
      cache_write: u?.inputTokens?.cacheWrite ?? 0,
      cache_read: u?.inputTokens?.cacheRead ?? 0,
    });
  };
  return {
    specificationVersion: "v4",
    totals,
    async wrapGenerate({ doGenerate, params, model }) {
      const start = head("generate", params, model), t0 = performance.now();
      let r;
      try {
        r = await doGenerate();
      } catch (e) {
        write(start, t0, null, errorOf(e), model.modelId);
        throw e;
      }
      write(start, t0, { content: r.content, finish_reason: r.finishReason, usage: r.usage }, null, model.modelId);
      return r;
    },
    async wrapStream({ doStream, params, model }) {
      const start = head("stream", params, model), t0 = performance.now();
      let r;
      try {
        r = await doStream();
      } catch (e) {
        write(start, t0, null, errorOf(e), model.modelId);
        throw e;
      }
      const parts: unknown[] = [];
      let failed: unknown = null;
      const tap = new TransformStream({
        transform(part, controller) {
          parts.push(part);
          if ((part as { type: string }).type === "error") failed = (part as { error: unknown }).error;
          controller.enqueue(part);
        },
        flush() {
          write(start, t0, failed ? null : contentOfParts(parts), failed ? errorOf(failed) : null, model.modelId);
        },
      });
      return { ...r, stream: r.stream.pipeThrough(tap) };
    },
  };
}
