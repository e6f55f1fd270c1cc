/**
 * The governed LLM agent against the scripted OpenAI-compatible server: every
 * tool call goes through the policies, vetoes reach the model, escapes are
 * refused, bad calls get tool errors, and model.jsonl replays exactly.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Redactor } from "../src/runtime/redact.ts";
import { parseLlmConfig } from "../src/llm/config.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { runLlmAgent } from "../src/llm/agent.ts";
import { driveLlmEpisode } from "../src/llm/episode_driver.ts";
import { EpisodeCore, validate } from "noema";
import { readModelLog } from "../src/llm/replay_model.ts";
import { type ScriptedReply, startOpenAiServer, toolMessages } from "./helpers/openai_server.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-llm-");
after(() => tmp.cleanup());
let n = 0;
function setup() {
  const root = join(tmp.path, `case-${++n}`);
  const ws = join(root, "ws"), ep = join(root, "ep");
  mkdirSync(ws, { recursive: true });
  mkdirSync(ep, { recursive: true });
  writeFileSync(join(root, "secret.txt"), "TOP SECRET OUTSIDE\n");
  writeFileSync(join(ws, "hello.txt"), "hello world\n");
  symlinkSync(join(root, "secret.txt"), join(ws, "link.txt"));
  return { root, ws, ep };
}

const noRm = {
  name: "NoRm",
  version: "1.0",
  advise(s: { action: { input: Record<string, unknown> } }) {
    if (String(s.action.input.command ?? "").includes("rm -rf")) {
      return { kind: "veto" as const, advice: "rm -rf is not allowed here" };
    }
  },
};
const quiet = {
  name: "Quiet",
  version: "1.0",
  advise(s: { action: { tool: string; input: Record<string, unknown> } }) {
    if (s.action.tool === "shell" && String(s.action.input.command).startsWith("echo loud")) {
      return { kind: "intervention" as const, advice: "be quiet", patch: { command: "echo quiet" } };
    }
  },
};

function script(): ScriptedReply[] {
  return [
    {
      tool_calls: [
        { id: "c1", name: "read_file", arguments: '{"path":"hello.txt"}' },
        { id: "c2", name: "shell", arguments: '{"command":"rm -rf /tmp/x"}' },
        { id: "c3", name: "read_file", arguments: '{"path":"../secret.txt"}' },
        { id: "c4", name: "read_file", arguments: '{"path":"link.txt"}' },
      ],
    },
    {
      tool_calls: [
        { id: "c5", name: "shell", arguments: '{"command":"echo loud"}' },
        { id: "c6", name: "no_such_tool", arguments: "{}" },
        { id: "c7", name: "write_file", arguments: '{"path":"out.txt", "content": ' },
        { id: "c8", name: "edit_file", arguments: '{"path":"hello.txt","old_string":"world","new_string":"noema"}' },
      ],
    },
    { text: "Done: hello.txt now greets noema." },
  ];
}

async function agent(url: string, dirs: { ws: string; ep: string }, extra: Record<string, unknown> = {}) {
  const config = parseLlmConfig({ provider: "openai-compatible", base_url: url, model: "scripted", ...extra });
  const governor = await PolicyGovernor.create({ policies: [noRm, quiet] });
  const r = await runLlmAgent({
    task: "greet noema",
    config,
    governor,
    workspace: dirs.ws,
    episodeDir: dirs.ep,
    redactor: new Redactor(),
  });
  return { r, governor };
}

for (const stream of [false, true]) {
  describe(`llm agent (${stream ? "streamed" : "not streamed"})`, () => {
    it("governs every call, tells the model about vetoes and refusals, and answers", async () => {
      const dirs = setup();
      const server = await startOpenAiServer(script());
      try {
        const { r, governor } = await agent(server.url, dirs, { stream });
        assert.equal(r.status, "done", JSON.stringify(r.error));
        assert.equal(r.text, "Done: hello.txt now greets noema.");
        assert.equal(server.requests.length, 3);
        assert.equal(server.requests[0].stream ?? false, stream);
        // Governed steps: every valid call (c1..c5, c8), with verdicts.
        const verdicts = governor.steps.map((s) => `${s.action.tool}:${s.decision.verdict}`);
        assert.deepEqual(verdicts, [
          "read_file:allow",
          "shell:deny",
          "read_file:allow",
          "read_file:allow",
          "shell:patch",
          "edit_file:allow",
        ]);
        const second = toolMessages(server.requests[1]);
        assert.match(second.get("c1")!, /hello world/);
        assert.match(second.get("c2")!, /rm -rf is not allowed here/);
        assert.match(second.get("c3")!, /outside the workspace/);
        assert.match(second.get("c4")!, /outside the workspace/);
        for (const m of second.values()) assert.doesNotMatch(m, /TOP SECRET/);
        const third = toolMessages(server.requests[2]);
        assert.match(third.get("c5")!, /quiet/);
        assert.doesNotMatch(third.get("c5")!, /loud/);
        // The intervention (experimental_refineToolInput) rewrote the call itself: what ran, what the
        // governor recorded and what the conversation sent back to the model all say "echo quiet".
        const sent =
          (server.requests[2].messages as { tool_calls?: { id: string; function: { arguments: string } }[] }[])
            .flatMap((m) => m.tool_calls ?? []).find((c) => c.id === "c5")!;
        assert.deepEqual(JSON.parse(sent.function.arguments), { command: "echo quiet" });
        assert.deepEqual(governor.steps[4].decision.input, { command: "echo quiet" });
        assert.equal(governor.steps[4].call_id, "c5");
        assert.match(third.get("c6")!, /no_such_tool/);
        assert.match(third.get("c7")!, /JSON|Invalid/i);
        assert.equal(readFileSync(join(dirs.ws, "hello.txt"), "utf8"), "hello noema\n");
        // Results recorded: ok, error (escape), patched shell output.
        assert.equal(governor.steps[0].result?.status, "ok");
        assert.equal(governor.steps[1].result, null);
        assert.equal(governor.steps[2].result?.status, "error");
        assert.equal((governor.steps[4].result?.output as { stdout: string }).stdout, "quiet\n");
        // model.jsonl: one line per model call, usage summed.
        const turns = readModelLog(join(dirs.ep, "model.jsonl"));
        assert.equal(turns.length, 3);
        assert.equal(r.usage.model_calls, 3);
        assert.equal(r.usage.input_tokens, 33);
      } finally {
        await server.close();
      }
    });
  });
}

describe("llm agent: streaming quirks", () => {
  it("parallel calls that reuse index 0 are told apart by id", async () => {
    const dirs = setup();
    const server = await startOpenAiServer([
      {
        indexReuse: true,
        tool_calls: [
          { id: "a1", name: "read_file", arguments: '{"path":"hello.txt"}' },
          { id: "a2", name: "list_dir", arguments: '{"path":"."}' },
        ],
      },
      { text: "ok" },
    ]);
    try {
      const { r, governor } = await agent(server.url, dirs, { stream: true });
      assert.equal(r.status, "done", JSON.stringify(r.error));
      assert.deepEqual(governor.steps.map((s) => s.action.tool), ["read_file", "list_dir"]);
      const msgs = toolMessages(server.requests[1]);
      assert.match(msgs.get("a1")!, /hello world/);
      assert.match(msgs.get("a2")!, /hello\.txt/);
    } finally {
      await server.close();
    }
  });
});

describe("llm agent: ends", () => {
  it("max_turns reached is an error outcome, not a hang", async () => {
    const dirs = setup();
    const server = await startOpenAiServer(() => ({
      tool_calls: [{ id: `x${Math.random()}`, name: "list_dir", arguments: "{}" }],
    }));
    try {
      const { r } = await agent(server.url, dirs, { max_turns: 3 });
      assert.equal(r.status, "max_turns");
      assert.equal(r.error?.type, "LlmMaxTurns");
      assert.equal(server.requests.length, 3);
    } finally {
      await server.close();
    }
  });
});

describe("llm agent: hints", () => {
  it("a policy's hint reaches the model with the call's result, as a field of a JSON result or lines after a text", async () => {
    const dirs = setup();
    const careful = {
      name: "Careful",
      version: "1.0",
      advise: (s: { action: { tool: string } }) =>
        s.action.tool === "shell" || s.action.tool === "write_file"
          ? { kind: "hint" as const, advice: `check the result of ${s.action.tool}` }
          : undefined,
    };
    const server = await startOpenAiServer([
      {
        tool_calls: [
          { id: "k1", name: "shell", arguments: '{"command":"echo hi"}' },
          { id: "k2", name: "write_file", arguments: '{"path":"k.txt","content":"k"}' },
          { id: "k3", name: "list_dir", arguments: "{}" },
        ],
      },
      { text: "checked" },
    ]);
    try {
      const governor = await PolicyGovernor.create({ policies: [careful] });
      const r = await runLlmAgent({
        task: "hint me",
        config: parseLlmConfig({ provider: "openai-compatible", base_url: server.url, model: "scripted" }),
        governor,
        workspace: dirs.ws,
        episodeDir: dirs.ep,
        redactor: new Redactor(),
      });
      assert.equal(r.status, "done", JSON.stringify(r.error));
      const told = toolMessages(server.requests[1]);
      assert.deepEqual(JSON.parse(told.get("k1")!).policy_hints, ["check the result of shell"]);
      assert.equal(JSON.parse(told.get("k1")!).stdout, "hi\n");
      assert.equal(told.get("k2"), "wrote 1 bytes to k.txt\n\npolicy hint: check the result of write_file");
      assert.doesNotMatch(told.get("k3")!, /policy/);
    } finally {
      await server.close();
    }
  });
});

describe("llm agent: an episode's decisions reach the disk before each call runs", () => {
  it("with events batched, every parallel call finds its governance event in events.jsonl when it runs", async () => {
    const { root, ws } = setup();
    const core = await EpisodeCore.open("probe the log", { root, workspace: ws, using: "llm", policies: [noRm] });
    const probe = join(root, "probe.ts");
    writeFileSync(
      probe,
      `import { readFileSync } from "node:fs";
export default {
  name: "probe",
  description: "reports whether this call's decision is in the log",
  parameters: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
  execute(input) {
    const log = readFileSync(${
        JSON.stringify(join(core.dir, "events.jsonl"))
      }, "utf8").trim().split("\\n").map((l) => JSON.parse(l));
    const candidate = log.find((e) => e.phase === "action_candidate" && e.payload.payload.input.key === input.key);
    const decided = log.some((e) => e.phase === "governance" && e.payload.action_candidate_id === candidate?.payload.action_candidate_id);
    return { key: input.key, decided };
  },
};
`,
    );
    const server = await startOpenAiServer([
      {
        tool_calls: ["a", "b", "c"].map((k) => ({
          id: `p_${k}`,
          name: "probe",
          arguments: JSON.stringify({ key: k }),
        })),
      },
      { tool_calls: [{ id: "p_d", name: "probe", arguments: '{"key":"d"}' }] },
      { text: "done" },
    ]);
    try {
      const config = parseLlmConfig({ base_url: server.url, model: "m", tools: [probe] });
      const { agent } = await driveLlmEpisode(core, { task: "probe", config, workspace: ws, redactor: new Redactor() });
      assert.equal(agent.status, "done");
      assert.equal(core.batchEvents, true, "the driver batches the events");
      const results = [...toolMessages(server.requests[2]).values()]; // the last request holds every tool result
      assert.deepEqual(results.map((r) => JSON.parse(r)), [
        { key: "a", decided: true },
        { key: "b", decided: true },
        { key: "c", decided: true },
        { key: "d", decided: true },
      ]);
      assert.deepEqual(validate(core.dir).problems, []);
    } finally {
      await server.close();
    }
  });
});
