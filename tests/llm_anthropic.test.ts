/**
 * The anthropic provider against a minimal scripted Anthropic Messages
 * server on 127.0.0.1 (not streamed): tool_use blocks become governed calls,
 * results go back as tool_result blocks in a user message (a veto with
 * is_error), and the key travels only in x-api-key.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Redactor } from "../src/runtime/redact.ts";
import { parseLlmConfig } from "../src/llm/config.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { runLlmAgent } from "../src/llm/agent.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-llm-anthropic-");
after(() => tmp.cleanup());

type Block = Record<string, unknown>;

async function messagesServer(replies: { content: Block[]; stop_reason: string }[]) {
  const requests: { body: Record<string, unknown>; key: string | undefined }[] = [];
  const server = createServer(async (req, res) => {
    let text = "";
    for await (const c of req) text += c;
    const body = JSON.parse(text);
    requests.push({ body, key: req.headers["x-api-key"] as string | undefined });
    const reply = replies[requests.length - 1];
    if (req.url !== "/v1/messages" || !reply) {
      res.writeHead(404, { "content-type": "application/json" }).end(
        JSON.stringify({ type: "error", error: { type: "not_found_error", message: "no" } }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
      id: `msg_${requests.length}`,
      type: "message",
      role: "assistant",
      model: body.model,
      content: reply.content,
      stop_reason: reply.stop_reason,
      stop_sequence: null,
      usage: { input_tokens: 20, output_tokens: 5 },
    }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe("llm agent with the anthropic provider", () => {
  it("runs tool_use turns through the governor and answers", async () => {
    const ws = join(tmp.path, "ws"), ep = join(tmp.path, "ep");
    mkdirSync(ws);
    mkdirSync(ep);
    writeFileSync(join(ws, "notes.md"), "# Notes\nremember the milk\n");
    const server = await messagesServer([
      {
        content: [
          { type: "text", text: "Let me look." },
          { type: "tool_use", id: "toolu_1", name: "read_file", input: { path: "notes.md" } },
          { type: "tool_use", id: "toolu_2", name: "shell", input: { command: "curl http://example.com" } },
        ],
        stop_reason: "tool_use",
      },
      { content: [{ type: "text", text: "The note says: remember the milk." }], stop_reason: "end_turn" },
    ]);
    process.env.NOEMA_TEST_ANTHROPIC_KEY = "sk-ant-test-key-xyz";
    try {
      const governor = await PolicyGovernor.create({
        policies: [{
          name: "NoNet",
          version: "1.0",
          advise: (s) =>
            String(s.action.input.command ?? "").includes("curl") ? { kind: "veto", advice: "no network" } : undefined,
        }],
      });
      const r = await runLlmAgent({
        task: "What does the note say?",
        config: parseLlmConfig({
          provider: "anthropic",
          base_url: server.url,
          model: "claude-scripted",
          api_key_env: "NOEMA_TEST_ANTHROPIC_KEY",
          max_tokens: 1024,
        }),
        governor,
        workspace: ws,
        episodeDir: ep,
        redactor: new Redactor({ secrets: ["NOEMA_TEST_ANTHROPIC_KEY"] }),
      });
      assert.equal(r.status, "done", JSON.stringify(r.error));
      assert.equal(r.text, "The note says: remember the milk.");
      assert.equal(server.requests[0].key, "sk-ant-test-key-xyz");
      const tools = (server.requests[0].body.tools as { name: string }[]).map((t) => t.name);
      assert.ok(tools.includes("read_file") && tools.includes("shell"));
      const last = (server.requests[1].body.messages as { role: string; content: Block[] }[]).at(-1)!;
      assert.equal(last.role, "user");
      const results = new Map(last.content.filter((b) => b.type === "tool_result").map((b) => [b.tool_use_id, b]));
      assert.match(JSON.stringify(results.get("toolu_1")), /remember the milk/);
      assert.match(JSON.stringify(results.get("toolu_2")), /no network/);
      assert.deepEqual(governor.steps.map((s) => s.decision.verdict), ["allow", "deny"]);
      assert.doesNotMatch(readFileSync(join(ep, "model.jsonl"), "utf8"), /sk-ant-test-key-xyz/);
      assert.equal(r.usage.input_tokens, 40);
    } finally {
      delete process.env.NOEMA_TEST_ANTHROPIC_KEY;
      await server.close();
    }
  });
});
