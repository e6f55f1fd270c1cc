/**
 * MCP servers' tools in the LLM agent: a real MCP server in a child process
 * (stdio); its tools are offered namespaced, each call is governed, results
 * and tool errors reach the model.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Redactor } from "../src/runtime/redact.ts";
import { parseLlmConfig } from "../src/llm/config.ts";
import { PolicyGovernor } from "../src/llm/policy_governor.ts";
import { runLlmAgent } from "../src/llm/agent.ts";
import { startOpenAiServer, toolMessages } from "./helpers/openai_server.ts";
import { startMcpHttpServer } from "./helpers/mcp_server.ts";
import { connectMcpServers } from "../src/llm/mcp.ts";
import { llmDriver } from "../src/llm/driver.ts";
import { REPO, runtimeCommand } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-llm-mcp-");
after(() => tmp.cleanup());

describe("llm agent with an MCP server", () => {
  it("offers its tools namespaced and governs each call", async () => {
    const server = await startOpenAiServer([
      {
        tool_calls: [
          { id: "m1", name: "mcp__demo__echo", arguments: '{"text":"hi"}' },
          { id: "m2", name: "mcp__demo__echo", arguments: '{"text":"secret plans"}' },
          { id: "m3", name: "mcp__demo__boom", arguments: "{}" },
        ],
      },
      { text: "done" },
    ]);
    const helper = join(REPO, "tests", "helpers", "mcp_server.ts");
    const [runtime, ...args] = [...runtimeCommand(), helper];
    const command = { command: runtime, args };
    const ws = join(tmp.path, "ws");
    mkdirSync(ws);
    const governor = await PolicyGovernor.create({
      policies: [{
        name: "NoSecrets",
        version: "1.0",
        advise: (s) =>
          s.action.tool.startsWith("mcp__") && JSON.stringify(s.action.input).includes("secret")
            ? { kind: "veto", advice: "no secrets through MCP" }
            : undefined,
      }],
    });
    try {
      const r = await runLlmAgent({
        task: "use the demo server",
        config: parseLlmConfig({
          base_url: server.url,
          model: "m",
          tools: ["read_file"],
          mcp_servers: { demo: { ...command, env: { PATH: process.env.PATH ?? "" } } },
        }),
        governor,
        workspace: ws,
        episodeDir: tmp.path,
        redactor: new Redactor(),
      });
      assert.equal(r.status, "done", JSON.stringify(r.error));
      const offered = (server.requests[0].tools as { function: { name: string } }[]).map((t) => t.function.name);
      assert.deepEqual(offered.sort(), ["mcp__demo__boom", "mcp__demo__echo", "read_file"]);
      assert.deepEqual(governor.steps.map((s) => `${s.action.tool}:${s.decision.verdict}`), [
        "mcp__demo__echo:allow",
        "mcp__demo__echo:deny",
        "mcp__demo__boom:allow",
      ]);
      const msgs = toolMessages(server.requests[1]);
      assert.match(msgs.get("m1")!, /echo: hi/);
      assert.match(msgs.get("m2")!, /no secrets through MCP/);
      assert.match(msgs.get("m3")!, /boom failed on purpose/);
      assert.equal(governor.steps[2].result?.status, "error");
    } finally {
      await server.close();
    }
  });

  it("connects over Streamable HTTP", async () => {
    const http = await startMcpHttpServer();
    const mcp = await connectMcpServers({ web: { url: http.url } });
    try {
      assert.deepEqual(mcp.tools.map((t) => t.name).sort(), ["mcp__web__boom", "mcp__web__echo"]);
      const echo = mcp.tools.find((t) => t.name === "mcp__web__echo")!;
      const ctx = { workspace: tmp.path, signal: new AbortController().signal };
      assert.match(String(await echo.execute({ text: "over http" }, ctx)), /echo: over http/);
      const boom = mcp.tools.find((t) => t.name === "mcp__web__boom")!;
      await assert.rejects(async () => await boom.execute({}, ctx), /boom failed on purpose/);
    } finally {
      await mcp.close();
      await http.close();
    }
  });

  it("a server that cannot start ends the run as an adapter error naming it, with complete artifacts", async () => {
    await assert.rejects(
      connectMcpServers({ broken: { command: "/nonexistent/mcp-server" } }),
      (e: { code?: string; message?: string }) =>
        e.code === "mcp_unreachable" && /adapter\.mcp_servers\.broken: cannot connect/.test(e.message ?? ""),
    );
    const root = join(tmp.path, "unreachable-root"), ws = join(tmp.path, "unreachable-ws");
    mkdirSync(ws, { recursive: true });
    const r = await llmDriver.run("use the broken server", {
      root,
      workspace: ws,
      adapter: {
        base_url: "http://127.0.0.1:9/v1",
        model: "m",
        mcp_servers: { broken: { command: "/nonexistent/mcp-server" } },
      },
    });
    assert.equal(r.status, "error");
    assert.ok(existsSync(join(r.episode_dir, "summary.json")) && existsSync(join(r.episode_dir, "manifest.json")));
    const state = JSON.parse(readFileSync(join(r.episode_dir, "state.json"), "utf8"));
    assert.equal(state.outcomes.error.type, "McpUnreachable");
    assert.match(state.outcomes.error.message, /^adapter\.mcp_servers\.broken: cannot connect/);
  });
});
