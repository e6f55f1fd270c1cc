/**
 * An episode's model turns for its page: each line of `model.jsonl` (the
 * llm agent's calls, a Claude Code transcript's turns) with its model, when
 * it started, how long it took, its tokens and its cost; summed per model and
 * in all. A turn is priced as `summary.json` `metrics.cost` priced its model
 * (the prices recorded there), else by the built-in table; a model with no
 * price has no cost, never a guess.
 *
 * @module
 */
import { join } from "node:path";
import { asRecord } from "../json.ts";
import { estimateCost, type ModelPrice } from "../runtime/cost/prices.ts";
import { readJsonFile } from "../store/json_file.ts";
import { readJsonl } from "../store/jsonl.ts";

/** The tokens of one turn or a sum of turns. */
export interface TurnTokens {
  input: number;
  output: number;
  cache_write: number;
  cache_read: number;
}

/** One model turn. */
export interface ModelTurnRow extends TurnTokens {
  turn: number;
  model: string;
  started_at: string | null;
  duration_ms: number | null;
  /** US dollars, or null when the model has no price. */
  usd: number | null;
  /** The call failed: its error's type and message. */
  error: string | null;
}

/** The turns of an episode, per model and in total. */
export interface ModelTurns {
  turns: ModelTurnRow[];
  /** Every turn read (the page shows the first {@link TURNS_SHOWN}). */
  total_turns: number;
  by_model: (TurnTokens & { model: string; calls: number; usd: number | null })[];
  total: TurnTokens & { calls: number; usd: number | null };
}

/** Turns listed one by one on the page. */
export const TURNS_SHOWN = 500;

const num = (x: unknown): number => (typeof x === "number" && Number.isFinite(x) ? x : 0);

/** The tokens of a recorded usage: the AI SDK's form (llm agent) or Anthropic's (a transcript). */
function tokensOf(usage: unknown): TurnTokens {
  const u = asRecord(usage);
  if (typeof u.inputTokens === "object" || typeof u.outputTokens === "object") {
    const i = asRecord(u.inputTokens), o = asRecord(u.outputTokens);
    return { input: num(i.total), output: num(o.total), cache_write: num(i.cacheWrite), cache_read: num(i.cacheRead) };
  }
  const write = num(u.cache_creation_input_tokens), read = num(u.cache_read_input_tokens);
  // Anthropic counts input_tokens apart from the cached ones; noema's input holds them all (see addUsage).
  return {
    input: num(u.input_tokens) + write + read,
    output: num(u.output_tokens),
    cache_write: write,
    cache_read: read,
  };
}

/** The prices summary.json recorded per model (what its cost used). */
function recordedPrices(dir: string): Record<string, ModelPrice> {
  try {
    const models = asRecord(
      asRecord(
        asRecord(readJsonFile(join(dir, "summary.json"), join(dir, "summary.json"), { noFollow: true }).metrics).cost,
      )
        .models,
    );
    const out: Record<string, ModelPrice> = {};
    for (const [m, c] of Object.entries(models)) {
      const p = asRecord(c).prices;
      if (p && typeof p === "object") out[m] = p as ModelPrice;
    }
    return out;
  } catch {
    return {};
  }
}

function priced(model: string, t: TurnTokens, calls: number, prices: Record<string, ModelPrice>): number | null {
  return estimateCost({ [model]: { ...t, model_calls: calls } }, prices).usd;
}

function add(to: TurnTokens, t: TurnTokens): void {
  to.input += t.input;
  to.output += t.output;
  to.cache_write += t.cache_write;
  to.cache_read += t.cache_read;
}

/**
 * The model turns of the episode in `dir` (none without `model.jsonl`).
 *
 * @example
 * ```ts
 * import { readModelTurns } from "./model_turns.ts";
 * readModelTurns(".noema/episodes/ep_1").total.usd;
 * ```
 */
export function readModelTurns(dir: string): ModelTurns {
  const prices = recordedPrices(dir);
  const turns: ModelTurnRow[] = [];
  const per = new Map<string, TurnTokens & { calls: number }>();
  let total_turns = 0;
  try {
    for (const e of readJsonl(join(dir, "model.jsonl"), { noFollow: true })) {
      if (e.problem !== undefined) continue;
      const v = e.value, model = typeof v.model === "string" ? v.model : "?";
      const t = tokensOf(asRecord(v.response).usage);
      const m = per.get(model) ?? { input: 0, output: 0, cache_write: 0, cache_read: 0, calls: 0 };
      add(m, t);
      m.calls++;
      per.set(model, m);
      if (total_turns++ >= TURNS_SHOWN) continue;
      const err = asRecord(v.error);
      turns.push({
        turn: typeof v.turn === "number" ? v.turn : total_turns,
        model,
        started_at: typeof v.started_at === "string" ? v.started_at : null,
        duration_ms: typeof v.duration_ms === "number" ? v.duration_ms : null,
        ...t,
        usd: priced(model, t, 1, prices),
        error: v.error ? `${String(err.type ?? "error")}: ${String(err.message ?? "")}` : null,
      });
    }
  } catch { /* no model.jsonl */ }
  const by_model = [...per].map(([model, m]) => ({ model, ...m, usd: priced(model, m, m.calls, prices) }));
  const total = { input: 0, output: 0, cache_write: 0, cache_read: 0, calls: 0, usd: 0 as number | null };
  for (const m of by_model) {
    add(total, m);
    total.calls += m.calls;
    total.usd = total.usd === null || m.usd === null ? null : total.usd + m.usd;
  }
  if (total.usd !== null) total.usd = Math.round(total.usd * 1e10) / 1e10;
  return { turns, total_turns, by_model, total };
}
