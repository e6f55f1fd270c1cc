/**
 * `noema mcp` between a plain MCP SDK client (over stdio) and the real
 * `@modelcontextprotocol/server-filesystem` (run with Node): a `write_file`
 * a rule denies writes nothing and the client gets noema's reason; an allowed
 * one writes; the episode validates and records both calls with their
 * verdicts.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { type CallResult, env, events, rulesFile, sealedEpisode, withBound } from "./helpers/mcp_gateway.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-mcp-fs-");
after(() => tmp.cleanup());
/** The real filesystem MCP server, run with Node. */
const FILESYSTEM = join(REPO, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js");

describe("noema mcp with a plain SDK client and the real server-filesystem", () => {
  it("a denied write_file writes nothing and says why; an allowed one writes; both are recorded", async () => {
    const base = tmp.path, ws = join(base, "ws"), root = join(base, "root");
    mkdirSync(join(ws, "secret"), { recursive: true });
    const rules = rulesFile(base, { deny: [{ rule: "Edit(./secret/**)", reason: "secret/ is read-only" }] });
    const [command, ...args] = [
      ...cliCommand(),
      ...["mcp", "--name", "fs", "--root", root, "--rules", rules, "--workspace", ws, "--", "node", FILESYSTEM, ws],
    ];
    let stderr = "";
    const transport = new StdioClientTransport({ command, args, env: env(root), cwd: base, stderr: "pipe" });
    transport.stderr?.on("data", (d: Uint8Array) => stderr += new TextDecoder().decode(d));
    const client = new Client({ name: "fs-test", version: "1.0" });
    const secret = join(ws, "secret", "x.txt"), ok = join(ws, "ok.txt");
    try {
      await withBound(client.connect(transport), "connect");
      const tools = (await withBound(client.listTools(), "tools/list")).tools.map((t) => t.name);
      assert.ok(tools.includes("write_file"), `${tools}: ${stderr}`);
      const denied = await withBound(
        client.callTool({ name: "write_file", arguments: { path: secret, content: "no" } }),
        "denied call",
      ) as CallResult;
      assert.equal(denied.isError, true, JSON.stringify(denied));
      assert.match(denied.content.map((c) => c.text).join(" "), /secret\/ is read-only/);
      assert.equal(existsSync(secret), false, "the denied write wrote nothing");
      const allowed = await withBound(
        client.callTool({ name: "write_file", arguments: { path: ok, content: "ok" } }),
        "allowed call",
      ) as CallResult;
      assert.notEqual(allowed.isError, true, JSON.stringify(allowed));
      assert.equal(readFileSync(ok, "utf8"), "ok");
    } finally {
      await client.close();
    }
    const id = await sealedEpisode(root);
    const v = cli(["validate", id], { env: { NOEMA_ROOT: root } });
    assert.equal(v.code, 0, v.stdout + v.stderr);
    const acts = events(root, id).filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.deepEqual(acts.map((a) => [a.tool, a.step_status]), [
      ["mcp__fs__write_file", "vetoed"],
      ["mcp__fs__write_file", "done"],
    ]);
  });
});
