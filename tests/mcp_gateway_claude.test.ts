/**
 * `noema mcp` in front of an MCP server used by the real Claude Code
 * (node_modules/.bin/claude, offline: a scripted Anthropic server plays the
 * model): Claude Code starts the gateway from its `--mcp-config`, the model's
 * denied call never reaches the server and the model reads noema's reason in
 * its tool_result, the allowed calls run, and the episode shows them all;
 * the same with the real `@modelcontextprotocol/server-filesystem` (run with Node).
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { runChild } from "./helpers/child.ts";
import { CLAUDE } from "./helpers/claude_session.ts";
import { startAnthropicServer } from "./helpers/anthropic_server.ts";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { events, rulesFile, sealedEpisode, serverCalls, serverCommand } from "./helpers/mcp_gateway.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-mcp-claude-");
/** The real filesystem MCP server, run with Node. */
const FILESYSTEM = join(REPO, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js");

/** The real Claude Code, offline against a scripted model server, with the MCP servers of `config` only. */
function claudeWithMcp(config: string, at: { ws: string; home: string; modelUrl: string }, allowedTools: string[]) {
  return runChild(CLAUDE, [
    "-p",
    "use the fs tools",
    "--output-format",
    "json",
    "--mcp-config",
    config,
    "--strict-mcp-config",
    "--allowedTools",
    ...allowedTools,
  ], {
    cwd: at.ws,
    env: {
      ...process.env,
      HOME: at.home,
      NOEMA_ROOT: "",
      ANTHROPIC_BASE_URL: at.modelUrl,
      ANTHROPIC_API_KEY: "test",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
    timeoutMs: 240_000,
  });
}
after(() => tmp.cleanup());

describe("noema mcp under the real Claude Code", () => {
  it("denies a write into secret/ with the model told why, lets the others run, records all three", async () => {
    const base = tmp.path;
    const home = join(base, "home"), ws = join(base, "ws"), root = join(base, "root");
    for (const d of [home, ws, join(ws, "secret")]) mkdirSync(d, { recursive: true });
    writeFileSync(join(ws, "a.txt"), "alpha\n");
    const calls = join(base, "calls.jsonl");
    const rules = rulesFile(base, { deny: [{ rule: "Edit(./secret/**)", reason: "secret/ is read-only" }] });
    const [command, ...args] = [
      ...cliCommand(),
      "mcp",
      "--name",
      "fs",
      "--root",
      root,
      "--rules",
      rules,
      "--",
      ...serverCommand(ws, calls),
    ];
    const config = join(base, "mcp.json");
    writeFileSync(config, JSON.stringify({ mcpServers: { fs: { command, args } } }));
    const server = await startAnthropicServer([
      {
        text: "Writing.",
        tools: [{ id: "toolu_w1", name: "mcp__fs__write_file", input: { path: "secret/x.txt", content: "no" } }],
      },
      {
        text: "Elsewhere.",
        tools: [{ id: "toolu_w2", name: "mcp__fs__write_file", input: { path: "ok.txt", content: "ok" } }],
      },
      { text: "Reading.", tools: [{ id: "toolu_r", name: "mcp__fs__read_file", input: { path: "a.txt" } }] },
      { text: "Done." },
    ]);
    try {
      const r = await claudeWithMcp(config, { ws, home, modelUrl: server.url }, [
        "mcp__fs__write_file",
        "mcp__fs__read_file",
      ]);
      assert.equal(r.code, 0, `claude exited ${r.code}: ${r.stderr}${r.stdout}`);
      const results = server.toolResults();
      const denied = results.get("toolu_w1");
      assert.equal(denied?.is_error, true, JSON.stringify(denied));
      assert.match(denied!.content, /noema \(Rules@1\.0\).*secret\/ is read-only/, "the model reads noema's reason");
      assert.equal(existsSync(join(ws, "secret", "x.txt")), false);
      assert.match(results.get("toolu_w2")?.content ?? "", /"path":"ok\.txt","bytes":2/); // structuredContent
      assert.equal(readFileSync(join(ws, "ok.txt"), "utf8"), "ok");
      assert.match(results.get("toolu_r")?.content ?? "", /alpha/);
      assert.deepEqual(serverCalls(calls).map((c) => c.arguments.path), ["ok.txt", "a.txt"]);
    } finally {
      await server.close();
    }
    const id = await sealedEpisode(root);
    const v = cli(["validate", id], { env: { NOEMA_ROOT: root } });
    assert.equal(v.code, 0, v.stdout);
    const acts = events(root, id).filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.deepEqual(acts.map((a) => [a.tool, a.step_status]), [
      ["mcp__fs__write_file", "vetoed"],
      ["mcp__fs__write_file", "done"],
      ["mcp__fs__read_file", "done"],
    ]);
  });

  it("governs the real @modelcontextprotocol/server-filesystem: a denied write_file writes nothing, an allowed one writes", async () => {
    const base = join(tmp.path, "real-fs");
    const home = join(base, "home"), ws = join(base, "ws"), root = join(base, "root");
    for (const d of [home, ws, join(ws, "secret")]) mkdirSync(d, { recursive: true });
    const rules = rulesFile(base, { deny: [{ rule: "Edit(./secret/**)", reason: "secret/ is read-only" }] });
    const [command, ...args] = [
      ...cliCommand(),
      "mcp",
      "--name",
      "fs",
      "--root",
      root,
      "--rules",
      rules,
      "--workspace",
      ws,
      "--",
      "node",
      FILESYSTEM,
      ws,
    ];
    const config = join(base, "mcp.json");
    writeFileSync(config, JSON.stringify({ mcpServers: { fs: { command, args } } }));
    const secret = join(ws, "secret", "x.txt"), ok = join(ws, "ok.txt");
    const server = await startAnthropicServer([
      {
        text: "Writing.",
        tools: [{ id: "toolu_w1", name: "mcp__fs__write_file", input: { path: secret, content: "no" } }],
      },
      {
        text: "Elsewhere.",
        tools: [{ id: "toolu_w2", name: "mcp__fs__write_file", input: { path: ok, content: "ok" } }],
      },
      { text: "Done." },
    ]);
    try {
      const r = await claudeWithMcp(config, { ws, home, modelUrl: server.url }, ["mcp__fs__write_file"]);
      assert.equal(r.code, 0, `claude exited ${r.code}: ${r.stderr}${r.stdout}`);
      const results = server.toolResults();
      const denied = results.get("toolu_w1");
      assert.equal(denied?.is_error, true, JSON.stringify(denied));
      assert.match(denied!.content, /noema \(Rules@1\.0\).*secret\/ is read-only/, "the model reads noema's reason");
      assert.equal(existsSync(secret), false, "the denied write wrote nothing");
      assert.notEqual(results.get("toolu_w2")?.is_error, true, JSON.stringify(results.get("toolu_w2")));
      assert.equal(readFileSync(ok, "utf8"), "ok");
    } finally {
      await server.close();
    }
    const id = await sealedEpisode(root);
    const v = cli(["validate", id], { env: { NOEMA_ROOT: root } });
    assert.equal(v.code, 0, v.stdout);
    const acts = events(root, id).filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.deepEqual(acts.map((a) => [a.tool, a.step_status]), [
      ["mcp__fs__write_file", "vetoed"],
      ["mcp__fs__write_file", "done"],
    ]);
  });
});
