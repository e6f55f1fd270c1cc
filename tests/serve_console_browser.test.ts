/**
 * The console of `noema serve` in a real browser (Debian's Chromium through
 * playwright-core, one browser for the file): the runs table's columns and
 * its sorting by a header click, with JavaScript off too; an episode's
 * waterfall, one row per step, a row leading to its step; a search that
 * finds a string inside a tool output and leads to its run. Screenshots: see
 * `shot` (NOEMA_SERVE_SCREENSHOTS=docs writes docs/serve-*.png); the fleet
 * page is shot on the way.
 *
 * @module
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { join } from "node:path";
import process from "node:process";
import { type Browser, chromium, type Page } from "playwright-core";
import { tempDir } from "./helpers/tmp.ts";
import { cliCommand, REPO } from "./helpers/cli.ts";
import { startOpenAiServer } from "./helpers/openai_server.ts";
import { pausedRun, runJson, type Served, startServe } from "./helpers/serve.ts";

const tmp = tempDir();
const root = join(tmp.path, ".noema");
const NEEDLE = "quokka-in-the-output-7";
let s: Served, browser: Browser, page: Page;
let printed: string, blocked: string;

before(async () => {
  runJson(root, ["run", "say hello", "--json"]);
  const veto = tmp.file(
    "veto.ts",
    `export default { name: "NoEcho", version: "1.0", advise() { return { kind: "veto", advice: "echo is off" }; } };\n`,
  );
  blocked = String(
    runJson(root, ["run", "blocked run", "--using", "shell", "--policy", veto, "--json", "--", "echo", "hi"])
      .episode_id,
  );
  printed = String(
    runJson(root, ["run", "print a word", "--using", "shell", "--json", "--", "sh", "-c", `sleep 0.2; echo ${NEEDLE}`])
      .episode_id,
  );
  s = await startServe(root);
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  page = await browser.newPage({ viewport: { width: 1366, height: 860 } });
  page.setDefaultTimeout(60_000); // a bound for hangs only: a busy machine renders slowly
});
after(async () => {
  await browser?.close();
  await s?.stop();
  tmp.cleanup();
});

/** A screenshot into the test's temporary directory; with NOEMA_SERVE_SCREENSHOTS=docs into docs/. */
async function shot(name: string): Promise<void> {
  await page.evaluate("window.scrollTo(0, 0)");
  const dir = process.env.NOEMA_SERVE_SCREENSHOTS === "docs" ? join(REPO, "docs") : tmp.path;
  await page.screenshot({ path: join(dir, name) });
}

test("the runs table: its columns, a blocked run apart, sorted by a header click (JavaScript on and off)", async () => {
  await page.goto(s.url);
  await page.waitForSelector("table.runs tbody tr[data-href]");
  const heads = await page.locator("table.runs thead th").allInnerTexts();
  for (const h of ["Duration", "Adapter", "Host", "Cost"]) assert.ok(heads.includes(h), `${h} in ${heads}`);
  const row = page.locator(`tr[data-id="${blocked}"]`);
  assert.equal(await row.locator("td.verdicts").innerText(), "1 veto");
  assert.equal(await row.locator(".badge", { hasText: "blocked" }).count(), 1);
  await page.getByRole("link", { name: "Duration" }).click();
  await page.waitForURL(/sort=duration&dir=desc/);
  assert.equal(await page.locator("table.runs tbody tr").first().getAttribute("data-id"), printed, "the longest run");
  const noJs = await browser.newContext({ javaScriptEnabled: false });
  try {
    const p = await noJs.newPage();
    await p.goto(s.url);
    await p.getByRole("link", { name: "Duration" }).click();
    await p.waitForURL(/sort=duration&dir=desc/);
    assert.equal(await p.locator("table.runs tbody tr").first().getAttribute("data-id"), printed);
  } finally {
    await noJs.close();
  }
  await page.getByRole("link", { name: "Fleet" }).click();
  await page.waitForURL(/\/fleet$/); // a click does not wait for the page it leads to: counted before, it had none
  assert.equal(await page.locator("svg[data-chart=cost] rect.bar").count(), 30);
  assert.equal(await page.locator("#by-adapter tr[data-key=shell] td.runs").innerText(), "2");
  await shot("serve-fleet.png");
});

test("an episode's waterfall: one row per step, on one time axis; a row leads to its step", async () => {
  await page.goto(`${s.url}episodes/${printed}`);
  const svg = page.locator("svg[data-timeline]");
  await svg.waitFor();
  const steps = JSON.parse(readFileSync(join(root, "episodes", printed, "state.json"), "utf8")).plan.steps;
  assert.equal(await svg.locator("[data-step]").count(), steps.length);
  const box = await svg.boundingBox();
  assert.ok(box !== null && box.height > 20 && box.width > 300, JSON.stringify(box));
  // The act step's bar (the 0.2 s sleep) is wider than the detect step's.
  const width = (i: number) =>
    svg.locator("[data-step] rect.span").nth(i).evaluate((r) => r.getBoundingClientRect().width);
  assert.ok(await width(1) > await width(0), "the act step takes the longest");
  await shot("serve-timeline.png");
  // A click event on the row's link (not a pointer click at its centre: under load, the sticky bar or the chart may
  // be found there while the page settles, and the pointer click retries until the bound).
  await svg.locator(`[data-step="${steps[1].id}"] a`).dispatchEvent("click");
  await page.waitForURL(/#s-2$/);
});

test("a search (opened with /) finds a string inside a tool output and leads to its run", async () => {
  await page.goto(`${s.url}episodes/${blocked}`);
  await page.keyboard.press("/"); // off the runs page, "/" opens the search
  await page.waitForURL(/\/search$/);
  await page.locator("#q-search:focus").waitFor();
  await page.keyboard.type(NEEDLE.toUpperCase());
  await page.keyboard.press("Enter");
  await page.waitForURL(/\/search\?q=/);
  const hit = page.locator(`li.hit[data-field="output"][data-id="${printed}"]`);
  assert.equal(await hit.locator("mark").innerText(), NEEDLE);
  await shot("serve-search.png");
  await hit.locator("a").first().click();
  await page.waitForURL(new RegExp(`/episodes/${printed}$`));
});

/** Resolves once `path` exists (a run's step signalled it got there); the bound only catches a hang. */
async function appears(path: string, what: string): Promise<void> {
  const until = Date.now() + 120_000;
  while (!existsSync(path)) {
    if (Date.now() > until) throw new Error(`${what}: ${path} never appeared`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test("a live run's waterfall grows while its page is open, without a reload; then its model turns are listed", async () => {
  // An llm run whose two tool calls each wait for the test's go-ahead: a step is added only when the test says so.
  const ws = join(tmp.path, "live-ws");
  mkdirSync(ws, { recursive: true });
  const gate = (n: number) => `touch at${n}; while [ ! -e go${n} ]; do sleep 0.05; done; echo step ${n}`;
  const server = await startOpenAiServer([
    { tool_calls: [{ id: "c1", name: "shell", arguments: JSON.stringify({ command: gate(1) }) }] },
    { tool_calls: [{ id: "c2", name: "shell", arguments: JSON.stringify({ command: gate(2) }) }] },
    { text: "done" },
  ]);
  const task = tmp.file(
    "live.jsonc",
    JSON.stringify({
      task: "a run that grows",
      using: "llm",
      workspace: ws,
      adapter: { provider: "openai-compatible", base_url: server.url, model: "scripted", api_key_env: "LIVE_KEY" },
    }),
  );
  const [cmd, ...argv] = cliCommand();
  const child = spawn(cmd, [...argv, "--root", root, "run", task], {
    cwd: REPO,
    env: { ...process.env, LIVE_KEY: "sk-live-0123456789" },
    stdio: "ignore",
  });
  const exited = new Promise((r) => child.on("exit", r));
  try {
    await appears(join(ws, "at1"), "the first call");
    const live = (await (await fetch(`${s.url}api/episodes?state=running`)).json()) as { episode_id: string }[];
    assert.equal(live.length, 1);
    await page.goto(`${s.url}episodes/${live[0].episode_id}`);
    await page.waitForSelector("#live.live-on");
    await page.evaluate(() => ((globalThis as unknown as { __marker: number }).__marker = 1));
    const rows = () => page.locator("svg[data-timeline] [data-step]").count();
    const before = await rows();
    assert.ok(before >= 1, `${before} rows`);
    writeFileSync(join(ws, "go1"), "");
    await appears(join(ws, "at2"), "the second call");
    await page.waitForFunction(
      (n: number) =>
        (globalThis as unknown as { document: { querySelectorAll(s: string): { length: number } } }).document
          .querySelectorAll("svg[data-timeline] [data-step]").length > n,
      before,
      { timeout: 60_000 },
    );
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __marker?: number }).__marker), 1, "no reload");
    writeFileSync(join(ws, "go2"), "");
    await exited;
    // The run ended: the page reloads (as every live page does) before the next test navigates.
    await page.waitForFunction(() => (globalThis as unknown as { __marker?: number }).__marker === undefined);
    await page.waitForLoadState("load");
    // The finished page: its three model turns in the table, the unknown model unpriced, never guessed.
    await page.locator("#model-turns").waitFor();
    assert.equal(await page.locator("#model-turns tr[data-turn]").count(), 3);
    assert.equal(await page.locator("#model-turns tr.total td").last().innerText(), "no price");
  } finally {
    child.kill();
    writeFileSync(join(ws, "go1"), "");
    writeFileSync(join(ws, "go2"), "");
    await server.close();
  }
});

test("an approval leaves the queue at once, and its page shows the decision, not the form", async () => {
  const id = pausedRun(root, "ship it from the browser");
  await page.goto(`${s.url}approvals`);
  const card = page.locator(`#queue .approval[data-id="${id}"]`);
  assert.match(await card.locator(".waited").innerText(), /^\d[\d.]*m?s since /);
  await shot("serve-approvals-queue.png");
  await card.locator("textarea").fill("ok to ship");
  await card.getByLabel("then resume the run on this machine").uncheck();
  await card.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL(new RegExp(`/episodes/${id}$`));
  assert.equal(await page.locator("#approval form[action$='/decide']").count(), 0, "no decision form");
  assert.match(await page.locator("#approval .decided").innerText(), /approved by .* ok to ship/);
  await page.goto(`${s.url}approvals`);
  assert.equal(await page.locator(`#queue .approval[data-id="${id}"]`).count(), 0, "it left the queue");
  assert.equal(await page.locator(`#decided .approval[data-id="${id}"]`).count(), 1);
});
