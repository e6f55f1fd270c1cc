/**
 * Model prices and the cost estimate of an episode's model turns: a built-in
 * table of Claude models (US dollars per million tokens, the standard rates
 * Claude Code 2.1.330 itself uses), which the `prices` of `noema.jsonc`
 * override or extend per model. A model found in neither has no price: its
 * cost is `null` with a reason, never a guess.
 *
 * A model id matches a table entry when it is the entry, or the entry
 * followed by a date (`claude-sonnet-4-5-20250929`), `-latest`, a version
 * (`-v1:0`) or `@…`; a provider prefix before `claude-`
 * (`us.anthropic.claude-…`) is ignored by the built-in table. The longest
 * matching entry wins; `claude-sonnet-4-9`, unknown, matches nothing.
 *
 * The estimate uses standard rates: no batch discount, no long-prompt tier,
 * every cache write at the 5-minute rate.
 *
 * @module
 */
import * as v from "valibot";
import { type CostMetrics, type ModelCost, ModelPrice, type ModelUsage } from "../../schema/summary.ts";

export { ModelPrice };
export type { ModelUsage };

/**
 * A price table: model id → prices (`noema.jsonc` `prices`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { PriceTable } from "./prices.ts";
 * v.parse(PriceTable, { "my-model": { input: 1, output: 2 } });
 * ```
 */
export const PriceTable = v.pipe(
  v.custom<unknown>((x) => typeof x === "object" && x !== null && !Array.isArray(x), "must be an object of models"),
  v.record(v.pipe(v.string(), v.minLength(1, "a model id must not be empty")), ModelPrice),
);
/** A price table. */
export type PriceTable = v.InferOutput<typeof PriceTable>;

const tier = (input: number, output: number, cacheWrite: number, cacheRead: number): ModelPrice => ({
  input,
  output,
  cacheWrite,
  cacheRead,
});

/**
 * Claude Code 2.1.330's model catalog, standard rates (USD per million
 * tokens), as its own cost reckoning uses them.
 *
 * @example
 * ```ts
 * import { DEFAULT_PRICES } from "./prices.ts";
 * DEFAULT_PRICES["claude-sonnet-4-5"].input; // 3
 * ```
 */
export const DEFAULT_PRICES: Readonly<Record<string, ModelPrice>> = Object.freeze({
  "claude-3-5-haiku": tier(0.8, 4, 1, 0.08),
  "claude-haiku-4-5": tier(1, 5, 1.25, 0.1),
  "claude-haiku-5-5": tier(0.1, 0.5, 0.125, 0.01),
  "claude-3-5-sonnet": tier(3, 15, 3.75, 0.3),
  "claude-3-7-sonnet": tier(3, 15, 3.75, 0.3),
  "claude-sonnet-4-0": tier(3, 15, 3.75, 0.3),
  "claude-sonnet-4": tier(3, 15, 3.75, 0.3),
  "claude-sonnet-4-5": tier(3, 15, 3.75, 0.3),
  "claude-sonnet-4-6": tier(3, 15, 3.75, 0.3),
  "claude-sonnet-5": tier(2, 10, 2.5, 0.2),
  "claude-sonnet-5-5": tier(2, 10, 2.5, 0.1),
  "claude-opus-4-0": tier(15, 75, 18.75, 1.5),
  "claude-opus-4": tier(15, 75, 18.75, 1.5),
  "claude-opus-4-1": tier(15, 75, 18.75, 1.5),
  "claude-opus-4-5": tier(5, 25, 6.25, 0.5),
  "claude-opus-4-6": tier(5, 25, 6.25, 0.5),
  "claude-opus-4-7": tier(5, 25, 6.25, 0.5),
  "claude-opus-4-8": tier(5, 25, 6.25, 0.5),
  "claude-opus-5": tier(5, 25, 6.25, 0.5),
  "claude-opus-5-5": tier(4, 20, 5, 0.2),
});

/** The cost estimate recorded in `summary.json` `metrics.cost`, with its per-model entries typed. */
export type CostEstimate = CostMetrics & { models: Record<string, ModelCost> };

/** After an entry: nothing, a date (`-20250929`), `-latest`, a version (`-v1:0`) or `@…`. */
const SUFFIX = /^(?:$|@|-\d{8}(?:\D|$)|-latest$|-v\d)/;

function matches(model: string, entry: string): boolean {
  return model.startsWith(entry) && SUFFIX.test(model.slice(entry.length));
}

function longest(model: string, table: Readonly<Record<string, ModelPrice>>): string | null {
  let best: string | null = null;
  for (const entry of Object.keys(table)) {
    if (matches(model, entry) && (best === null || entry.length > best.length)) best = entry;
  }
  return best;
}

/**
 * The prices of `model`: the user's table first (exact, then the longest
 * matching entry), then the built-in one; null when neither has it.
 *
 * @example
 * ```ts
 * import { priceOf } from "./prices.ts";
 * priceOf("claude-sonnet-4-5-20250929")?.prices.output; // 15
 * priceOf("gpt-oss-20b"); // null
 * ```
 */
export function priceOf(
  model: string,
  user: PriceTable = {},
): { prices: ModelPrice; source: "default" | "noema.jsonc" } | null {
  const own = Object.hasOwn(user, model) ? model : longest(model, user);
  if (own !== null) return { prices: user[own], source: "noema.jsonc" };
  const at = model.indexOf("claude-");
  const id = at > 0 ? model.slice(at) : model;
  const found = longest(id, DEFAULT_PRICES);
  return found === null ? null : { prices: DEFAULT_PRICES[found], source: "default" };
}

/** Dollars to 10 decimal places: float noise gone, no cost of a few tokens lost. */
const round = (n: number) => Math.round(n * 1e10) / 1e10;

/**
 * The cost of tokens used per model, from the prices (`user` overrides the
 * built-in table). A model without a price makes the total null, with a
 * reason naming it; no token used means a cost of 0.
 *
 * @example
 * ```ts
 * import { estimateCost } from "./prices.ts";
 * estimateCost({ "claude-opus-5-5": { input: 20, output: 10, cache_write: 0, cache_read: 0, model_calls: 2 } }).usd; // 0.00028
 * ```
 */
export function estimateCost(byModel: Readonly<Record<string, ModelUsage>>, user: PriceTable = {}): CostEstimate {
  const models: CostEstimate["models"] = {};
  const unpriced: string[] = [];
  let total = 0;
  for (const [model, u] of Object.entries(byModel)) {
    const found = priceOf(model, user);
    if (found === null) {
      unpriced.push(model);
      models[model] = { usd: null, prices: null, source: null };
      continue;
    }
    const p = found.prices;
    const uncached = Math.max(0, u.input - u.cache_write - u.cache_read);
    const usd = (uncached * p.input + u.output * p.output + u.cache_write * (p.cacheWrite ?? p.input) +
      u.cache_read * (p.cacheRead ?? p.input)) / 1e6;
    models[model] = { usd: round(usd), prices: p, source: found.source };
    total += usd;
  }
  if (unpriced.length > 0) {
    const names = unpriced.map((m) => JSON.stringify(m)).join(", ");
    return {
      usd: null,
      reason: `no price for ${names}: add it to "prices" in noema.jsonc (USD per million tokens)`,
      models,
    };
  }
  return { usd: round(total), reason: null, models };
}
