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
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";
import { run } from "../mod.ts";

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
