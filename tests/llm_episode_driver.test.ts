/**
 * The episode driver's pause and resume: a call that needs approval pauses
 * the run with the whole conversation saved in the episode
 * (llm/conversation.json, secrets masked); resuming approved runs the call
 * and continues the same conversation to the answer; resuming rejected gives
 * the model the reason. The episode here is a PolicyGovernor with a
 * directory (the episode core plugs in the same way).
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Redactor } from "../src/runtime/redact.ts";
import { parseLlmConfig } from "../src/llm/config.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { driveLlmEpisode, type EpisodeHandle, resumeLlmEpisode } from "../src/llm/episode_driver.ts";
import { llmDriver } from "../src/llm/driver.ts";
import { startOpenAiServer, toolMessages } from "./helpers/openai_server.ts";
import { tempDir } from "./helpers/tmp.ts";
import { WRITE_NEEDS_APPROVAL } from "./helpers/policies.ts";

const tmp = tempDir("noema-llm-drive-");
after(() => tmp.cleanup());

async function episode(name: string) {
  const dir = join(tmp.path, name), ws = join(dir, "ws");
  mkdirSync(ws, { recursive: true });
  const gov = await PolicyGovernor.create({ policies: [WRITE_NEEDS_APPROVAL] });
  const finished: unknown[] = [];
  const handle: EpisodeHandle<string> & { gov: PolicyGovernor; finished: unknown[] } = {
    episodeId: name,
    dir,
    gov,
    finished,
    propose: (a) => gov.propose(a),
    record: (id, r) => gov.record(id, r),
    bindCall: (key, id) => gov.bindCall(key, id),
    finish: (e) => {
      finished.push(e);
      return Promise.resolve("finished");
    },
    close: () => {},
  };
  return { handle, ws };
}

const script = () => [
  { tool_calls: [{ id: "r1", name: "list_dir", arguments: "{}" }] },
  { tool_calls: [{ id: "w1", name: "write_file", arguments: '{"path":"out.txt","content":"approved content"}' }] },
  { text: "wrote out.txt" },
];

describe("llm episode driver", () => {
  it("pauses on requires_approval and resumes the same conversation when approved", async () => {
    const server = await startOpenAiServer(script());
    try {
      const { handle, ws } = await episode("approved");
      const config = parseLlmConfig({ base_url: server.url, model: "m" });
      const o = { task: "write it", config, workspace: ws, redactor: new Redactor() };
      // The user's prices (noema.jsonc) given to the first part are kept across the pause.
      const first = await driveLlmEpisode(handle, { ...o, prices: { m: { input: 1, output: 2 } } });
      assert.equal(first.agent.status, "paused");
      assert.equal(first.run, null);
      assert.equal(handle.finished.length, 0);
      assert.equal(existsSync(join(ws, "out.txt")), false);
      const saved = JSON.parse(readFileSync(join(handle.dir, "llm", "conversation.json"), "utf8"));
      assert.equal(saved.pending[0].call_id, "w1");
      assert.equal(saved.pending[0].key, handle.gov.steps[1].action.call_id);
      assert.equal(saved.turns, 2);
      handle.gov.approved.add("w1");
      const second = await resumeLlmEpisode(handle, o, { approved: true });
      assert.equal(second.agent.status, "done", JSON.stringify(second.agent.error));
      assert.equal(second.run, "finished");
      assert.deepEqual(handle.finished, [{
        adapter_result: "success",
        message: "wrote out.txt",
        answer: "wrote out.txt",
        // Usage across the pause: three model calls of 11 + 7 tokens, priced with the first part's prices.
        metrics: {
          tokens: {
            input: 33,
            output: 21,
            total: 54,
            model_calls: 3,
            cache_write: 0,
            cache_read: 0,
            models: { m: { input: 33, output: 21, cache_write: 0, cache_read: 0, model_calls: 3 } },
          },
          cost: {
            usd: 0.000075,
            reason: null,
            models: { m: { usd: 0.000075, prices: { input: 1, output: 2 }, source: "noema.jsonc" } },
          },
        },
      }]);
      assert.equal(readFileSync(join(ws, "out.txt"), "utf8"), "approved content");
      // One policy consultation per call: the approved call was answered from its record, not asked again.
      assert.deepEqual(handle.gov.steps.map((s) => [s.action.tool, s.decision.verdict, s.result?.status]), [
        ["list_dir", "allow", "ok"],
        ["write_file", "allow", "ok"],
      ]);
      // The third request carries the whole conversation: the list_dir result and the write's result.
      const third = toolMessages(server.requests[2]);
      assert.ok(third.has("r1") && third.has("w1"), JSON.stringify([...third.keys()]));
      assert.equal(server.requests.length, 3);
    } finally {
      await server.close();
    }
  });

  it("a rejected call is not run and the model reads the reason", async () => {
    const server = await startOpenAiServer(script());
    try {
      const { handle, ws } = await episode("rejected");
      const o = {
        task: "write it",
        config: parseLlmConfig({ base_url: server.url, model: "m" }),
        workspace: ws,
        redactor: new Redactor(),
      };
      assert.equal((await driveLlmEpisode(handle, o)).agent.status, "paused");
      const second = await resumeLlmEpisode(handle, o, { approved: false, reason: "not today" });
      assert.equal(second.agent.status, "done", JSON.stringify(second.agent.error));
      assert.equal(existsSync(join(ws, "out.txt")), false);
      assert.match(toolMessages(server.requests[2]).get("w1")!, /not today/);
    } finally {
      await server.close();
    }
  });

  it("reports each event of the episode to onEvent (the CLI's live progress)", async () => {
    const server = await startOpenAiServer([
      { tool_calls: [{ id: "l1", name: "list_dir", arguments: "{}" }] },
      { text: "listed" },
    ]);
    try {
      const ws = join(tmp.path, "progress-ws");
      mkdirSync(ws, { recursive: true });
      const seen: string[] = [];
      const r = await llmDriver.run("list it", {
        root: join(tmp.path, "progress-root"),
        workspace: ws,
        adapter: { base_url: server.url, model: "m" },
        onEvent: (e) => seen.push(e.phase === "act" ? `act:${String(e.payload.tool)}` : e.phase),
      });
      assert.equal(r.status, "ok");
      assert.equal(seen[0], "start");
      assert.ok(seen.includes("governance") && seen.includes("act:list_dir"), seen.join(" "));
      assert.equal(seen.at(-1), "insight");
    } finally {
      await server.close();
    }
  });
});
