// deno-lint-ignore-file no-explicit-any -- tests read answers as loose JSON
/**
 * The console of `noema serve` over HTTP, on runs the real CLI recorded: the
 * runs table's columns (duration, adapter, host, model, cost, verdicts), a
 * blocked run told apart from a failed one, sorting kept in the URL; an
 * episode's waterfall (one `data-step` per step), its model-turn table
 * (tokens and cost per turn, per model, in total, as summary.json has them),
 * metrics with units, the decision beside its step; search over tasks, tool
 * inputs and outputs and reasons, as a page and as JSON, escaped.
 *
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { tempDir } from "./helpers/tmp.ts";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { GATE, HOSTILE, hostileRun, pausedRun, runJson, type Served, startServe } from "./helpers/serve.ts";
import { startOpenAiServer } from "./helpers/openai_server.ts";
import { formatMs } from "../src/cli/format.ts";
import { formatUsd } from "../src/report/metric_format.ts";
import { listRuns, parseRunsQuery } from "../src/serve/runs.ts";

const tmp = tempDir();
const root = join(tmp.path, ".noema");
const NEEDLE = "zebra-needle-42";
let s: Served;
let plain: string, blocked: string, failed: string, approved: string, llm: string, hostile: string;
let queued: string, decideMe: string;

/** An llm run against a scripted model named like a priced Claude model: one shell call, then an answer. */
async function llmRun(): Promise<string> {
  const server = await startOpenAiServer([
    {
      tool_calls: [{ id: "t1", name: "shell", arguments: JSON.stringify({ command: `printf '%s' ${NEEDLE}-out` }) }],
    },
    { text: "done", usage: { prompt_tokens: 1200, completion_tokens: 300 } },
  ]);
  const ws = join(tmp.path, "ws");
  mkdirSync(ws, { recursive: true });
  const task = tmp.file(
    "task.jsonc",
    JSON.stringify({
      task: "print the needle",
      using: "llm",
      workspace: ws,
      adapter: {
        provider: "openai-compatible",
        base_url: server.url,
        model: "claude-sonnet-4-5",
        api_key_env: "SCRIPTED_KEY",
      },
    }),
  );
  const [cmd, ...argv] = cliCommand();
  const env = { ...process.env, NO_COLOR: "1", SCRIPTED_KEY: "sk-console-test-0123456789" } as Record<string, string>;
  try {
    // Not spawnSync: the scripted model answers from this process.
    const r = await runChild(cmd, [...argv, "--root", root, "run", task, "--json"], {
      cwd: REPO,
      env,
      timeoutMs: 120_000,
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    return String(JSON.parse(r.stdout.trim().split("\n").at(-1)!).episode_id);
  } finally {
    await server.close();
  }
}

before(async () => {
  plain = String(runJson(root, ["run", "say hello", "--json"]).episode_id);
  const veto = tmp.file(
    "veto.ts",
    `export default { name: "NoEcho", version: "1.0", advise() { return { kind: "veto", advice: "echo is off" }; } };\n`,
  );
  blocked = String(
    runJson(root, ["run", "blocked run", "--using", "shell", "--policy", veto, "--json", "--", "echo", "hi"])
      .episode_id,
  );
  failed = String(
    runJson(root, ["run", "failing run", "--using", "shell", "--json", "--", "sh", "-c", "exit 3"]).episode_id,
  );
  approved = pausedRun(root, "ship the release");
  const r = cli(["--root", root, "approve", approved, "--note", "looks fine", "--resume", "--json"], {
    timeoutMs: 120_000,
  });
  assert.equal(r.code, 0, r.stderr);
  llm = await llmRun();
  hostile = hostileRun(root, join(tmp.path, "policies"));
  queued = pausedRun(root, "wait in the queue");
  const ws = join(tmp.path, "deploy-ws");
  mkdirSync(ws, { recursive: true });
  decideMe = String(
    runJson(root, [
      ...["run", "deploy from a workspace", "--using", "shell", "--policy", GATE, "--workspace", ws, "--json"],
      ...["--", "sh", "-c", "echo deploy prod"],
    ]).episode_id,
  );
  s = await startServe(root);
});
after(async () => {
  await s?.stop();
  tmp.cleanup();
});

const get = (path: string) => fetch(new URL(path, s.url));
const text = async (path: string) => {
  const r = await get(path);
  assert.equal(r.status, 200, `${path}: ${r.status}`);
  return await r.text();
};
const summary = (id: string) => JSON.parse(readFileSync(join(root, "episodes", id, "summary.json"), "utf8"));
/** The runs table's rows: id, class and cell texts (tags stripped, entities kept). */
function rows(html: string): { id: string; cls: string; cells: Record<string, string>; html: string }[] {
  const heads = [...html.matchAll(/<th(?: [^>]*)?>(?:<a [^>]*>)?([^<]*)/g)].map((m) => m[1]);
  const body = html.slice(html.indexOf('<tbody id="runs">'), html.indexOf("</tbody>"));
  return [...body.matchAll(/<tr class="([^"]*)"[^>]*data-id="([^"]+)">(.*?)<\/tr>/g)].map((m) => {
    const cells = [...m[3].matchAll(/<td[^>]*>(.*?)<\/td>/g)].map((c) => c[1].replace(/<[^>]+>/g, ""));
    return { id: m[2], cls: m[1], cells: Object.fromEntries(heads.map((h, i) => [h, cells[i]])), html: m[3] };
  });
}

describe("runs table", () => {
  test("duration, adapter, host, model, cost and verdicts of each run, as its files say", async () => {
    const html = await text("/");
    for (const h of ["Duration", "Adapter", "Host", "Cost", "Model(s)", "Verdicts"]) {
      assert.match(html, new RegExp(`<th[^>]*>(<a [^>]*>)?${h.replace(/[()]/g, "\\$&")}(</a>)?</th>`), h);
    }
    const byId = new Map(rows(html).map((r) => [r.id, r]));
    assert.equal(byId.size, 8);
    for (const id of [plain, blocked, failed, approved, llm]) {
      assert.equal(byId.get(id)!.cells.Duration, formatMs(Math.round(summary(id).duration_sec * 1000)), id);
    }
    assert.equal(byId.get(plain)!.cells.Adapter, "minimal");
    assert.equal(byId.get(failed)!.cells.Adapter, "shell");
    assert.equal(byId.get(llm)!.cells.Adapter, "llm");
    assert.equal(byId.get(llm)!.cells["Model(s)"], "claude-sonnet-4-5");
    const usd = summary(llm).metrics.cost.usd;
    assert.ok(usd > 0, "the scripted model is priced");
    assert.equal(byId.get(llm)!.cells.Cost, formatUsd(usd));
    assert.equal(byId.get(plain)!.cells.Cost, "-");
    assert.equal(byId.get(blocked)!.cells.Verdicts, "1 veto");
    assert.equal(byId.get(approved)!.cells.Verdicts, "1 approved");
    assert.equal(byId.get(plain)!.cells.Verdicts, "-");
    assert.ok(byId.get(plain)!.cells.Host !== "-");
  });

  test("a run a policy blocked is not a red error; a failed run is", async () => {
    const byId = new Map(rows(await text("/")).map((r) => [r.id, r]));
    const b = byId.get(blocked)!, f = byId.get(failed)!;
    assert.equal(b.cls, "k-blocked");
    assert.equal(b.cells.Outcome, "blocked");
    assert.doesNotMatch(b.html, /t-bad/);
    assert.equal(f.cls, "k-failed");
    assert.match(f.html, /badge t-bad">error</);
  });

  test("sorting by a column is in the URL and done by the server; the header links flip it", async () => {
    const ids = (html: string) => rows(html).map((r) => r.id);
    const byCost = ids(await text("/?sort=cost&dir=desc"));
    assert.equal(byCost[0], llm, "the only run with a cost comes first");
    const durations = (list: string[]) => list.map((id) => summary(id).duration_sec as number);
    const asc = durations(ids(await text("/?sort=duration&dir=asc&state=terminal")));
    assert.deepEqual(asc, [...asc].sort((a, b) => a - b));
    const desc = durations(ids(await text("/?sort=duration&dir=desc&state=terminal")));
    assert.deepEqual(desc, [...desc].sort((a, b) => b - a));
    assert.deepEqual(ids(await text("/?sort=adapter&dir=asc")).slice(0, 1), [llm], "llm < minimal < shell");
    const html = await text("/?sort=duration&dir=desc&task=run");
    assert.match(html, /<th aria-sort="descending"><a href="\?sort=duration&amp;dir=asc&amp;task=run">Duration/);
    assert.match(html, /name="sort" value="duration"/, "the filter form keeps the sort");
    assert.deepEqual(rows(html).map((r) => r.id).sort(), [blocked, failed].sort());
    const bad = await get("/api/episodes?sort=nope");
    assert.equal(bad.status, 400);
    assert.match((await bad.json() as any).error.message, /sort: unknown column "nope"/);
  });
});

describe("episode page", () => {
  test("a waterfall with one data-step per step, tool calls and model turns on one axis", async () => {
    for (const id of [plain, failed, llm, approved]) {
      const html = await text(`/episodes/${id}`);
      const svg = html.slice(html.indexOf("<svg data-timeline"), html.indexOf("</svg>"));
      assert.ok(svg.length > 0, id);
      const state = JSON.parse(readFileSync(join(root, "episodes", id, "state.json"), "utf8"));
      const stepIds = [...svg.matchAll(/<g data-step="([^"]+)"/g)].map((m) => m[1]);
      assert.deepEqual(stepIds, state.plan.steps.map((x: { id: string }) => x.id), id);
      assert.ok((svg.match(/<rect class="call/g) ?? []).length >= 1, `${id}: a tool call drawn`);
    }
    const llmSvg = await text(`/episodes/${llm}`);
    assert.equal((llmSvg.match(/<rect class="turn"/g) ?? []).length, 2, "both model turns on the lane");
    assert.match(await text(`/episodes/${blocked}`), /<path class="mk mk-veto"/, "the veto is marked");
    assert.match(await text(`/episodes/${approved}`), /<path class="mk mk-approved"/, "the approval is marked");
  });

  test("the model-turn table: tokens and cost per turn, per model and in total, as summary.json has them", async () => {
    const html = await text(`/episodes/${llm}`);
    const lines = readFileSync(join(root, "episodes", llm, "model.jsonl"), "utf8").trim().split("\n");
    assert.equal((html.match(/<tr data-turn="/g) ?? []).length, lines.length);
    const m = summary(llm).metrics;
    const total = html.match(/data-total-usd="([^"]*)"/)![1];
    assert.ok(Math.abs(Number(total) - m.cost.usd) < 1e-9, `${total} vs ${m.cost.usd}`);
    assert.match(
      html,
      new RegExp(`<td class="num">${m.tokens.models["claude-sonnet-4-5"].input.toLocaleString("en-US")}</td>`),
    );
    assert.match(html, /<td class="num">1,200<\/td><td class="num">300<\/td>/, "the second turn's own tokens");
    assert.doesNotMatch(await text(`/episodes/${plain}`), /id="model-turns"/, "no table without model calls");
  });

  test("metrics read with units, not raw keys; the decision (who, when, note, checkpoint) sits by its step", async () => {
    const html = await text(`/episodes/${llm}`);
    const metrics = html.slice(html.indexOf('<section id="metrics">'));
    assert.doesNotMatch(metrics, /latencies\.total_ms/);
    assert.match(metrics, /<th>total time<\/th><td class="mono">[\d.]+m?s<\/td>/);
    assert.match(metrics, /tokens · input<\/th><td class="mono">[\d,]+ tokens/);
    assert.match(metrics, /<th>cost<\/th><td class="mono">\$[\d.]+<\/td>/);
    const page = await text(`/episodes/${approved}`);
    const [decision] = readdirSync(join(root, "episodes", approved, "approvals"));
    const checkpoint = decision.replace(/\.json$/, "");
    assert.match(
      page,
      new RegExp(
        `<p class="decision"><b>approved by [^<]+ \\(looks fine\\)</b> <span class="muted">at [^<]+</span> <span class="muted">checkpoint <code>${checkpoint}</code>`,
      ),
    );
  });
});

describe("search", () => {
  test("finds a string inside a tool output, as a page (highlighted) and as JSON", async () => {
    const api = await (await get(`/api/search?q=${NEEDLE}-OUT`)).json() as any;
    const outputs = api.hits.filter((h: any) => h.field === "output");
    assert.equal(outputs.length, 1, JSON.stringify(api));
    assert.equal(outputs[0].episode_id, llm);
    assert.equal(outputs[0].match, `${NEEDLE}-out`);
    assert.equal(outputs[0].source, "shell");
    assert.equal(api.scanned, 8);
    const html = await text(`/search?q=${NEEDLE}-out`);
    assert.match(html, new RegExp(`<mark>${NEEDLE}-out</mark>`));
    assert.match(html, new RegExp(`href="/episodes/${llm}"`));
  });

  test("tasks, tool inputs and policy reasons are searched too", async () => {
    const fields = async (q: string) =>
      ((await (await get(`/api/search?q=${encodeURIComponent(q)}`)).json()) as any).hits.map((h: any) =>
        `${h.episode_id === blocked ? "blocked" : h.episode_id === llm ? "llm" : h.episode_id}:${h.field}`
      );
    assert.deepEqual(await fields("BLOCKED RUN"), ["blocked:task"]);
    assert.deepEqual(
      new Set(await fields("echo is off")),
      new Set(["blocked:reason"]),
      "its advice and the veto's reason",
    );
    assert.ok((await fields(`printf '%s' ${NEEDLE}`)).includes("llm:input"));
    assert.deepEqual(await fields("nothing-like-this-anywhere"), []);
  });

  test("a hostile query and hostile hits stay inert; a missing or long q is a 400", async () => {
    const html = await text(`/search?q=${encodeURIComponent(HOSTILE.slice(0, 40))}`);
    assert.doesNotMatch(html, /<script>window|<img src=x/);
    assert.match(html, /&lt;script&gt;window\.__xss=1/);
    assert.match(html, new RegExp(`href="/episodes/${hostile}"`));
    assert.equal((await get("/api/search")).status, 400);
    assert.equal((await get(`/api/search?q=${"x".repeat(201)}`)).status, 400);
    assert.equal((await get("/search")).status, 200, "the page without q is the form");
  });
});

describe("approvals queue", () => {
  test("each waiting call shows how long it has waited, its host and workspace; a decided call leaves the queue at once", async () => {
    const html = await text("/approvals");
    const card = (id: string, h: string) => {
      const at = h.indexOf(`<div class="approval" data-id="${id}">`);
      assert.ok(at >= 0, id);
      return h.slice(at, h.indexOf('<div class="approval"', at + 10) >>> 0);
    };
    const queue = html.slice(html.indexOf('<div id="queue">'));
    assert.match(card(queued, queue), /<dd class="waited">\d[\d.]*m?s <span class="muted">since <time datetime="20/);
    assert.match(card(queued, queue), /<dd class="workspace">-<\/dd>/);
    assert.match(
      card(decideMe, queue),
      new RegExp(`<dd class="workspace"><code>${join(tmp.path, "deploy-ws")}</code>`),
    );
    assert.doesNotMatch(card(queued, queue), /<dt>host<\/dt><dd>-</);
    assert.match(html, /Waiting for a decision \(2\)/);
    const r = await fetch(new URL(`/approvals/${decideMe}/decide`, s.url), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: new URL(s.url).origin },
      body: `decision=approved&note=go&checkpoint=${
        JSON.parse(JSON.stringify(
          (await (await get("/api/approvals")).json() as any).find((w: any) => w.episode_id === decideMe).checkpoint_id,
        ))
      }`,
      redirect: "manual",
    });
    assert.equal(r.status, 303);
    const after = await text("/approvals");
    assert.match(after, /Waiting for a decision \(1\)/);
    const queueAfter = after.slice(after.indexOf('<div id="queue">'), after.indexOf('<div id="decided">'));
    assert.doesNotMatch(queueAfter, new RegExp(decideMe), "it left the queue");
    assert.match(after.slice(after.indexOf('<div id="decided">')), new RegExp(`data-id="${decideMe}"`));
    const episode = await text(`/episodes/${decideMe}`);
    assert.doesNotMatch(episode, /action="\/approvals\/[^"]+\/decide"/, "no decision form once decided");
    assert.match(episode, /<p class="decided">/);
  });
});

describe("a sorted view over sealed runs only", () => {
  test("is remembered, and a run added since is in it the next time", () => {
    const own = join(tmp.path, "sealed", ".noema");
    runJson(own, ["run", "first", "--json"]);
    runJson(own, ["run", "second", "--json"]);
    const q = parseRunsQuery(new URLSearchParams("sort=task&dir=asc"));
    const tasks = () => listRuns(own, q).entries.map((e) => e.task);
    assert.deepEqual(tasks(), ["first", "second"]);
    assert.deepEqual(tasks(), ["first", "second"], "again, from memory");
    runJson(own, ["run", "another", "--json"]);
    assert.deepEqual(tasks(), ["another", "first", "second"]);
  });
});

describe("fleet", () => {
  test("per host and per adapter counts, and the cost per day as a server-rendered SVG chart", async () => {
    const html = await text("/fleet");
    const cells = (table: string, key: string) => {
      const t = html.slice(html.indexOf(`<table class="fleet" id="${table}">`));
      const row = t.slice(t.indexOf(`<tr data-key="${key}">`), t.indexOf("</tr>", t.indexOf(`<tr data-key="${key}">`)));
      assert.ok(row.length > 0, `${table} ${key}`);
      return [...row.matchAll(/<td[^>]*>([^<]*)<\/td>/g)].map((m) => m[1]);
    };
    // runs, ok, blocked, failed, going, cost
    assert.deepEqual(cells("by-adapter", "shell").slice(0, 5), ["6", "2", "1", "1", "2"]);
    assert.deepEqual(cells("by-adapter", "minimal").slice(0, 5), ["1", "1", "0", "0", "0"]);
    assert.deepEqual(cells("by-adapter", "llm"), ["1", "1", "0", "0", "0", formatUsd(summary(llm).metrics.cost.usd)]);
    const hosts = [...html.matchAll(/<table class="fleet" id="by-host">.*?<\/table>/gs)][0][0];
    assert.equal((hosts.match(/<tr data-key=/g) ?? []).length, 1, "one machine ran them all");
    assert.match(hosts, /<td class="num runs">8<\/td>/);
    const svg = html.slice(html.indexOf('<svg data-chart="cost"'), html.indexOf("</svg>", html.indexOf("data-chart")));
    assert.equal((svg.match(/<rect class="bar"/g) ?? []).length, 30);
    const day = String(summary(llm).started_at).slice(0, 10);
    const usd = Number(svg.match(new RegExp(`data-day="${day}" data-usd="([^"]+)"`))![1]);
    assert.ok(Math.abs(usd - summary(llm).metrics.cost.usd) < 1e-9, `${usd}`);
    assert.doesNotMatch(html, /<script>window/, "hostile text stays inert here too");
  });
});

describe("over a shared store (file:///…)", () => {
  test("a run held by another machine shows its adapter, duration and vetoes from the catalog; its task is searched; the fleet counts it", async () => {
    const a = join(tmp.path, "machine-a"), b = join(tmp.path, "machine-b");
    const url = pathToFileURL(join(tmp.path, "share")).href;
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
    const env = { NOEMA_STORE: url, NOEMA_HOST: "host-a" };
    const veto = join(tmp.path, "veto.ts");
    const run = cli(
      ["--root", a, "run", "blocked elsewhere", "--using", "shell", "--policy", veto, "--json", "--", "echo", "hi"],
      { env, cwd: tmp.path },
    );
    const id = JSON.parse(run.stdout.trim().split("\n").at(-1)!).episode_id as string;
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
        "echo deploy prod",
      ],
      { env, cwd: tmp.path },
    );
    const waitingId = JSON.parse(paused.stdout.trim().split("\n").at(-1)!).episode_id as string;
    assert.equal(cli(["--root", a, "sync"], { env, cwd: tmp.path }).code, 0);
    const st = await startServe(b, { args: ["--store", url], env: { NOEMA_HOST: "host-console" } });
    try {
      const html = await (await fetch(st.url)).text();
      const [row] = rows(html).filter((r) => r.id === id);
      const local = JSON.parse(readFileSync(join(a, "episodes", id, "summary.json"), "utf8"));
      assert.equal(row.cells.Host, "host-a");
      assert.equal(row.cells.Adapter, "shell");
      assert.equal(row.cells.Duration, formatMs(Math.round(local.duration_sec * 1000)));
      assert.equal(row.cells.Verdicts, "1 veto");
      assert.equal(row.cells.Outcome, "blocked");
      const queue = await (await fetch(new URL("/approvals", st.url))).text();
      const card = queue.slice(queue.indexOf(`<div class="approval" data-id="${waitingId}">`));
      assert.match(
        card,
        /<dd class="waited">\d[\d.]*m?s <span class="muted">since/,
        "the wait, from the stored checkpoint",
      );
      assert.match(card, /<dt>host<\/dt><dd>host-a<\/dd>/);
      const fleet = await (await fetch(new URL("/fleet", st.url))).text();
      assert.match(fleet, /The newest 2 runs of the shared store\./);
      assert.match(
        fleet,
        /<tr data-key="host-a"><th>host-a<\/th><td class="num runs">2<\/td>/,
        "counted per host, fleet-wide",
      );
      assert.match(
        fleet,
        /<tr data-key="shell"><th>shell<\/th><td class="num runs">2<\/td><td class="num">0<\/td><td class="num t-veto">1<\/td><td class="num t-bad">0<\/td><td class="num">1<\/td>/,
      );
      const found = await (await fetch(new URL("/api/search?q=BLOCKED%20ELSEWHERE", st.url))).json() as any;
      assert.deepEqual(
        found.hits.map((h: any) => [h.episode_id, h.field, h.source, h.match]),
        [[id, "task", "host-a", "blocked elsewhere"]],
        "the catalog's tasks are searched fleet-wide",
      );
      const api = await (await fetch(new URL("/api/episodes", st.url))).json() as any[];
      assert.deepEqual(Object.keys(api[0]).filter((k) => k.includes("facts")), [], "the API keeps noema list's shape");
    } finally {
      await st.stop();
    }
  });
});
