#!/usr/bin/env node
// Runs the whole suite under Deno and under Bun, and fails if either fails.
// Each test file runs in a runner process of its own (`deno test -A --no-check --parallel <file>`,
// `bun test <file>`), NOEMA_TEST_JOBS of them at a time (default: three per core: most of the suite waits on real
// child processes, so the CPU is free), the slowest first; the Deno and the Bun runs of the files share that pool,
// and a file never runs under both at once.
// One process per file is what lets the closing lines count the tests that finished and name every file that did
// not, even when the run was cut short: each runner prints a line per test as it ends (scripts/test_output.mjs).
// The type check is one `deno check` of every TypeScript file, beside lint and fmt, run alongside the files:
// `deno test` would type-check each test file's graph again and again.
// Prints a line per file as it ends (its whole output too when it failed; all of it with NOEMA_TEST_VERBOSE=1),
// then the failures, the files that did not finish, the slowest files, a line per runtime and a total:
// "N passed, N failed" (tests: a describe counts its tests).
// The files that drive a real agent CLI (Claude Code, Gemini CLI, Codex: ONCE below) run under Bun only, the
// runtime of the shipped binary: most of their cost is the agent itself, the same under either runtime, and Deno's
// own hook path is covered by the hook tests that run under both. So do the files whose children are the same
// whatever runtime runs the test (three hook files, the binary's own test), and those that would run none of noema's
// code under Deno (NO_NOEMA_CODE). NOEMA_TEST_BOTH=1 runs them under Deno as well; files named on the command line run
// under both.
// The CLI children run the single binary, the executable users download: the run builds it first
// (`bun scripts/build.ts`, counted as the check "binary") into its scratch directory and gives its path to the
// runners as NOEMA_TEST_BINARY (see tests/helpers/cli.ts). A CLI start costs the binary about a third of the CPU of
// `bun src/cli/main.ts` (which transpiles some 200 modules each time) and a quarter of `deno run -A
// src/cli/main.ts`'s. The Deno runs of the files in DENO_SOURCE below start the CLI from source under Deno (what
// `npx deno task noema` runs), each chosen for a part of the CLI that meets Deno's own runtime; so do the files named
// on the command line, and `bun test` and `deno test` run directly. NOEMA_TEST_SOURCE=1 runs every child from source.
// NOEMA_TEST_SERIAL=1 runs one file at a time, its output live.
// Each file's runner runs in its own process group, which is killed with it. The run has an overall timeout,
// NOEMA_TEST_TIMEOUT_MIN minutes (default 40): then (or on SIGUSR1) the running files are killed, no new one
// starts, and the closing lines still count the tests that finished and name the files that did not finish and the
// files that never started.
// NOEMA_TEST_DIR runs the *.test.ts files of another directory (without the static checks, which are the repo's).
// Every runner's TMPDIR is a scratch directory of the run's own, in memory (/dev/shm) where there is one, removed at
// the end (NOEMA_TEST_TMPDIR: where to make it instead; see scratch_dir.mjs).
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { runHalf, timeoutFromEnv } from "./run_half.mjs";
import { makeScratch, removeScratch, scratchBase } from "./scratch_dir.mjs";
import { parseBun, parseDeno } from "./test_output.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = (name) => join(root, "node_modules", ".bin", name);
const extra = process.argv.slice(2);
// Every runner's TMPDIR: a directory of the run's own, removed at its end (see scratch_dir.mjs).
const scratch = makeScratch(scratchBase(process.env, tmpdir()));
process.on("exit", () => removeScratch(scratch));
const env = { ...process.env, NO_COLOR: "1", TMPDIR: scratch };
const timeoutMs = timeoutFromEnv(process.env);
const yes = (v) => ["1", "true", "yes"].includes(v ?? "");
const serial = yes(process.env.NOEMA_TEST_SERIAL);
const verbose = serial || yes(process.env.NOEMA_TEST_VERBOSE);
const testsDir = process.env.NOEMA_TEST_DIR || "tests";
const fromSource = yes(process.env.NOEMA_TEST_SOURCE);
/** Files named on the command line: run under both runtimes, the Deno runs' CLI children from source. */
const named = extra.length > 0;
/** A test file's name without its directory. */
const baseName = (f) => f.slice(f.lastIndexOf("/") + 1);
const jobsAtOnce = serial ? 1 : Number(process.env.NOEMA_TEST_JOBS) || 3 * availableParallelism();

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
  "mcp_gateway_claude.test.ts",
  "otel_claude.test.ts",
  "rules_agents.test.ts",
  "rules_claude_differential.test.ts",
  // Not an agent CLI: some 290 runs of the noema CLI, each a shell line the rules deny. The rules engine is plain code
  // (rules.test.ts and rules_cli.test.ts run under both runtimes), and Deno's CLI runs the shell adapter and the hook
  // in other files.
  "rules_bypass.test.ts",
  // Their noema children are the same under either runtime (hook_fail_closed: tests/helpers/cli.ts' hookCommand, the
  // binary; the other two: `bun bin/noema.ts`, the command install-hooks registers from source): a Deno run would run
  // the same processes again.
  "hook_fail_closed.test.ts",
  "hook_server.test.ts",
  "otel_hooks.test.ts",
  // Builds the binary with `bun build --compile` and runs it: the same processes under either runtime.
  "binary.test.ts",
]);
/**
 * Files that would run none of noema's code under Deno: the test imports nothing of noema's (neither `noema` nor a
 * module of src/, through its helpers either) and its noema children are the binary, so a Deno run would start the
 * same processes again with only the test's own code under Deno. They run under Bun only, as ONCE's do
 * (tests/test_runner.test.ts checks that each still imports nothing of noema's).
 */
const NO_NOEMA_CODE = new Set([
  "backtest.test.ts",
  "backtest_serve.test.ts",
  "backtest_store.test.ts",
  "docs_examples.test.ts",
  "empty_plan.test.ts",
  "layers.test.ts",
  "layout.test.ts",
  "mcp_conformance.test.ts",
  "mcp_gateway_filesystem.test.ts",
  "mcp_gateway_pins.test.ts",
  "node_library.test.ts",
  "read_side.test.ts",
  "readme_quickstart.test.ts",
  "rules_cli.test.ts",
  "sealing.test.ts",
  "serve_browser.test.ts",
  "serve_console_browser.test.ts",
  "stderr_tail.test.ts",
  "sync_ids.test.ts",
  "test_runner.test.ts",
]);
/**
 * The files whose Deno runs start the CLI from source under Deno (`deno run -A src/cli/main.ts`); the other files' Deno
 * runs start the binary, as the Bun runs do (see the header). Between them they put each part of the CLI where Deno's
 * runtime differs from Bun's through Deno: processes, exit codes and output (cli, command_adapter, crash), policy
 * workers and the import map that gives a policy file `noema` (readme_policy, policy_pollution), the hook on stdin
 * (hook_idle), approvals and the web server (approval_display, resume_inputs), PostgreSQL and the detached sync
 * (store_audit, store_handoff), the model's HTTP client (llm_review), the MCP gateway on stdio and HTTP
 * (mcp_gateway_hostile, mcp_gateway_http), the OpenTelemetry export worker (otel), and the keys and signatures of
 * `node:crypto` (signing_ed25519). The files that start the CLI from source whatever runs them (plugin_errors, init,
 * claude_install) add plugin loading and install-hooks.
 */
const DENO_SOURCE = new Set([
  "cli.test.ts",
  "command_adapter.test.ts",
  "crash.test.ts",
  "readme_policy.test.ts",
  "policy_pollution.test.ts",
  "hook_idle.test.ts",
  "approval_display.test.ts",
  "resume_inputs.test.ts",
  "store_audit.test.ts",
  "store_handoff.test.ts",
  "llm_review.test.ts",
  "mcp_gateway_hostile.test.ts",
  "mcp_gateway_http.test.ts",
  "otel.test.ts",
  "signing_ed25519.test.ts",
]);
/**
 * The files that take longest (20 to 140 s each, the longer of their two runs measured on an idle 2-core machine), longest first: they start
 * first, so that none of them starts last and runs on alone at the end.
 */
const SLOW = [
  "shared_store.test.ts",
  "cli_ux.test.ts",
  "run_wait_outage.test.ts",
  "shared_store_faults.test.ts",
  "otel.test.ts",
  "rules_bypass.test.ts",
  "gemini_cli.test.ts",
  "hook_fail_closed.test.ts",
  "store_walkthrough.test.ts",
  "claude_code_turns.test.ts",
  "store_outages.test.ts",
  "llm_run.test.ts",
  "inputs.test.ts",
  "store_projects.test.ts",
  "claude_code.test.ts",
  "lock.test.ts",
  "shared_store_conformance.test.ts",
  "cli.test.ts",
  "review_fail_closed.test.ts",
  "hook_wait.test.ts",
  "mcp_gateway_pins.test.ts",
  "attest.test.ts",
  "claude_install.test.ts",
  "secrets.test.ts",
  "corpus.test.ts",
  "store_roles.test.ts",
  "codex_cli.test.ts",
  "signing_ed25519.test.ts",
  "hook_server.test.ts",
  "sealing.test.ts",
  "approval.test.ts",
  "serve_search_store.test.ts",
  "claude_code_store.test.ts",
  "rules_cli.test.ts",
  "review.test.ts",
  "crash_orphans.test.ts",
  "serve.test.ts",
  "binary.test.ts",
  "shared_store_catalog_rows.test.ts",
  "backtest.test.ts",
];

/** The test files, slowest first, each with the runtimes it runs under. */
function jobs() {
  const both = named || yes(process.env.NOEMA_TEST_BOTH);
  const files = extra.length
    ? extra
    : readdirSync(resolve(root, testsDir)).filter((f) => f.endsWith(".test.ts")).map((f) => join(testsDir, f));
  const rank = (f) => (SLOW.includes(baseName(f)) ? SLOW.indexOf(baseName(f)) : SLOW.length);
  const sorted = files.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return sorted.flatMap((file) => [
    ...(both || !(ONCE.has(baseName(file)) || NO_NOEMA_CODE.has(baseName(file))) ? [{ runtime: "deno", file }] : []),
    { runtime: "bun", file },
  ]);
}

/** Every file the lists above name is a test file: a renamed one would silently lose what it was listed for. */
function assertListed(present) {
  const have = new Set(present);
  const gone = [["ONCE", ONCE], ["NO_NOEMA_CODE", NO_NOEMA_CODE], ["DENO_SOURCE", DENO_SOURCE], ["SLOW", SLOW]]
    .flatMap(([list, names]) => [...names].filter((n) => !have.has(n)).map((n) => `${list} names ${n}`));
  if (gone.length) {
    process.stderr.write(`scripts/test.mjs: no such test file in ${testsDir}/: ${gone.join("; ")}\n`);
    process.exit(2);
  }
}

// Each runner runs in its own process group, so Ctrl-C on the terminal does not reach it: pass it on.
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
// The deadline: at the timeout, or on SIGUSR1, every running file is ended and no new one starts.
const expiry = new AbortController();
const deadline = setTimeout(() => expiry.abort(`timed out after ${timeoutMs / 60_000} min`), timeoutMs);
process.on("SIGUSR1", () => expiry.abort("SIGUSR1"));

/** GNU time, which reports the CPU time of a runner and everything it waited for (where it is installed). */
const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : null;
const cpuDir = TIME ? mkdtempSync(join(scratch, "noema-test-cpu-")) : null;
let cpuFiles = 0;

/**
 * Runs `cmd args` as one process group until it exits or the deadline; its output, code, how long it took, and the
 * CPU seconds it used (user + system, its own and its children's; NaN when unknown).
 */
async function spawnRunner(label, cmd, args, live, extraEnv = {}) {
  let pid;
  const started = Date.now();
  const cpuFile = cpuDir ? join(cpuDir, `${++cpuFiles}`) : null;
  if (cpuFile) [cmd, args] = [TIME, ["-f", "%U %S", "-o", cpuFile, cmd, ...args]];
  const r = await runHalf(label, cmd, args, {
    cwd: root,
    env: { ...env, ...extraEnv },
    timeoutMs: timeoutMs + 60_000, // the deadline comes first
    signal: expiry.signal,
    onStart: (p) => running.add(pid = p),
    write: live ? (s) => process.stdout.write(s) : () => {},
  });
  running.delete(pid);
  let cpu = NaN;
  try {
    const [user, sys] = readFileSync(cpuFile, "utf8").trim().split("\n").at(-1).split(" ").map(Number);
    cpu = user + sys;
  } catch { /* killed, or no GNU time */ }
  return { ...r, ms: Date.now() - started, cpu };
}

/** Runs one test file under one runtime; its counts (a runner that failed with no failed test counts one). */
async function runFile({ runtime, file }) {
  const args = runtime === "deno"
    ? ["test", "-A", "--no-check", "--parallel", file]
    // Bun's per-test bound (a test without its own): it only catches hangs, so it is as generous as the tests' own
    // waits (a background process at nice 10 in its own autogroup, beside six runners each in theirs, gets ~2% of
    // the CPU: a wait for its work may take minutes).
    : ["test", "--timeout", "300000", file];
  if (serial) process.stdout.write(`\n=== ${runtime} ${file}\n`);
  const binary = runtime === "bun" || !(named || DENO_SOURCE.has(baseName(file))) ? await binaryBuilt : null;
  const r = await spawnRunner(
    `${runtime} ${file}`,
    bin(runtime),
    args,
    serial,
    binary ? { NOEMA_TEST_BINARY: binary } : {},
  );
  const counts = runtime === "deno" ? parseDeno(r.out) : parseBun(r.out, file);
  const broke = !r.timedOut && r.code !== 0 && counts.failed === 0;
  if (broke) {
    const why = r.error ? `could not start: ${r.error.message}` : `the runner ended with ${r.code ?? r.signal}`;
    counts.failed = 1;
    counts.names.push(`${file}: ${why}`);
    counts.errors.push([`${file}: ${why}`, ...r.out.trimEnd().split("\n").slice(-16)].join("\n"));
  }
  const result = {
    runtime,
    file,
    ms: r.ms,
    cpu: r.cpu,
    timedOut: r.timedOut,
    ok: r.code === 0 && !r.timedOut,
    ...counts,
  };
  const state = result.timedOut ? "KILLED" : result.ok ? "ok" : "FAILED";
  const line = `${state} ${runtime} ${file}: ${result.passed} passed, ${result.failed} failed (${took(r)})\n`;
  if (!serial && (verbose || !result.ok)) process.stdout.write(`\n=== ${runtime} ${file}\n${r.out}`);
  process.stdout.write(line);
  return result;
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
/** "12.3 s, CPU 4.5 s": how long a runner took, and the CPU time it used where known. */
const took = (r) => `${seconds(r.ms)}${Number.isNaN(r.cpu) ? "" : `, CPU ${r.cpu.toFixed(1)} s`}`;

/**
 * Runs `all` with at most `n` at once, in order, until the deadline; the results, and the jobs never started. A file
 * does not run under both runtimes at once: tests that look at the machine's processes, or name things by fixed ids,
 * would see the other run's.
 */
async function pool(all, n, run) {
  const queue = [...all], results = [], busy = new Set(), waiting = [];
  const ended = () => new Promise((r) => waiting.push(r));
  const wake = () => waiting.splice(0).forEach((r) => r());
  const worker = async () => {
    while (queue.length && !expiry.signal.aborted) {
      const i = queue.findIndex((j) => !busy.has(j.file));
      if (i < 0) {
        await ended(); // every file left runs now under the other runtime
        continue;
      }
      const [job] = queue.splice(i, 1);
      busy.add(job.file);
      results.push(await run(job));
      busy.delete(job.file);
      wake();
    }
    wake(); // a worker that waits for a file this one ran may go on (or end)
  };
  await Promise.all(Array.from({ length: Math.max(1, n) }, worker));
  return { results, notStarted: queue };
}

if (!named && !process.env.NOEMA_TEST_DIR) assertListed(readdirSync(resolve(root, testsDir)));

// Static checks: deno check, lint and fmt --check (each counts as one test), alongside the test files.
const check = async (label, args, cmd = bin("deno")) => {
  const r = await spawnRunner(`check ${label}`, cmd, args, false);
  const ok = r.code === 0 && !r.timedOut;
  process.stdout.write(`${ok ? "ok" : "FAILED"} check ${label} (${took(r)})\n${ok ? "" : r.out}`);
  return { runtime: `check ${label}`, ok, cpu: r.cpu, timedOut: r.timedOut, passed: ok ? 1 : 0, failed: ok ? 0 : 1 };
};
// The binary the CLI children run (see the header): built before the first runner that needs it starts; while it
// builds, the Deno runs of DENO_SOURCE's files go on. A failed build is a failed check, and the children then run the
// source.
const testBinary = join(scratch, "noema-test-binary", "noema");
const binaryCheck = fromSource || process.env.NOEMA_TEST_DIR
  ? null
  : check("binary", [join(root, "scripts", "build.ts"), "--outfile", testBinary], bin("bun"));
const binaryBuilt = binaryCheck === null ? Promise.resolve(null) : binaryCheck.then((c) => (c.ok ? testBinary : null));
const TYPED = extra.length ? extra : ["mod.ts", "src/", "tests/", "bench/", "plugins/", "examples/", "scripts/"];
const statics = process.env.NOEMA_TEST_DIR
  ? []
  : [check("types", ["check", ...TYPED]), check("lint", ["lint"]), check("fmt", ["fmt", "--check"])];
if (binaryCheck !== null) statics.push(binaryCheck);

const started = Date.now();
const all = jobs();
process.stdout.write(`${all.length} test files' runs (Deno and Bun), ${jobsAtOnce} at a time; TMPDIR ${scratch}\n`);
const { results, notStarted } = await pool(all, jobsAtOnce, runFile);
const checks = await Promise.all(statics);
clearTimeout(deadline);
report(results, notStarted, checks);

/** The closing lines: failures, files that did not finish, the slowest files, a line per runtime and the total. */
function report(results, notStarted, checks) {
  const runtimes = ["deno", "bun"];
  const of = (rt) => results.filter((r) => r.runtime === rt);
  const w = (s) => process.stdout.write(s);
  w("\n");
  // The failures again, last, where a log cut to its end still shows them: what each threw, then their names.
  for (const rt of runtimes) for (const e of of(rt).flatMap((r) => r.errors).slice(0, 10)) w(`--- ${rt}: ${e}\n`);
  for (const rt of runtimes) {
    for (const n of of(rt).flatMap((r) => r.names).slice(0, 30)) w(`FAILED under ${rt}: ${n}\n`);
  }
  for (const r of results.filter((r) => r.timedOut)) {
    const last = r.last === undefined ? "no test had finished" : `the last test that finished: ${r.last}`;
    w(`DID NOT FINISH under ${r.runtime}: ${r.file} (killed: ${expiry.signal.reason}; ${last})\n`);
  }
  for (const j of notStarted) w(`NOT STARTED under ${j.runtime}: ${j.file} (${expiry.signal.reason})\n`);
  const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 8);
  w(`slowest: ${slowest.map((r) => `${r.runtime} ${r.file} (${took(r)})`).join(", ")}\n`);
  const cpu = [...results, ...checks].reduce((a, r) => a + (Number.isNaN(r.cpu) ? 0 : r.cpu ?? 0), 0);
  if (cpuDir) w(`CPU time of all runners: ${seconds(cpu * 1000)}\n`);
  for (const rt of runtimes) {
    const rs = of(rt), killed = rs.filter((r) => r.timedOut).length;
    const waiting = notStarted.filter((j) => j.runtime === rt).length;
    const sum = (k) => rs.reduce((a, r) => a + r[k], 0);
    const cut = killed + waiting ? ` (${killed} did not finish, ${waiting} did not start)` : "";
    w(`${rt}: ${sum("passed")} passed, ${sum("failed")} failed, in ${rs.length} files${cut}\n`);
  }
  for (const c of checks) w(`${c.runtime}: ${c.ok ? "passed" : c.timedOut ? "did not finish" : "failed"}\n`);
  const every = [...results, ...checks];
  const passed = every.reduce((a, r) => a + r.passed, 0), failed = every.reduce((a, r) => a + r.failed, 0);
  const ok = every.every((r) => r.ok) && notStarted.length === 0 && passed > 0;
  w(`total: ${passed} passed, ${failed} failed${ok ? "" : " (not ok)"}, in ${seconds(Date.now() - started)}\n`);
  process.exit(ok ? 0 : 1);
}
