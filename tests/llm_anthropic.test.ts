/**
 * The anthropic provider against the scripted Anthropic Messages server
 * (tests/helpers/anthropic_server.ts), streamed and not: tool_use blocks
 * become governed calls, results go back as tool_result blocks (a veto with
 * its reason), the answer is recorded, and the API key never reaches
 * model.jsonl. The server treats requests offering a `Bash` tool as the main
 * loop, so the shell tool is offered under that name here.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Redactor } from "../src/runtime/redact.ts";
import { parseLlmConfig } from "../src/llm/config.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { runLlmAgent } from "../src/llm/agent.ts";
import { shellTool } from "../src/llm/tools/shell.ts";
import { startAnthropicServer } from "./helpers/anthropic_server.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-llm-anthropic-");
after(() => tmp.cleanup());

for (const stream of [false, true]) {
  describe(`llm agent with the anthropic provider (${stream ? "streamed" : "not streamed"})`, () => {
    it("runs tool_use turns through the governor and answers", async () => {
      const ws = join(tmp.path, `ws-${stream}`), ep = join(tmp.path, `ep-${stream}`);
      mkdirSync(ws);
      mkdirSync(ep);
      writeFileSync(join(ws, "notes.md"), "# Notes\nremember the milk\n");
      const server = await startAnthropicServer([
        {
          text: "Let me look.",
          tools: [
            { id: "toolu_1", name: "read_file", input: { path: "notes.md" } },
            { id: "toolu_2", name: "Bash", input: { command: "curl http://example.com" } },
            { id: "toolu_3", name: "Bash", input: { command: "wc -l notes.md" } },
          ],
        },
        { text: "The note says: remember the milk." },
      ]);
      process.env.NOEMA_TEST_ANTHROPIC_KEY = "sk-ant-test-key-xyz";
      try {
        const governor = await PolicyGovernor.create({
          policies: [{
            name: "NoNet",
            version: "1.0",
            advise: (s) =>
              String(s.action.input.command ?? "").includes("curl")
                ? { kind: "veto", advice: "no network" }
                : undefined,
          }],
        });
        const r = await runLlmAgent({
          task: "What does the note say?",
          config: parseLlmConfig({
            provider: "anthropic",
            base_url: `${server.url}/v1`,
            model: "claude-scripted",
            api_key_env: "NOEMA_TEST_ANTHROPIC_KEY",
            max_tokens: 1024,
            tools: ["read_file"],
            stream,
          }),
          extraTools: [{ ...shellTool(), name: "Bash" }],
          governor,
          workspace: ws,
          episodeDir: ep,
          redactor: new Redactor({ secrets: ["NOEMA_TEST_ANTHROPIC_KEY"] }),
        });
        assert.equal(r.status, "done", JSON.stringify(r.error));
        assert.equal(r.text, "The note says: remember the milk.");
        assert.equal(server.mainRequests().length, 2);
        assert.equal(server.mainRequests()[0].body.stream ?? false, stream);
        const results = server.toolResults();
        assert.match(results.get("toolu_1")!.content, /remember the milk/);
        assert.match(results.get("toolu_2")!.content, /no network/);
        assert.match(results.get("toolu_3")!.content, /2 notes\.md/);
        assert.deepEqual(governor.steps.map((s) => `${s.action.tool}:${s.decision.verdict}`), [
          "read_file:allow",
          "Bash:deny",
          "Bash:allow",
        ]);
        assert.equal(governor.steps[2].action.command, "wc -l notes.md");
        assert.doesNotMatch(readFileSync(join(ep, "model.jsonl"), "utf8"), /sk-ant-test-key-xyz/);
        assert.equal(r.usage.input_tokens, 20);
      } finally {
        delete process.env.NOEMA_TEST_ANTHROPIC_KEY;
        await server.close();
      }
    });
  });
}
