/**
 * The TypeScript examples of README.md and docs/plugins.md type-check against the public API as written, so an
 * example a user copies compiles (a planner that returned neither `source` nor `rationale` once did not: the types
 * required what the runtime did not). Each block that imports `noema` is written to a scratch file in the checkout
 * (`.scratch/`, where `deno.json` maps `noema` to `mod.ts`) and all are checked by one `deno check`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import { REPO } from "./helpers/cli.ts";

/** The ```ts blocks of a Markdown file that import from "noema", with the line each starts on. */
function noemaBlocks(file: string): { line: number; code: string }[] {
  const lines = readFileSync(join(REPO, file), "utf8").split("\n");
  const out: { line: number; code: string }[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== "```ts") continue;
    const start = i + 1;
    while (++i < lines.length && lines[i] !== "```");
    const code = lines.slice(start, i).join("\n");
    if (/from "noema"/.test(code)) out.push({ line: start + 1, code });
  }
  return out;
}

test("the TypeScript examples of README.md and docs/plugins.md type-check as written", { timeout: 300_000 }, () => {
  // In the checkout, so that `noema` resolves through deno.json; a folder fmt and lint leave out and the suite's own
  // type check (of mod.ts, src/, tests/…) does not read (they run alongside).
  mkdirSync(join(REPO, ".scratch"), { recursive: true });
  const dir = mkdtempSync(join(REPO, ".scratch", "docs-examples-"));
  try {
    const files: string[] = [];
    const where = new Map<string, string>();
    for (const doc of ["README.md", "docs/plugins.md"]) {
      for (const b of noemaBlocks(doc)) {
        const name = join(dir, `${doc.replace(/\W/g, "_")}_${b.line}.ts`);
        // A module of its own (top-level await, its own names): `export {}` makes a script-like block one.
        writeFileSync(name, `${b.code}\nexport {};\n`);
        files.push(name);
        where.set(name, `${doc}:${b.line}`);
      }
    }
    assert.ok(files.length >= 7, `the examples were found (${files.length})`);
    const deno = join(REPO, "node_modules", ".bin", "deno");
    const r = spawnSync(deno, ["check", "--quiet", "--config", join(REPO, "deno.json"), ...files], {
      cwd: REPO,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
    });
    let report = r.stdout + r.stderr;
    for (const [file, at] of where) report = report.replaceAll(file, at);
    assert.equal(r.status, 0, report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
