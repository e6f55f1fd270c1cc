// deno-lint-ignore-file no-explicit-any -- tests read answers as loose JSON
/**
 * `noema serve` over HTTP: the real server (a child process) over episodes
 * the real CLI wrote. The API answers what the CLI's --json prints; filters,
 * hostile content escaped, ids and paths kept inside the root, tokens,
 * the same-origin check, read-only, decisions recorded as `noema approve`
 * records them.
 *
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { tempDir } from "./helpers/tmp.ts";
import { cli } from "./helpers/cli.ts";
import { type LiveMessage, runsTicker } from "../src/serve/live.ts";
import { parseRunsQuery } from "../src/serve/runs.ts";
import { approvalPanel, waitingRun } from "../src/serve/approvals.ts";
import { GATE, HOSTILE, hostileRun, pausedRun, rawGet, runJson, type Served, startServe } from "./helpers/serve.ts";
import { FileStore } from "../src/shared_store/files/file_store.ts";
import { putWaiting, row, spoilCatalog } from "./helpers/store_rows.ts";

const tmp = tempDir();
const root = join(tmp.path, ".noema");
let s: Served;
let waiting: string, rejectMe: string, hostile: string, plain: string;

before(async () => {
  plain = String(runJson(root, ["run", "say hello", "--tag", "team=web", "--json"]).episode_id);
  waiting = pausedRun(root, "ship the release", ["team=infra"]);
  rejectMe = pausedRun(root, "ship on friday", ["team=infra"]);
  hostile = hostileRun(root, join(tmp.path, "policies"));
  // A planted link: an "episode" that is a symlink to another one, and a file link inside an episode.
  symlinkSync(join(root, "episodes", plain), join(root, "episodes", "ep_link"));
  writeFileSync(join(tmp.path, "secret.txt"), "top secret");
  symlinkSync(join(tmp.path, "secret.txt"), join(root, "episodes", hostile, "leak.txt"));
  s = await startServe(root);
});
after(async () => {
  await s?.stop();
  tmp.cleanup();
});

const get = (path: string, init: RequestInit = {}) => fetch(new URL(path, s.url), init);
const json = async (path: string) => {
  const r = await get(path);
  assert.equal(r.status, 200, `${path}: ${r.status}`);
  return await r.json() as any;
};

describe("pages and API", () => {
  test("the runs API answers what noema list --json prints; filters narrow it", async () => {
    const api = await json("/api/episodes");
    const listed = JSON.parse(cli(["--root", root, "list", "--json", "-n", "50"]).stdout);
    const pick = (xs: any[]) => xs.map((e) => [e.episode_id, e.status, e.run_state, e.task]);
    assert.deepEqual(pick(api), pick(listed));
    const infra = await json("/api/episodes?tag=team%3Dinfra&state=waiting_for_approval");
    assert.deepEqual(infra.map((e: any) => e.episode_id).sort(), [waiting, rejectMe].sort());
    assert.deepEqual((await json("/api/episodes?task=HELLO")).map((e: any) => e.episode_id), [plain]);
    assert.deepEqual((await json("/api/episodes?adapter=shell&policy=ApprovalGate%401.0")).length, 2);
    const page2 = await json("/api/episodes?size=1&page=2");
    assert.equal(page2[0].episode_id, api[1].episode_id, "paging");
    const oldest = await json("/api/episodes?order=oldest");
    assert.deepEqual(oldest.map((e: any) => e.episode_id), api.map((e: any) => e.episode_id).reverse(), "order");
    const html = await (await get("/?tag=team%3Dweb")).text();
    assert.match(html, new RegExp(`href="/episodes/${plain}"`));
    assert.doesNotMatch(html, new RegExp(waiting));
  });

  test("an episode: the page, the view (as noema view --json), the events (as stored), a raw file", async () => {
    const page = await (await get(`/episodes/${waiting}`)).text();
    assert.match(page, /Waiting for approval/);
    assert.match(page, /ApprovalGate@1\.0/);
    assert.match(page, /Plan &amp; actions/);
    const view = await json(`/api/episodes/${waiting}`);
    assert.deepEqual(view.run_state, JSON.parse(cli(["--root", root, "view", waiting, "--json"]).stdout).run_state);
    const events = await (await get(`/api/episodes/${waiting}/events`)).text();
    assert.equal(events, readFileSync(join(root, "episodes", waiting, "events.jsonl"), "utf8"));
    const raw = await get(`/episodes/${waiting}/files/state.json`);
    assert.equal(raw.headers.get("content-type"), "text/plain; charset=utf-8");
    assert.equal(raw.headers.get("x-content-type-options"), "nosniff");
    assert.equal(await raw.text(), readFileSync(join(root, "episodes", waiting, "state.json"), "utf8"));
    const evPage = await (await get(`/episodes/${waiting}/events?page=1`)).text();
    assert.match(evPage, /<details class="ev" id="ev-1">/);
  });

  test("every answer carries a strict CSP; the assets are embedded", async () => {
    const r = await get("/");
    const csp = r.headers.get("content-security-policy") ?? "";
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.match(await (await get("/assets/app.js")).text(), /EventSource/);
    assert.equal((await get("/assets/app.css")).headers.get("content-type"), "text/css; charset=utf-8");
  });

  test("hostile task, tag, tool output and policy advice are escaped everywhere", async () => {
    for (const path of ["/", `/episodes/${hostile}`, `/episodes/${hostile}/events`, `/compare/${hostile}/${plain}`]) {
      const html = await (await get(path)).text();
      assert.doesNotMatch(html, /<script>window|<img src=x|<svg onload|onerror="window/, path);
      assert.match(html, /&lt;script&gt;window\.__xss=1&lt;\/script&gt;/, path);
    }
    const html = await (await get(`/episodes/${hostile}`)).text();
    assert.ok(html.split("&lt;script&gt;window.__xss=1").length > 3, "task, output and advice all shown, escaped");
    assert.equal((await json(`/api/episodes/${hostile}`)).episode_id, hostile);
    assert.ok(HOSTILE.includes("<script>"));
  });

  test("ids and paths cannot leave the root: .., encoded slashes, symlinks", async () => {
    const cases: [string, number][] = [
      ["/episodes/..%2F..%2Fetc", 400],
      [`/episodes/${plain}%2F..`, 400],
      ["/api/episodes/%2e%2e", 0], // Bun's server folds it to /api/ (404), Deno's keeps it (400): refused either way
      ["/episodes/ep_link", 403],
      ["/api/episodes/ep_link", 403],
      [`/episodes/${hostile}/files/leak.txt`, 403],
      [`/episodes/${hostile}/files/..%2F${plain}%2Fstate.json`, 400],
      [`/episodes/${hostile}/files/%2e%2e`, 0],
      [`/episodes/${hostile}/files/approvals`, 404],
      ["/episodes/ep_nope", 404],
    ];
    for (const [path, status] of cases) {
      const r = await rawGet(s.url, path);
      const body = r.text;
      if (status === 0) assert.ok(r.status === 400 || r.status === 404, `${path}: ${r.status}`);
      else assert.equal(r.status, status, `${path}: ${body.slice(0, 200)}`);
      assert.doesNotMatch(body, /top secret|\n\s+at /, path);
    }
    const bad = await get("/api/episodes?status=nope");
    assert.equal(bad.status, 400);
    assert.match((await bad.json() as any).error.message, /status: unknown value "nope"/);
  });

  test("a cross-origin POST is refused and records nothing", async () => {
    const hostile: Record<string, string>[] = [{ origin: "http://evil.test" }, { "sec-fetch-site": "cross-site" }];
    for (const headers of hostile) {
      const r = await get(`/api/episodes/${rejectMe}/reject`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(r.status, 403);
      assert.equal((await r.json() as any).error.code, "cross_origin");
      const form = await get(`/approvals/${rejectMe}/decide`, {
        method: "POST",
        headers: { ...headers, "content-type": "application/x-www-form-urlencoded" },
        body: "decision=approved",
      });
      assert.equal(form.status, 403);
    }
    assert.ok(!existsSync(join(root, "episodes", rejectMe, "approvals")), "no decision written");
    const rebinding = await rawGet(s.url, "/api/episodes", { host: "evil.test:80" });
    assert.equal(rebinding.status, 403, "a token-less server answers only loopback Host names");
  });

  test("resuming a run no one decided on is a 409 saying so, not a redirect to a page where nothing happens", async () => {
    const r = await get(`/approvals/${rejectMe}/resume`, {
      method: "POST",
      headers: { origin: new URL(s.url).origin, "content-type": "application/x-www-form-urlencoded" },
      body: "",
      redirect: "manual",
    });
    assert.equal(r.status, 409);
    assert.match(await r.text(), /waits for a decision: approve or reject it first/);
    assert.ok(!existsSync(join(root, "episodes", rejectMe, "approvals")), "no decision written");
  });

  test("without tokens, a request from another local user is refused (403 other_user) and records nothing", async (t) => {
    assert.equal((await get("/api/episodes")).status, 200, "this user's own request");
    const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => existsSync(p));
    if (process.getuid?.() !== 0 || setpriv === undefined) {
      t.skip("sending as another user needs root and setpriv");
      return;
    }
    // As user nobody, over a plain socket (bash's /dev/tcp): what another account, or an agent run as one, can send.
    const { hostname, port } = new URL(s.url);
    const as = (method: string, path: string, body = "") => {
      const request = `${method} ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
      const r = spawnSync(setpriv, [
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "bash",
        "-c",
        `exec 3<>/dev/tcp/${hostname}/${port}; printf '%s' "$1" >&3; cat <&3`,
        "bash",
        request,
      ], { encoding: "utf8", timeout: 30_000 });
      return r.stdout;
    };
    for (
      const [method, path, body] of [["GET", "/api/episodes"], ["GET", `/episodes/${plain}`], [
        "POST",
        `/api/episodes/${rejectMe}/approve`,
        JSON.stringify({ note: "not me", resume: true }),
      ]]
    ) {
      const answer = as(method, path, body);
      assert.match(answer, /^HTTP\/1\.1 403/, `${method} ${path}: ${answer.slice(0, 300)}`);
      assert.match(answer, /another local user \(uid 65534\)/);
      assert.doesNotMatch(answer, /ship on friday|say hello/, "no episode content");
    }
    assert.ok(!existsSync(join(root, "episodes", rejectMe, "approvals")), "no decision written");
  });

  test("a request body over the limit is refused (413) before a route reads it, and records nothing", async () => {
    const origin = new URL(s.url).origin;
    const big = "x".repeat((1 << 20) + 1); // a decision's limit is 1 MiB
    const api = await get(`/api/episodes/${rejectMe}/reject`, {
      method: "POST",
      headers: { origin, "content-type": "application/json" },
      body: JSON.stringify({ note: big }),
    });
    assert.equal(api.status, 413);
    assert.equal((await api.json() as any).error.code, "too_large");
    const form = await get(`/approvals/${rejectMe}/decide`, {
      method: "POST",
      headers: { origin, "content-type": "application/x-www-form-urlencoded" },
      body: `decision=approved&note=${big}`,
    });
    assert.equal(form.status, 413);
    // Streamed (no content-length): counted as it comes.
    const chunks = new ReadableStream({
      start(c) {
        for (let i = 0; i < 3; i++) c.enqueue(new TextEncoder().encode(big.slice(0, 600_000)));
        c.close();
      },
    });
    const streamed = await get(`/api/episodes/${rejectMe}/reject`, {
      method: "POST",
      headers: { origin, "content-type": "application/json" },
      body: chunks,
      duplex: "half",
    } as RequestInit);
    assert.equal(streamed.status, 413);
    assert.ok(!existsSync(join(root, "episodes", rejectMe, "approvals")), "no decision written");
  });

  test("an approval card shows the whole pending command up to 64 KiB, and links the whole of a longer one", async () => {
    // Found by a break-it run: the card cut the middle of a 12,000-character command, where a second command hid.
    const padded = (n: number) => `echo deploy prod${" ".repeat(n)}; echo HIDDEN_MIDDLE;${" ".repeat(n)}# ok`;
    // An ask rule pauses any length of command (the approval gate's advice quotes it, and a verdict has a limit).
    const rules = join(tmp.path, "ask-sh.jsonc");
    writeFileSync(rules, JSON.stringify({ ask: ["Bash(sh:*)"] }));
    const run = (command: string) =>
      String(
        runJson(root, ["run", "long", "--using", "shell", "--rules", rules, "--json", "--", "sh", "-c", command])
          .episode_id,
      );
    const long = run(padded(6_000));
    const longer = run(padded(40_000));
    const card = (id: string) => {
      const w = waitingRun(root, id);
      assert.ok(w, `${id} waits`);
      return approvalPanel(w).value;
    };
    const whole = card(long);
    assert.match(whole, /HIDDEN_MIDDLE/);
    assert.doesNotMatch(whole, /characters cut/);
    const cut = card(longer);
    assert.match(cut, /characters cut/);
    assert.match(
      cut,
      /longer than shown here: <a href="\/episodes\/ep_\w+\/files\/checkpoints\/chk_\w+\.json">read the whole of it<\/a>/,
    );
    const href = /href="(\/episodes\/[^"]+\/files\/checkpoints\/[^"]+)"/.exec(cut)![1];
    assert.match(await (await get(href)).text(), /HIDDEN_MIDDLE/, "the link shows the whole action");
  });

  test("a decision body that is JSON but no object is a 400, and records nothing", async () => {
    // Found by a break-it run: `[]`, `1` or `null` were read as an empty decision and recorded.
    for (const body of ["[]", "1", "null", '"approve"', "[".repeat(1000) + "]".repeat(1000)]) {
      const r = await get(`/api/episodes/${rejectMe}/reject`, {
        method: "POST",
        headers: { origin: new URL(s.url).origin, "content-type": "application/json" },
        body,
      });
      assert.equal(r.status, 400, body.slice(0, 20));
      assert.equal((await r.json() as any).error.code, "bad_body");
    }
    assert.ok(!existsSync(join(root, "episodes", rejectMe, "approvals")), "no decision written");
  });

  test("reject with a note over the API: recorded as noema reject records it; resumed, the run ends vetoed", async () => {
    const r = await get(`/api/episodes/${rejectMe}/reject`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: new URL(s.url).origin },
      body: JSON.stringify({ note: "not on a friday", resume: true }),
    });
    assert.equal(r.status, 202);
    const rec = await r.json() as any;
    assert.equal(rec.decision, "rejected");
    assert.equal(rec.note, "not on a friday");
    const file = readdirSync(join(root, "episodes", rejectMe, "approvals"))[0];
    assert.equal(JSON.parse(readFileSync(join(root, "episodes", rejectMe, "approvals", file), "utf8")).note, rec.note);
    const again = await get(`/api/episodes/${rejectMe}/approve`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(again.status, 409);
    for (let i = 0; i < 600 && !existsSync(join(root, "episodes", rejectMe, "summary.json")); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const view = await json(`/api/episodes/${rejectMe}`);
    assert.equal(view.status, "vetoed");
    const page = await (await get(`/episodes/${rejectMe}`)).text();
    assert.match(page, /not on a friday/);
  });
});

describe("serve --open on a machine with no browser", () => {
  /** Waits (bounded: a hang, not a speed) until the server's stderr matches. */
  const said = async (t: Served, re: RegExp) => {
    for (let i = 0; i < 600 && !re.test(t.stderr()); i++) await new Promise((r) => setTimeout(r, 50));
    return t.stderr();
  };
  const headless = { DISPLAY: undefined, WAYLAND_DISPLAY: undefined, BROWSER: undefined };
  for (
    const [name, env, why] of [
      ["the opener finds no browser (xdg-open, no display)", headless, /xdg-open exited \d+/],
      ["there is no opener at all", { ...headless, PATH: tmp.path }, /xdg-open: not found/],
    ] as const
  ) {
    test(
      `${name}: it says so on stderr, once, and serves on`,
      { skip: process.platform !== "linux", timeout: 60_000 },
      async () => {
        const t = await startServe(root, { args: ["--open"], env });
        try {
          const stderr = await said(t, /--open: no browser/);
          assert.match(stderr, /noema serve: --open: no browser could be opened here \(/);
          assert.match(stderr, why);
          assert.match(stderr, new RegExp(`open ${t.url.replace(/[.]/g, "\\.")} yourself`));
          assert.equal(stderr.match(/no browser/g)?.length, 1);
          assert.equal((await fetch(new URL("api/episodes", t.url))).status, 200, "still serving");
        } finally {
          await t.stop();
        }
      },
    );
  }
});

describe("tokens and read-only", () => {
  test("a non-loopback bind without NOEMA_SERVE_TOKEN gets a generated token; requests without it are refused", async () => {
    const t = await startServe(root, { listen: "0.0.0.0:0" });
    try {
      assert.ok(t.token && t.token.length >= 32, "a token is generated and printed once");
      const url = t.url.replace("0.0.0.0", "127.0.0.1");
      const none = await fetch(`${url}api/episodes`);
      assert.equal(none.status, 401);
      assert.match(none.headers.get("www-authenticate") ?? "", /Bearer/);
      assert.equal(
        (await fetch(`${url}api/episodes`, { headers: { authorization: "Bearer nope-nope-nope-nope" } })).status,
        401,
      );
      assert.equal(
        (await fetch(`${url}api/episodes`, { headers: { authorization: `Bearer ${t.token}` } })).status,
        200,
      );
      const page = await fetch(url);
      assert.equal(page.status, 401);
      assert.match(await page.text(), /Sign in/);
      const login = await fetch(`${url}login`, {
        method: "POST",
        redirect: "manual",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: new URL(url).origin },
        body: `token=${encodeURIComponent(t.token!)}`,
      });
      assert.equal(login.status, 303);
      const cookie = login.headers.get("set-cookie") ?? "";
      assert.match(cookie, /HttpOnly/);
      assert.match(cookie, /SameSite=Strict/);
      const withCookie = await fetch(url, { headers: { cookie: cookie.split(";")[0] } });
      assert.equal(withCookie.status, 200);
      // The cookie holds a session of this server, never the token: a browser sends a host's cookies to every port of
      // it, so another web server on 127.0.0.1 (an agent's dev server) would read it.
      assert.equal(cookie.includes(t.token!), false, "the token is not in the cookie");
      assert.match(cookie, /Max-Age=\d+/);
      const tokenAsCookie = await fetch(url, { headers: { cookie: `noema_token=${t.token}` } });
      assert.equal(tokenAsCookie.status, 401, "a token is not a session");
    } finally {
      const code = await t.stop();
      // (Deno's child_process reports a child that handled SIGTERM as ended by it: code null.)
      assert.ok(code === 0 || code === null, String(code));
      assert.match(t.stderr(), /noema serve: stopped/, "SIGTERM stops it cleanly");
    }
  });

  test("labelled tokens: the label is the decider; --read-only serves no approval route", async () => {
    const tokens = "ana=ana-token-0123456789abcdef,bo=bo-token-0123456789abcdef";
    const ro = await startServe(root, { args: ["--read-only"], env: { NOEMA_SERVE_TOKEN: tokens } });
    try {
      const auth = { authorization: "Bearer ana-token-0123456789abcdef" };
      assert.equal((await fetch(`${ro.url}approvals`, { headers: auth })).status, 404);
      const post = await fetch(`${ro.url}api/episodes/${waiting}/approve`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(post.status, 404);
      assert.doesNotMatch(
        await (await fetch(`${ro.url}episodes/${waiting}`, { headers: auth })).text(),
        /<form method="post"/,
      );
    } finally {
      await ro.stop();
    }
    const rw = await startServe(root, { env: { NOEMA_SERVE_TOKEN: tokens } });
    try {
      const r = await fetch(`${rw.url}api/episodes/${waiting}/approve`, {
        method: "POST",
        headers: { authorization: "Bearer bo-token-0123456789abcdef", "content-type": "application/json" },
        body: JSON.stringify({ note: "checked" }),
      });
      assert.equal(r.status, 200);
      const rec = await r.json() as any;
      assert.equal(rec.by, "bo");
      assert.equal(rec.note, "checked");
    } finally {
      await rw.stop();
    }
  });

  test("bad NOEMA_SERVE_TOKEN and --listen are usage errors (exit 2), one line", () => {
    const short = cli(["--root", root, "serve", "--listen", "127.0.0.1:0"], {
      env: { NOEMA_SERVE_TOKEN: "ana=short" },
    });
    assert.equal(short.code, 2, short.stderr);
    assert.match(short.stderr, /NOEMA_SERVE_TOKEN entry 1 \(ana\): a token is at least 16 characters/);
    const listen = cli(["--root", root, "serve", "--listen", "nowhere"]);
    assert.equal(listen.code, 2);
    assert.match(listen.stderr, /--listen must be HOST:PORT/);
  });

  test("an empty NOEMA_SERVE_TOKEN entry (two unset variables joined) is a usage error: never an open server", () => {
    const cases: [string, RegExp][] = [
      [",", /NOEMA_SERVE_TOKEN entry 1 is empty/],
      [" , ", /NOEMA_SERVE_TOKEN entry 1 is empty/],
      ["a=,", /NOEMA_SERVE_TOKEN entry 1 \(a\): a token is at least 16 characters/],
      ["ana=0123456789abcdef0123,", /NOEMA_SERVE_TOKEN entry 2 is empty/],
    ];
    for (const [value, why] of cases) {
      // Off loopback: had it started, it would serve anyone (the bound only catches that hang).
      const r = cli(["--root", root, "serve", "--listen", "0.0.0.0:0", "--json"], {
        env: { NOEMA_SERVE_TOKEN: value },
        timeoutMs: 60_000,
      });
      assert.equal(r.code, 2, `${JSON.stringify(value)}: ${r.stderr}`);
      assert.match(r.stderr, why);
      assert.equal(r.stdout, "");
    }
  });
});

describe("over a shared store (file:///…)", () => {
  test("the runs come from the catalog, an episode is pulled to be read, a decision is recorded in the store", async () => {
    const a = join(tmp.path, "machine-a"), b = join(tmp.path, "machine-b");
    const url = pathToFileURL(join(tmp.path, "share")).href;
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
    const env = { NOEMA_STORE: url, NOEMA_HOST: "host-a" };
    const run = cli(["--root", a, "run", "say hello from a", "--json"], { env, cwd: tmp.path });
    assert.equal(run.code, 0, run.stderr);
    const done = JSON.parse(run.stdout).episode_id as string;
    const paused = cli(
      [
        "--root",
        a,
        "run",
        "ship from a",
        "--using",
        "shell",
        "--policy",
        GATE,
        "--json",
        "--",
        "sh",
        "-c",
        "echo deploy",
      ],
      { env, cwd: tmp.path },
    );
    const waitingId = JSON.parse(paused.stdout.trim().split("\n").at(-1)!).episode_id as string;
    assert.equal(cli(["--root", a, "sync"], { env, cwd: tmp.path }).code, 0);
    const st = await startServe(b, { args: ["--store", url], env: { NOEMA_HOST: "host-console" } });
    try {
      const get = async (path: string) => await (await fetch(new URL(path, st.url))).json() as any;
      const html = async (path: string) => await (await fetch(new URL(path, st.url))).text();
      // The catalog's host: in the runs table and on the approval card (page and API).
      const runsPage = await html("/");
      for (const id of [done, waitingId]) {
        assert.match(runsPage, new RegExp(`<code>${id}</code></a></td><td class="host">host-a</td>`));
      }
      assert.match(await html("/approvals"), /<dt>host<\/dt><dd>host-a<\/dd>/);
      const before = await html(`/episodes/${waitingId}`);
      assert.match(before, /<h2>Waiting for approval<\/h2>/);
      assert.match(before, /<dt>host<\/dt><dd>host-a<\/dd>/);
      assert.match(before, /name="decision" value="approved"/);
      const rows = await get("/api/episodes?host=host-a");
      assert.deepEqual(rows.map((r: any) => r.episode_id).sort(), [done, waitingId].sort());
      const page = await (await fetch(new URL(`/episodes/${done}`, st.url))).text();
      assert.match(page, /say hello from a/);
      assert.equal((await get(`/api/episodes/${done}`)).episode_id, done);
      const waiting = await get("/api/approvals");
      assert.deepEqual(waiting.map((w: any) => w.episode_id), [waitingId]);
      const r = await fetch(new URL(`/api/episodes/${waitingId}/approve`, st.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ note: "from the fleet console" }),
      });
      assert.equal(r.status, 200, await r.clone().text());
      const d = await r.json() as any;
      assert.equal(d.decision, "approved");
      assert.equal(d.note, "from the fleet console");
      // Decided, not yet applied by host-a: the page shows the decision (who, where, when) instead of the buttons.
      const after = await html(`/episodes/${waitingId}`);
      assert.match(after, /<h2>Decided<\/h2>/);
      assert.doesNotMatch(after, /Waiting for approval|name="decision"/);
      assert.match(after, /approved<\/span> by <b>[^<]+<\/b> on <b>host-console<\/b> at <time datetime="\d{4}-/);
      assert.match(after, /from the fleet console/);
      assert.match(after, /The machine that holds the run \(host-a\) applies it/);
      const card = (await get("/api/approvals"))[0];
      assert.equal(card.host, "host-a");
      assert.deepEqual([card.decided.decision, card.decided.host], ["approved", "host-console"]);
      assert.doesNotMatch(await html("/approvals"), /name="decision"/);
      assert.ok(!existsSync(join(b, "episodes", waitingId)), "nothing written to the serving machine's root");
      const again = await fetch(new URL(`/api/episodes/${waitingId}/reject`, st.url), {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(again.status, 409, "the store holds one decision per checkpoint");
    } finally {
      await st.stop();
    }
  });
});

describe("over a shared store whose catalog has rows that cannot be read", () => {
  test("the runs and approvals pages render the other rows and mark each bad one, showing nothing it says", async () => {
    const url = pathToFileURL(join(tmp.path, "share-with-bad-rows")).href;
    const store = new FileStore(url);
    await store.migrate();
    const pending = {
      checkpoint_id: "chk_01",
      state_hash: "sha256:" + "a".repeat(64),
      kind: "approval",
      step_id: "s2",
      reason: "deploys need a human",
      policy_id: "ApprovalGate@1.0",
      action: { tool: "shell", input_excerpt: "echo deploy" },
      created_at: "2026-11-04T00:00:01.000Z",
    };
    const waits = { run_state: "waiting_for_approval" as const, status: "pending", outcome: null, pending };
    await store.upsertCatalog(row("ep_good", { started_at: "2026-11-01T00:00:00.000Z" }));
    await putWaiting(store, row("ep_wait", { started_at: "2026-11-02T00:00:00.000Z", ...waits }));
    await store.upsertCatalog(row("ep_bad", { started_at: "2026-11-03T00:00:00.000Z", ...waits }));
    await spoilCatalog(store, "ep_bad", "pending", "str");
    await store.upsertCatalog(row("ep_junk"));
    writeFileSync(join(store.dir, "episodes", "ep_junk", "catalog.json"), "[]");
    // ep_wait's row copied into another episode's folder, with a forged host and a harmless-looking action.
    await store.upsertCatalog(row("ep_copy"));
    const forged = readFileSync(join(store.dir, "episodes", "ep_wait", "catalog.json"), "utf8")
      .replace('"host":"a"', '"host":"trusted-ci"').replace("echo deploy", "echo harmless");
    writeFileSync(join(store.dir, "episodes", "ep_copy", "catalog.json"), forged);
    await store.close();
    const st = await startServe(join(tmp.path, "machine-c"), { args: ["--store", url] });
    try {
      const page = async (path: string) => {
        const r = await fetch(new URL(path, st.url));
        assert.equal(r.status, 200, `${path}: ${r.status} ${st.stderr()}`);
        return await r.text();
      };
      const rowOf = (html: string, id: string) =>
        [...html.matchAll(/<tr[^>]*data-id="([^"]*)"[^]*?<\/tr>/g)].find((m) => m[1] === id)?.[0] ?? "";
      const runs = await page("/");
      assert.match(rowOf(runs, "ep_good"), /ok/);
      assert.match(rowOf(runs, "ep_wait"), /waiting for approval/);
      for (const id of ["ep_bad", "ep_junk", "ep_copy"]) assert.match(rowOf(runs, id), /unreadable/, id);
      assert.match(rowOf(runs, "ep_bad"), /ep_bad\/catalog\.json: pending: /);
      assert.match(rowOf(runs, "ep_junk"), /expected a JSON object/);
      assert.match(rowOf(runs, "ep_copy"), /names episode ep_wait, not ep_copy/);
      const api = await (await fetch(new URL("/api/episodes", st.url))).json() as any[];
      // Each once (ordered by when the store first stored them: the same few milliseconds here).
      assert.deepEqual(api.map((e) => [e.episode_id, e.status]).sort(), [
        ["ep_bad", "unreadable"],
        ["ep_copy", "unreadable"], // nothing of what it says is shown
        ["ep_good", "ok"],
        ["ep_junk", "unreadable"],
        ["ep_wait", "pending"],
      ]);

      const approvals = await page("/approvals");
      const panels = approvals.split('<div class="approval').slice(1);
      const ids = panels.map((p) => /data-id="([^"]*)"/.exec(p)?.[1]);
      assert.deepEqual([ids[0], ids.slice(1).sort()], ["ep_wait", ["ep_bad", "ep_copy"]], "the unreadable ones last");
      assert.match(panels[0], /echo deploy[^]*<form/);
      for (const p of panels.slice(1)) {
        assert.match(p, /^ unreadable"[^]*Its catalog row cannot be read/);
        assert.doesNotMatch(p, /<form/, "nothing to decide on a row that cannot be read");
      }
      assert.doesNotMatch(approvals, /trusted-ci|echo harmless/, "nothing of a forged row is shown");
      assert.doesNotMatch(runs, /trusted-ci/);
      const waiting = await (await fetch(new URL("/api/approvals", st.url))).json() as any[];
      const shown = waiting.map((w) => [w.episode_id, w.checkpoint_id, w.unreadable !== undefined]);
      assert.deepEqual([shown[0], shown.slice(1).sort()], [["ep_wait", "chk_01", false], [
        ["ep_bad", "", true],
        ["ep_copy", "", true],
      ]]);
    } finally {
      await st.stop();
    }
  });
});

describe("live streams", () => {
  test("a stream's first tick sends the current rows: a page catches up with a run that started before it connected", () => {
    const sent: LiveMessage[] = [];
    const tick = runsTicker(root, parseRunsQuery(new URLSearchParams("order=newest")));
    tick((m) => sent.push(m));
    assert.equal(sent.length, 1, "the rows as they are now, at once");
    assert.equal(sent[0].op, "html");
    assert.equal(sent[0].target, "runs");
    assert.match(sent[0].html!, /say hello/);
    tick((m) => sent.push(m));
    assert.equal(sent.length, 1, "nothing changed: nothing more is sent");
  });
});

describe("hand-edited artifacts", () => {
  test("a value whose toString is not callable (a tag, a note) is shown as JSON: the runs list and the queue stay up", async () => {
    // One such value in one file turned GET / and GET /approvals into 500s: every run and every waiting call hidden.
    const other = join(tmp.path, "hand-edited", ".noema");
    const id = pausedRun(other, "ship it");
    const statePath = join(other, "episodes", id, "state.json");
    const state = JSON.parse(readFileSync(statePath, "utf8"));
    state.episode.tags = { team: { toString: 1 } };
    writeFileSync(statePath, JSON.stringify(state));
    const st = await startServe(other);
    try {
      for (const path of ["/", "/?sort=duration", "/approvals", `/episodes/${id}`]) {
        const r = await fetch(new URL(path, st.url));
        assert.equal(r.status, 200, `${path}: ${(await r.text()).slice(0, 200)}`);
      }
    } finally {
      await st.stop();
    }
  });
});
