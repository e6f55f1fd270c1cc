/**
 * `noema view` of a sealed episode whose files no longer match its
 * `manifest.json` says so in its first line (checked as `noema verify`
 * checks), naming the file and pointing to `noema verify`; `--json` lists the
 * mismatches under `tampered`. An untouched episode says nothing of the kind.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-view-tampered-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");

function sealed(id: string): string {
  const r = cli(["run", "hello", "--root", root, "--episode-id", id, "--using", "command", "--", "true"]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  return join(root, "episodes", id);
}

test("an untouched episode: the first line is the episode's, --json tampered is []", () => {
  sealed("clean");
  const v = cli(["view", "clean", "--root", root]);
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stdout.split("\n")[0], /^Episode clean {2}ok/);
  assert.deepEqual(JSON.parse(cli(["view", "clean", "--root", root, "--json"]).stdout).tampered, []);
});

test("one changed byte in events.jsonl: the first line says the files do not match manifest.json", () => {
  const dir = sealed("changed");
  const events = join(dir, "events.jsonl");
  writeFileSync(events, readFileSync(events, "utf8").replace('"task":"hello"', '"task":"hellO"'));
  const v = cli(["view", "changed", "--root", root]);
  assert.equal(v.code, 0, v.stderr);
  const [first, second] = v.stdout.split("\n");
  assert.match(first, /^! files do not match manifest\.json .*events\.jsonl: sha256 differs from manifest/);
  assert.match(first, /noema verify changed$/);
  assert.match(second, /^Episode changed/);
  const json = JSON.parse(cli(["view", "changed", "--root", root, "--json"]).stdout);
  assert.deepEqual(json.tampered.map((t: { file: string; kind: string }) => [t.file, t.kind]), [
    ["events.jsonl", "hash_mismatch"],
  ]);
});

test("a listed file deleted: the first line names it", () => {
  const dir = sealed("deleted");
  rmSync(join(dir, "learn.jsonl"));
  const first = cli(["view", "deleted", "--root", root]).stdout.split("\n")[0];
  assert.match(first, /^! files do not match manifest\.json .*learn\.jsonl: listed in the manifest but does not exist/);
});
