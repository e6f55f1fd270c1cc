/**
 * `noema serve` in a real browser (Debian's Chromium driven by
 * playwright-core, one browser for the file): list, filter and open; a page
 * that updates while a run writes; sign in, approve with a note and watch the
 * run resume and finish; reject with a note; compare the two; hostile
 * content that stays inert. Screenshots: see `shot`.
 *
 * @module
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import process from "node:process";
import { type Browser, chromium, type Page } from "playwright-core";
import { tempDir } from "./helpers/tmp.ts";
import { cliCommand, REPO } from "./helpers/cli.ts";
import { hostileRun, pausedRun, runJson, type Served, startServe } from "./helpers/serve.ts";

const tmp = tempDir();
const root = join(tmp.path, ".noema");
const TOKEN = "ana-browser-token-0123456789";
let s: Served, browser: Browser, page: Page;
let hello: string, approveMe: string, rejectMe: string, hostile: string;
const dialogs: string[] = [];

before(async () => {
  hello = String(runJson(root, ["run", "say hello", "--tag", "team=web", "--json"]).episode_id);
  runJson(root, ["run", "check the build", "--tag", "team=web", "--json"]);
  approveMe = pausedRun(root, "ship the release", ["team=infra"]);
  rejectMe = pausedRun(root, "ship the release", ["team=infra"]);
  hostile = hostileRun(root, join(tmp.path, "policies"));
  s = await startServe(root, { env: { NOEMA_SERVE_TOKEN: `ana=${TOKEN}` } });
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  page = await browser.newPage({ viewport: { width: 1366, height: 860 } });
  page.setDefaultTimeout(60_000); // a bound for hangs only: a busy machine renders slowly
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
});
after(async () => {
  await browser?.close();
  await s?.stop();
  tmp.cleanup();
});

/**
 * A screenshot of the page's top, into the test's temporary directory; with
 * NOEMA_SERVE_SCREENSHOTS=docs into docs/ (the ones the README shows), so a
 * test run leaves the checkout as it was.
 */
async function shot(name: string): Promise<void> {
  await page.evaluate("window.scrollTo(0, 0)");
  const dir = process.env.NOEMA_SERVE_SCREENSHOTS === "docs" ? join(REPO, "docs") : tmp.path;
  await page.screenshot({ path: join(dir, name) });
}

test("sign in, list, filter with the keyboard, open an episode", async () => {
  await page.goto(s.url);
  await page.getByLabel("Token").fill(TOKEN);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.waitForSelector("table.runs tbody tr[data-href]");
  assert.equal(await page.locator("table.runs tbody tr").count(), 5);
  await shot("serve-runs.png");
  await page.keyboard.press("/");
  await page.keyboard.type("hello");
  await page.keyboard.press("Enter");
  await page.waitForURL(/task=hello/);
  assert.equal(await page.locator("table.runs tbody tr").count(), 1);
  await page.keyboard.press("j");
  await page.keyboard.press("Enter");
  await page.waitForURL(new RegExp(`/episodes/${hello}$`));
  assert.match(await page.locator("h1").first().innerText(), new RegExp(hello));
  await page.locator("#timeline summary").first().click();
  await shot("serve-episode.png");
});

test("the runs page updates while a run writes: a new run's row appears without a reload", async () => {
  await page.goto(`${s.url}?order=newest`);
  await page.waitForSelector("#live.live-on");
  await page.evaluate(() => ((globalThis as unknown as { __marker: number }).__marker = 1));
  const [cmd, ...argv] = cliCommand();
  const child = spawn(cmd, [...argv, "--root", root, "run", "a fresh run appears live"], {
    stdio: "ignore",
    cwd: REPO,
  });
  const done = new Promise((r) => child.on("exit", r));
  await page.waitForSelector("td.task:has-text('a fresh run appears live')", { timeout: 60_000 });
  assert.equal(await page.evaluate(() => (globalThis as unknown as { __marker?: number }).__marker), 1, "no reload");
  await done;
});

test("approve in the browser with a note: the run resumes, finishes, and its page shows who decided and why", async () => {
  await page.goto(`${s.url}approvals`);
  const panel = page.locator(`.approval[data-id="${approveMe}"]`);
  await panel.locator("textarea").fill("diff checked <b>twice</b>");
  await shot("serve-approvals.png");
  await panel.getByRole("button", { name: "Approve" }).click();
  await page.waitForURL(new RegExp(`/episodes/${approveMe}$`));
  // The run resumes in the server; the page follows it live and reloads when it ends.
  await page.waitForSelector("header h1 .badge.t-good", { timeout: 60_000 });
  assert.equal(await page.locator("#decisions .decider").first().innerText(), "ana");
  assert.equal(await page.locator("#decisions .note").first().innerText(), "diff checked <b>twice</b>");
  assert.equal(await page.locator("#approval").count(), 0, "nothing waits any more");
});

test("reject with a note from the episode page: the run ends vetoed", async () => {
  await page.goto(`${s.url}episodes/${rejectMe}`);
  await page.locator("#approval textarea").fill("not on a friday");
  await page.getByRole("button", { name: "Reject" }).click();
  await page.waitForSelector("header h1 .badge.t-veto", { timeout: 60_000 });
  assert.equal(await page.locator("#decisions .note").first().innerText(), "not on a friday");
});

test("compare the approved run and the rejected one: differing steps and outcomes highlighted", async () => {
  await page.goto(`${s.url}episodes/${approveMe}`);
  await page.locator("input[name=b]").fill(rejectMe);
  await page.getByRole("button", { name: "Compare" }).click();
  await page.waitForURL(/\/compare\//);
  assert.ok(await page.locator("table.cmp tr.diff").count() >= 1);
  assert.ok(await page.locator("table.cmp td.diff").count() >= 2);
  await shot("serve-compare.png");
});

test("hostile task, tag, tool output and policy advice stay inert: no script runs, no dialog opens", async () => {
  const search = `search?q=${encodeURIComponent("<script>window.__xss")}`;
  for (
    const path of [
      search,
      "fleet",
      "",
      `episodes/${hostile}`,
      `episodes/${hostile}/events`,
      `compare/${hostile}/${hello}`, // last: its content is checked below
    ]
  ) {
    await page.goto(`${s.url}${path}`);
    await page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })");
    await page.waitForTimeout(50);
    const xss = await page.evaluate(() => (globalThis as unknown as { __xss?: number }).__xss);
    assert.equal(xss, undefined, path);
  }
  assert.match(await page.content(), /&lt;script&gt;window.__xss=1/);
  assert.deepEqual(dialogs, []);
});
