// The backtest page of `noema serve`: the NDJSON report of a real `noema policy backtest --json` over real shell
// episodes, posted with the page's form, shows the totals and each flipped action linked to its episode, with
// recorded content escaped; a report that is not one is a 400 naming the line.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { type Served, startServe } from "./helpers/serve.ts";
import { tempDir } from "./helpers/tmp.ts";
import { writeShellTask } from "./helpers/shell_task.ts";

const tmp = tempDir("noema-backtest-serve-");
const project = join(tmp.path, "project");
const root = join(project, ".noema");
const env = { NOEMA_USER_RULES: "", NOEMA_STORE: undefined, NOEMA_ROOT: root };
const XSS = "echo '<script>window.__xss=1</script>'";
let served: Served;
let report = "";
const ids: string[] = [];

before(async () => {
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, "rules.jsonc"), JSON.stringify({ deny: ["Bash(date:*)"] }));
  writeFileSync(join(project, "added.jsonc"), JSON.stringify({ deny: ["Bash(echo:*)"] }));
  for (const [e, commands] of [["pwd", XSS], ["date", "pwd"]].entries()) {
    const task = writeShellTask(join(project, `task${e}.json`), `episode ${e}`, commands, {
      rules_file: "rules.jsonc",
    }, (command) => command);
    const r = cli(["run", task], { cwd: project, env });
    ids.push(r.stdout.split(/\s/)[0]);
  }
  const r = cli(["policy", "backtest", "--json", "--without", "Rules@1.0", "--rules", "added.jsonc"], {
    cwd: project,
    env,
  });
  assert.equal(r.code, 3, r.stderr);
  report = r.stdout;
  served = await startServe(root);
});
after(async () => {
  await served?.stop();
  tmp.cleanup();
});

function post(form: FormData): Promise<Response> {
  const headers: Record<string, string> = { origin: new URL(served.url).origin };
  if (served.token) headers.authorization = `Bearer ${served.token}`;
  return fetch(new URL("/backtest", served.url), { method: "POST", body: form, headers });
}

describe("noema serve: the backtest page", () => {
  test("GET shows the form", async () => {
    const headers: Record<string, string> = served.token ? { authorization: `Bearer ${served.token}` } : {};
    const r = await fetch(new URL("/backtest", served.url), { headers });
    assert.equal(r.status, 200);
    assert.match(await r.text(), /<form method="post" action="\/backtest" enctype="multipart\/form-data"/);
  });

  test("a posted report shows the totals and each flip linked to its episode, escaped", async () => {
    const totals = JSON.parse(report.trim().split("\n").at(-1)!);
    const form = new FormData();
    form.set("report", new Blob([report]), "backtest.ndjson");
    const r = await post(form);
    const html = await r.text();
    assert.equal(r.status, 200, html);
    assert.match(html, new RegExp(`<tr><th>flipped</th><td>${totals.flipped}</td></tr>`));
    assert.match(html, new RegExp(`<tr><th>allow → deny</th><td>${totals.flips.allow_to_deny}</td></tr>`));
    assert.match(html, new RegExp(`<tr><th>deny → allow</th><td>${totals.flips.deny_to_allow}</td></tr>`));
    const flipRows = report.trim().split("\n").map((l) => JSON.parse(l)).filter((x) => x.type === "flip");
    assert.equal((html.match(/<tr><td>(allow|deny) → (allow|deny)<\/td>/g) ?? []).length, flipRows.length);
    for (const id of ids) assert.ok(html.includes(`<a href="/episodes/${id}">`), `a link to ${id}`);
    assert.ok(!html.includes("<script>window.__xss"), "recorded input is escaped");
    assert.ok(html.includes("&lt;script&gt;window.__xss=1&lt;/script&gt;"));
    assert.match(html, /<h2>Not reached<\/h2>/, "the run denied at date is not reached further");
  });

  test("a report that is not one is a 400 naming the line", async () => {
    const form = new FormData();
    form.set("text", '{"type":"flip"}\nnot json\n');
    const r = await post(form);
    assert.equal(r.status, 400);
    assert.match(await r.text(), /line 2: not JSON/);
    const none = new FormData();
    none.set("text", '{"type":"flip"}\n');
    const r2 = await post(none);
    assert.equal(r2.status, 400);
    assert.match(await r2.text(), /no totals row/);
  });
});
