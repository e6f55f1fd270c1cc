/**
 * The LLM's built-in tools and the governed hooks, in unit tests: workspace
 * confinement (.., absolute paths, symlinks in and out, dangling links,
 * writes over symlinks), edit_file's exact replacement, shell limits, user
 * tool files, and the hooks with MockLanguageModelV4 (interventions,
 * vetoes, approval pause and resume, exact replay and divergence).
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  generateText,
  isStepCount,
  type LanguageModel,
  type ModelMessage,
  simulateReadableStream,
  streamText,
  wrapLanguageModel,
} from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { confinePath } from "../src/llm/workspace.ts";
import { fileTools } from "../src/llm/tools/files.ts";
import { searchTool } from "../src/llm/tools/search.ts";
import { shellTool } from "../src/llm/tools/shell.ts";
import { resolveTools } from "../src/llm/tools/registry.ts";
import { toAiSdkTools } from "../src/llm/ai_tools.ts";
import { governedHooks } from "../src/llm/hooks.ts";
import { approvalMessages, runAgentLoop } from "../src/llm/loop.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { govern } from "../src/llm/govern.ts";
import { EpisodeCore } from "../src/runtime/core/episode_core.ts";
import { approve } from "../src/runtime/resume.ts";
import { readModelLog, replayModel } from "../src/llm/replay_model.ts";
import { modelRecorder } from "../src/llm/model_log.ts";
import { JsonlAppender } from "../src/store/jsonl.ts";
import { Redactor } from "../src/runtime/redact.ts";
import { tempDir } from "./helpers/tmp.ts";
import { WRITE_NEEDS_APPROVAL } from "./helpers/policies.ts";

const tmp = tempDir("noema-llm-tools-");
after(() => tmp.cleanup());
const ws = join(tmp.path, "ws");
mkdirSync(join(ws, "sub"), { recursive: true });
writeFileSync(join(ws, "a.txt"), "one two one\n");
writeFileSync(join(ws, "sub", "b.txt"), "needle here\n");
writeFileSync(join(tmp.path, "outside.txt"), "OUTSIDE\n");
mkdirSync(join(tmp.path, "outdir"));
symlinkSync(join(tmp.path, "outside.txt"), join(ws, "out-link"));
symlinkSync(join(tmp.path, "outdir"), join(ws, "out-dir"));
symlinkSync(join(ws, "a.txt"), join(ws, "in-link"));
symlinkSync(join(tmp.path, "nowhere"), join(ws, "dangling"));
const ctx = { workspace: ws, signal: new AbortController().signal };
const tools = Object.fromEntries(fileTools().map((t) => [t.name, t]));

describe("workspace confinement", () => {
  it("refuses .., absolute paths outside, and symlinks that leave", () => {
    for (
      const p of [
        "../outside.txt",
        join(tmp.path, "outside.txt"),
        "out-link",
        "out-dir/new.txt",
        "dangling",
        "sub/../../outside.txt",
      ]
    ) {
      assert.throws(() => confinePath(ws, p), /outside the workspace/, p);
    }
  });
  it("accepts paths inside, symlinks inside, and new files", () => {
    assert.equal(confinePath(ws, "sub/b.txt"), join(ws, "sub", "b.txt"));
    assert.equal(confinePath(ws, "in-link"), join(ws, "a.txt"));
    assert.equal(confinePath(ws, "new/dir/c.txt"), join(ws, "new", "dir", "c.txt"));
  });
  it("read_file, write_file and list_dir never touch the outside", async () => {
    await assert.rejects(async () => await tools.read_file.execute({ path: "out-link" }, ctx), /outside/);
    await assert.rejects(
      async () => await tools.write_file.execute({ path: "out-dir/x.txt", content: "x" }, ctx),
      /outside/,
    );
    await assert.rejects(async () => await tools.list_dir.execute({ path: "out-dir" }, ctx), /outside/);
    assert.equal(readFileSync(join(tmp.path, "outside.txt"), "utf8"), "OUTSIDE\n");
  });
  it("write_file over a symlink inside replaces the link, never writes through it", async () => {
    symlinkSync(join(ws, "sub", "b.txt"), join(ws, "b-link"));
    await tools.write_file.execute({ path: "b-link", content: "new" }, ctx);
    assert.equal(readFileSync(join(ws, "sub", "b.txt"), "utf8"), "needle here\n");
    assert.equal(lstatSync(join(ws, "sub", "b.txt")).isFile(), true);
  });
  it("search skips symlinks and finds matches", async () => {
    const out = String(await searchTool().execute({ pattern: "needle|OUTSIDE", path: "." }, ctx));
    assert.match(out, /sub\/b\.txt:1: needle here/);
    assert.doesNotMatch(out, /OUTSIDE/);
  });
});

describe("edit_file", () => {
  it("replaces one exact occurrence, and errors when absent or not unique", async () => {
    writeFileSync(join(ws, "e.txt"), "alpha beta alpha\n");
    await assert.rejects(
      async () => await tools.edit_file.execute({ path: "e.txt", old_string: "alpha", new_string: "x" }, ctx),
      /more than once/,
    );
    await assert.rejects(
      async () => await tools.edit_file.execute({ path: "e.txt", old_string: "gamma", new_string: "x" }, ctx),
      /not found/,
    );
    await tools.edit_file.execute({ path: "e.txt", old_string: "beta", new_string: "BETA" }, ctx);
    assert.equal(readFileSync(join(ws, "e.txt"), "utf8"), "alpha BETA alpha\n");
  });
});

describe("shell tool", () => {
  it("passes only allowed variables, cuts output and times out", async () => {
    process.env.NOEMA_TEST_HIDDEN = "hidden-value";
    const sh = shellTool({ output_bytes: 100, timeout_ms: 500, env_allow: ["PATH"] });
    const env = await sh.execute({ command: "env" }, ctx) as { stdout: string };
    assert.doesNotMatch(env.stdout, /hidden-value/);
    const big = await sh.execute({ command: "yes | head -c 5000" }, ctx) as { stdout: string; stdout_bytes: number };
    assert.equal(big.stdout.length, 100);
    assert.equal(big.stdout_bytes, 5000);
    const slow = await sh.execute({ command: "sleep 5" }, ctx) as { timed_out: boolean };
    assert.equal(slow.timed_out, true);
    delete process.env.NOEMA_TEST_HIDDEN;
  });
});

describe("user tool files", () => {
  it("loads a .ts tool and rejects a bad one naming the file", async () => {
    const good = tmp.file(
      "wc.ts",
      `export default { name: "word_count", description: "count words", parameters: { type: "object", properties: { text: { type: "string" } } }, execute: (i) => ({ words: String(i.text).split(/\\s+/).filter(Boolean).length }) };\n`,
    );
    const [t] = await resolveTools([good], { baseDir: tmp.path });
    assert.equal(t.name, "word_count");
    assert.deepEqual(await t.execute({ text: "a b c" }, ctx), { words: 3 });
    const bad = tmp.file("bad.ts", `export default { name: "bad name!", execute() {} };\n`);
    await assert.rejects(
      resolveTools([bad], { baseDir: tmp.path }),
      (e: Error) =>
        /bad\.ts/.test(`${(e as { file?: string }).file} ${e.message}`) && /name must match/.test(e.message),
    );
    await assert.rejects(resolveTools(["nope"], { baseDir: tmp.path }), /adapter\.tools\[0\]: unknown tool "nope"/);
  });
});

const usage = {
  inputTokens: { total: 5, noCache: 5, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 2, text: 2, reasoning: 0 },
};
function call(id: string, name: string, input: unknown) {
  return { type: "tool-call" as const, toolCallId: id, toolName: name, input: JSON.stringify(input) };
}
function scriptedMock(turns: unknown[][]) {
  let i = 0;
  return new MockLanguageModelV4({
    doGenerate: () => {
      const content = turns[i++] ?? [{ type: "text", text: "end" }];
      const calls = content.some((c) => (c as { type: string }).type === "tool-call");
      return Promise.resolve({
        // deno-lint-ignore no-explicit-any
        content: content as any,
        finishReason: { unified: calls ? "tool-calls" : "stop", raw: undefined },
        usage,
        warnings: [],
      });
    },
  });
}

function streamingMock(turns: unknown[][]) {
  let i = 0;
  return new MockLanguageModelV4({
    doStream: () => {
      const content = (turns[i++] ?? [{ type: "text", text: "end" }]) as { type: string; text?: string }[];
      const calls = content.some((c) => c.type === "tool-call");
      const parts = [
        { type: "stream-start", warnings: [] },
        ...content.flatMap((c) =>
          c.type === "text"
            ? [
              { type: "text-start", id: "t" },
              { type: "text-delta", id: "t", delta: c.text },
              { type: "text-end", id: "t" },
            ]
            : [c]
        ),
        { type: "finish", finishReason: { unified: calls ? "tool-calls" : "stop", raw: undefined }, usage },
      ];
      // deno-lint-ignore no-explicit-any
      return Promise.resolve({ stream: simulateReadableStream({ chunks: parts as any[] }) });
    },
  });
}

describe("governed hooks with MockLanguageModelV4", () => {
  it("an intervention patches what runs; the veto reason is the tool result", async () => {
    const gov = await PolicyGovernor.create({
      policies: [{
        name: "P",
        version: "1.0",
        advise: (s) =>
          s.action.input.path === "secret.txt"
            ? { kind: "veto", advice: "not that file" }
            : s.action.input.path === "old.txt"
            ? { kind: "intervention", advice: "use a.txt", patch: { path: "a.txt" } }
            : undefined,
      }],
    });
    const model = scriptedMock([[
      call("1", "read_file", { path: "old.txt" }),
      call("2", "read_file", { path: "secret.txt" }),
    ]]);
    const r = await generateText({
      model,
      tools: toAiSdkTools(fileTools(), ctx),
      prompt: "go",
      stopWhen: isStepCount(3),
      ...governedHooks(gov),
    });
    const toolMsg = r.responseMessages.find((m) => m.role === "tool")!;
    const results = (toolMsg.content as {
      type: string;
      toolCallId: string;
      output: { type: string; value?: unknown; reason?: string };
    }[])
      .filter((p) => p.type === "tool-result");
    assert.equal(results.find((p) => p.toolCallId === "1")!.output.value, "one two one\n");
    assert.deepEqual(results.find((p) => p.toolCallId === "2")!.output, {
      type: "execution-denied",
      reason: "not that file",
    });
    assert.deepEqual(gov.steps.map((s) => s.decision.verdict), ["patch", "deny"]);
  });

  for (const stream of [false, true]) {
    it(`experimental_refineToolInput rewrites what executes, is recorded and shown (${stream ? "streamText" : "generateText"})`, async () => {
      let consulted = 0;
      const gov = await PolicyGovernor.create({
        policies: [{
          name: "Redirect",
          version: "1.0",
          advise: (s) => {
            consulted++;
            return s.action.input.path === "old.txt"
              ? { kind: "intervention", advice: "write b.txt", patch: { path: "b.txt" } }
              : undefined;
          },
        }],
      });
      const executed: unknown[] = [];
      const ws2 = join(tmp.path, `refine-${stream}`);
      mkdirSync(ws2, { recursive: true });
      const tools = toAiSdkTools(fileTools(), { ...ctx, workspace: ws2 });
      const write = tools.write_file.execute!;
      tools.write_file.execute = (input, opts) => {
        executed.push(structuredClone(input));
        return write(input, opts);
      };
      const hooks = governedHooks(gov);
      const recorded: unknown[] = [];
      const turns = [
        [
          call("p1", "write_file", { path: "old.txt", content: "patched" }),
          call("p2", "write_file", { path: "keep.txt", content: "as is" }),
        ],
        [{ type: "text", text: "done" }],
      ];
      const options = {
        model: stream ? streamingMock(turns) : scriptedMock(turns),
        tools,
        prompt: "go",
        stopWhen: isStepCount(3),
        ...hooks,
        onToolExecutionEnd: async (e: { toolCall: { input: unknown } }) => {
          recorded.push(structuredClone(e.toolCall.input));
          await hooks.onToolExecutionEnd(e);
        },
      };
      // deno-lint-ignore no-explicit-any
      let messages: any[];
      if (stream) {
        // deno-lint-ignore no-explicit-any
        const r = streamText(options as any);
        await r.consumeStream();
        messages = await r.responseMessages;
      } else {
        // deno-lint-ignore no-explicit-any
        messages = (await generateText(options as any)).responseMessages;
      }
      await hooks.settle();
      // The intervention is the refinement's answer (the SDK calls it before toolApproval, without a call id).
      const refined = await governedHooks(gov).experimental_refineToolInput.write_file({
        path: "old.txt",
        content: "x",
      });
      assert.deepEqual(refined, { path: "b.txt", content: "x" });
      gov.steps.pop();
      consulted--;
      // What ran is the patched input: b.txt written, old.txt never.
      assert.equal(readFileSync(join(ws2, "b.txt"), "utf8"), "patched");
      assert.equal(readFileSync(join(ws2, "keep.txt"), "utf8"), "as is");
      assert.throws(() => lstatSync(join(ws2, "old.txt")));
      assert.deepEqual(executed, [{ path: "b.txt", content: "patched" }, { path: "keep.txt", content: "as is" }]);
      // The execution callbacks and the conversation carry the patched input too.
      assert.deepEqual(recorded, executed);
      const asked = messages.find((m) => m.role === "assistant").content.filter((p: { type: string }) =>
        p.type === "tool-call"
      );
      assert.deepEqual(asked.map((p: { input: unknown }) => p.input), executed);
      // One policy consultation per call; the governor recorded each result under the patched input.
      assert.equal(consulted, 2);
      assert.deepEqual(gov.steps.map((s) => [s.decision.verdict, s.decision.input.path, s.result?.status]), [
        ["patch", "b.txt", "ok"],
        ["allow", "keep.txt", "ok"],
      ]);
      assert.deepEqual(gov.steps.map((s) => s.call_id), ["p1", "p2"]);
    });
  }

  it("requires_approval pauses with the conversation; approving resumes the same conversation", async () => {
    const gov = await PolicyGovernor.create({ policies: [WRITE_NEEDS_APPROVAL] });
    const model = scriptedMock([
      [call("r1", "read_file", { path: "a.txt" })],
      [call("w1", "write_file", { path: "approved.txt", content: "yes" })],
      [{ type: "text", text: "written" }],
    ]);
    const base = { model, tools: toAiSdkTools(fileTools(), ctx), maxTurns: 5 };
    const first = await runAgentLoop({
      ...base,
      hooks: governedHooks(gov),
      messages: [{ role: "user", content: "write" }],
    });
    assert.equal(first.status, "paused");
    assert.equal(first.pending[0].reason, "writes need a human");
    assert.throws(() => lstatSync(join(ws, "approved.txt")));
    gov.approved.add("w1");
    const messages: ModelMessage[] = [...first.messages, ...approvalMessages(first.messages, ["w1"], true)];
    const second = await runAgentLoop({ ...base, hooks: governedHooks(gov, { resumed: first.pending }), messages });
    assert.equal(second.status, "done", JSON.stringify(second.error));
    assert.equal(second.text, "written");
    // The resumed run sent the model the whole conversation: the first read's result included.
    const lastPrompt = JSON.stringify(model.doGenerateCalls.at(-1)!.prompt);
    assert.match(lastPrompt, /one two one/);
    assert.match(lastPrompt, /approved\.txt/);
    assert.equal(readFileSync(join(ws, "approved.txt"), "utf8"), "yes");
    // One consultation per call: the approved call was answered from its record, not proposed again.
    assert.deepEqual(gov.steps.map((s) => [s.call_id, s.decision.verdict, s.result?.status]), [
      ["r1", "allow", "ok"],
      ["w1", "allow", "ok"],
    ]);
  });
});

describe("govern()", () => {
  it("pauses on requires_approval; gov.approve and a fresh aiSdk() run the call without asking again", async () => {
    let consulted = 0;
    const gov = await govern({
      policies: [{
        name: "Gate",
        version: "1.0",
        advise: () => {
          consulted++;
          return { kind: "veto", advice: "ask first", requires_approval: true };
        },
      }],
    });
    const ws3 = join(tmp.path, "govern");
    mkdirSync(ws3, { recursive: true });
    const model = scriptedMock([
      [call("g1", "write_file", { path: "g.txt", content: "approved" })],
      [{ type: "text", text: "ok" }],
    ]);
    const tools = toAiSdkTools(fileTools(), { ...ctx, workspace: ws3 });
    const first = await generateText({ model, tools, prompt: "go", stopWhen: isStepCount(3), ...gov.aiSdk() });
    assert.deepEqual(gov.last!.pending.map((p) => [p.call_id, p.reason]), [["g1", "ask first"]]);
    assert.throws(() => lstatSync(join(ws3, "g.txt")));
    gov.approve("g1");
    const messages: ModelMessage[] = [
      { role: "user", content: "go" },
      ...first.responseMessages,
      ...approvalMessages(first.responseMessages, ["g1"], true),
    ];
    const second = await generateText({ model, tools, messages, stopWhen: isStepCount(3), ...gov.aiSdk() });
    assert.equal(second.text, "ok");
    assert.equal(readFileSync(join(ws3, "g.txt"), "utf8"), "approved");
    assert.equal(consulted, 1);
    assert.deepEqual(gov.steps.map((s) => [s.call_id, s.decision.verdict, s.result?.status]), [["g1", "allow", "ok"]]);
    gov.close();
  });
});

describe("govern() over an episode core", () => {
  it("a parallel call decided before the one that asks runs first; pauseDeferred() then writes the pause", async () => {
    const root = join(tmp.path, "govern-core-root");
    const ws4 = join(tmp.path, "govern-core");
    mkdirSync(ws4, { recursive: true });
    writeFileSync(join(ws4, "in.txt"), "in\n");
    const gate = {
      name: "Gate",
      version: "1.0",
      advise: (s: { action: { tool: string } }) =>
        s.action.tool === "write_file"
          ? { kind: "veto" as const, advice: "ask first", requires_approval: true }
          : undefined,
    };
    const core = await EpisodeCore.open("read then write", {
      root,
      workspace: ws4,
      using: "my-agent",
      policies: [gate],
    });
    const gov = await govern({ governor: core });
    const model = scriptedMock([
      [call("p1", "read_file", { path: "in.txt" }), call("p2", "write_file", { path: "out.txt", content: "x" })],
      [{ type: "text", text: "ok" }],
    ]);
    const tools = toAiSdkTools(fileTools(), { ...ctx, workspace: ws4 });
    await generateText({ model, tools, prompt: "go", stopWhen: isStepCount(3), ...gov.aiSdk() });
    assert.deepEqual(gov.last!.pending.map((p) => p.call_id), ["p2"]);
    assert.equal(core.pauseDeferred()?.startsWith("chk_"), true, "the pause, after the read's act event");
    core.close();
    const events = readFileSync(join(core.dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(events.at(-1).event_type, "run.checkpoint");
    assert.deepEqual(events.filter((e) => e.phase === "act").map((e) => e.payload.tool), ["read_file"]);
    assert.equal(approve(core.episodeId, { root, by: "ana" }).decision, "approved");
  });
});

describe("replay model", () => {
  it("plays back a recorded run exactly, and reports where a changed request diverges", async () => {
    const log = join(tmp.path, "model.jsonl");
    const appender = new JsonlAppender(log);
    const record = async (model: LanguageModel, prompt: string) =>
      await generateText({
        model: wrapLanguageModel({
          model: model as MockLanguageModelV4,
          middleware: modelRecorder(appender),
        }),
        tools: toAiSdkTools(fileTools(), ctx),
        prompt,
        stopWhen: isStepCount(3),
      });
    const live = await record(
      scriptedMock([[call("1", "read_file", { path: "a.txt" })], [{ type: "text", text: "read it" }]]),
      "read a",
    );
    appender.close();
    const turns = readModelLog(log);
    assert.equal(turns.length, 2);
    // Recorded as a delta: turn 2 continues turn 1's prompt and reuses its tools; read back whole.
    const raw = readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.equal(raw[1].request.prompt_from, 1);
    assert.equal(raw[1].request.tools_same, true);
    assert.equal(raw[1].request.prompt.length, 2);
    assert.equal((turns[1].request.prompt as unknown[]).length, 3);
    assert.deepEqual(turns[1].request.tools, turns[0].request.tools);
    const again = await generateText({
      model: replayModel(turns, new Redactor()),
      tools: toAiSdkTools(fileTools(), ctx),
      prompt: "read a",
      stopWhen: isStepCount(3),
    });
    assert.equal(again.text, live.text);
    writeFileSync(join(ws, "a.txt"), "changed\n");
    await assert.rejects(
      generateText({
        model: replayModel(turns, new Redactor()),
        tools: toAiSdkTools(fileTools(), ctx),
        prompt: "read a",
        stopWhen: isStepCount(3),
        maxRetries: 0,
      }),
      /replay diverged at model turn 2: the request differs at prompt\[2\]\.content\[0\]\.output\.value/,
    );
    writeFileSync(join(ws, "a.txt"), "one two one\n");
  });
});

describe("PolicyGovernor state", () => {
  it("gives policies the contract's snapshot: goal, plan steps with statuses, actions so far, frozen", async () => {
    const seen: { task: string; steps: string[]; actions: number; command: string; frozen: boolean }[] = [];
    const gov = await PolicyGovernor.create({
      task: "tidy up",
      policies: [{
        name: "Contract",
        version: "1.0",
        // deno-lint-ignore no-explicit-any
        advise(s: any) {
          let frozen = false;
          try {
            s.goal.task = "changed";
          } catch {
            frozen = true;
          }
          // The growing lists are read-only too (views, not frozen copies).
          for (const list of [s.plan.steps, s.outcomes.actions, s.recent_actions]) {
            try {
              list.push({});
              frozen = false;
            } catch { /* read-only */ }
          }
          seen.push({
            task: s.goal.task,
            steps: s.plan.steps.map((x: { id: string; status: string }) => `${x.id}:${x.status}`),
            actions: s.outcomes.actions.length,
            command: s.action.command,
            frozen,
          });
          return s.action.command.includes("rm") ? { kind: "veto", advice: "no rm" } : undefined;
        },
      }],
    });
    const a = await gov.propose({ kind: "tool", tool: "shell", input: { command: "ls" }, command: "ls" });
    await gov.record(a.step_id, { status: "ok" });
    const b = await gov.propose({ kind: "tool", tool: "shell", input: { command: "rm x" }, command: "rm x" });
    assert.equal(b.verdict, "deny");
    await gov.propose({ kind: "tool", tool: "read_file", input: { path: "a" } });
    assert.deepEqual(seen.map((x) => x.steps), [
      ["step-1:pending"],
      ["step-1:done", "step-2:pending"],
      ["step-1:done", "step-2:vetoed", "step-3:pending"],
    ]);
    assert.deepEqual(seen.map((x) => x.actions), [0, 1, 1]);
    assert.ok(seen.every((x) => x.task === "tidy up" && x.frozen));
    assert.equal(seen[2].command, 'read_file {"path":"a"}');
  });
});

describe("model log deltas", () => {
  it("records each request from the first message that changed, compared as JSON, and rebuilds every request", async () => {
    const log = join(tmp.path, "delta-model.jsonl");
    const appender = new JsonlAppender(log);
    const recorder = modelRecorder(appender);
    const model = { provider: "test", modelId: "m", specificationVersion: "v4" };
    const user = { role: "user", content: [{ type: "text", text: "go" }] };
    const said = (text: string) => ({ role: "assistant", content: [{ type: "text", text }] });
    const prompts: unknown[][] = [
      [user],
      // New objects with the same JSON (and a member that is undefined): unchanged.
      [structuredClone(user), said("one"), {
        role: "user",
        content: [{ type: "text", text: "more" }],
        extra: undefined,
      }],
      // The same again without the undefined member: nothing new.
      [user, said("one"), { role: "user", content: [{ type: "text", text: "more" }] }],
      // An earlier message rewritten (a new object): the delta starts there.
      [user, said("ONE"), { role: "user", content: [{ type: "text", text: "more" }] }, said("two")],
      // Shorter than before.
      [user],
    ];
    for (const prompt of prompts) {
      await recorder.wrapGenerate!({
        doGenerate: () =>
          Promise.resolve({
            content: [{ type: "text", text: "ok" }],
            finishReason: { unified: "stop", raw: undefined },
            usage,
            warnings: [],
          }),
        doStream: () => Promise.reject(new Error("unused")),
        // deno-lint-ignore no-explicit-any
        params: { prompt } as any,
        // deno-lint-ignore no-explicit-any
        model: model as any,
      });
    }
    appender.close();
    const raw = readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(raw.map((t) => [t.request.prompt_from, t.request.prompt.length]), [
      [undefined, 1],
      [1, 2],
      [3, 0],
      [1, 3],
      [1, 0],
    ]);
    const whole = readModelLog(log).map((t) => t.request.prompt);
    assert.deepEqual(whole, prompts.map((p) => JSON.parse(JSON.stringify(p))));
  });
});
