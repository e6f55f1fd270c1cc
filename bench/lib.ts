/**
 * Shared helpers for the benchmarks under `bench/`: running a command as a
 * child process and measuring its wall time and peak RSS, work directories,
 * and printing result tables.
 *
 * Every benchmark module exports `main(): Promise<BenchReport>`; `bench/run.ts`
 * runs them all.
 *
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { scriptedTask } from "../tests/helpers/episode_trees.ts";

/** The `bench/` directory. */
export const BENCH_DIR: string = dirname(fileURLToPath(import.meta.url));
/** The repository root. */
export const REPO_ROOT: string = join(BENCH_DIR, "..");
/** Generated inputs live here (gitignored). */
export const WORK_DIR: string = join(BENCH_DIR, ".work");

/** The `bun` binary: the project's pinned one, else the one on PATH. */
export const BUN: string = localBin("bun");
/** The `deno` binary: the project's pinned one, else the one on PATH. */
export const DENO: string = localBin("deno");

function localBin(name: string): string {
  const p = join(REPO_ROOT, "node_modules", ".bin", name);
  return existsSync(p) ? p : name;
}

/** A directory under `bench/.work/`, created when missing. */
export function workDir(name: string): string {
  const dir = join(WORK_DIR, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A fresh temp directory and a function that removes it. */
export function tempDir(prefix = "noema-bench-"): { path: string; cleanup(): void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}

/** Whether a program can be started (`<cmd> --version` exits 0). */
export function hasCommand(cmd: string): boolean {
  const r = spawnSync(cmd, ["--version"], { stdio: "ignore" });
  return !r.error && r.status === 0;
}

const GNU_TIME = "/usr/bin/time";
const hasGnuTime = existsSync(GNU_TIME) &&
  spawnSync(GNU_TIME, ["-f", "%M", "true"], { encoding: "utf8" }).status === 0;

/** How peak RSS was measured. */
export type RssMethod = "gnu-time" | "proc-vmhwm";

/** One measured run of a child command. */
export interface Measurement {
  /** Wall time in seconds, measured by this process around the child. */
  seconds: number;
  /** Peak resident set size of the child in MiB. */
  peakRssMb: number;
  /** How the peak RSS was measured. */
  rssMethod: RssMethod;
  /** Exit code of the child. */
  exitCode: number;
  /** The child's stdout (unless discarded). */
  stdout: string;
  /** The child's stderr (without the time report). */
  stderr: string;
}

/** Options for {@link measure}. */
export interface MeasureOptions {
  /** Working directory. @default {REPO_ROOT} */
  cwd?: string;
  /** Send stdout to /dev/null instead of capturing it (for tools that print a lot). */
  discardStdout?: boolean;
  /** Extra environment variables. */
  env?: Record<string, string>;
}

/**
 * Runs `cmd` once and measures wall time and peak RSS. With GNU time
 * (`/usr/bin/time -f "%e %M"`) available, RSS is its `%M` (the child's
 * `ru_maxrss`); otherwise `/proc/<pid>/status` `VmHWM` is sampled every 10 ms.
 *
 * @example
 * ```ts
 * import { measure } from "./lib.ts";
 * const m = await measure(["jq", "-c", ".", "events.jsonl"], { discardStdout: true });
 * console.log(m.seconds, m.peakRssMb);
 * ```
 */
export async function measure(cmd: string[], options: MeasureOptions = {}): Promise<Measurement> {
  const tmp = tempDir("noema-bench-time-");
  const timeFile = join(tmp.path, "time.txt");
  const argv = hasGnuTime ? [GNU_TIME, "-f", "%e %M", "-o", timeFile, ...cmd] : cmd;
  const devNull = options.discardStdout ? openSync("/dev/null", "w") : undefined;
  try {
    const t0 = performance.now();
    const child = spawn(argv[0], argv.slice(1), {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdio: ["ignore", devNull ?? "pipe", "pipe"],
    });
    let stdout = "", stderr = "", hwmKb = 0;
    child.stdout?.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr?.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const sampler = hasGnuTime ? undefined : setInterval(() => {
      hwmKb = Math.max(hwmKb, readVmHwmKb(child.pid));
    }, 10);
    const exitCode = await new Promise<number>((resolve, reject) => {
      child.on("error", reject);
      child.on("close", (code) => resolve(code ?? 1));
    });
    const seconds = (performance.now() - t0) / 1000;
    if (sampler) clearInterval(sampler);
    let peakKb = hwmKb;
    if (hasGnuTime) {
      const report = existsSync(timeFile) ? readFileSync(timeFile, "utf8").trim().split("\n").at(-1) ?? "" : "";
      const m = /^([\d.]+) (\d+)$/.exec(report);
      if (!m) throw new Error(`could not read the time report of ${cmd.join(" ")}: ${JSON.stringify(report)}`);
      peakKb = Number(m[2]);
    }
    return {
      seconds,
      peakRssMb: peakKb / 1024,
      rssMethod: hasGnuTime ? "gnu-time" : "proc-vmhwm",
      exitCode,
      stdout,
      stderr,
    };
  } finally {
    if (devNull !== undefined) closeSync(devNull);
    tmp.cleanup();
  }
}

function readVmHwmKb(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0; // the process has exited
  }
}

/** Several runs of one command: the median time and the largest peak RSS. */
export interface Summary {
  /** Median wall time, seconds. */
  seconds: number;
  /** Fastest run, seconds. */
  best: number;
  /** Largest peak RSS over the runs, MiB. */
  peakRssMb: number;
  /** The individual runs. */
  runs: Measurement[];
}

/**
 * Runs a command `runs` times (after nothing: no warm-up, the OS page cache
 * is warm from the input's generation) and summarizes. Throws when a run exits
 * non-zero, so a broken task never shows up as a fast one.
 */
export async function measureRuns(cmd: string[], runs: number, options: MeasureOptions = {}): Promise<Summary> {
  return (await measureInterleaved([cmd], runs, options))[0];
}

/**
 * {@link measureRuns} for several commands compared with each other, their
 * runs interleaved (a, b, a, b…), so that a machine that slows down or speeds
 * up during the measurement affects each command alike.
 *
 * @example
 * ```ts
 * import { measureInterleaved } from "./lib.ts";
 * const [noema, jq] = await measureInterleaved([["dist/noema", "--version"], ["jq", "--version"]], 20);
 * ```
 */
export async function measureInterleaved(
  cmds: string[][],
  runs: number,
  options: MeasureOptions = {},
): Promise<Summary[]> {
  const all: Measurement[][] = cmds.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (const [k, cmd] of cmds.entries()) {
      all[k].push(await measureOk(cmd, options));
    }
  }
  return all.map((ms) => {
    const times = ms.map((m) => m.seconds).sort((a, b) => a - b);
    return {
      seconds: times[Math.floor(times.length / 2)],
      best: times[0],
      peakRssMb: Math.max(...ms.map((m) => m.peakRssMb)),
      runs: ms,
    };
  });
}

/**
 * Runs `cmd` once, as {@link measure}; a run that fails (a non-zero exit)
 * fails the benchmark, with the end of its stderr.
 *
 * @example
 * ```ts
 * import { measureOk } from "./lib.ts";
 * const { seconds } = await measureOk(["noema", "list"]);
 * ```
 */
export async function measureOk(cmd: string[], options: MeasureOptions = {}): Promise<Measurement> {
  const m = await measure(cmd, options);
  if (m.exitCode !== 0) throw new Error(`${cmd.join(" ")} exited with ${m.exitCode}\n${m.stderr.slice(-2000)}`);
  return m;
}

/**
 * The median of `xs` (the upper one of an even count).
 *
 * @example
 * ```ts
 * import { median } from "./lib.ts";
 * median([3, 1, 2]); // 2
 * ```
 */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}

/** A table of results. */
export interface BenchTable {
  /** Heading printed above the table. */
  title: string;
  /** Column headings. */
  columns: string[];
  /** Rows of cells (already formatted). */
  rows: string[][];
  /** Lines printed under the table. */
  notes?: string[];
}

/**
 * One row of the combined table `bench/run.ts` prints: a measure, its value,
 * the baseline measured in the same run, the ratio, the goal and whether it
 * was met (`yes`, `NO`, or `-` when there is no goal).
 */
export interface Measure {
  measure: string;
  value: string;
  baseline: string;
  ratio: string;
  goal: string;
  met: string;
}

/** What a benchmark's `main()` returns. */
export interface BenchReport {
  /** The benchmark's name. */
  name: string;
  /** Its tables. */
  tables: BenchTable[];
  /** False when a goal was missed. */
  ok: boolean;
  /** Its rows for the combined table; when absent, `bench/run.ts` derives them from `tables`. */
  measures?: Measure[];
}

/** Formats a table as aligned plain text (numbers right-aligned), GitHub-markdown compatible. */
export function formatTable(table: BenchTable): string {
  const widths = table.columns.map((c, i) => Math.max(c.length, ...table.rows.map((r) => (r[i] ?? "").length)));
  const numeric = table.columns.map((_, i) => table.rows.every((r) => /^[\d.,x×-]*$/.test(r[i] ?? "")));
  const cell = (text: string, i: number) => (numeric[i] ? text.padStart(widths[i]) : text.padEnd(widths[i]));
  const line = (cells: string[]) => `| ${cells.map(cell).join(" | ")} |`;
  const rule = `|${widths.map((w, i) => (numeric[i] ? "-".repeat(w + 1) + ":" : "-".repeat(w + 2))).join("|")}|`;
  return [
    `### ${table.title}`,
    "",
    line(table.columns),
    rule,
    ...table.rows.map(line),
    ...(table.notes?.length ? ["", ...table.notes] : []),
    "",
  ].join("\n");
}

/** Prints a table to stdout. */
export function printTable(table: BenchTable): void {
  process.stdout.write(formatTable(table) + "\n");
}

/** Formats a number with a fixed number of decimals. */
export function fixed(n: number, digits = 2): string {
  return Number.isFinite(n) ? n.toFixed(digits) : "-";
}

/** The machine and runtimes the numbers were measured on. */
export function machineInfo(): Record<string, string> {
  const version = (cmd: string, args: string[]) => {
    const r = spawnSync(cmd, args, { encoding: "utf8" });
    return r.status === 0 ? r.stdout.trim().split("\n")[0] : "not available";
  };
  return {
    date: new Date().toISOString(),
    cpus: `${cpus().length} (${cpus()[0]?.model ?? "unknown"})`,
    nproc: version("nproc", []),
    memory: `${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    "free -h": (() => {
      const r = spawnSync("free", ["-h"], { encoding: "utf8" });
      return r.status === 0 ? r.stdout.trimEnd() : "not available";
    })(),
    os: version("uname", ["-srm"]),
    bun: version(BUN, ["--version"]),
    deno: version(DENO, ["--version"]),
    node: version("node", ["--version"]),
    jq: version("jq", ["--version"]),
    rss: hasGnuTime ? "GNU time %M (ru_maxrss)" : "/proc/<pid>/status VmHWM, sampled every 10 ms",
  };
}

/** The value of `--name value` or `--name=value` in `args`. */
export function flag(args: string[], name: string): string | undefined {
  const i = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
  if (i === -1) return undefined;
  return args[i].includes("=") ? args[i].slice(args[i].indexOf("=") + 1) : args[i + 1];
}

/**
 * Runs a benchmark's `main` when its file is run directly: prints its tables
 * and exits 1 when a goal was missed.
 *
 * @example
 * ```ts
 * if (import.meta.main) await runStandalone(main);
 * ```
 */
export async function runStandalone(main: (args: string[]) => Promise<BenchReport>): Promise<void> {
  const report = await main(process.argv.slice(2));
  report.tables.forEach(printTable);
  process.exitCode = report.ok ? 0 : 1;
}

/**
 * Writes a scripted task file of `steps` act steps (each answered ok by a
 * script) and its script under `dir`; returns the task file's path.
 *
 * @example
 * ```ts
 * import { scriptedTaskFile } from "./lib.ts";
 * // noema run <scriptedTaskFile("/tmp/b", 10000)>
 * ```
 */
export function scriptedTaskFile(dir: string, steps: number): string {
  return scriptedTask(dir, steps, `bench ${steps}`);
}
