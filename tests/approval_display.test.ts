/**
 * A step that waited for a human is shown by the human's decision: a step
 * approved and then run reads "approved by WHO (note)" and is no veto under
 * "Needs attention"; a rejected one reads "rejected by WHO: note", not
 * "vetoed by ApprovalGate". Checked in `noema view`, `noema report`, the
 * episode page of a started `noema serve` (over HTTP), and the line `noema
 * reject --resume` prints.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { pausedRun, type Served, startServe } from "./helpers/serve.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-approval-display-");
const root = join(tmp.path, "root");
let approved: string, rejected: string, who: string, rejectOut: string;
let approvedJson: Record<string, unknown>, rejectedJson: Record<string, unknown>;
let s: Served;

/** The decider recorded in an episode's approval record. */
function decider(id: string): string {
  const dir = join(root, "episodes", id, "approvals");
  return JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8")).by;
}

before(async () => {
  approved = pausedRun(root, "ship the release");
  rejected = pausedRun(root, "ship on friday");
  const a = cli(["approve", approved, "--root", root, "--note", "release window open", "--resume", "--json"]);
  assert.equal(a.code, 0, a.stderr + a.stdout);
  approvedJson = JSON.parse(a.stdout);
  const rj = cli(["reject", pausedRun(root, "ship it anyway"), "--root", root, "--resume", "--json"]);
  assert.equal(rj.code, 3, rj.stderr + rj.stdout);
  rejectedJson = JSON.parse(rj.stdout);
  const r = cli(["reject", rejected, "--root", root, "--note", "not on a Friday", "--resume"]);
  assert.equal(r.code, 3, r.stderr + r.stdout);
  rejectOut = r.stdout;
  who = decider(approved);
  assert.equal(decider(rejected), who);
  s = await startServe(root);
});
after(async () => {
  await s?.stop();
  tmp.cleanup();
});

/** The "Needs attention" section of a page, or null when it has none. */
function attention(html: string): string | null {
  const from = html.indexOf('<section id="attention">');
  return from < 0 ? null : html.slice(from, html.indexOf("</section>", from));
}

/** The summary line (`<summary>…</summary>`) of step `n` on a page. */
function stepSummary(html: string, n: number): string {
  const from = html.indexOf(`id="s-${n}"`);
  assert.ok(from >= 0, `step #${n} on the page`);
  return html.slice(from, html.indexOf("</summary>", from));
}

/** The page `noema report` writes, and the page `noema serve` answers, for an episode. */
async function pages(id: string): Promise<[string, string][]> {
  const out = join(tmp.path, `${id}.html`);
  const r = cli(["report", id, "--root", root, "-o", out]);
  assert.equal(r.code, 0, r.stderr);
  const served = await fetch(new URL(`/episodes/${id}`, s.url));
  assert.equal(served.status, 200);
  return [["report", readFileSync(out, "utf8")], ["serve", await served.text()]];
}

describe("an approved step that then ran", () => {
  test("view: the plan says approved by WHO (note); the verdicts count no veto", () => {
    const v = cli(["view", approved, "--root", root]);
    assert.equal(v.code, 0, v.stderr);
    assert.match(v.stdout, new RegExp(`✓ step-2 +act +done .* — approved by ${who} \\(release window open\\)\\n`));
    assert.match(v.stdout, /Policy verdicts .*· 0 vetoes · 1 approved\n/);
    assert.match(v.stdout, new RegExp(`governance +step-2 +\\S+ +ask: approved .*approved by ${who}`));
    assert.doesNotMatch(v.stdout, /governance +step-2 +\S+ +veto /);
    const json = JSON.parse(cli(["view", approved, "--root", root, "--json"]).stdout);
    assert.equal(json.counts.vetoes, 0);
    assert.deepEqual(
      json.decisions.map((d: { step_id: string; decision: string; note: string }) => [d.step_id, d.decision, d.note]),
      [["step-2", "approved", "release window open"]],
    );
  });

  test("report and serve: no veto under Needs attention; the step reads approved by WHO (note)", async () => {
    for (const [surface, html] of await pages(approved)) {
      assert.equal(attention(html), null, `${surface}: nothing needs attention`);
      const step = stepSummary(html, 2);
      assert.ok(step.includes(`approved by ${who} (release window open)`), `${surface}: ${step}`);
      assert.doesNotMatch(step, /VETO/, surface);
    }
  });
});

describe("--resume --json: blocked is the decision that stopped an action", () => {
  test("approved and ran: blocked is null (the veto only asked for approval)", () => {
    assert.deepEqual([approvedJson.status, approvedJson.exit_code, approvedJson.blocked], ["ok", 0, null]);
  });

  test("rejected: blocked keeps the veto that asked for approval", () => {
    assert.deepEqual([rejectedJson.status, rejectedJson.exit_code], ["vetoed", 3]);
    const b = rejectedJson.blocked as Record<string, unknown>;
    assert.deepEqual([b.kind, b.rule, b.step_id], ["veto", "policy.veto:ApprovalGate@1.0", "step-2"]);
  });
});

describe("a rejected step", () => {
  test("reject --resume prints rejected by WHO: note, not vetoed by ApprovalGate", () => {
    assert.match(rejectOut, new RegExp(`\\n {2}rejected by ${who}: not on a Friday\\n`));
    assert.doesNotMatch(rejectOut, /vetoed by/);
  });

  test("view: the plan says rejected by WHO: note", () => {
    const v = cli(["view", rejected, "--root", root]);
    assert.equal(v.code, 0, v.stderr);
    assert.match(v.stdout, new RegExp(`⊘ step-2 +act +vetoed .* — rejected by ${who}: not on a Friday\\n`));
    assert.match(v.stdout, /Policy verdicts .*· 0 vetoes · 1 rejected\n/);
    assert.doesNotMatch(v.stdout, /governance +step-2 +\S+ +veto /);
  });

  test("report and serve: Needs attention says rejected by WHO: note, not a veto by ApprovalGate", async () => {
    for (const [surface, html] of await pages(rejected)) {
      const section = attention(html);
      assert.ok(section !== null, `${surface}: the rejection needs attention`);
      assert.ok(section.includes(`rejected by ${who}: not on a Friday`), `${surface}: ${section}`);
      assert.doesNotMatch(section, /VETO|ApprovalGate/, surface);
      assert.ok(stepSummary(html, 2).includes(`rejected by ${who}: not on a Friday`), surface);
    }
  });
});
