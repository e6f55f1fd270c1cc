/**
 * A task file holding a lone UTF-16 surrogate (JSON `"\ud800"`, which is not
 * text and which no artifact can hold) is a usage error: exit 2, one line
 * naming the file, the line and the field, and nothing left under the root,
 * not even a hidden `.tmp-<id>-<pid>` staging directory. A well-formed pair
 * (`"\ud83d\ude00"`) is text and runs. A run started through the library with
 * such a task fails without leaving its staging directory behind.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";
import { run } from "../mod.ts";
import { copyPlainJson, cutString } from "../src/plugins/plain_json.ts";
import { boundedValue } from "../src/store/limits.ts";
import { clipText, textHead } from "../src/text_head.ts";

const tmp = tempDir("noema-surrogate-");
after(() => tmp.cleanup());

/** What is in `<root>/episodes` (nothing when it does not exist). */
function episodesOf(root: string): string[] {
  const dir = join(root, "episodes");
  return existsSync(dir) ? readdirSync(dir) : [];
}

const CASES: { name: string; json: string; field: string; escape: string }[] = [
  { name: "the task", json: '{"task":"bad \\ud800 x","steps":["act:do it"]}', field: "task", escape: "\\ud800" },
  {
    name: "a step's input",
    json: '{"task":"ok",\n"steps":[{"kind":"act","description":"x","inputs":{"a":"\\udc00"}}]}',
    field: "steps[0].inputs.a",
    escape: "\\udc00",
  },
  {
    name: "a tag's key",
    json: '{"task":"ok",\n\n"tags":{"k\\udfff":"v"}}',
    field: 'tags."k\\udfff"',
    escape: "\\udfff",
  },
];

for (const c of CASES) {
  test(`a lone surrogate in ${c.name}: usage error naming file, line and field; nothing written`, () => {
    const root = join(tmp.path, `root-${CASES.indexOf(c)}`);
    const file = tmp.file(`task-${CASES.indexOf(c)}.json`, c.json);
    const line = c.json.slice(0, c.json.indexOf(c.escape)).split("\n").length;
    const r = cli(["run", file, "--root", root, "--using", "command", "--", "true"]);
    assert.equal(r.code, 2, r.stderr + r.stdout);
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.ok(lines[0].startsWith(`noema: ${file}:${line}: ${c.field}: `), lines[0]);
    assert.ok(lines[0].includes(`lone UTF-16 surrogate (${c.escape})`), lines[0]);
    assert.deepEqual(episodesOf(root), [], "no episode and no .tmp-* staging directory");
  });
}

test("a well-formed surrogate pair is text: the run goes ahead", () => {
  const root = join(tmp.path, "root-pair");
  const file = tmp.file("pair.json", '{"task":"smile \\ud83d\\ude00","steps":["act:do it"]}');
  const r = cli(["run", file, "--root", root, "--episode-id", "pair", "--using", "command", "--", "true"]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.deepEqual(episodesOf(root), ["pair"]);
});

test("a run that fails while creating its episode leaves no staging directory", async () => {
  const root = join(tmp.path, "root-lib");
  await assert.rejects(run("bad \ud800 task", { root }), /lone surrogate/);
  assert.deepEqual(episodesOf(root), [], "no .tmp-* staging directory");
});

/** Every artifact file of an episode, as text: none may hold a lone surrogate's `\ud800`-style escape. */
function escapesIn(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    if (!/\.jsonl?$/.test(name)) continue;
    const text = readFileSync(join(dir, name), "utf8");
    if (/(^|[^\\])(\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}/.test(text)) found.push(name);
  }
  return found;
}

const ONE_STEP = '{"task":"t","steps":[{"kind":"act","description":"d","inputs":{"command":"echo deploy"}}]}';

test("a policy verdict with a lone surrogate is an InvalidVerdict (the failure policy), not an internal error", () => {
  const root = join(tmp.path, "root-policy");
  const policy = tmp.file(
    "surr_policy.ts",
    `export default { name: "Surr", version: "1.0", api: "1.0", advise(s) {
      if (s.action.command.includes("\\ud800")) return undefined;
      return { kind: "intervention", advice: "x", confidence: 0.9, patch: { command: "echo deploy \\ud800" } };
    } };`,
  );
  const task = tmp.file("one_step.json", ONE_STEP);
  const r = cli(["run", task, "--root", root, "--using", "shell", "--policy", policy, "--episode-id", "p1"]);
  assert.doesNotMatch(r.stderr, /internal error/, r.stderr);
  assert.equal(r.code, 3, r.stderr + r.stdout); // fail_closed blocks the action
  assert.match(r.stdout + r.stderr, /InvalidVerdict: patch\.command: a string holds a lone UTF-16 surrogate/);
  const dir = join(root, "episodes", "p1");
  assert.deepEqual(escapesIn(dir), []);
  const v = cli(["validate", dir]);
  assert.equal(v.code, 0, v.stderr + v.stdout);
});

test("a planner step with a lone surrogate is a usage error naming the field; nothing written", () => {
  const root = join(tmp.path, "root-planner");
  const planner = tmp.file(
    "surr_planner.ts",
    `export default { name: "Pl", api: "1.0", plan() {
      return { steps: [{ id: "s1", kind: "act", description: "ok", inputs: { a: ["x", "d\\ud800"] } }] };
    } };`,
  );
  const r = cli(["run", "do it", "--root", root, "--using", "shell", "--planner", planner]);
  assert.equal(r.code, 2, r.stderr + r.stdout);
  assert.match(r.stderr, /^noema: planner Pl: steps\[0\]\.inputs\.a\[1\]: a string holds a lone UTF-16 surrogate/);
  assert.deepEqual(episodesOf(root), []);
});

test("an adapter result's lone surrogates (outcome, output, fact keys and values) become U+FFFD", () => {
  const root = join(tmp.path, "root-adapter");
  const adapter = tmp.file(
    "surr_adapter.ts",
    `export default { name: "Ad", version: "1.0", api: "1.0", kind: "custom", create() { return {
      async act() { return { status: "ok", outcome: "o\\ud800", output: { x: "\\udc00" },
        facts: [{ key: "k\\ud800", value: "v\\udfff" }] }; } }; } };`,
  );
  const task = tmp.file("two_steps.json", '{"task":"t","steps":["act:a","act:b"]}');
  const r = cli(["run", task, "--root", root, "--using", adapter, "--episode-id", "a1"]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const dir = join(root, "episodes", "a1");
  assert.deepEqual(escapesIn(dir), []);
  const events = readFileSync(join(dir, "events.jsonl"), "utf8");
  for (const s of ['"outcome":"o\ufffd"', '"x":"\ufffd"', '"key":"k\ufffd"', '"value":"v\ufffd"']) {
    assert.ok(events.includes(s), s);
  }
  const v = cli(["validate", dir]);
  assert.equal(v.code, 0, v.stderr + v.stdout);
});

test("cut text never ends in half a surrogate pair: textHead, clipText, boundedValue's excerpt, cutString", () => {
  assert.equal(textHead("ab\ud83d\ude00", 3), "ab");
  assert.equal(textHead("ab\ud83d\ude00", 4), "ab\ud83d\ude00");
  assert.equal(textHead("a\ud800b", 9), "a\ufffdb");
  assert.equal(clipText("abc\ud83d\ude00", 4), "abc…");
  assert.equal(clipText("ab\ud83d\ude00x", 4), "ab…");
  const omitted = boundedValue("\ud83d\ude00".repeat(10), 8, 3) as { excerpt: string };
  assert.equal(omitted.excerpt, "\ud83d\ude00");
  assert.equal(cutString("bad \ud800", 100), "bad \ufffd");
  assert.deepEqual(copyPlainJson({ a: [1, { "k\ud800": 1 }] }).value, { a: [1, { "k\ufffd": 1 }] });
  assert.equal(copyPlainJson({ a: [1, { "k\ud800": 1 }] }).loneSurrogate, 'a[1]."k\\ud800"');
});
