#!/usr/bin/env node
// Runs the whole suite under Deno and under Bun, each with its files in parallel, and fails if either fails.
// The type check is one `deno check` of every TypeScript file, beside lint and fmt: `deno test` would type-check each
// test file's graph, and each worker thread's modules as it starts, again and again (three quarters of its CPU).
// Prints one closing line per runner and a total: "N passed, N failed".
// The files that drive a real agent CLI (Claude Code, Gemini CLI, Codex: ONCE below) run in the Bun half only, the
// runtime of the shipped binary: most of their cost is the agent itself, the same under either runtime, and Deno's
// own hook path is covered by the hook tests that run in both halves. NOEMA_TEST_BOTH=1 runs them under Deno as well;
// files named on the command line run under both.
// The two halves run at the same time (most of the suite waits on real child processes: the CPU is free); the Deno
// half is shown live and the Bun half's output is printed when it ends. NOEMA_TEST_SERIAL=1 runs them one after the
// other, both live.
// Each half ends when its runner exits (an orphan holding the output pipe cannot hang it) and has an
// overall timeout, NOEMA_TEST_TIMEOUT_MIN minutes (default 40), after which its process group is killed.
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runHalf, timeoutFromEnv } from "./run_half.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = (name) => join(root, "node_modules", ".bin", name);
const extra = process.argv.slice(2);
const env = { ...process.env, NO_COLOR: "1" };
const timeoutMs = timeoutFromEnv(process.env);
const yes = (v) => ["1", "true", "yes"].includes(v ?? "");

/** Test files run under Bun only (see the header). */
const ONCE = new Set([
  "claude_code.test.ts",
  "claude_code_store.test.ts",
  "claude_code_tokens.test.ts",
  "claude_code_turns.test.ts",
  "claude_permission.test.ts",
  "claude_review.test.ts",
  "codex_cli.test.ts",
  "gemini_cli.test.ts",
  "otel_claude.test.ts",
  "rules_agents.test.ts",
]);
/**
 * The files that take longest under Deno (about 10 to 40 s each), longest first: `deno test --parallel` starts files
 * in the order given, and one of these started last would run on alone at the end.
 */
const SLOW = [
  "shared_store.test.ts",
  "cli_ux.test.ts",
  "lock.test.ts",
  "hook_fail_closed.test.ts",
  "inputs.test.ts",
  "crash_orphans.test.ts",
  "llm_run.test.ts",
  "hook_wait.test.ts",
  "hook_server.test.ts",
  "otel.test.ts",
  "plugin_values.test.ts",
];
const denoFiles = () => {
  if (extra.length) return extra;
  const both = yes(process.env.NOEMA_TEST_BOTH);
  const files = readdirSync(join(root, "tests")).filter((f) => f.endsWith(".test.ts") && (both || !ONCE.has(f)));
  const rank = (f) => (SLOW.includes(f) ? SLOW.indexOf(f) : SLOW.length);
  return files.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).map((f) => join("tests", f));
};

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
  const shown = args.length > 12 ? [...args.slice(0, 6), `… (${args.length - 6} more)`] : args;
  const header = `\n=== ${label}: ${[cmd, ...shown].join(" ")}\n`;
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

const serial = yes(process.env.NOEMA_TEST_SERIAL);
/** How many lines of each failure's error the closing list repeats. */
const ERROR_LINES = 16;
/** Deno's " ERRORS " section: each failed test's name line and the first lines of what it threw. */
function denoErrors(plain) {
  const start = plain.indexOf("\n ERRORS \n"), end = plain.indexOf("\n FAILURES \n", start);
  if (start < 0) return [];
  const blocks = [];
  for (const line of plain.slice(start + 10, end < 0 ? undefined : end).split("\n")) {
    if (/ => \S+:\d+:\d+$/.test(line)) blocks.push([line]);
    else if (blocks.length && line.trim()) blocks.at(-1).push(line);
  }
  return blocks.map((b) => b.slice(0, ERROR_LINES + 1).join("\n"));
}
const deno = () =>
  run(
    "deno",
    bin("deno"),
    ["test", "-A", "--no-check", "--parallel", ...denoFiles()],
    (out) => {
      // deno-lint-ignore no-control-regex
      const plain = out.replace(/\x1b\[[0-9;]*m/g, "");
      const m = /(\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed/.exec(plain);
      // Each failure's line as it ran, "./tests/<file> => <describe> ... <test> ... FAILED (ms)" (not its describe's).
      const failed = /^(\.\/tests\/\S+ => .*) \.\.\. FAILED \((?!due to)/gm;
      const names = [...new Set([...plain.matchAll(failed)].map((x) => x[1]))];
      return { passed: m ? Number(m[1]) : 0, failed: m ? Number(m[2]) : 0, names, errors: denoErrors(plain) };
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
      // Each failure's line, "(fail) <describe> > <test> [ms]", under its file's "tests/<file>:" line.
      // Bun prints what the test threw just before that line, and the "(fail)" lines again in its closing summary
      // (under the last file's name): the first one counts.
      const names = [], errors = [], seen = new Set();
      let file = "", since = [];
      for (const line of out.split("\n")) {
        if (/^tests\/\S+\.test\.ts:$/.test(line)) {
          file = line.slice(0, -1);
          since = [];
        } else if (line.startsWith("(fail) ") && !seen.has(line)) {
          seen.add(line);
          names.push(`${file}: ${line.slice(7)}`);
          errors.push([`${file}: ${line.slice(7)}`, ...since.slice(-ERROR_LINES)].join("\n"));
          since = [];
        } else if (/^\((pass|skip|todo|fail)\) /.test(line)) since = [];
        else if (!/^\s+at (node:|\S+ \(node:)/.test(line)) since.push(line); // not the test runner's own frames
      }
      return { passed: p ? Number(p[1]) : 0, failed: f ? Number(f[1]) : 0, names, errors };
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
// The failures again, last, where a log cut to its end still shows them: what each threw, then their names.
for (const r of results) {
  for (const error of (r.errors ?? []).slice(0, 10)) process.stdout.write(`--- ${r.label}: ${error}\n`);
}
for (const r of results) {
  for (const name of (r.names ?? []).slice(0, 30)) process.stdout.write(`FAILED under ${r.label}: ${name}\n`);
}
for (const r of results) {
  const why = r.timedOut ? " (runner timed out)" : r.ok ? "" : " (runner failed)";
  process.stdout.write(`${r.label}: ${r.passed} passed, ${r.failed} failed${why}\n`);
}
const passed = results.reduce((a, r) => a + r.passed, 0);
const failed = results.reduce((a, r) => a + r.failed, 0);
const ok = results.every((r) => r.ok) && passed > 0;
process.stdout.write(`total: ${passed} passed, ${failed} failed\n`);
process.exit(ok ? 0 : 1);
