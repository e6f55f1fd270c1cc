#!/usr/bin/env node
// Runs the whole suite under Deno and under Bun, each with its files in parallel, and fails if either fails.
// The type check is one `deno check` of every TypeScript file, beside lint and fmt: `deno test` would type-check each
// test file's graph, and each worker thread's modules as it starts, again and again (three quarters of its CPU).
// Prints one closing line per runner and a total: "N passed, N failed".
// The two halves run at the same time (most of the suite waits on real child processes: the CPU is free); the Deno
// half is shown live and the Bun half's output is printed when it ends. NOEMA_TEST_SERIAL=1 runs them one after the
// other, both live.
// Each half ends when its runner exits (an orphan holding the output pipe cannot hang it) and has an
// overall timeout, NOEMA_TEST_TIMEOUT_MIN minutes (default 20), after which its process group is killed.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runHalf, timeoutFromEnv } from "./run_half.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = (name) => join(root, "node_modules", ".bin", name);
const extra = process.argv.slice(2);
const env = { ...process.env, NO_COLOR: "1" };
const timeoutMs = timeoutFromEnv(process.env);

// Each half runs in its own process group, so Ctrl-C on the terminal does not reach it: pass it on.
const running = new Set();
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    for (const pid of running) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch { /* already gone */ }
    }
    process.exit(130);
  });
}

async function run(label, cmd, args, parse, live = true) {
  const header = `\n=== ${label}: ${[cmd, ...args].join(" ")}\n`;
  if (live) process.stdout.write(header);
  let pid;
  const r = await runHalf(label, cmd, args, {
    cwd: root,
    env,
    timeoutMs,
    onStart: (p) => running.add(pid = p),
    ...(live ? {} : { write: () => {} }),
  });
  running.delete(pid);
  if (!live) process.stdout.write(header + r.out);
  const counts = parse(r.out);
  if (r.timedOut) counts.failed = (counts.failed ?? 0) + 1; // the half that hung counts as a failure
  if (r.error) process.stdout.write(`${label}: could not start: ${r.error.message}\n`);
  if (r.timedOut) process.stdout.write(`${label}: FAILED: timed out after ${timeoutMs / 60_000} min\n`);
  return { label, ok: r.code === 0 && !r.timedOut, timedOut: r.timedOut, ...counts };
}

const serial = ["1", "true", "yes"].includes(process.env.NOEMA_TEST_SERIAL ?? "");
const deno = () =>
  run(
    "deno",
    bin("deno"),
    ["test", "-A", "--no-check", "--parallel", ...(extra.length ? extra : ["tests/"])],
    (out) => {
      // deno-lint-ignore no-control-regex
      const m = /(\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed/.exec(out.replace(/\x1b\[[0-9;]*m/g, ""));
      return { passed: m ? Number(m[1]) : 0, failed: m ? Number(m[2]) : 0 };
    },
  );
// --parallel: test files run in isolated worker processes, one per core (as deno test --parallel does).
const bun = (live) =>
  run(
    "bun",
    bin("bun"),
    ["test", "--parallel", "--timeout", "120000", ...(extra.length ? extra : ["tests/"])],
    (out) => {
      const p = /^\s*(\d+) pass$/m.exec(out), f = /^\s*(\d+) fail$/m.exec(out);
      return { passed: p ? Number(p[1]) : 0, failed: f ? Number(f[1]) : 0 };
    },
    live,
  );
// Static checks: deno check, deno lint and deno fmt --check (each counts as one test), run alongside the halves
// (their output is printed when they end).
const check = async (label, args) => {
  const r = await run(`check ${label}`, bin("deno"), args, () => ({}), serial);
  return { ...r, passed: r.ok ? 1 : 0, failed: r.ok ? 0 : 1 };
};
const TYPED = extra.length ? extra : ["mod.ts", "src/", "tests/", "bench/", "plugins/", "examples/", "scripts/"];
const statics = () => [check("types", ["check", ...TYPED]), check("lint", ["lint"]), check("fmt", ["fmt", "--check"])];
const checks = serial ? null : Promise.all(statics());
const results = serial ? [await deno(), await bun(true)] : await Promise.all([deno(), bun(false)]);
results.push(...(checks ? await checks : await Promise.all(statics())));

process.stdout.write("\n");
for (const r of results) {
  const why = r.timedOut ? " (runner timed out)" : r.ok ? "" : " (runner failed)";
  process.stdout.write(`${r.label}: ${r.passed} passed, ${r.failed} failed${why}\n`);
}
const passed = results.reduce((a, r) => a + r.passed, 0);
const failed = results.reduce((a, r) => a + r.failed, 0);
const ok = results.every((r) => r.ok) && passed > 0;
process.stdout.write(`total: ${passed} passed, ${failed} failed\n`);
process.exit(ok ? 0 : 1);
