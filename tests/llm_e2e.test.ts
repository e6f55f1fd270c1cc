/**
 * Optional: the LLM agent against a real model server. Runs only when
 * `NOEMA_E2E_BASE_URL` is set (an OpenAI-compatible base URL, e.g. Ollama's
 * `http://127.0.0.1:11434/v1`), with `NOEMA_E2E_MODEL` (default
 * `qwen2.5-coder`) and optionally `NOEMA_E2E_API_KEY_ENV` (the name of the
 * variable holding a key). An extra: every behaviour is also tested offline.
 *
 *     NOEMA_E2E_BASE_URL=http://127.0.0.1:11434/v1 bun test tests/llm_e2e.test.ts
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Redactor } from "../src/runtime/redact.ts";
import { parseLlmConfig } from "../src/llm/config.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { runLlmAgent } from "../src/llm/agent.ts";
import { readModelLog } from "../src/llm/replay_model.ts";
import { tempDir } from "./helpers/tmp.ts";

const url = process.env.NOEMA_E2E_BASE_URL;
const tmp = tempDir("noema-llm-e2e-");
after(() => tmp.cleanup());

describe("llm agent against a real model server", () => {
  it(
    "reads a file with a governed tool call and answers",
    { skip: url ? false : "set NOEMA_E2E_BASE_URL (e.g. http://127.0.0.1:11434/v1) to run" },
    async () => {
      const ws = join(tmp.path, "ws");
      mkdirSync(ws);
      writeFileSync(join(ws, "code.txt"), "The secret word is: pineapple\n");
      const governor = await PolicyGovernor.create();
      const r = await runLlmAgent({
        task: "Read the file code.txt with the read_file tool and tell me the secret word.",
        config: parseLlmConfig({
          provider: "openai-compatible",
          base_url: url,
          model: process.env.NOEMA_E2E_MODEL ?? "qwen2.5-coder",
          api_key_env: process.env.NOEMA_E2E_API_KEY_ENV,
          max_turns: 6,
          temperature: 0,
          tools: ["read_file", "list_dir"],
        }),
        governor,
        workspace: ws,
        episodeDir: tmp.path,
        redactor: new Redactor(),
      });
      assert.equal(r.status, "done", JSON.stringify(r.error));
      assert.ok(governor.steps.some((s) => s.action.tool === "read_file"), "the model used read_file");
      assert.match(r.text.toLowerCase(), /pineapple/);
      assert.ok(readModelLog(join(tmp.path, "model.jsonl")).length >= 2);
    },
  );
});
