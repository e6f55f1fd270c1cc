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
import { createAnthropic } from "@ai-sdk/anthropic";
import { createOpenAI } from "@ai-sdk/openai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
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

/**
 * Creates the provider's chat model.
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
  switch (config.provider) {
    case "openai":
      return createOpenAI({ apiKey, baseURL: config.base_url }).chat(config.model);
    case "anthropic":
      return createAnthropic({ apiKey, baseURL: config.base_url })(config.model);
    default:
      return createOpenAICompatible({
        name: "openai-compatible",
        baseURL: config.base_url!,
        apiKey,
        includeUsage: true,
      }).chatModel(config.model);
  }
}
