/**
 * `noema mcp --upstream URL --listen HOST:PORT`: the gateway over Streamable
 * HTTP. A real MCP server over HTTP (the SDK's, tests/helpers/mcp_server.ts,
 * in this process), the real noema CLI as a child process in front of it, and
 * the SDK's Streamable HTTP client talking to the gateway.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { cli, cliCommand, IS_DENO } from "./helpers/cli.ts";
import { type CallResult, env, events, rulesFile, withBound } from "./helpers/mcp_gateway.ts";
import { startMcpHttpServer } from "./helpers/mcp_server.ts";
import { startGateway } from "./helpers/mcp_http.ts";
import { tempDir } from "./helpers/tmp.ts";
import { runChild } from "./helpers/child.ts";

const tmp = tempDir("noema-mcp-http-");
after(() => tmp.cleanup());

/** One raw POST to the gateway: its status and body. */
function rawPost(url: URL, body: string, headers: Record<string, string> = {}) {
  return withBound(
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      }, (res) => {
        let text = "";
        res.on("data", (d: Uint8Array) => text += new TextDecoder().decode(d));
        res.on("end", () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on("error", reject);
      req.end(body);
    }),
    "post",
  );
}

describe("noema mcp over Streamable HTTP", () => {
  it("a --listen port in use is one line on stderr, exit 1 (not a stack, not a process that hangs on)", {
    timeout: 90_000,
  }, async () => {
    const base = join(tmp.path, "in-use");
    mkdirSync(base, { recursive: true });
    const root = join(base, "root");
    const upstream = await startMcpHttpServer();
    const gw = startGateway(base, root, upstream.url, ["--name", "demo"]);
    try {
      const taken = new URL(await gw.url).host;
      const [command, ...args] = [...cliCommand(), "mcp", "--upstream", upstream.url, "--listen", taken];
      const r = await runChild(command, args, { cwd: base, env: env(root), timeoutMs: 30_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /^noema: cannot listen on 127\.0\.0\.1:\d+: .*\n$/);
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });

  it("governs tools/call, filters tools/list, relays the rest, and seals the session's episode", async () => {
    const base = join(tmp.path, "http");
    mkdirSync(base, { recursive: true });
    const root = join(base, "root");
    const upstream = await startMcpHttpServer();
    const rules = rulesFile(base, { deny: [{ rule: "mcp__demo__boom", reason: "no booms" }] });
    const gw = startGateway(base, root, upstream.url, ["--name", "demo", "--rules", rules]);
    const direct = new Client({ name: "direct", version: "1.0" });
    const client = new Client({ name: "http-test", version: "1.0" });
    try {
      await withBound(direct.connect(new StreamableHTTPClientTransport(new URL(upstream.url))), "direct");
      await withBound(client.connect(new StreamableHTTPClientTransport(new URL(await gw.url))), "connect");
      const names = (await withBound(client.listTools(), "list")).tools.map((t) => t.name);
      assert.deepEqual(names, ["echo"], "boom, always denied, is left out");
      const echo = await withBound(client.callTool({ name: "echo", arguments: { text: "hi" } }), "echo");
      assert.deepEqual(echo, await direct.callTool({ name: "echo", arguments: { text: "hi" } }));
      const boom = await withBound(client.callTool({ name: "boom", arguments: {} }), "boom") as CallResult;
      assert.equal(boom.isError, true);
      assert.match(boom.content[0].text, /noema \(Rules@1\.0\).*no booms/, "answered by the gateway, not the server");
      await client.close();
    } finally {
      await direct.close();
    }
    const code = await gw.stop();
    // Deno's child_process reports no exit code for a child it sent a signal to, whatever the child exited with.
    if (!IS_DENO) assert.equal(code, 0, gw.stderr());
    await upstream.close();
    const ids = readdirSync(join(root, "episodes")).filter((f) => f.startsWith("ep_"));
    assert.equal(ids.length, 1, gw.stderr());
    const id = ids[0];
    assert.equal(existsSync(join(root, "episodes", id, "manifest.json")), true);
    const v = cli(["validate", id], { env: { NOEMA_ROOT: root } });
    assert.equal(v.code, 0, v.stdout);
    const acts = events(root, id).filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.deepEqual(acts.map((a) => [a.tool, a.step_status]), [["mcp__demo__echo", "done"], [
      "mcp__demo__boom",
      "vetoed",
    ]]);
  });

  it("keeps one episode per MCP session of a stateful upstream, sealed when the client ends it (DELETE)", async () => {
    const base = join(tmp.path, "sessions");
    mkdirSync(base, { recursive: true });
    const root = join(base, "root");
    const upstream = await startMcpHttpServer({ sessions: true });
    const gw = startGateway(base, root, upstream.url, ["--name", "demo"]);
    const url = new URL(await gw.url);
    const a = new Client({ name: "client-a", version: "1.0" });
    const b = new Client({ name: "client-b", version: "1.0" });
    const ta = new StreamableHTTPClientTransport(url);
    await withBound(a.connect(ta), "connect a");
    await withBound(b.connect(new StreamableHTTPClientTransport(url)), "connect b");
    assert.equal(typeof ta.sessionId, "string", "the upstream's session id reaches the client");
    for (const [c, text] of [[a, "from a"], [b, "from b"], [a, "again a"]] as const) {
      const r = await withBound(c.callTool({ name: "echo", arguments: { text } }), text) as CallResult;
      assert.equal(r.content[0].text, `echo: ${text}`);
    }
    await withBound(ta.terminateSession(), "DELETE");
    const episodes = () => readdirSync(join(root, "episodes")).filter((f) => f.startsWith("ep_"));
    const taskOf = (id: string) => String((events(root, id)[0].payload as { task: string }).task);
    const ofA = episodes().find((id) => /client-a/.test(taskOf(id)))!;
    assert.equal(existsSync(join(root, "episodes", ofA, "manifest.json")), true, "a's episode sealed at DELETE");
    const r = await withBound(b.callTool({ name: "echo", arguments: { text: "still b" } }), "b") as CallResult;
    assert.equal(r.content[0].text, "echo: still b");
    await a.close();
    await b.close();
    await gw.stop();
    await upstream.close();
    const ofB = episodes().find((id) => /client-b/.test(taskOf(id)))!;
    assert.deepEqual(episodes().sort(), [ofA, ofB].sort(), "one episode per session");
    const acts = (id: string) => events(root, id).filter((e) => e.phase === "act").length;
    assert.deepEqual([acts(ofA), acts(ofB)], [2, 2]);
    for (const id of [ofA, ofB]) assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: root } }).code, 0);
  });

  it("refuses a request whose Host or Origin is not loopback (DNS rebinding), and serves a local one", async () => {
    const base = join(tmp.path, "rebinding");
    mkdirSync(base, { recursive: true });
    const root = join(base, "root");
    const upstream = await startMcpHttpServer();
    const gw = startGateway(base, root, upstream.url, ["--name", "demo"]);
    try {
      const url = new URL(await gw.url);
      const init = JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      });
      const post = (headers: Record<string, string>) => rawPost(url, init, headers);
      const evilHost = await post({ host: `evil.example:${url.port}` });
      assert.equal(evilHost.status, 403, evilHost.body);
      assert.match(evilHost.body, /Host evil\.example:\d+ is not this machine's loopback/);
      const evilOrigin = await post({ origin: "http://evil.example" });
      assert.equal(evilOrigin.status, 403, evilOrigin.body);
      assert.match(evilOrigin.body, /Origin http:\/\/evil\.example is not/);
      const local = await post({ host: `localhost:${url.port}`, origin: "http://localhost:5173" });
      assert.equal(local.status, 200, local.body);
      assert.match(local.body, /"serverInfo"/);
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });

  // A raw upstream whose answers a client reads, each spelled as a parser that differs from the gateway's would
  // miss: a batch of one (the SDK's HTTP client takes an array), a media type in capitals, SSE lines ended by lone
  // CRs.
  const styles: Record<string, { type: string; body: (json: string, m: string) => string }> = {
    "a JSON array": { type: "application/json", body: (json) => `[${json}]` },
    "Application/JSON": { type: "Application/JSON", body: (json) => json },
    "SSE with lone CRs": { type: "text/event-stream", body: (json) => `event: message\rdata: ${json}\r\r` },
  };
  for (const [style, answer] of Object.entries(styles)) {
    it(`governs an upstream's answers sent as ${style}: tools/list pinned and filtered, tools/call recorded`, async () => {
      const base = join(tmp.path, `answers-${Object.keys(styles).indexOf(style)}`);
      mkdirSync(base, { recursive: true });
      const root = join(base, "root");
      const upstream = createServer((req, res) => {
        let body = "";
        req.on("data", (d: Uint8Array) => body += new TextDecoder().decode(d));
        req.on("end", () => {
          const m = req.method === "POST" ? JSON.parse(body) : null;
          if (m === null || m.id === undefined) return void res.writeHead(m === null ? 405 : 202).end();
          const tool = (name: string) => ({ name, description: name, inputSchema: { type: "object" } });
          const result = m.method === "initialize"
            ? {
              protocolVersion: m.params.protocolVersion,
              capabilities: { tools: {} },
              serverInfo: { name: "evil", version: "1" },
            }
            : m.method === "tools/list"
            ? { tools: [tool("note"), tool("wipe")] }
            : m.method === "tools/call"
            ? { content: [{ type: "text", text: `ran ${m.params.name}` }] }
            : {};
          res.writeHead(200, { "content-type": answer.type });
          res.end(answer.body(JSON.stringify({ jsonrpc: "2.0", id: m.id, result }), m.method));
        });
      });
      await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
      const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/mcp`;
      const rules = rulesFile(base, { deny: ["mcp__evil__wipe"] });
      const gw = startGateway(base, root, upstreamUrl, ["--name", "evil", "--rules", rules]);
      const client = new Client({ name: "answers-test", version: "1.0" });
      try {
        await withBound(client.connect(new StreamableHTTPClientTransport(new URL(await gw.url))), "connect");
        const names = (await withBound(client.listTools(), "list")).tools.map((t) => t.name);
        assert.deepEqual(names, ["note"], "wipe, always denied, is left out");
        const r = await withBound(client.callTool({ name: "note", arguments: {} }), "note") as CallResult;
        assert.equal(r.content[0].text, "ran note");
        await client.close();
      } finally {
        await gw.stop();
        await new Promise<void>((r) => upstream.close(() => r()));
      }
      const pins = JSON.parse(readFileSync(join(root, "mcp", "pins", "evil.json"), "utf8"));
      assert.deepEqual(Object.keys(pins.tools).sort(), ["note", "wipe"], "the listed tools are pinned");
      const ids = readdirSync(join(root, "episodes")).filter((f) => f.startsWith("ep_"));
      const acts = events(root, ids[0]).filter((e) => e.phase === "act").map((e) =>
        e.payload as Record<string, unknown>
      );
      assert.deepEqual(acts.map((a) => [a.tool, a.step_status, a.result_status]), [["mcp__evil__note", "done", "ok"]]);
    });
  }

  it("relays no batch holding a tools/call, however the method is escaped, nor a body that is not JSON", async () => {
    const base = join(tmp.path, "batch");
    mkdirSync(base, { recursive: true });
    const upstream = await startMcpHttpServer();
    const gw = startGateway(base, join(base, "root"), upstream.url, ["--name", "demo"]);
    try {
      const url = new URL(await gw.url);
      const params = `"params":{"name":"echo","arguments":{"text":"x"}}`;
      for (const method of [`"tools/call"`, `"tools\\/call"`, `"tools\\u002fcall"`]) {
        const r = await rawPost(url, `[{"jsonrpc":"2.0","id":2,"method":${method},${params}}]`);
        assert.equal(r.status, 400, `${method}: ${r.body}`);
        assert.match(r.body, /a JSON-RPC batch holding tools\/call is not relayed/);
      }
      const notJson = await rawPost(url, `{"jsonrpc":"2.0","id":3,"method":"tools/call",${params},}`);
      assert.equal(notJson.status, 400, notJson.body);
      assert.equal(JSON.parse(notJson.body).error.code, -32700);
    } finally {
      await gw.stop();
      await upstream.close();
    }
  });

  it("sessions hold under faults: a failed request blocks no client, clients connecting at once get a session each, a forged id gets 404", async () => {
    const base = join(tmp.path, "faults");
    mkdirSync(base, { recursive: true });
    const root = join(base, "root");
    const upstream = await startMcpHttpServer({ sessions: true });
    const gw = startGateway(base, root, upstream.url, ["--name", "demo"]);
    const clients: Client[] = [];
    try {
      const url = new URL(await gw.url);
      // A request without a session that the upstream refuses with an error of no id: its id 0 is not left in flight.
      const stray = await rawPost(url, JSON.stringify({ jsonrpc: "2.0", id: 0, method: "tools/list" }));
      assert.equal(stray.status, 400, stray.body);
      // Two SDK clients at once (both initialize with id 0): each gets its own session, and episode.
      for (const name of ["client-a", "client-b"]) clients.push(new Client({ name, version: "1.0" }));
      await withBound(Promise.all(clients.map((c) => c.connect(new StreamableHTTPClientTransport(url)))), "connect");
      for (const [i, c] of clients.entries()) {
        const r = await withBound(c.callTool({ name: "echo", arguments: { text: `to ${i}` } }), "echo") as CallResult;
        assert.equal(r.content[0].text, `echo: to ${i}`);
      }
      // A session id the upstream never assigned through the gateway: not found, nothing relayed, no episode.
      const call = JSON.stringify({
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: { name: "echo", arguments: {} },
      });
      const forged = await rawPost(url, call, { "mcp-session-id": "forged-1" });
      assert.equal(forged.status, 404, forged.body);
      assert.match(JSON.parse(forged.body).error.message, /session "forged-1" not found/);
    } finally {
      for (const c of clients) await c.close();
      await gw.stop();
      await upstream.close();
    }
    const ids = readdirSync(join(root, "episodes")).filter((f) => f.startsWith("ep_"));
    const tasks = ids.map((id) => String((events(root, id)[0].payload as { task: string }).task)).sort();
    assert.deepEqual(tasks, ["MCP session: demo (client client-a)", "MCP session: demo (client client-b)"]);
    for (const id of ids) {
      const acts = events(root, id).filter((e) => e.phase === "act");
      assert.equal(acts.length, 1, `${id}: one call each`);
      assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: root } }).code, 0);
    }
  });

  it("a call waiting for approval is never made once its client left, and SIGTERM gives up a wait at once", async () => {
    const base = join(tmp.path, "abandoned");
    mkdirSync(base, { recursive: true });
    const root = join(base, "root");
    const upstream = await startMcpHttpServer({ sessions: true });
    const rules = rulesFile(base, { ask: ["mcp__demo__echo"] });
    const gw = startGateway(base, root, upstream.url, ["--name", "demo", "--rules", rules, "--wait", "1h"]);
    const client = new Client({ name: "leaver", version: "1.0" });
    const url = new URL(await gw.url);
    await withBound(client.connect(new StreamableHTTPClientTransport(url)), "connect");
    const episodeDir = () => {
      const ids = readdirSync(join(root, "episodes")).filter((f) => f.startsWith("ep_"));
      return ids.length === 1 ? join(root, "episodes", ids[0]) : null;
    };
    const paused = async () => {
      for (let i = 0; i < 600; i++) {
        const dir = episodeDir();
        if (dir && readdirSync(dir).some((f) => f.startsWith("checkpoint"))) return dir;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error(`the call never paused: ${gw.stderr()}`);
    };
    // The client gives up waiting: its request is closed while the call waits for a decision.
    const leaving = new AbortController();
    const first = client.callTool({ name: "echo", arguments: { text: "first" } }, { signal: leaving.signal })
      .catch((e: unknown) => e);
    const dir = await paused();
    leaving.abort();
    await withBound(first, "the client's abandoned call");
    // Its wait ends with nothing decided: rejected (by timeout), so an approval now has nothing to approve.
    for (let i = 0; i < 600; i++) {
      const rejected = events(root, dir.split("/").pop()!).some((e) =>
        e.phase === "runtime" && /run\.(rejected|resume)/.test(String(e.event_type))
      );
      if (rejected) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const approve = cli(["approve", dir.split("/").pop()!, "--by", "ana"], { env: { NOEMA_ROOT: root } });
    assert.notEqual(approve.code, 0, `nothing waits any more: ${approve.stdout}${approve.stderr}`);
    // A second call waits; SIGTERM ends the gateway without waiting the hour out (the hang bound catches that).
    const second = client.callTool({ name: "echo", arguments: { text: "second" } }).catch((e: unknown) => e);
    const checkpoints = () => readdirSync(join(dir, "checkpoints")).filter((f) => f.endsWith(".json")).length;
    for (let i = 0; i < 600 && checkpoints() < 2; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(checkpoints(), 2, `the second call waits: ${gw.stderr()}`);
    await gw.stop();
    await withBound(second, "the second call");
    await upstream.close();
    const id = dir.split("/").pop()!;
    const acts = events(root, id).filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.deepEqual(acts.map((a) => a.step_status), ["vetoed", "vetoed"], "neither call reached the server");
    assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: root } }).code, 0);
  });
});
