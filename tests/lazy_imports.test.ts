/**
 * Importing "noema" does not load the AI SDK, the providers, the MCP client,
 * OpenTelemetry, PostgreSQL's client or Hono: they are imported where they are
 * first used (a policy file importing "noema" in its worker, and every test or
 * script that imports it, would otherwise pay ~0.15 s of CPU for them). And
 * the provider's model made before its package is loaded is the provider's own.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { generateText } from "ai";
import { createLlmModel, parseLlmConfig } from "noema";
import { importEdges, REPO, specifiers } from "./helpers/import_graph.ts";
import { startOpenAiServer } from "./helpers/openai_server.ts";

/** Loaded on first use only (see the module doc). */
const HEAVY = [
  /^ai$/,
  /^@ai-sdk\/(openai|anthropic|openai-compatible)$/,
  /^@modelcontextprotocol\//,
  /^@opentelemetry\//,
  /^postgres$/,
  /^hono(\/|$)/,
];

/** Every package the imports loaded with `entry` reach (static, not type-only), each with the chain that reaches it. */
function packagesReached(entry: string): Map<string, string[]> {
  const bySource = Map.groupBy(importEdges().filter((e) => e.kind === "static" && !e.typeOnly), (e) => e.from);
  const seen = new Set<string>();
  const reached = new Map<string, string[]>();
  const walk = (file: string, chain: string[]) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const e of bySource.get(file) ?? []) {
      if (e.to !== null) walk(e.to, [...chain, file]);
      else if (!e.spec.startsWith("node:") && !reached.has(e.spec)) reached.set(e.spec, [...chain, file]);
    }
  };
  walk(entry, []);
  return reached;
}

describe("importing noema", () => {
  it("reaches none of the packages loaded on first use", () => {
    // mod.ts is the public API's one re-export.
    assert.deepEqual(specifiers(readFileSync(join(REPO, "mod.ts"), "utf8")).map((x) => x.spec), [
      "./src/public_api.ts",
    ]);
    const reached = packagesReached("src/public_api.ts");
    assert.ok(reached.has("valibot"), "the walk follows the public API (valibot is reached)");
    const heavy = [...reached].filter(([spec]) => HEAVY.some((re) => re.test(spec)));
    assert.deepEqual(heavy.map(([spec, chain]) => `${spec} <- ${chain.toReversed().join(" <- ")}`), []);
  });

  it("reads type-only imports as such", () => {
    const text = 'import type { A } from "a";\nimport { type B, type C } from "b";\nimport { type D, e } from "d";\n' +
      'export { f } from "./f.ts";\nexport type { G } from "./g.ts";\nimport "./side.ts";\n/** import { x } from "doc"; */';
    assert.deepEqual(specifiers(text).map((x) => `${x.spec}${x.typeOnly ? " (types)" : ""}`), [
      "a (types)",
      "b (types)",
      "d",
      "./f.ts",
      "./g.ts (types)",
      "./side.ts",
    ]);
  });
});

describe("createLlmModel", () => {
  it("names the model as the provider's package does, before loading it", async () => {
    const [{ createOpenAI }, { createAnthropic }, { createOpenAICompatible }] = await Promise.all([
      import("@ai-sdk/openai"),
      import("@ai-sdk/anthropic"),
      import("@ai-sdk/openai-compatible"),
    ]);
    const env = { OPENAI_API_KEY: "k", ANTHROPIC_API_KEY: "k" };
    const made = (provider: string) =>
      createLlmModel(parseLlmConfig({ provider, model: "m", base_url: "http://127.0.0.1:9/v1" }), env) as {
        provider: string;
        modelId: string;
        specificationVersion: string;
      };
    const real = [
      createOpenAI({ apiKey: "k" }).chat("m"),
      createAnthropic({ apiKey: "k" })("m"),
      createOpenAICompatible({ name: "openai-compatible", baseURL: "http://127.0.0.1:9/v1" }).chatModel("m"),
    ];
    for (const [i, provider] of ["openai", "anthropic", "openai-compatible"].entries()) {
      const m = made(provider);
      assert.deepEqual(
        [m.provider, m.modelId, m.specificationVersion],
        [real[i].provider, real[i].modelId, real[i].specificationVersion],
      );
    }
  });

  it("openai: the first call loads the provider and speaks Chat Completions with the key", async () => {
    const server = await startOpenAiServer([{ text: "hello from the scripted server" }]);
    try {
      const config = parseLlmConfig({ provider: "openai", model: "gpt-test", base_url: server.url });
      const model = createLlmModel(config, { OPENAI_API_KEY: "sk-test-lazy" });
      const r = await generateText({ model, prompt: "hi", maxRetries: 0 });
      assert.equal(r.text, "hello from the scripted server");
      assert.equal(server.requests.length, 1);
      assert.equal(server.requests[0].model, "gpt-test");
      assert.ok(Array.isArray(server.requests[0].messages));
      assert.equal(server.headers[0].authorization, "Bearer sk-test-lazy");
    } finally {
      await server.close();
    }
  });
});
