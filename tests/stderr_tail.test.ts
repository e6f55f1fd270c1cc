/**
 * A failed shell step shows the tail of its program's stderr where the
 * failure is listed: under the actions of `noema view` and in "Needs
 * attention" of the page `noema serve` (and `noema report`) shows. The tail
 * is bounded: the last 10 lines, with how many there were. The run's own
 * result shows its last 2 lines under the error.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { type Served, startServe } from "./helpers/serve.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-stderr-tail-");
const root = join(tmp.path, "root");
const ID = "failing";
let s: Served, runOut: string;

before(async () => {
  const program = 'for i in $(seq 1 30); do echo "err line $i" >&2; done; echo fine; exit 3';
  const r = cli([
    "run",
    "fail loudly",
    "--root",
    root,
    "--episode-id",
    ID,
    "--using",
    "shell",
    "--",
    "sh",
    "-c",
    program,
  ]);
  assert.equal(r.code, 1, r.stderr + r.stdout);
  runOut = r.stdout;
  s = await startServe(root);
});
after(async () => {
  await s?.stop();
  tmp.cleanup();
});

const TAIL = Array.from({ length: 10 }, (_, i) => `err line ${21 + i}`);

test("run: the result line of the failed run ends with the last 2 stderr lines; --json keeps its fields", () => {
  assert.match(
    runOut,
    /\n {2}error CommandFailed: exit code 3\n {2}stderr: err line 29\n {2}stderr: err line 30\n {2}view: /,
  );
  assert.doesNotMatch(runOut, /err line 28/);
  const j = cli(["run", "fail", "--root", root, "--using", "shell", "--json", "--", "sh", "-c", "echo no >&2; exit 3"]);
  assert.equal(j.code, 1);
  assert.deepEqual(Object.keys(JSON.parse(j.stdout)), [
    ...["episode_id", "episode_dir", "status", "outcome", "exit_code", "blocked", "error", "program_exit_code"],
    ...["message", "answer"],
  ], "no field added to --json");
  const masked = cli(
    ["run", "leak", "--root", root, "--using", "shell", "--secret", "AUDIT_TOKEN", "--", "sh", "-c"]
      .concat(["echo 'fatal: bad token tok-audit-0123456789' >&2; exit 2"]),
    { env: { AUDIT_TOKEN: "tok-audit-0123456789" } },
  );
  assert.match(masked.stdout, /\n {2}stderr: fatal: bad token \[REDACTED:AUDIT_TOKEN\]\n/);
  // A blank line before the last one (git's hints) is not one of the 2 lines shown.
  const hint = cli(
    ["run", "hint", "--root", root, "--using", "shell", "--", "sh", "-c"]
      .concat(["printf 'fatal: no remote\\n\\n    git push <name>\\n\\n' >&2; exit 128"]),
  );
  assert.match(hint.stdout, /\n {2}stderr: fatal: no remote\n {2}stderr: git push <name>\n {2}view: /, hint.stdout);
});

test("view: the failed step, its error and the last 10 of its 30 stderr lines", () => {
  const v = cli(["view", ID, "--root", root]);
  assert.equal(v.code, 0, v.stderr);
  const lines = v.stdout.split("\n");
  const at = lines.findIndex((l) => /^ {2}✗ step-2 failed: CommandFailed: exit code 3$/.test(l));
  assert.ok(at > 0, v.stdout);
  assert.equal(lines[at + 1], "    stderr (last 10 of 30 lines):");
  assert.deepEqual(lines.slice(at + 2, at + 12).map((l) => l.trim()), TAIL);
  assert.doesNotMatch(v.stdout, /err line 20\n/, "only the tail");
  const json = JSON.parse(cli(["view", ID, "--root", root, "--json"]).stdout);
  assert.deepEqual(json.failed_actions[0].stderr, { lines: TAIL, total: 30 });
});

/** The "Needs attention" section of a page. */
function attention(html: string): string {
  const from = html.indexOf('<section id="attention">');
  assert.ok(from >= 0, "a Needs attention section");
  return html.slice(from, html.indexOf("</section>", from));
}

test("serve: the episode page lists the failure with the tail of its stderr", async () => {
  const r = await fetch(new URL(`/episodes/${ID}`, s.url));
  assert.equal(r.status, 200);
  const section = attention(await r.text());
  assert.match(section, /CommandFailed: exit code 3/);
  assert.match(section, /stderr \(last 10 of 30 lines\)/);
  assert.ok(section.includes(`<pre>${TAIL.join("\n")}</pre>`), section);
  assert.doesNotMatch(section, /err line 20\b/);
});

test("report: the same tail in Needs attention", () => {
  const out = join(tmp.path, "report.html");
  const r = cli(["report", ID, "--root", root, "-o", out]);
  assert.equal(r.code, 0, r.stderr);
  const section = attention(readFileSync(out, "utf8"));
  assert.ok(section.includes(`<pre>${TAIL.join("\n")}</pre>`), section);
});
