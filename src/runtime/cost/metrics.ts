/**
 * The token and cost metrics of a run (`summary.json` `metrics.tokens` and
 * `metrics.cost`) from its model turns' usage, summed per model: one
 * function for every agent that records model turns (the llm agent, Claude
 * Code's transcript).
 *
 * @module
 */
import type { ModelUsage, TokenMetrics } from "../../schema/summary.ts";
import { type CostEstimate, estimateCost, type PriceTable } from "./prices.ts";

/**
 * Adds one model call's tokens to `byModel` (in place).
 *
 * @example
 * ```ts
 * import { addUsage } from "./metrics.ts";
 * const byModel = {};
 * addUsage(byModel, "claude-opus-5-5", { input: 30, output: 5, cache_write: 0, cache_read: 20 });
 * ```
 */
export function addUsage(
  byModel: Record<string, ModelUsage>,
  model: string,
  u: { input: number; output: number; cache_write: number; cache_read: number },
  calls = 1,
): void {
  const m = byModel[model] ??= { input: 0, output: 0, cache_write: 0, cache_read: 0, model_calls: 0 };
  m.input += u.input;
  m.output += u.output;
  m.cache_write += u.cache_write;
  m.cache_read += u.cache_read;
  m.model_calls += calls;
}

/**
 * `metrics.tokens` and `metrics.cost` from the tokens used per model.
 *
 * @example
 * ```ts
 * import { usageMetrics } from "./metrics.ts";
 * usageMetrics({ "claude-opus-5-5": { input: 20, output: 10, cache_write: 0, cache_read: 0, model_calls: 2 } }).tokens.total; // 30
 * ```
 */
export function usageMetrics(
  byModel: Readonly<Record<string, ModelUsage>>,
  prices: PriceTable = {},
): { tokens: TokenMetrics; cost: CostEstimate } {
  type Key = "input" | "output" | "cache_write" | "cache_read" | "model_calls";
  const sum = (k: Key) => Object.values(byModel).reduce((n, m) => n + m[k], 0);
  const input = sum("input"), output = sum("output");
  const tokens: TokenMetrics = {
    input,
    output,
    total: input + output,
    model_calls: sum("model_calls"),
    cache_write: sum("cache_write"),
    cache_read: sum("cache_read"),
    models: structuredClone(byModel) as Record<string, ModelUsage>,
  };
  return { tokens, cost: estimateCost(byModel, prices) };
}
