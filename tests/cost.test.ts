// The cost estimate: the built-in price table, the user's prices from noema.jsonc, unknown models, and the
// token and cost metrics built from per-model usage (one function for every agent).
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { DEFAULT_PRICES, estimateCost, priceOf } from "../src/runtime/cost/prices.ts";
import { addUsage, usageMetrics } from "../src/runtime/cost/metrics.ts";
import { resolveRunSettings } from "../src/runtime/load_settings.ts";
import { CostMetrics, TokenMetrics } from "../src/schema/summary.ts";
import { NoemaError } from "../src/errors.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-cost-");
after(() => tmp.cleanup());

describe("priceOf", () => {
  test("a model id matches its entry, with a date, -latest, a version or @ after it; the longest entry wins", () => {
    assert.equal(priceOf("claude-sonnet-4-5")?.prices.output, 15);
    assert.equal(priceOf("claude-sonnet-4-5-20250929")?.prices.output, 15);
    assert.equal(priceOf("claude-sonnet-5-5")?.prices.cacheRead, 0.1, "not claude-sonnet-5's");
    assert.equal(priceOf("claude-sonnet-5")?.prices.cacheRead, 0.2);
    assert.equal(priceOf("claude-opus-4-20250514")?.prices.input, 15);
    assert.equal(priceOf("us.anthropic.claude-haiku-4-5-20251001-v1:0")?.prices.input, 1);
    assert.equal(priceOf("claude-opus-4-5@20251101")?.prices.input, 5);
    assert.equal(priceOf("claude-opus-5-5")?.source, "default");
  });

  test("no guess: an unknown model, or an unknown version of a known family, has no price", () => {
    assert.equal(priceOf("claude-sonnet-4-9"), null);
    assert.equal(priceOf("gpt-oss-20b"), null);
    assert.equal(priceOf("claude-opus-5-55"), null);
  });

  test("the user's prices win over the built-in ones, and add models", () => {
    const user = { "claude-opus-5-5": { input: 1, output: 2 }, "qwen3-coder": { input: 0, output: 0 } };
    assert.deepEqual(priceOf("claude-opus-5-5-20270101", user), {
      prices: user["claude-opus-5-5"],
      source: "noema.jsonc",
    });
    assert.equal(priceOf("qwen3-coder", user)?.prices.output, 0);
    assert.equal(priceOf("claude-haiku-4-5", user)?.source, "default");
  });
});

describe("estimateCost and usageMetrics", () => {
  test("cached input is priced at the cache rates; a missing cache rate is the input rate", () => {
    const u = {
      input: 1_000_000 + 2_000_000 + 4_000_000,
      output: 100_000,
      cache_write: 2_000_000,
      cache_read: 4_000_000,
    };
    const cost = estimateCost({ "claude-sonnet-4-5": { ...u, model_calls: 3 } });
    assert.equal(cost.usd, 3 + 1.5 + 2 * 3.75 + 4 * 0.3);
    assert.equal(cost.reason, null);
    const own = estimateCost({ m: { ...u, model_calls: 3 } }, { m: { input: 1, output: 10 } });
    assert.equal(own.usd, 7 + 1);
    assert.equal(own.models.m.source, "noema.jsonc");
  });

  test("a model without a price makes the cost null, with a reason naming it", () => {
    const byModel = {};
    addUsage(byModel, "claude-opus-5-5", { input: 20, output: 10, cache_write: 0, cache_read: 0 });
    addUsage(byModel, "mystery-1", { input: 5, output: 5, cache_write: 0, cache_read: 0 });
    const { tokens, cost } = usageMetrics(byModel);
    assert.equal(cost.usd, null);
    assert.match(cost.reason!, /no price for "mystery-1": add it to "prices" in noema\.jsonc/);
    assert.equal(cost.models["claude-opus-5-5"].usd, 0.00028);
    assert.deepEqual([tokens.input, tokens.output, tokens.total, tokens.model_calls], [25, 15, 40, 2]);
    assert.ok(v.is(TokenMetrics, tokens) && v.is(CostMetrics, cost), "the summary schema accepts them");
  });

  test("no model call: zero tokens, cost 0", () => {
    const { tokens, cost } = usageMetrics({});
    assert.deepEqual([tokens.total, cost.usd], [0, 0]);
  });

  test("every built-in price is complete", () => {
    for (const [model, p] of Object.entries(DEFAULT_PRICES)) {
      assert.ok(p.input > 0 && p.output > 0 && p.cacheWrite !== undefined && p.cacheRead !== undefined, model);
    }
  });
});

describe("noema.jsonc prices", () => {
  const project = (config: unknown) => {
    const dir = join(tmp.path, `p${Math.random().toString(36).slice(2)}`);
    mkdirSync(dir);
    writeFileSync(join(dir, "noema.jsonc"), JSON.stringify(config));
    return dir;
  };

  test("are run options", () => {
    const prices = { "claude-opus-5-5": { input: 1, output: 2, cacheWrite: 3, cacheRead: 0.5 } };
    assert.deepEqual(resolveRunSettings({ taskOrFile: "t", cwd: project({ prices }) }).options.prices, prices);
  });

  test("a bad entry is a located error at load", () => {
    for (
      const [prices, where] of [
        [{ m: { input: -1, output: 2 } }, /prices\.m\.input/],
        [{ m: { input: 1 } }, /prices\.m\.output/],
        [{ m: { input: 1, output: 1, cache_read: 1 } }, /prices\.m/],
        [[1], /prices/],
      ] as const
    ) {
      assert.throws(() => resolveRunSettings({ taskOrFile: "t", cwd: project({ prices }) }), (e: unknown) => {
        assert.ok(e instanceof NoemaError);
        assert.match(`${e.message} ${JSON.stringify(e)}`, where);
        assert.match(`${e.message} ${JSON.stringify(e)}`, /noema\.jsonc/);
        return true;
      });
    }
  });
});
