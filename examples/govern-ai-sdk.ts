// Govern your own AI SDK agent with noema policies: a veto the model reads, an intervention that rewrites the
// arguments the tool runs with (through the AI SDK's experimental_refineToolInput).
//
//   bun examples/govern-ai-sdk.ts        (or: deno run -A examples/govern-ai-sdk.ts)
//
// The model here is the scripted OpenAI-compatible server from the tests (no network, no key); point
// `baseURL` at Ollama (http://127.0.0.1:11434/v1) or any Chat Completions server to use a real model.
import { generateText, isStepCount, jsonSchema, tool } from "ai";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import * as noema from "../mod.ts";
import { startOpenAiServer } from "../tests/helpers/openai_server.ts";

const server = await startOpenAiServer([
  { tool_calls: [{ id: "c1", name: "shell", arguments: '{"command":"rm -rf /"}' }] },
  { tool_calls: [{ id: "c2", name: "shell", arguments: '{"command":"echo cleaned"}' }] },
  { text: "Cleaned up without deleting everything." },
]);

// A policy as a plain object: no rm -rf.
const noRm = {
  name: "NoRm",
  version: "1.0",
  advise(state: noema.PolicyState) {
    if (String(state.action.input.command ?? "").includes("rm -rf")) return { kind: "veto" as const, advice: "rm -rf is not allowed" };
  },
};

// An intervention: the AI SDK's experimental_refineToolInput hands the tool the patched arguments.
const dryRun = {
  name: "DryRun",
  version: "1.0",
  advise(state: noema.PolicyState) {
    const command = String(state.action.input.command ?? "");
    if (command === "echo cleaned") return { kind: "intervention" as const, advice: "dry run", patch: { command: "echo cleaned --dry-run" } };
  },
};

const gov = await noema.govern({ policies: [noRm, dryRun], root: "." });
const model = createOpenAICompatible({ name: "local", baseURL: server.url }).chatModel("any");
const ran: string[] = [];
const tools = {
  shell: tool({
    description: "Run a command",
    inputSchema: jsonSchema<{ command: string }>({ type: "object", properties: { command: { type: "string" } }, required: ["command"] }),
    execute: ({ command }) => {
      ran.push(command);
      return { ran: command, stdout: command.startsWith("echo ") ? command.slice(5) : "" };
    },
  }),
};

const result = await generateText({ model, tools, prompt: "clean up", stopWhen: isStepCount(5), ...gov.aiSdk() });
await server.close();

for (const s of gov.steps) console.log(`${s.step_id}  ${s.action.tool} ${s.action.command}  → ${s.decision.verdict}${s.decision.reason ? ` (${s.decision.reason})` : ""}`);
console.log(`executed: ${ran.join("; ")}`);
console.log(`answer: ${result.text}`);
