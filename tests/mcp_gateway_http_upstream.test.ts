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
import { createServer } from "node:http";
import { mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { events, rulesFile } from "./helpers/mcp_gateway.ts";
import { openSession, rawPost, startGateway, startRawUpstream, toolCall } from "./helpers/mcp_http.ts";
import { listenLocal } from "./helpers/local_http.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-mcp-upstream-");
after(() => tmp.cleanup());

function caseDir(name: string): { base: string; root: string } {
  const base = join(tmp.path, name);
  mkdirSync(base, { recursive: true });
  return { base, root: join(base, "root") };
}

/** The act payloads of every episode under the root. */
function acts(root: string): Record<string, unknown>[] {
  const ids = readdirSync(join(root, "episodes")).filter((f) => f.startsWith("ep_"));
  return ids.flatMap((id) =>
    events(root, id).filter((e) => e.phase === "act").map((e) => e.payload as Record<string, unknown>)
  );
}

/** Every file's text under a directory. */
function allText(dir: string): string {
  return readdirSync(dir, { recursive: true }).map(String).map((f) => join(dir, f))
    .filter((p) => statSync(p).isFile()).map((p) => readFileSync(p, "utf8")).join("\n");
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

  it("records a call whose answer was lost or unusable as NoUsableAnswer (the server may have acted)", async () => {
    const { base, root } = caseDir("no-answer");
    const up = await startRawUpstream((call, res) => {
      const name = (call.params as { name: string }).name;
      const ok = JSON.stringify({ jsonrpc: "2.0", id: call.id, result: { content: [{ type: "text", text: name }] } });
      if (name === "reset") res.socket?.destroy(); // ran, then the connection reset before any answer
      else if (name === "garbage") res.writeHead(200, { "content-type": "application/json" }).end("{not json");
      else if (name === "html") res.writeHead(200, { "content-type": "text/html" }).end(ok);
      else return false;
      return true;
    });
    const gw = startGateway(base, root, up.url, ["--name", "m"]);
    try {
      const url = new URL(await gw.url);
      const session = await openSession(url);
      const reset = await rawPost(url, toolCall(2, "reset"), session);
      assert.equal(reset.status, 502, reset.body);
      for (const [id, name] of [[3, "garbage"], [4, "html"]] as const) {
        assert.equal((await rawPost(url, toolCall(id, name), session)).status, 200);
      }
    } finally {
      await gw.stop();
      await up.close();
    }
    // Each once: a POST is never sent again after its connection reset (Deno's pooled fetch did).
    assert.deepEqual(up.calls.map((c) => c.name), ["reset", "garbage", "html"], "the upstream ran each once");
    const recorded = acts(root).map((a) => [a.tool, a.error as { type: string; message: string }] as const);
    assert.equal(recorded.length, 3, JSON.stringify(recorded));
    for (const [tool, error] of recorded) {
      assert.equal(error?.type, "NoUsableAnswer", `${tool}: ${JSON.stringify(error)}`);
      assert.match(error.message, /may have acted/, String(tool));
      assert.doesNotMatch(error.message, /did not reach/, String(tool));
    }
  });

  it("shows the upstream without its userinfo or query (stderr, 502s, the record), and records a refused connection as NotDelivered", async () => {
    const { base, root } = caseDir("secrets");
    // Port 2 of 127.0.0.1: nothing listens there (see REFUSED_PORT), and no runtime's fetch blocks it.
    const upstream = "http://user:PASSW0RD@127.0.0.1:2/mcp?api_key=QUERYSECRET";
    const gw = startGateway(base, root, upstream, ["--name", "m"]);
    const answers: string[] = [];
    try {
      const url = new URL(await gw.url);
      const call = await rawPost(url, toolCall(2, "safe"));
      assert.equal(call.status, 502, call.body);
      assert.match(call.body, /upstream http:\/\/127\.0\.0\.1:2\/mcp\?…: /);
      const get = await rawPost(url, "", { "content-type": null }, "GET");
      assert.equal(get.status, 502, get.body);
      answers.push(call.body, get.body);
    } finally {
      await gw.stop();
    }
    assert.match(gw.stderr(), /listening on http:\/\/\S+ \(upstream http:\/\/127\.0\.0\.1:2\/mcp\?…\)/);
    const seen = [...answers, gw.stderr(), allText(root)].join("\n");
    for (const secret of ["PASSW0RD", "QUERYSECRET", "api_key"]) {
      assert.doesNotMatch(seen, new RegExp(secret), `${secret} shown: ${seen.slice(0, 2000)}`);
    }
    const [act] = acts(root);
    const error = act.error as { type: string; message: string };
    assert.equal(error.type, "NotDelivered", JSON.stringify(error));
    assert.match(error.message, /did not reach the server/);
  });

  it("never follows a redirect: a 307 or 303 is a failure naming where it pointed, without its secrets", async () => {
    const { base, root } = caseDir("redirect");
    const target = await startRawUpstream();
    let code = 307;
    const redirector = await listenLocal(createServer((req, res) => {
      req.resume();
      const to = target.url.replace("http://", "http://u:LOCPASS@") + "?token=LOCSECRET";
      res.writeHead(code, { location: to }).end();
    }));
    const gw = startGateway(base, root, `${redirector.origin}/mcp`, ["--name", "m"]);
    try {
      const url = new URL(await gw.url);
      const shown = target.url.replace(/[.:/]/g, "\\$&") + "\\?…";
      for (const [id, status] of [[2, 307], [3, 303]]) {
        code = status;
        const r = await rawPost(url, toolCall(id, "safe"));
        assert.equal(r.status, 502, r.body);
        assert.match(r.body, new RegExp(`HTTP ${status}.*redirect to ${shown}.*not followed`), r.body);
        assert.doesNotMatch(r.body, /LOCPASS|LOCSECRET/);
      }
      const get = await rawPost(url, "", { "content-type": null }, "GET");
      assert.equal(get.status, 502, get.body);
    } finally {
      await gw.stop();
      await redirector.close();
      await target.close();
    }
    assert.equal(target.requests.length, 0, "nothing reached where the redirects pointed");
    const errors = acts(root).map((a) => a.error as { type: string; message: string });
    assert.deepEqual(errors.map((e) => e.type), ["NoUsableAnswer", "NoUsableAnswer"]);
    for (const e of errors) assert.match(e.message, /redirect/);
    assert.doesNotMatch(allText(root), /LOCPASS|LOCSECRET/);
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
