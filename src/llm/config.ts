/**
 * The `llm` adapter's configuration (task file or `noema.jsonc` `adapter`
 * object), its valibot schema, and the CLI shortcuts `--model PROVIDER:MODEL`
 * and `--base-url URL`.
 *
 * | field | default |
 * |---|---|
 * | `provider` | `openai-compatible` (`openai`, `anthropic`) |
 * | `base_url` | openai-compatible: required; openai/anthropic: the vendor's |
 * | `model` | required |
 * | `api_key_env` | `OPENAI_API_KEY` (openai), `ANTHROPIC_API_KEY` (anthropic), none |
 * | `max_turns` | 20 model calls |
 * | `max_tokens`, `temperature` | the server's |
 * | `system` | a short built-in instruction |
 * | `tools` | every built-in tool |
 * | `mcp_servers` | none |
 * | `stream` | false |
 * | `timeout_ms` | 120000 per model call |
 * | `max_retries` | 2 (429 and 5xx, exponential backoff, honouring retry-after) |
 *
 * @module
 */
import * as v from "valibot";
import { EXIT, NoemaError } from "../errors.ts";
import { isUnknownKeyIssue, knownKeysAt } from "../schema/unknown_key.ts";
import { unknownKeyMessage } from "../runtime/jsonc.ts";
import { MAX_TIMER_MS } from "../store/limits.ts";

const TIMER_MAX_MESSAGE = `must be at most ${MAX_TIMER_MS} (the longest a timer waits)`;

const McpServer = v.union([
  v.strictObject({
    command: v.pipe(v.string(), v.minLength(1)),
    args: v.optional(v.array(v.string())),
    env: v.optional(v.record(v.string(), v.string())),
  }),
  v.strictObject({
    url: v.pipe(v.string(), v.url()),
    headers: v.optional(v.record(v.string(), v.string())),
  }),
]);

/** The schema of the `adapter` object of `using: "llm"`. */
export const LlmConfigSchema = v.strictObject({
  provider: v.optional(v.picklist(["openai-compatible", "openai", "anthropic"]), "openai-compatible"),
  base_url: v.optional(v.pipe(v.string(), v.url("must be a URL like http://127.0.0.1:11434/v1"))),
  model: v.pipe(v.string("is required (e.g. --model ollama:qwen2.5-coder)"), v.minLength(1)),
  api_key_env: v.optional(
    v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be an environment variable name")),
  ),
  max_turns: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 20),
  max_tokens: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  temperature: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(2))),
  system: v.optional(v.string()),
  tools: v.optional(v.array(v.string())),
  mcp_servers: v.optional(v.record(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,32}$/)), McpServer)),
  stream: v.optional(v.boolean(), false),
  timeout_ms: v.optional(
    v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_TIMER_MS, TIMER_MAX_MESSAGE)),
    120_000,
  ),
  max_retries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10)), 2),
  shell: v.optional(v.strictObject({
    timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(MAX_TIMER_MS, TIMER_MAX_MESSAGE))),
    env_allow: v.optional(v.array(v.string())),
    output_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  })),
  /** Set by the runtime: the directory relative paths (tool files) resolve against. */
  base_dir: v.optional(v.string()),
  /** Policy files that govern each tool call (set by `noema run` from `--policy` and the task file). */
  policies: v.optional(v.array(v.string())),
  /** Replay this recorded `model.jsonl` instead of calling the model (set by `noema run --replay`). */
  replay: v.optional(v.string()),
  /** With `replay`: execute no tool, give each call its recorded result (set by `noema run --replay … --dry-run`). */
  replay_dry_run: v.optional(v.boolean()),
  /** Continue the conversation a failed run saved in this `llm/conversation.json` (set by `noema run --continue`). */
  continue_from: v.optional(v.string()),
});

/** The parsed `llm` adapter configuration. */
export type LlmConfig = v.InferOutput<typeof LlmConfigSchema>;

/** The local Ollama server's OpenAI-compatible address. */
export const OLLAMA_BASE_URL = "http://127.0.0.1:11434/v1";

/**
 * Parses and checks the adapter configuration. A problem is a usage error
 * naming the field, e.g. `adapter.max_turns: Invalid value: Expected >=1 but received 0`.
 *
 * @example
 * ```ts
 * import { parseLlmConfig } from "noema";
 * parseLlmConfig({ provider: "openai-compatible", base_url: "http://127.0.0.1:11434/v1", model: "qwen2.5-coder" }).max_turns; // 20
 * ```
 */
export function parseLlmConfig(raw: unknown, source = "adapter"): LlmConfig {
  const r = v.safeParse(LlmConfigSchema, raw);
  if (!r.success) {
    const issue = r.issues[0];
    const path = issue.path?.map((p) => String(p.key)).join(".") ?? "";
    // A required field that is absent: valibot reports it on its object ("Invalid key: Expected …").
    const missing = issue.input === undefined && /object/.test(issue.type) && path !== "";
    const message = isUnknownKeyIssue(issue)
      ? unknownKeyMessage(path.split(".").at(-1) ?? "", knownKeysAt(LlmConfigSchema, issue))
      : !missing
      ? issue.message
      : path === "model"
      ? "is required (e.g. --model ollama:qwen2.5-coder)"
      : "is required";
    throw new NoemaError("usage", `${source}${path ? `.${path}` : ""}: ${message}`, {
      exitCode: EXIT.USAGE,
    });
  }
  const c = r.output;
  if (c.provider === "openai-compatible" && c.base_url === undefined) {
    throw new NoemaError(
      "usage",
      `${source}.base_url: is required for provider openai-compatible (e.g. ${OLLAMA_BASE_URL}, or --model ollama:MODEL)`,
      { exitCode: EXIT.USAGE },
    );
  }
  return c;
}

/**
 * Expands `--model PROVIDER:MODEL` (and `--base-url`) into adapter fields.
 * `ollama:` is openai-compatible at {@link OLLAMA_BASE_URL}; a bare model
 * name keeps the configured provider.
 *
 * @example
 * ```ts
 * import { modelFlag } from "noema";
 * modelFlag("ollama:qwen2.5-coder"); // { provider: "openai-compatible", base_url: "http://127.0.0.1:11434/v1", model: "qwen2.5-coder" }
 * ```
 */
export function modelFlag(model: string | undefined, baseUrl?: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (model !== undefined) {
    const m = /^(ollama|openai-compatible|openai|anthropic):(.+)$/.exec(model);
    if (!m) out.model = model;
    else if (m[1] === "ollama") {
      Object.assign(out, { provider: "openai-compatible", base_url: OLLAMA_BASE_URL, model: m[2] });
    } else Object.assign(out, { provider: m[1], model: m[2] });
  }
  if (baseUrl !== undefined) out.base_url = baseUrl;
  return out;
}
