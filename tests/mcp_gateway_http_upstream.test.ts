/**
 * `noema mcp --upstream URL`: how the gateway talks to its upstream over
 * HTTP. A client's body is ruled on and forwarded as the same UTF-8 JSON (a
 * charset or content coding the upstream could read otherwise is refused,
 * 415); a failed exchange is recorded as what is known of it (not reached,
 * or no usable answer: the server may have acted); the upstream's URL is
 * shown without its secrets; a redirect is never followed; an SSE answer's
 * events are relayed in order. The real CLI in front of a raw upstream
 * (tests/helpers/mcp_http.ts) that reads a body in the charset its
 * `Content-Type` names, as `express.json()` does.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { rulesFile } from "./helpers/mcp_gateway.ts";
import { openSession, rawPost, startGateway, startRawUpstream, toolCall } from "./helpers/mcp_http.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-mcp-upstream-");
after(() => tmp.cleanup());

function caseDir(name: string): { base: string; root: string } {
  const base = join(tmp.path, name);
  mkdirSync(base, { recursive: true });
  return { base, root: join(base, "root") };
}

describe("noema mcp --upstream: the exchange with the upstream", () => {
  it("refuses (415) a body in another charset or content coding, and forwards the UTF-8 JSON it ruled on", async () => {
    const { base, root } = caseDir("charset");
    const up = await startRawUpstream();
    const rules = rulesFile(base, {
      deny: [{ rule: "mcp__m__danger", reason: "danger is denied" }, { rule: "Read(//srv/secrets/**)" }],
    });
    const gw = startGateway(base, root, up.url, ["--name", "m", "--rules", rules]);
    try {
      const url = new URL(await gw.url);
      const session = await openSession(url);
      const utf7 = { ...session, "content-type": "application/json; charset=utf-7" };
      // The upstream reads "d+AGE-nger" in UTF-7 as "danger", and "/srv/secrets+AC8-key.pem" as "/srv/secrets/key.pem".
      const refused = [
        await rawPost(url, toolCall(2, "d+AGE-nger"), utf7),
        await rawPost(url, toolCall(3, "read_file", { path: "/srv/secrets+AC8-key.pem" }), utf7),
        await rawPost(url, toolCall(4, "safe"), { ...session, "content-type": "application/json;charset=ISO-8859-1" }),
        await rawPost(url, toolCall(5, "safe"), { ...session, "content-type": "text/plain" }),
        await rawPost(url, toolCall(6, "safe"), { ...session, "content-type": null }),
        await rawPost(url, toolCall(7, "safe"), { ...session, "content-encoding": "gzip" }),
      ];
      for (const r of refused) {
        assert.equal(r.status, 415, r.body);
        const error = JSON.parse(r.body).error;
        assert.equal(error.code, -32000, r.body);
        assert.match(error.message, /^noema mcp: .*(charset|Content-Type|Content-Encoding)/, r.body);
      }
      const ok = await rawPost(url, toolCall(8, "safe"), {
        ...session,
        "content-type": 'Application/JSON; Charset="UTF-8"',
      });
      assert.equal(ok.status, 200, ok.body);
      assert.match(ok.body, /ran safe/);
      assert.deepEqual(up.calls.map((c) => c.name), ["safe"], "no refused body reached the upstream");
      const call = up.requests.find((r) => r.body.includes('"tools/call"'))!;
      assert.equal(call.headers["content-type"], "application/json", "sent as UTF-8 JSON, no client charset");
      assert.equal(call.body, toolCall(8, "safe"), "the bytes ruled on");
    } finally {
      await gw.stop();
      await up.close();
    }
  });

  it("relays an SSE answer's events in the order the upstream sent them (a call's result before what followed it)", async () => {
    const { base, root } = caseDir("sse-order");
    const up = await startRawUpstream((call, res) => {
      const result = { jsonrpc: "2.0", id: call.id, result: { content: [{ type: "text", text: "the result" }] } };
      const note = { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "after" } };
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(`id: 1\ndata: ${JSON.stringify(result)}\n\nid: 2\ndata: ${JSON.stringify(note)}\n\n`);
      return true;
    });
    const gw = startGateway(base, root, up.url, ["--name", "m"]);
    try {
      const url = new URL(await gw.url);
      const session = await openSession(url);
      const r = await rawPost(url, toolCall(2, "notify_after"), session);
      assert.equal(r.status, 200, r.body);
      const data = r.body.split("\n").filter((l) => l.startsWith("data: ")).map((l) => JSON.parse(l.slice(6)));
      assert.deepEqual(data.map((m) => m.id ?? m.method), [2, "notifications/message"], r.body);
    } finally {
      await gw.stop();
      await up.close();
    }
  });
});
