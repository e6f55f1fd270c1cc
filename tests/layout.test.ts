/**
 * The layout rules: nothing in `src/` imports the public entry point
 * (`mod.ts`) or the copyable examples in `plugins/`, so `mod.ts` is never in
 * an import cycle, and the built-in adapters live in `src/adapters` (the
 * layers between the folders of `src/` are checked in `layers.test.ts`).
 *
 * @module
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const SRC = join(REPO, "src");

function* tsFiles(dir: string): Generator<string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

/** Every static or dynamic import specifier of a file. */
function specifiers(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const out: string[] = [];
  const patterns = [
    /^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']/g,
  ];
  for (const re of patterns) for (const m of code.matchAll(re)) out.push(m[1]);
  return out;
}

test("no file in src/ imports mod.ts, the bare noema specifier or plugins/", () => {
  const offenders: string[] = [];
  for (const file of tsFiles(SRC)) {
    // The templates are the text of generated plugin files, which do import "noema".
    if (file.startsWith(join(SRC, "cli", "templates") + "/")) continue;
    const text = readFileSync(file, "utf8");
    for (const spec of specifiers(text)) {
      const target = spec.startsWith(".") ? resolve(file, "..", spec) : spec;
      if (
        spec === "noema" || target === join(REPO, "mod.ts") || target.startsWith(join(REPO, "plugins") + "/")
      ) offenders.push(`${relative(REPO, file)} imports ${spec}`);
    }
  }
  assert.deepEqual(offenders, []);
});

test("the built-in adapters live in src/adapters", () => {
  const names = readdirSync(join(SRC, "adapters")).filter((n) => n.endsWith(".ts")).sort();
  for (const n of ["command.ts", "minimal.ts", "scripted.ts", "shell.ts"]) assert.ok(names.includes(n), n);
});
