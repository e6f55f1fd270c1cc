/**
 * Model-call failures in words: every way a model server can fail becomes
 * one adapter error with a clear type and message (the run then ends with
 * complete terminal artifacts).
 *
 * | type | when |
 * |---|---|
 * | `LlmUnreachable` | the server cannot be reached (connection refused, DNS) |
 * | `LlmAuthError` | HTTP 401 or 403 |
 * | `LlmRateLimited` | HTTP 429 after the bounded retries |
 * | `LlmServerError` | HTTP 5xx after the bounded retries |
 * | `LlmContextOverflow` | the conversation no longer fits the model's context |
 * | `LlmTimeout` | a model call took longer than `timeout_ms` |
 * | `LlmRequestError` | any other HTTP error |
 * | `LlmMaxTurns` | `max_turns` model calls and the model still wants tools |
 * | `ReplayDivergence` | a replay asked something the recording does not have |
 *
 * (An MCP server that cannot be reached ends the run as `McpUnreachable`, from `mcp.ts`.)
 *
 * @module
 */

/** A classified model failure. */
export interface ModelFailure {
  type: string;
  message: string;
}

const OVERFLOW =
  /context (length|window)|maximum context|too many tokens|prompt is too long|exceeds? the (model'?s? )?context|context_length_exceeded/i;

function chainOf(e: unknown): unknown[] {
  const out: unknown[] = [];
  let cur: unknown = e;
  for (let i = 0; i < 6 && cur; i++) {
    out.push(cur);
    const x = cur as { lastError?: unknown; cause?: unknown };
    cur = x.lastError ?? x.cause;
  }
  return out;
}

/**
 * Classifies an error thrown by a model call. A failure a replay plays back
 * from its recording (marked `replayed` by the replay model) is classified
 * as the original was, and says that it is the recorded one.
 *
 * @example
 * ```ts
 * import { classifyModelError } from "noema";
 * classifyModelError(Object.assign(new Error("Unauthorized"), { statusCode: 401, url: "http://x/v1/chat/completions" }), "http://x/v1").type; // "LlmAuthError"
 * ```
 */
export function classifyModelError(e: unknown, baseUrl: string): ModelFailure {
  const f = classify(e, baseUrl);
  if (!(e as { replayed?: unknown } | null)?.replayed) return f;
  return { type: f.type, message: `the recorded model call failed: ${f.message}` };
}

function classify(e: unknown, baseUrl: string): ModelFailure {
  const chain = chainOf(e);
  const first = chain[0] as { name?: string; message?: string };
  if (first?.name === "ReplayDivergence") return { type: "ReplayDivergence", message: String(first.message) };
  if (first?.name === "AbortError") return { type: "Aborted", message: "the run was interrupted" };
  const attempts = (e as { errors?: unknown[] })?.errors?.length;
  const after = attempts && attempts > 1 ? ` (after ${attempts} attempts)` : "";
  for (const x of chain) {
    const err = x as { name?: string; message?: string; statusCode?: number; responseBody?: string; code?: string };
    const body = (err.responseBody ?? "").slice(0, 300);
    const text = `${err.message ?? ""} ${body}`;
    if (typeof err.statusCode === "number") {
      const s = err.statusCode;
      if (s === 401 || s === 403) {
        return {
          type: "LlmAuthError",
          message: `the model server at ${baseUrl} refused the request (HTTP ${s}): check the API key (api_key_env)${
            body ? `: ${body}` : ""
          }`,
        };
      }
      if (OVERFLOW.test(text)) {
        return {
          type: "LlmContextOverflow",
          message: `the conversation no longer fits the model's context (HTTP ${s}): ${body || err.message}`,
        };
      }
      if (s === 429) {
        return {
          type: "LlmRateLimited",
          message: `the model server at ${baseUrl} is rate limiting (HTTP 429)${after}${body ? `: ${body}` : ""}`,
        };
      }
      if (s >= 500) {
        return {
          type: "LlmServerError",
          message: `the model server at ${baseUrl} failed (HTTP ${s})${after}${body ? `: ${body}` : ""}`,
        };
      }
      return {
        type: "LlmRequestError",
        message: `the model server at ${baseUrl} rejected the request (HTTP ${s})${body ? `: ${body}` : ""}`,
      };
    }
    if (err.name === "TimeoutError" || /timed? ?out|timeout/i.test(err.message ?? "")) {
      return {
        type: "LlmTimeout",
        message: `the model call to ${baseUrl} timed out${err.message ? `: ${err.message}` : ""}`,
      };
    }
    if (OVERFLOW.test(text)) {
      return {
        type: "LlmContextOverflow",
        message: `the conversation no longer fits the model's context: ${err.message}`,
      };
    }
    if (
      err.code === "ECONNREFUSED" || err.code === "ConnectionRefused" || err.code === "ENOTFOUND" ||
      /ECONNREFUSED|Unable to connect|Cannot connect|connection refused|fetch failed|error sending request|ConnectionRefused/i
        .test(err.message ?? "")
    ) {
      // The innermost error says why (the retry wrapper's own message repeats it after "Failed after N attempts").
      const why = String((chain.at(-1) as { message?: string })?.message ?? err.message).replace(/^AI_\w+: /, "");
      return {
        type: "LlmUnreachable",
        message: `cannot reach the model server at ${baseUrl}${after}; is it running? (${why})`,
      };
    }
  }
  return { type: first?.name ?? "LlmError", message: `model call failed: ${first?.message ?? String(e)}` };
}
