#!/usr/bin/env node
// Runs the whole suite under Deno (type-checked) and under Bun, and fails if either fails.
// Prints one closing line per runner and a total: "N passed, N failed".
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = (name) => join(root, "node_modules", ".bin", name);
const extra = process.argv.slice(2);
const env = { ...process.env, NO_COLOR: "1" };

function run(label, cmd, args, parse) {
  process.stdout.write(`\n=== ${label}: ${[cmd, ...args].join(" ")}\n`);
  const r = spawnSync(cmd, args, { cwd: root, env, encoding: "utf8", maxBuffer: 1 << 30 });
  const out = (r.stdout ?? "") + (r.stderr ?? "");
  process.stdout.write(out);
  const counts = parse(out);
  const ok = r.status === 0;
  if (r.error) process.stdout.write(`${label}: could not start: ${r.error.message}\n`);
  return { label, ok, ...counts };
}

const results = [
  run("deno", bin("deno"), ["test", "-A", "--parallel", ...(extra.length ? extra : ["tests/"])], (out) => {
    // deno-lint-ignore no-control-regex
    const m = /(\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed/.exec(out.replace(/\x1b\[[0-9;]*m/g, ""));
    return { passed: m ? Number(m[1]) : 0, failed: m ? Number(m[2]) : 0 };
  }),
  run("bun", bin("bun"), ["test", "--timeout", "120000", ...(extra.length ? extra : ["tests/"])], (out) => {
    const p = /^\s*(\d+) pass$/m.exec(out), f = /^\s*(\d+) fail$/m.exec(out);
    return { passed: p ? Number(p[1]) : 0, failed: f ? Number(f[1]) : 0 };
  }),
];

// Static checks: deno lint and deno fmt --check (each counts as one test).
for (const [label, args] of [["lint", ["lint"]], ["fmt", ["fmt", "--check"]]]) {
  const r = run(`check ${label}`, bin("deno"), args, () => ({}));
  results.push({ label: `check ${label}`, ok: r.ok, passed: r.ok ? 1 : 0, failed: r.ok ? 0 : 1 });
}

process.stdout.write("\n");
for (const r of results) {
  process.stdout.write(`${r.label}: ${r.passed} passed, ${r.failed} failed${r.ok ? "" : " (runner failed)"}\n`);
}
const passed = results.reduce((a, r) => a + r.passed, 0);
const failed = results.reduce((a, r) => a + r.failed, 0);
const ok = results.every((r) => r.ok) && passed > 0;
process.stdout.write(`total: ${passed} passed, ${failed} failed\n`);
process.exit(ok ? 0 : 1);
