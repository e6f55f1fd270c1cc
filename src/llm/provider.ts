/**
 * The language model for an `llm` configuration: `@ai-sdk/openai-compatible`
 * (Ollama, llama.cpp, vLLM, LM Studio), `@ai-sdk/openai` through Chat
 * Completions (`.chat()`), or `@ai-sdk/anthropic`. The API key is read from
 * the environment variable `api_key_env` names, at call time only; it never
 * enters the configuration that is recorded.
 *
 * @module
 */
import process from "node:process";
import type { LanguageModel } from "ai";
import { EXIT, NoemaError } from "../errors.ts";
import type { LlmConfig } from "./config.ts";

/** The environment variable holding the API key of a configuration, or null. */
export function apiKeyEnv(config: LlmConfig): string | null {
  return config.api_key_env ??
    (config.provider === "openai" ? "OPENAI_API_KEY" : config.provider === "anthropic" ? "ANTHROPIC_API_KEY" : null);
}

/**
 * The API key of a configuration, from `env`; throws a usage error naming
 * the variable when the provider needs one (openai, anthropic) and it is not
 * set. `noema run` checks it before the episode is created.
 *
 * @example
 * ```ts
 * import { parseLlmConfig, requireApiKey } from "noema";
 * requireApiKey(parseLlmConfig({ provider: "openai", model: "gpt-4o" }), { OPENAI_API_KEY: "sk-…" }); // "sk-…"
 * ```
 */
export function requireApiKey(
  config: LlmConfig,
  env: Record<string, string | undefined> = process.env,
): string | undefined {
  const keyName = apiKeyEnv(config);
  const apiKey = keyName ? env[keyName] : undefined;
  if (keyName && config.provider !== "openai-compatible" && !apiKey) {
    throw new NoemaError(
      "usage",
      `adapter.api_key_env: ${keyName} is not set (the ${config.provider} provider needs an API key)`,
      { exitCode: EXIT.USAGE },
    );
  }
  return apiKey;
}

/** What noema calls on a provider's model (the AI SDK's language model specification, v4). */
interface ProviderModel {
  readonly supportedUrls: unknown;
  doGenerate(options: unknown): PromiseLike<unknown>;
  doStream(options: unknown): PromiseLike<unknown>;
}

/**
 * The provider's model under the names the AI SDK reads before any call
 * (`provider`, `modelId`), made on its first call: the provider package is
 * imported then, not whenever "noema" is (the three cost ~30 ms of CPU to load).
 */
function onFirstCall(provider: string, modelId: string, make: () => Promise<ProviderModel>): LanguageModel {
  let made: Promise<ProviderModel> | undefined;
  const model = () => made ??= make();
  return {
    specificationVersion: "v4",
    provider,
    modelId,
    get supportedUrls() {
      return model().then((m) => m.supportedUrls);
    },
    doGenerate: (options: unknown) => model().then((m) => m.doGenerate(options)),
    doStream: (options: unknown) => model().then((m) => m.doStream(options)),
  } as unknown as LanguageModel;
}

/**
 * Creates the provider's chat model. The API key is checked now; the
 * provider's package is loaded at the model's first call.
 *
 * @example
 * ```ts
 * import { createLlmModel, parseLlmConfig } from "noema";
 * const model = createLlmModel(parseLlmConfig({ base_url: "http://127.0.0.1:11434/v1", model: "qwen2.5-coder" }));
 * ```
 */
export function createLlmModel(
  config: LlmConfig,
  env: Record<string, string | undefined> = process.env,
): LanguageModel {
  const apiKey = requireApiKey(config, env);
  const { base_url: baseURL, model } = config;
  switch (config.provider) {
    case "openai":
      return onFirstCall("openai.chat", model, async () => {
        const { createOpenAI } = await import("@ai-sdk/openai");
        return createOpenAI({ apiKey, baseURL }).chat(model) as ProviderModel;
      });
    case "anthropic":
      return onFirstCall("anthropic.messages", model, async () => {
        const { createAnthropic } = await import("@ai-sdk/anthropic");
        return createAnthropic({ apiKey, baseURL })(model) as ProviderModel;
      });
    default:
      return onFirstCall("openai-compatible.chat", model, async () => {
        const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
        return createOpenAICompatible({ name: "openai-compatible", baseURL: baseURL!, apiKey, includeUsage: true })
          .chatModel(model) as ProviderModel;
      });
  }
}
