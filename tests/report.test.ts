/**
 * `noema report`: the HTML page of real episodes (run here with the real CLI:
 * a veto, a policy that throws, 10,000 steps), checked as text and then in a
 * real headless Chromium (Debian's `chromium`): the rendered text, no
 * script or request from hostile artifact text, a screenshot, and the render
 * time of the 10,000-step page. Without Chromium the browser tests are
 * reported as skipped (never passed), with the install command.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import process from "node:process";
import { classFor, escapeHtml, markup, raw } from "../src/report/escape.ts";
import { clip } from "../src/report/excerpt.ts";
import { EpisodeCore } from "../src/runtime/core/episode_core.ts";
import { cli, REPO } from "./helpers/cli.ts";
import { chromiumArgs, findChromium, RENDER_PROBE, stepsTask, timedPage } from "./helpers/report_page.ts";
import { tempDir } from "./helpers/tmp.ts";

const CHROMIUM = findChromium();
const SKIP_BROWSER = CHROMIUM === null
  ? "Chromium not found: the browser tests of noema report are SKIPPED. Install it with:\napt-get install chromium"
  : false;
if (SKIP_BROWSER) console.error(`\n${SKIP_BROWSER}\n`);

const tmp = tempDir("noema-report-");
const root = join(tmp.path, "root");
// The 10,000-step episode is over the default plan limit (5,000 steps): raised, as a user with a long plan would.
const env = { NOEMA_ROOT: root, NOEMA_MAX_PLAN_STEPS: "10000" };
/** Requests the hostile artifact text would make if it ever became markup. */
let hits: string[] = [];
let server: Server;
let port = 0;
const ids = { vetoed: "", failure: "", big: "" };

function run(args: string[], timeoutMs = 120_000) {
  return cli(args, { env, cwd: tmp.path, timeoutMs });
}

function runTask(name: string, task: Record<string, unknown>, extra: string[] = [], timeoutMs?: number): string {
  const file = tmp.file(`${name}.json`, JSON.stringify(task));
  const r = run(["run", file, "--json", ...extra], timeoutMs);
  assert.ok(r.stdout.trim(), `run ${name} printed nothing: ${r.stderr}`);
  return JSON.parse(r.stdout).episode_id;
}

function report(id: string, name: string): string {
  const out = join(tmp.path, `${name}.html`);
  const r = run(["report", id, "-o", out]);
  assert.equal(r.code, 0, r.stderr);
  return out;
}

before(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? "?");
    res.end("x");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

/** The small episodes (a veto with hostile text, a policy that throws), run once, on first use. */
function small(): typeof ids {
  if (ids.vetoed) return ids;
  const url = `http://127.0.0.1:${port}`;
  const guard = join(REPO, "plugins", "policies", "sql-guard.ts");
  ids.vetoed = runTask("vetoed", {
    task: `Clean <script>document.title="pwned"</script><img src="${url}/task.png"> up & "quote" 'it'`,
    using: "shell",
    workspace: ".",
    policies: [guard],
    steps: [
      {
        kind: "detect",
        description: "Print <b>hostile</b> output",
        inputs: { command: `printf '%s\\n' '<script>document.title=1</script><img src=${url}/out.png>' 'second line'` },
      },
      { kind: "act", description: "Drop the sessions table", inputs: { command: "echo DROP TABLE sessions" } },
    ],
  });
  const boom = tmp.file(
    "boom.ts",
    `import { DirectedIntuition } from "noema";
export default class Boom extends DirectedIntuition {
  static override version = "1.0";
  advise() { throw new Error("boom: the policy is broken"); }
}
`,
  );
  ids.failure = runTask("failure", {
    task: "A policy that throws",
    using: "minimal",
    policies: [boom],
    steps: ["act:Do the thing"],
  });
  return ids;
}

/**
 * The 10,000-step episode (about 10 s), run once, on first use. No policy: a policy file runs in a worker, and the
 * runtime currently sends it state that grows with the episode (10,000 steps would take many minutes).
 */
function big(): string {
  if (ids.big) return ids.big;
  ids.big = runTask("big", stepsTask(10_000, "Ten thousand steps"), [], 600_000);
  return ids.big;
}

/** Options of the tests that may run an episode first (slow under load). */
const SLOW = { timeout: 600_000 };
/** The browser tests: skipped, each one visibly (bun drops a skipped describe silently), without Chromium. */
const BROWSER = { ...SLOW, skip: SKIP_BROWSER };

after(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  tmp.cleanup();
});

describe("noema report: escaping and excerpts", () => {
  test("bidi controls are shown, not obeyed: a pending command cannot read as another (Trojan Source)", () => {
    // `echo deploy status <RLO>; touch PWNED #<PDF>` rendered as "echo deploy status # DENWP hcuot ;" in /approvals.
    const spoof = "echo deploy status \u202e; touch /tmp/PWNED #\u202c";
    assert.equal(escapeHtml(spoof), "echo deploy status \\u{202e}; touch /tmp/PWNED #\\u{202c}");
    for (const c of ["\u200e", "\u200f", "\u202a", "\u202d", "\u2066", "\u2069"]) {
      assert.doesNotMatch(escapeHtml(`a${c}b`), /[\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
    }
    // A value whose toString is not callable (a hand-edited artifact) is shown as JSON, not a 500.
    assert.equal(markup`<p>${{ toString: 1 } as unknown as string}</p>`.value, "<p>{&quot;toString&quot;:1}</p>");
  });

  test("markup escapes every interpolated value except markup it built; class names come from a fixed list", () => {
    const hostile = `<img src=x onerror="alert('1')">&`;
    assert.equal(escapeHtml(hostile), "&lt;img src=x onerror=&quot;alert(&#39;1&#39;)&quot;&gt;&amp;");
    assert.equal(
      markup`<p title="${hostile}">${hostile}</p>`.value,
      `<p title="${escapeHtml(hostile)}">${escapeHtml(hostile)}</p>`,
    );
    assert.equal(
      markup`<ul>${["<a>", markup`<li>${"<b>"}</li>`, 3, null, false]}</ul>`.value,
      "<ul>&lt;a&gt;<li>&lt;b&gt;</li>3</ul>",
    );
    assert.equal(markup`${raw("<br>")}`.value, "<br>");
    assert.equal(escapeHtml("a\uD800b"), "a\uFFFDb", "a lone surrogate becomes U+FFFD");
    assert.equal(classFor('done" onclick="x', ["done"], "other"), "other");
    assert.equal(classFor("done", ["done"], "other"), "done");
  });

  test("clip keeps the beginning and the end and says how much was cut", () => {
    assert.deepEqual(clip("abcdefghij", 4), { head: "ab", tail: "ij", cut: 6 });
    assert.deepEqual(clip("abc", 4), { head: "abc", tail: "", cut: 0 });
  });
});

describe("noema report: the file", () => {
  test("one self-contained page: strict CSP, no script, style link, image or font, artifacts escaped", SLOW, () => {
    const page = readFileSync(report(small().vetoed, "vetoed"), "utf8");
    assert.match(page, /^<!doctype html>/);
    assert.match(
      page,
      /<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;unsafe-inline&#39;;[^"]*script-src &#39;none&#39;/,
    );
    for (
      const forbidden of [
        /<script/i,
        /<img/i,
        /<link/i,
        /<iframe/i,
        /url\(/i,
        /@import/i,
        /<base/i,
        /<[a-z]+[^>]*\ssrc=/i,
      ]
    ) {
      assert.ok(!forbidden.test(page), `the page matches ${forbidden}`);
    }
    assert.ok(page.includes("Clean &lt;script&gt;document.title=&quot;pwned&quot;&lt;/script&gt;&lt;img src="), page);
    assert.ok(page.includes("up &amp; &quot;quote&quot; &#39;it&#39;"));
    assert.ok(page.includes("&lt;script&gt;document.title=1&lt;/script&gt;"), "the step's stdout is in the page");
    assert.ok(page.includes(small().vetoed));
    assert.match(page, /VETO/);
    assert.match(page, /policy\.veto:SqlGuard@1\.0/);
  });

  test("-o - writes the page to stdout; the default file is <id>.html; no temp file is left", SLOW, () => {
    const r = run(["report", small().vetoed, "-o", "-"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^<!doctype html>/);
    assert.ok(r.stdout.trimEnd().endsWith("</html>"));
    assert.equal(r.stderr, "");
    const d = run(["report", small().vetoed]);
    assert.equal(d.code, 0, d.stderr);
    assert.match(d.stderr, new RegExp(`wrote ${small().vetoed}\\.html`));
    assert.ok(existsSync(join(tmp.path, `${small().vetoed}.html`)));
    assert.deepEqual(readdirSync(tmp.path).filter((f) => f.includes(".tmp-")), []);
  });

  test("an agent's final answer has its own section, whole and escaped", SLOW, async () => {
    const ws = join(tmp.path, "answer-ws");
    mkdirSync(ws, { recursive: true });
    const core = await EpisodeCore.open("answer the question", { root, workspace: ws, using: "llm" });
    const answer = "The test passes now.\nI changed <b>two</b> lines & ran it.";
    await core.finish({ adapter_result: "success", message: answer, answer });
    const page = readFileSync(report(core.episodeId, "answer"), "utf8");
    assert.match(
      page,
      /<h3>Answer<\/h3><pre>The test passes now\.\nI changed &lt;b&gt;two&lt;\/b&gt; lines &amp; ran it\.<\/pre>/,
    );
    const none = readFileSync(report(small().vetoed, "no-answer"), "utf8");
    assert.doesNotMatch(none, /<h3>Answer<\/h3>/);
  });

  test("a policy failure is shown as a policy failure, not as a veto", SLOW, () => {
    const page = readFileSync(report(small().failure, "failure"), "utf8");
    assert.match(page, /policy failure/);
    assert.match(page, /policy\.failure:Boom@1\.0/);
    assert.match(page, /boom: the policy is broken/);
    assert.match(page, /0 vetoes/);
    assert.match(page, /1 policy failure</);
  });

  test(
    "errors: unknown episode (exit 1), not an episode directory (exit 1), bad option (exit 2), unwritable path",
    SLOW,
    () => {
      const unknown = run(["report", "ep_01K9ZZZZZZZZZZZZZZZZZZZZZZ"]);
      assert.equal(unknown.code, 1, unknown.stderr);
      assert.match(unknown.stderr, /^noema: episode ep_01K9ZZZZZZZZZZZZZZZZZZZZZZ not found/);
      const notEpisode = join(tmp.path, "not-an-episode");
      mkdirSync(notEpisode, { recursive: true });
      const dir = run(["report", notEpisode, "-o", "-"]);
      assert.equal(dir.code, 1, dir.stderr);
      assert.match(dir.stderr, /not an episode directory: .*\(no state\.json or events\.jsonl\)/);
      assert.equal(dir.stdout, "");
      const bad = run(["report", small().vetoed, "--excerpt-chars", "0"]);
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, /--excerpt-chars must be a positive integer/);
      const blocker = tmp.file("blocker", "a file, not a directory");
      const unwritable = run(["report", small().vetoed, "-o", join(blocker, "r.html")]);
      assert.equal(unwritable.code, 1, unwritable.stderr);
      assert.match(unwritable.stderr, /^noema: cannot write .*blocker\/r\.html/);
      assert.equal(unwritable.stderr.trim().split("\n").length, 1);
    },
  );

  test("10,000 steps: every step is in the page, in closed chunks, with bounded excerpts", SLOW, () => {
    const page = readFileSync(report(big(), "big"), "utf8");
    assert.ok(page.includes('id="s-10000"'));
    assert.equal(page.match(/<details class="chunk">/g)?.length, 100);
    assert.doesNotMatch(page, /<details class="chunk" open/);
    assert.match(page, /10000 steps: 10000 done · 10000 actions/);
    const mb = statSync(join(tmp.path, "big.html")).size / 2 ** 20;
    assert.ok(mb < 16, `the page is ${mb.toFixed(1)} MiB`);
  });
});

function chromium(args: string[], target: string): { stdout: string; stderr: string } {
  const profile = join(tmp.path, `profile-${Math.random().toString(36).slice(2)}`);
  const r = spawnSync(CHROMIUM!, chromiumArgs(profile, args, target), {
    encoding: "utf8",
    timeout: 120_000,
    maxBuffer: 256 << 20,
  });
  if (r.error) throw r.error;
  assert.equal(r.status, 0, r.stderr);
  return { stdout: r.stdout, stderr: r.stderr };
}

/** The text of a dumped DOM, without tags (entities decoded for the few used). */
function textOf(dom: string): string {
  return dom.replace(/<style>[\s\S]*?<\/style>/g, "").replace(/<[^>]+>/g, " ").replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&").replace(/\s+/g, " ");
}

/** Chromium's options for the screenshot of the vetoed page, at 1280×2000. */
const screenshotArgs = (
  png: string,
): string[] => [`--screenshot=${png}`, "--window-size=1280,2000", "--hide-scrollbars"];

describe("noema report in headless Chromium", () => {
  test(
    "the rendered page shows the episode id, the veto and the outcome, runs nothing and requests nothing",
    BROWSER,
    () => {
      hits = [];
      const file = join(tmp.path, "vetoed.html");
      if (!existsSync(file)) report(small().vetoed, "vetoed");
      // The same launch takes the next test's screenshot of this page (a launch costs about 1 s of CPU).
      const dom = chromium(["--dump-dom", ...screenshotArgs(join(tmp.path, "vetoed.png"))], file).stdout;
      assert.doesNotMatch(dom, /<script/i, "no script element in the rendered DOM");
      assert.doesNotMatch(dom, /<img/i, "no image element in the rendered DOM");
      assert.match(dom, /<title>noema report · ep_\w+ · vetoed · error<\/title>/, "the hostile script did not run");
      const text = textOf(dom);
      assert.ok(text.includes(`Episode ${small().vetoed}`), text.slice(0, 500));
      assert.match(text, /VETO policy\.veto:SqlGuard@1\.0 Destructive SQL blocked/);
      assert.match(text, /outcome error/);
      assert.ok(text.includes(`Clean <script>document.title="pwned"</script>`), "the task is shown as text");
      assert.deepEqual(hits, [], "no request reached the local server");
    },
  );

  test("a screenshot at 1280×2000 (for a human to look at)", BROWSER, () => {
    const png = join(tmp.path, "vetoed.png");
    if (!existsSync(png)) {
      // Taken by the test above, with its DOM; alone (that test filtered out), it is taken here.
      if (!existsSync(join(tmp.path, "vetoed.html"))) report(small().vetoed, "vetoed");
      chromium(screenshotArgs(png), join(tmp.path, "vetoed.html"));
    }
    const bytes = readFileSync(png);
    assert.deepEqual([...bytes.subarray(1, 4)], [0x50, 0x4e, 0x47], "a PNG file");
    assert.equal(bytes.readUInt32BE(16), 1280, "width");
    assert.equal(bytes.readUInt32BE(20), 2000, "height");
    assert.ok(bytes.length > 20_000, `a screenshot with content (${bytes.length} bytes)`);
    const keep = process.env.NOEMA_REPORT_SCREENSHOT;
    if (keep) writeFileSync(keep, bytes);
    assert.deepEqual(hits, []);
  });

  test(
    "the 10,000-step page renders in Chromium, to its last page (its time is bench/report.ts's goal)",
    BROWSER,
    () => {
      // Measured inside the page: a copy whose CSP allows one inline script at the end of <body>, which forces
      // layout and writes performance.now() (ms since navigation start) into the title. The time is printed, not
      // asserted: a test never asserts elapsed time (a busy machine failed the comparison this test made);
      // `bench/report.ts` holds the render goal (< 2 s) against the same events as plain text, measured in one run.
      if (!existsSync(join(tmp.path, "big.html"))) report(big(), "big");
      const reportMs = renderMs(readFileSync(join(tmp.path, "big.html"), "utf8"), "big-timed.html");
      console.error(`report of 10,000 steps: rendered in ${reportMs.ms} ms (${reportMs.nodes} elements)`);
      assert.ok(textOf(reportMs.dom).includes("Steps 9901–10000"), "laid out to its last page");
      assert.ok(reportMs.nodes > 0, "the probe counted its elements");
    },
  );
});

/** One in-page render of a page in headless Chromium: its time (printed, never asserted), elements and DOM. */
function renderMs(page: string, name: string): { ms: number; nodes: number; dom: string } {
  const timed = join(tmp.path, name);
  writeFileSync(timed, timedPage(page));
  const dom = chromium(["--dump-dom"], timed).stdout;
  const m = RENDER_PROBE.exec(dom);
  assert.ok(m, "the probe ran");
  return { ms: Number(m[1]), nodes: Number(m[2]), dom };
}
