import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import process from "node:process";
import { NOEMA_VERSION } from "noema";

const root = join(import.meta.dirname ?? ".", "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8"));

test("NOEMA_VERSION is package.json's version", () => {
  assert.equal(NOEMA_VERSION, pkg.version);
});

test("deno and bun are pinned to exact versions, and every dependency is exact", () => {
  assert.match(pkg.devDependencies.deno, /^\d+\.\d+\.\d+$/);
  // bun is a runtime dependency: the package bin (bin/noema.mjs) runs noema with it, with only Node on PATH.
  assert.match(pkg.dependencies.bun, /^\d+\.\d+\.\d+$/);
  for (const [name, range] of Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })) {
    assert.match(String(range), /^\d+\.\d+\.\d+$/, `${name} must be pinned exactly, got ${range}`);
  }
});

test("the lock file lists every platform package of deno and bun, so npm ci works on a fresh machine", () => {
  // The registry reachable here lacks some platform builds; npm then leaves them out of the lock
  // file and `npm ci` refuses it. Every optional dependency needs an entry (with os/cpu, never fetched elsewhere).
  for (const tool of ["deno", "bun"]) {
    const entry = lock.packages[`node_modules/${tool}`];
    for (const dep of Object.keys(entry.optionalDependencies ?? {})) {
      const e = lock.packages[`node_modules/${dep}`];
      assert.ok(e, `package-lock.json lacks node_modules/${dep}`);
      assert.ok(e.os && e.cpu && e.optional, `${dep} must carry os, cpu and optional`);
    }
  }
});

test("`deno task noema` runs the CLI under Deno (the deno in node_modules/.bin is not taken for a JS bin)", () => {
  const r = spawnSync(join(root, "node_modules", ".bin", "deno"), ["task", "noema", "--version"], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^noema ${NOEMA_VERSION} \\(contracts: event 1\\.3\\.0`));
});
