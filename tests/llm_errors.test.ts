/**
 * Model-server failures end the agent with a clear, classified error, never
 * a hang: unreachable, 401/403, 429 (bounded retry honouring retry-after),
 * 5xx, timeout, context overflow. And the govern() example runs.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { Redactor } from "../src/runtime/redact.ts";
import { parseLlmConfig } from "../src/llm/config.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { runLlmAgent } from "../src/llm/agent.ts";
import { classifyModelError } from "../src/llm/model_errors.ts";
import { type ScriptedReply, startOpenAiServer } from "./helpers/openai_server.ts";
import { REPO, runtimeCommand } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-llm-err-");
after(() => tmp.cleanup());
let n = 0;

async function agentAt(url: string, extra: Record<string, unknown> = {}) {
  const dir = join(tmp.path, `c${++n}`);
  mkdirSync(join(dir, "ws"), { recursive: true });
  return await runLlmAgent({
    task: "t",
    config: parseLlmConfig({ base_url: url, model: "m", max_retries: 1, ...extra }),
    governor: await PolicyGovernor.create(),
    workspace: join(dir, "ws"),
    episodeDir: dir,
    redactor: new Redactor(),
  });
}

async function withServer(script: ScriptedReply[], extra: Record<string, unknown> = {}) {
  const server = await startOpenAiServer(script);
  try {
    return { r: await agentAt(server.url, extra), requests: server.requests.length };
  } finally {
    await server.close();
  }
}

describe("llm errors", () => {
  it("an unreachable server is LlmUnreachable", async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const r = await agentAt(`http://127.0.0.1:${port}/v1`, { max_retries: 0 });
    assert.equal(r.status, "error");
    assert.equal(r.error?.type, "LlmUnreachable", String(r.error?.message));
    assert.match(
      r.error!.message,
      new RegExp(`^cannot reach the model server at http://127\\.0\\.0\\.1:${port}/v1; is it running\\? \\(`),
    );
    assert.doesNotMatch(
      r.error!.message,
      /Failed after|AI_APICallError/,
      "the reason once, without the SDK's wrappers",
    );
  });

  for (const status of [401, 403]) {
    it(`HTTP ${status} is LlmAuthError, not retried`, async () => {
      const { r, requests } = await withServer([{ status }, { text: "never" }]);
      assert.equal(r.error?.type, "LlmAuthError");
      assert.match(r.error!.message, new RegExp(`HTTP ${status}`));
      assert.equal(requests, 1);
    });
  }

  it("429 is retried after retry-after, then succeeds", async () => {
    const t0 = performance.now();
    const { r, requests } = await withServer([{ status: 429, headers: { "retry-after": "1" } }, { text: "fine" }]);
    assert.equal(r.status, "done", JSON.stringify(r.error));
    assert.equal(r.text, "fine");
    assert.equal(requests, 2);
    assert.ok(performance.now() - t0 >= 900, "waited for retry-after");
  });

  it("429 past the retries is LlmRateLimited", async () => {
    const { r, requests } = await withServer([
      { status: 429, headers: { "retry-after": "0" } },
      { status: 429, headers: { "retry-after": "0" }, body: { error: { message: "quota: 10 requests a minute" } } },
      { text: "never" },
    ]);
    assert.equal(r.error?.type, "LlmRateLimited");
    assert.match(
      r.error!.message,
      /rate limiting \(HTTP 429\).*: .*quota: 10 requests a minute/,
      "the server's reason",
    );
    assert.equal(requests, 2);
  });

  it("5xx is LlmServerError after the retries", async () => {
    const { r, requests } = await withServer([{ status: 503 }, { status: 503 }, { text: "never" }], {
      max_retries: 1,
    });
    assert.equal(r.error?.type, "LlmServerError");
    assert.match(r.error!.message, /HTTP 503/);
    assert.equal(requests, 2);
  });

  it("a hanging server is LlmTimeout", async () => {
    const { r } = await withServer([{ hang: true }], { timeout_ms: 300, max_retries: 0 });
    assert.equal(r.error?.type, "LlmTimeout", String(r.error?.message));
  });

  it("context overflow is LlmContextOverflow", async () => {
    const { r } = await withServer([{
      status: 400,
      body: {
        error: {
          message: "This model's maximum context length is 8192 tokens",
          type: "invalid_request_error",
          code: "context_length_exceeded",
        },
      },
    }]);
    assert.equal(r.error?.type, "LlmContextOverflow");
  });

  it("an unreachable server after retries: the attempts and the reason once", () => {
    const last = Object.assign(new Error("Cannot connect to API: ECONNREFUSED"), { name: "AI_APICallError" });
    const retry = Object.assign(
      new Error("Failed after 3 attempts. Last error: Cannot connect to API: ECONNREFUSED"),
      { name: "AI_RetryError", errors: [last, last, last], lastError: last },
    );
    assert.deepEqual(classifyModelError(retry, "http://127.0.0.1:11434/v1"), {
      type: "LlmUnreachable",
      message:
        "cannot reach the model server at http://127.0.0.1:11434/v1 (after 3 attempts); is it running? (Cannot connect to API: ECONNREFUSED)",
    });
  });

  it("a failure played back by a replay is classified as the original and says it is the recorded one", () => {
    const e = Object.assign(new Error("Unauthorized"), { name: "AI_APICallError", statusCode: 401, replayed: true });
    const f = classifyModelError(e, "http://127.0.0.1:11434/v1");
    assert.equal(f.type, "LlmAuthError");
    assert.match(
      f.message,
      /^the recorded model call failed: the model server at http:\/\/127\.0\.0\.1:11434\/v1 refused/,
    );
  });

  it("bad configuration names the field", () => {
    assert.throws(() => parseLlmConfig({ base_url: "http://x/v1", model: "m", max_turns: 0 }), /adapter\.max_turns/);
    assert.throws(() => parseLlmConfig({ model: "m" }), /adapter\.base_url: is required/);
    assert.throws(
      () => parseLlmConfig({ base_url: "http://x/v1", model: "m", bogus: 1 }),
      /^NoemaError: adapter\.bogus: unknown key; known keys: provider, base_url, model/,
    );
    assert.throws(
      () => parseLlmConfig({ base_url: "http://x/v1", model: "m", max_turn: 3 }),
      { message: 'adapter.max_turn: unknown key (did you mean "max_turns"?)' },
    );
  });
});

describe("govern() example", () => {
  it("runs: the veto reaches the model, the intervention rewrites what runs, the loop continues", () => {
    const cmd = [...runtimeCommand(), "examples/govern-ai-sdk.ts"];
    const r = spawnSync(cmd[0], cmd.slice(1), { cwd: REPO, encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /rm -rf \/"\}\s+→ deny \(rm -rf is not allowed\)/);
    assert.match(r.stdout, /echo cleaned"\}\s+→ patch/);
    // The intervention rewrote what the tool executed; the vetoed call never ran.
    assert.match(r.stdout, /^executed: echo cleaned --dry-run$/m);
    assert.match(r.stdout, /answer: Cleaned up/);
  });
});
