/**
 * `noema mcp`: a real MCP client (the official SDK) talks to the real noema
 * CLI in a child process, which runs a real MCP server (the SDK's, in
 * tests/helpers/mcp_fs_server.ts) as its own child. What reached the server
 * is read from the server's calls log; what the episode says, from its
 * artifacts and `noema validate`.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { cli, REPO, runtimeCommand } from "./helpers/cli.ts";
import { GovernedSession } from "../src/agents/mcp/governed.ts";
import {
  type CallResult,
  connect,
  env,
  events,
  rawGateway,
  rulesFile,
  sealedEpisode,
  serverCalls,
  serverCommand,
  setup as setupIn,
  withBound,
} from "./helpers/mcp_gateway.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-mcp-gw-");

/** The raw line server (tests/helpers/mcp_raw_server.ts) for case `c`: its command, and the log of every line it got. */
function rawServer(c: { base: string }): { log: string; server: string[] } {
  const log = join(c.base, "raw.jsonl");
  const raw = join(REPO, "tests", "helpers", "mcp_raw_server.ts");
  return { log, server: [...runtimeCommand(), raw, log] };
}
after(() => tmp.cleanup());
const setup = (name: string) => setupIn(tmp.path, name);

describe("noema mcp gateway (stdio)", () => {
  it("denies a call before it reaches the server, passes an allowed one unchanged, records both", async () => {
    const c = setup("deny-allow");
    const rules = rulesFile(c.base, { deny: [{ rule: "mcp__fs__write_file", reason: "no writes through MCP" }] });
    // the rule denies write_file whatever its arguments: listed anyway with --list-denied, so the client can call it
    const { client } = await connect(c, ["--name", "fs", "--rules", rules, "--list-denied"]);
    const denied = await withBound(
      client.callTool({ name: "write_file", arguments: { path: "x.txt", content: "nope" } }),
      "denied call",
    ) as CallResult;
    assert.equal(denied.isError, true);
    assert.match(denied.content[0].text, /noema \(Rules@1\.0\).*no writes through MCP/);
    assert.equal(existsSync(join(c.dir, "x.txt")), false);
    assert.deepEqual(serverCalls(c.calls), [], "the denied call never reached the server");

    writeFileSync(join(c.dir, "a.txt"), "alpha\n");
    const read = await withBound(client.callTool({ name: "read_file", arguments: { path: "a.txt" } }), "read");
    assert.deepEqual(read, { content: [{ type: "text", text: "alpha\n" }] }, "the server's result, unchanged");
    assert.deepEqual(serverCalls(c.calls), [{ tool: "read_file", arguments: { path: "a.txt" } }]);
    await client.close();

    const id = await sealedEpisode(c.root);
    const v = cli(["validate", id], { env: { NOEMA_ROOT: c.root } });
    assert.equal(v.code, 0, v.stdout + v.stderr);
    const evs = events(c.root, id);
    const start = evs[0] as { payload: { using: string } };
    assert.equal(start.payload.using, "mcp");
    const governance = evs.filter((e) => e.phase === "governance").map((e) => e.payload as Record<string, unknown>);
    assert.equal(governance.length, 2);
    assert.match(String(governance[0].rule), /veto:Rules@1\.0/);
    const acts = evs.filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.deepEqual(
      acts.map((a) => [a.tool, a.step_status, a.result_status]),
      [["mcp__fs__write_file", "vetoed", "skipped"], ["mcp__fs__read_file", "done", "ok"]],
    );
  });

  it("leaves out of tools/list the tools a deny rule always denies, and only those", async () => {
    const c = setup("list");
    const rules = rulesFile(c.base, {
      deny: ["mcp__fs__delete_all", "mcp__fs__crash", "Edit(./secrets/**)"],
      ask: ["mcp__fs__write_file"],
    });
    const { client } = await connect(c, ["--name", "fs", "--rules", rules]);
    const names = (await withBound(client.listTools(), "list")).tools.map((t) => t.name).sort();
    // write_file is asked about, read_file only denied for some paths: both stay listed
    assert.deepEqual(names, ["read_file", "slow", "write_file"]);
    const hidden = await withBound(client.callTool({ name: "delete_all", arguments: {} }), "hidden") as CallResult;
    assert.equal(hidden.isError, true, "a tool left out is still denied when called");
    assert.deepEqual(serverCalls(c.calls), []);
    await client.close();
    await sealedEpisode(c.root);

    const all = setup("list-all");
    const { client: again } = await connect(all, ["--name", "fs", "--rules", rules, "--list-denied"]);
    const listed = (await withBound(again.listTools(), "list")).tools.map((t) => t.name).sort();
    assert.deepEqual(listed, ["crash", "delete_all", "read_file", "slow", "write_file"]);
    await again.close();
    await sealedEpisode(all.root);
  });

  it("passes everything else through unchanged: tools/list, resources, prompts", async () => {
    const c = setup("transparent");
    const { client } = await connect(c, ["--name", "fs"]);
    const [command, ...args] = serverCommand(c.dir, join(c.base, "direct-calls.jsonl"));
    const direct = new Client({ name: "gateway-test", version: "1.0" });
    await withBound(
      direct.connect(new StdioClientTransport({ command, args, env: env(c.root), stderr: "ignore" })),
      "direct",
    );
    try {
      const asks: [string, (x: Client) => Promise<unknown>][] = [
        ["tools/list", (x) => x.listTools()],
        ["resources/list", (x) => x.listResources()],
        ["resources/read", (x) => x.readResource({ uri: "notes://readme" })],
        ["prompts/list", (x) => x.listPrompts()],
        ["prompts/get", (x) => x.getPrompt({ name: "greet" })],
      ];
      for (const [what, ask] of asks) {
        const through = await withBound(ask(client), what);
        assert.deepEqual(through, await withBound(ask(direct), what), `${what} through the gateway is as direct`);
      }
      const read = await withBound(client.readResource({ uri: "notes://readme" }), "read");
      assert.equal((read.contents[0] as { text: string }).text, "the readme resource, served as is");
      assert.equal(
        (client.getServerVersion() as { name: string }).name,
        "test-fs",
        "initialize passes through: the client sees the server's own name",
      );
    } finally {
      await direct.close();
      await client.close();
    }
    const id = await sealedEpisode(c.root);
    const acts = events(c.root, id).filter((e) => e.phase === "act");
    assert.equal(acts.length, 0, "nothing but tools/call becomes a step");
  });

  it("records a write as an act step with the policies' state snapshot, and annotations as hints only", async () => {
    const c = setup("snapshot");
    const seen = join(c.base, "seen.jsonl");
    const policy = join(c.base, "look.ts");
    writeFileSync(
      policy,
      `import { appendFileSync } from "node:fs";
export default {
  name: "Look",
  version: "1.0",
  advise(s) {
    appendFileSync(${JSON.stringify(seen)}, JSON.stringify({ tool: s.action.tool, input: s.action.input,
      task: s.goal.task, steps: s.plan.steps.length }) + "\\n");
    if (String(s.action.input.content ?? "").includes("password")) return { kind: "veto", advice: "no passwords" };
  },
};
`,
    );
    const { client } = await connect(c, ["--name", "fs", "--policy", policy]);
    await withBound(client.listTools(), "list");
    const wrote = await withBound(
      client.callTool({ name: "write_file", arguments: { path: "w.txt", content: "hello" } }),
      "write",
    ) as CallResult;
    assert.deepEqual(wrote.structuredContent, { path: "w.txt", bytes: 5 }, JSON.stringify(wrote));
    assert.equal(readFileSync(join(c.dir, "w.txt"), "utf8"), "hello");
    const vetoed = await withBound(
      client.callTool({ name: "write_file", arguments: { path: "p.txt", content: "my password" } }),
      "vetoed",
    ) as CallResult;
    assert.equal(vetoed.isError, true);
    assert.match(vetoed.content[0].text, /noema \(Look@1\.0\): no passwords/);
    assert.equal(existsSync(join(c.dir, "p.txt")), false);
    await client.close();

    const looked = readFileSync(seen, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(looked[0], {
      tool: "mcp__fs__write_file",
      input: { path: "w.txt", content: "hello" },
      task: "MCP session: fs (client gateway-test)",
      steps: 1,
    });
    const id = await sealedEpisode(c.root);
    assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: c.root } }).code, 0);
    const evs = events(c.root, id);
    const hints = evs.filter((e) => e.phase === "direction").map((e) => e.payload as Record<string, unknown>)
      .filter((p) => p.policy === "McpGateway@1.0");
    assert.equal(hints[0].kind, "hint");
    assert.match(JSON.stringify(hints[0]), /untrusted annotations.*destructiveHint/);
    const acts = evs.filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.deepEqual(acts.map((a) => a.step_status), ["done", "vetoed"]);
    assert.deepEqual(acts[0].output, wrote, "the result as recorded is the server's");
  });

  it("shows the client what a policy's review lets through of a result (a redaction), and records the original", async () => {
    const c = setup("review");
    const policy = join(c.base, "no_keys.ts");
    writeFileSync(
      policy,
      `export default {
  name: "NoKeys",
  version: "1.0",
  review(s) {
    if (/sk-[a-z0-9]{8,}/.test(s.result.excerpt)) return { kind: "redact", patterns: ["sk-[a-z0-9]{8,}"], advice: "key masked" };
  },
};
`,
    );
    writeFileSync(join(c.dir, "env.txt"), "KEY=sk-abcdef123456\n");
    writeFileSync(join(c.dir, "plain.txt"), "nothing secret\n");
    const { client } = await connect(c, ["--name", "fs", "--policy", policy]);
    const masked = await withBound(client.callTool({ name: "read_file", arguments: { path: "env.txt" } }), "masked");
    assert.deepEqual(masked, { content: [{ type: "text", text: "KEY=[REDACTED]\n" }] });
    const plain = await withBound(client.callTool({ name: "read_file", arguments: { path: "plain.txt" } }), "plain");
    assert.deepEqual(plain, { content: [{ type: "text", text: "nothing secret\n" }] });
    await client.close();
    const id = await sealedEpisode(c.root);
    assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: c.root } }).code, 0);
    const reviews = events(c.root, id).filter((e) => e.phase === "governance")
      .map((e) => e.payload as Record<string, unknown>).filter((p) => p.stage === "review");
    assert.equal(reviews[0].decision, "redact");
  });

  it("a call run as a task (MCP tasks): its result, brought by tasks/result, is recorded and reviewed", async () => {
    const c = setup("task");
    const policy = join(c.base, "no_reports.ts");
    writeFileSync(
      policy,
      `export default {
  name: "NoReports",
  version: "1.0",
  review(s) {
    if (/Research Report/.test(s.result.excerpt)) return { kind: "redact", patterns: ["Research Report"], advice: "no" };
  },
};
`,
    );
    const everything = join(REPO, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
    const gw = await rawGateway(c, ["--name", "ev", "--policy", policy], ["node", everything, "stdio"]);
    gw.send({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name: "simulate-research-query", arguments: { topic: "tides" }, task: { ttl: 60_000 } },
    });
    const taskId = ((await gw.answer(1)).result as { task: { taskId: string } }).task.taskId;
    // Asked for at once, tasks/result answers when the task is done.
    gw.send({ jsonrpc: "2.0", id: 2, method: "tasks/result", params: { taskId } });
    const result = (await gw.answer(2)).result as CallResult;
    assert.match(result.content[0].text, /# \[REDACTED\]: tides/, "the review's redaction reaches the client");
    gw.send({ jsonrpc: "2.0", id: 3, method: "tasks/result", params: { taskId } });
    const again = (await gw.answer(3)).result as CallResult;
    assert.match(again.content[0].text, /# \[REDACTED\]: tides/, "and again, for the same task");
    assert.equal(await gw.close(), 0);
    const id = await sealedEpisode(c.root);
    assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: c.root } }).code, 0);
    const acts = events(c.root, id).filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.equal(acts.length, 1);
    assert.equal(acts[0].result_status, "ok");
    assert.match(JSON.stringify(acts[0].output), /Research Report: tides/, "the task's result, not its handle");
    const reviews = events(c.root, id).filter((e) => e.phase === "governance")
      .map((e) => e.payload as Record<string, unknown>).filter((p) => p.stage === "review");
    assert.equal(reviews[0].decision, "redact");
  });

  it("governs a tools/call inside a JSON-RPC batch from a raw client, and answers each message", async () => {
    const c = setup("batch");
    const rules = rulesFile(c.base, { deny: ["mcp__fs__delete_all"] });
    const gw = await rawGateway(c, ["--name", "fs", "--rules", rules]);
    gw.send([
      { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "delete_all", arguments: {} } },
      { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "read_file", arguments: { path: "none" } } },
      { jsonrpc: "2.0", id: 3, method: "tools/list" },
    ]);
    const denied = await gw.answer(1);
    assert.equal((denied.result as CallResult).isError, true);
    assert.match((denied.result as CallResult).content[0].text, /denied by rule "mcp__fs__delete_all"/);
    assert.match(((await gw.answer(2)).result as CallResult).content[0].text, /cannot read none/);
    const names = ((await gw.answer(3)).result as { tools: { name: string }[] }).tools.map((t) => t.name);
    assert.equal(names.includes("delete_all"), false);
    assert.deepEqual(
      serverCalls(c.calls).map((x) => x.tool),
      ["read_file"],
      "the denied call never reached the server",
    );
    assert.equal(await gw.close(), 0);
    const id = await sealedEpisode(c.root);
    assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: c.root } }).code, 0);
  });

  it("without --name, a tools/call sent before the server answered initialize is refused, not decided", async () => {
    // Deciding it then locked the session's name to the command's (mcp__node__…): no rule written for the server's
    // own name matched any call after it. The gateway's session, fed the messages in that order.
    const root = join(tmp.path, "early-call");
    const g = new GovernedSession({
      root,
      fallbackName: "node",
      session: { options: { root } },
      cwd: root,
      log: () => {},
    });
    const init = { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } };
    const line = (m: Record<string, unknown>) => JSON.stringify({ jsonrpc: "2.0", ...m });
    assert.ok(await g.clientMessage(line({ id: 1, method: "initialize", params: init })));
    const call = line({ id: 2, method: "tools/call", params: { name: "write_file", arguments: { path: "w.txt" } } });
    const early = await g.clientMessage(call) as { toClient?: { result: CallResult } };
    assert.equal(early?.toClient?.result.isError, true, JSON.stringify(early));
    assert.match(early.toClient!.result.content[0].text, /before the server answered initialize; not made/);
  });

  it("sends the server the arguments a policy patched, and records them", async () => {
    const c = setup("patch");
    const policy = join(c.base, "redirect.ts");
    writeFileSync(
      policy,
      `export default {
  name: "Redirect",
  version: "1.0",
  advise(s) {
    if (s.action.input.path === "secret.txt") return { kind: "intervention", patch: { path: "public.txt" }, advice: "read the public copy" };
  },
};
`,
    );
    writeFileSync(join(c.dir, "secret.txt"), "secret\n");
    writeFileSync(join(c.dir, "public.txt"), "public\n");
    const { client } = await connect(c, ["--name", "fs", "--policy", policy]);
    const r = await withBound(client.callTool({ name: "read_file", arguments: { path: "secret.txt" } }), "patched");
    assert.deepEqual(r, { content: [{ type: "text", text: "public\n" }] });
    assert.deepEqual(serverCalls(c.calls), [{ tool: "read_file", arguments: { path: "public.txt" } }]);
    await client.close();
    const id = await sealedEpisode(c.root);
    assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: c.root } }).code, 0);
    const act = events(c.root, id).find((e) => e.phase === "act")!.payload as Record<string, unknown>;
    assert.deepEqual(act.input, { path: "public.txt" });
  });

  it("relays nothing the server could read otherwise than the gateway: not JSON, a repeated key, a call without id", async () => {
    const c = setup("misread");
    const { log, server } = rawServer(c);
    const rules = rulesFile(c.base, { deny: ["mcp__raw__ask"] });
    const gw = await rawGateway(c, ["--name", "raw", "--rules", rules], server);
    const call = `"method":"tools/call","params":{"name":"ask","arguments":{}}`;
    const hostile = [
      `{"jsonrpc":"2.0","id":11,${call},"method":"ping"}`, // JSON.parse keeps the last method, other readers the first
      `{"jsonrpc":"2.0","id":12,${call},"m\\u0065thod":"ping"}`, // the same key, escaped
      `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"ask","arguments":{"n":NaN}}}`, // not JSON
      `{"jsonrpc":"2.0",${call}}`, // a tools/call notification: nobody could be told it was refused
      `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":["ask"],"arguments":{}}}`, // tools[["ask"]]
      `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"ask","arguments":["x"]}}`,
      `{"jsonrpc":"2.0","id":true,"method":"ping"}`, // an id Python's server takes for 1
    ];
    for (const line of hostile) gw.sendLine(line);
    gw.send({ jsonrpc: "2.0", id: 14, method: "ping" }); // answered after the others: they were handled before it
    await gw.answer(14);
    const errors = gw.received.filter((m) => m.error !== undefined).map((
      m,
    ) => [m.id, (m.error as { code: number }).code]);
    assert.deepEqual(errors, [[11, -32600], [12, -32600], [null, -32700], [15, -32602], [16, -32602], [null, -32600]]);
    const toServer = readFileSync(log, "utf8").trim().split("\n");
    for (const line of hostile) assert.equal(toServer.includes(line), false, `relayed: ${line}`);
    assert.equal(toServer.at(-1), JSON.stringify({ jsonrpc: "2.0", id: 14, method: "ping" }));
    assert.equal(await gw.close(), 0);
  });

  it("refuses a second request under an id still in flight (its answer would be recorded as the other's)", async () => {
    const c = setup("same-id");
    const { log, server } = rawServer(c);
    const gw = await rawGateway(c, ["--name", "raw"], server);
    const call = { jsonrpc: "2.0", id: 20, method: "tools/call", params: { name: "ask", arguments: {} } };
    gw.send(call); // the server then waits for the client's answer to its sampling request
    await withBound(
      (async () => {
        while (!gw.received.some((x) => x.method === "sampling/createMessage")) {
          await new Promise((r) => setTimeout(r, 20));
        }
      })(),
      "the server's sampling request",
    );
    gw.send({ ...call, params: { name: "ask", arguments: { again: true } } });
    gw.send({ jsonrpc: "2.0", id: 21, method: "ping" });
    await gw.answer(21);
    const refused = gw.received.find((m) => m.id === 20 && m.error !== undefined);
    assert.equal((refused?.error as { code?: number })?.code, -32600, JSON.stringify(gw.received));
    gw.send({
      jsonrpc: "2.0",
      id: "sampling-1",
      result: { role: "assistant", model: "m", content: { type: "text", text: "ok" } },
    });
    const answer = await withBound(
      (async () => {
        for (;;) {
          const m = gw.received.find((x) => x.id === 20 && x.result !== undefined);
          if (m) return m;
          await new Promise((r) => setTimeout(r, 20));
        }
      })(),
      "the first call's answer",
    );
    assert.deepEqual(answer.result, { content: [{ type: "text", text: "sampled: ok" }] });
    const calls = readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l))
      .filter((m) => m.method === "tools/call");
    assert.equal(calls.length, 1, "the second never reached the server");
    assert.equal(await gw.close(), 0);
  });

  it("relays what the server starts: progress, its sampling request to the client, and the client's answer", async () => {
    const c = setup("server-requests");
    const { log, server } = rawServer(c);
    const gw = await rawGateway(c, ["--name", "raw"], server);
    gw.send({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "ask", arguments: {}, _meta: { progressToken: "p1" } },
    });
    const sampling = await withBound(
      (async () => {
        for (;;) {
          const m = gw.received.find((x) => x.method === "sampling/createMessage");
          if (m) return m;
          await new Promise((r) => setTimeout(r, 20));
        }
      })(),
      "the server's sampling request",
    );
    assert.equal(sampling.id, "sampling-1", "the server's own request id, unchanged");
    gw.send({
      jsonrpc: "2.0",
      id: "sampling-1",
      result: { role: "assistant", model: "m", content: { type: "text", text: "hi!" } },
    });
    const answer = await gw.answer(7);
    assert.deepEqual(answer.result, { content: [{ type: "text", text: "sampled: hi!" }] });
    const progress = gw.received.find((x) => x.method === "notifications/progress");
    assert.deepEqual(progress?.params, { progressToken: "p1", progress: 1 });
    const toServer = readFileSync(log, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(toServer.find((m) => m.id === "sampling-1")?.result?.content, { type: "text", text: "hi!" });
    assert.equal(await gw.close(), 0);
    const id = await sealedEpisode(c.root);
    assert.equal(cli(["validate", id], { env: { NOEMA_ROOT: c.root } }).code, 0);
    const acts = events(c.root, id).filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>);
    assert.deepEqual(acts.map((a) => [a.tool, a.result_status]), [["mcp__raw__ask", "ok"]]);
  });
});
