/**
 * `noema view` of a sealed episode whose files no longer match its
 * `manifest.json` says so in its first line (checked as `noema verify`
 * checks), naming the file and pointing to `noema verify`; `--json` lists the
 * mismatches under `tampered`. An untouched episode says nothing of the kind.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { lstatSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { filesSignature } from "../src/cli/episode_view.ts";
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

// view (and view --follow, each time it draws) checks a sealed episode's files only when they changed since the last
// check: the signature of the folder says so. A run that ends while it is taken releases its lock, so the lock can be
// gone between the listing and its lstat (once, beside two busy loops: "internal error: ENOENT … lstat '…/lock'").
test("the files' signature: an entry gone between the listing and its lstat is left out, not an internal error", () => {
  const dir = join(tmp.path, "signature");
  mkdirSync(join(dir, "approvals"), { recursive: true });
  writeFileSync(join(dir, "events.jsonl"), "{}\n");
  writeFileSync(join(dir, "lock"), "{}");
  writeFileSync(join(dir, "approvals", "s1.json"), "{}");
  const before = filesSignature(dir);
  assert.equal(filesSignature(dir), before, "nothing changed, the same signature");
  assert.match(before, /\/lock\0/);
  // The lock released after the listing: lstat finds nothing there.
  const gone = filesSignature(dir, (p) => (p.endsWith("/lock") ? undefined : lstatSync(p)));
  assert.doesNotMatch(gone, /\/lock\0/);
  assert.match(gone, /events\.jsonl\0/);
  assert.match(gone, /approvals\/s1\.json\0/);
  writeFileSync(join(dir, "events.jsonl"), "{}\n{}\n");
  assert.notEqual(filesSignature(dir), before, "a changed file changes it");
});

test("the files' signature: a folder gone while it was listed makes the listing start again, three times at most", () => {
  const dir = join(tmp.path, "signature-walk");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "events.jsonl"), "{}\n");
  const enoent = () => Object.assign(new Error("ENOENT: no such file or directory, scandir"), { code: "ENOENT" });
  let calls = 0;
  const once = filesSignature(dir, (p) => {
    if (++calls === 1) throw enoent();
    return lstatSync(p);
  });
  assert.equal(once, filesSignature(dir), "the second listing's signature");
  assert.throws(
    () =>
      filesSignature(dir, () => {
        throw enoent();
      }),
    /ENOENT/,
    "a folder that stays gone is an error",
  );
  const denied = Object.assign(new Error("EACCES"), { code: "EACCES" });
  assert.throws(
    () =>
      filesSignature(dir, () => {
        throw denied;
      }),
    /EACCES/,
    "another error is not retried",
  );
});
