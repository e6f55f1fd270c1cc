/**
 * Runs every benchmark: each `bench/*.ts` that exports `main()` (all but
 * `lib.ts` and `run.ts`), in name order, each in a process of its own (so no
 * benchmark measures in a heap, JIT state or garbage another one left
 * behind) after a `sync` (so none is timed while the kernel writes out the
 * files another one left), and prints ONE combined table — one
 * row per measure: `benchmark | measure | value | baseline | ratio | goal |
 * met` — then the machine it ran on. Exits 1 when a benchmark missed a goal
 * or failed (a failed benchmark shows as a row with met `FAILED`).
 *
 *     bun bench/run.ts [--only stream] [--results bench/RESULTS.md] [benchmark flags…]
 *
 * Flags other than `--only` and `--results` are passed to every benchmark's
 * `main(args)` (e.g. `--runs 1`, `--events 100000`). With `--results`, the
 * tables and the machine they ran on are written to that file as Markdown.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { BENCH_DIR, type BenchReport, type BenchTable, flag, formatTable, machineInfo, type Measure } from "./lib.ts";

type BenchModule = { main?: (args: string[]) => Promise<BenchReport> };

/** The benchmark files: `bench/*.ts` except the shared library and this runner. */
export function benchFiles(dir: string = BENCH_DIR): string[] {
  return readdirSync(dir).filter((f) => f.endsWith(".ts") && f !== "lib.ts" && f !== "run.ts").sort();
}

function passThrough(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--only" || a === "--results" || a === "--child" || a === "--report") i++;
    else if (!/^--(only|results|child|report)=/.test(a)) out.push(a);
  }
  return out;
}

/** The row of a benchmark that failed (threw, or its process died). */
function failedReport(name: string, why: string): BenchReport {
  return {
    name,
    tables: [],
    ok: false,
    measures: [{
      measure: `failed: ${why.slice(0, 120)}`,
      value: "-",
      baseline: "-",
      ratio: "-",
      goal: "-",
      met: "FAILED",
    }],
  };
}

/** In the child process: runs one benchmark file and writes its report (JSON) to `out`. */
async function runChild(file: string, out: string, args: string[]): Promise<void> {
  const name = file.replace(/\.ts$/, "");
  let report: BenchReport;
  try {
    const mod = (await import(pathToFileURL(join(BENCH_DIR, file)).href)) as BenchModule;
    if (typeof mod.main !== "function") return; // not a benchmark: no report
    report = await mod.main(args);
  } catch (e) {
    process.stderr.write(`${file}: failed: ${(e as Error).stack ?? e}\n`);
    report = failedReport(name, String((e as Error)?.message ?? e).split("\n")[0]);
  }
  writeFileSync(out, JSON.stringify(report));
}

/** Runs the benchmarks, each in a child process of its own; returns their reports. */
export function runAll(args: string[] = process.argv.slice(2)): BenchReport[] {
  const only = flag(args, "only")?.split(",");
  const reports: BenchReport[] = [];
  const tmp = mkdtempSync(join(tmpdir(), "noema-bench-run-"));
  try {
    for (const file of benchFiles()) {
      const name = file.replace(/\.ts$/, "");
      if (only && !only.includes(name)) continue;
      const out = join(tmp, `${name}.json`);
      // Settle first: the files the previous benchmark wrote (100,000 episodes for `list`) are written out now,
      // not by the kernel during the next benchmark's timing on this machine's few cores.
      spawnSync("sync", { stdio: "ignore" });
      process.stderr.write(`== ${file}\n`);
      const child = spawnSync(
        process.execPath,
        [join(BENCH_DIR, "run.ts"), "--child", file, "--report", out, ...passThrough(args)],
        { stdio: "inherit" },
      );
      let text: string | null = null;
      try {
        text = readFileSync(out, "utf8");
      } catch {
        // no report: not a benchmark, or its process died
      }
      if (text !== null) reports.push(JSON.parse(text) as BenchReport);
      else if (child.status !== 0) {
        reports.push(failedReport(name, `its process ended with ${child.signal ?? `exit code ${child.status}`}`));
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  return reports;
}

const metOf = (text: string): string =>
  /\b(NOT met|MISSED|NO)\b/.test(text) ? "NO" : /\bmet\b|\byes\b/.test(text) ? "yes" : "-";

/**
 * Rows for the combined table from a benchmark's own tables, when it gives no
 * `measures`: the first column is the measure; `value`/`baseline`/`ratio`/
 * `goal`/`met` columns are used when present, a `vs X` column is the ratio
 * against X, other columns are folded into the value; a note of the form
 * `ratio: 0.8× — goal ≤ 1.0× (…): met` fills the first row's ratio and goal.
 *
 * @example
 * ```ts
 * import { measuresFromTable } from "./run.ts";
 * measuresFromTable({ title: "t", columns: ["task", "time (s)", "vs jq", "goal"], rows: [["validate", "2.6", "0.15x", "faster: met"]] });
 * // [{ measure: "validate", value: "time (s) 2.6", baseline: "jq", ratio: "0.15x", goal: "faster", met: "yes" }]
 * ```
 */
export function measuresFromTable(t: BenchTable): Measure[] {
  const cols = t.columns.map((c) => c.toLowerCase());
  const idx = (name: string) => cols.indexOf(name);
  const vs = cols.findIndex((c) => c.startsWith("vs "));
  const out = t.rows.map((r): Measure => {
    const used = new Set([0, idx("value"), idx("baseline"), idx("ratio"), idx("goal"), idx("met"), vs]);
    const value = idx("value") >= 0
      ? r[idx("value")]
      : t.columns.map((c, i) => (used.has(i) || r[i] === undefined || r[i] === "" ? "" : `${c} ${r[i]}`)).filter(
        Boolean,
      ).join(", ");
    const goalText = idx("goal") >= 0 ? r[idx("goal")] ?? "" : "";
    const goal = goalText.replace(/:\s*(met|MISSED|NOT met)\s*$/, "");
    return {
      measure: r[0] ?? "",
      value,
      baseline: idx("baseline") >= 0 ? r[idx("baseline")] : vs >= 0 ? t.columns[vs].slice(3) : "",
      ratio: idx("ratio") >= 0 ? r[idx("ratio")] : vs >= 0 ? r[vs] : "",
      goal: goal === "-" ? "" : goal,
      met: idx("met") >= 0 ? (r[idx("met")] || "-") : goalText ? metOf(goalText) : "-",
    };
  });
  for (const note of t.notes ?? []) {
    const m = /ratio:\s*([^\s]+)\s*—\s*goal\s*(.*?):\s*(met|NOT met|not measured)\s*$/.exec(note);
    if (m && out[0]) {
      Object.assign(out[0], { ratio: m[1], goal: m[2], met: m[3] === "met" ? "yes" : m[3] === "NOT met" ? "NO" : "-" });
    }
  }
  return out;
}

/** The combined table: one row per measure of every benchmark. */
export function combinedTable(reports: BenchReport[]): BenchTable {
  const rows: string[][] = [];
  for (const r of reports) {
    const measures = r.measures ?? r.tables.flatMap(measuresFromTable);
    for (const m of measures) {
      rows.push([r.name, m.measure, m.value, m.baseline || "-", m.ratio || "-", m.goal || "-", m.met || "-"]);
    }
  }
  const missed = rows.filter((r) => r[6] === "NO" || r[6] === "FAILED").length;
  return {
    title: "noema benchmarks",
    columns: ["benchmark", "measure", "value", "baseline", "ratio", "goal", "met"],
    rows,
    notes: [
      "Every baseline is measured in the same run on the same machine; no baseline is tuned.",
      missed === 0
        ? "Every goal was met."
        : `${missed} goal(s) missed or benchmark(s) failed: see the rows marked NO / FAILED.`,
    ],
  };
}

/** Markdown for `bench/RESULTS.md`: the date and machine, the combined table, then every benchmark's own tables. */
export function resultsMarkdown(reports: BenchReport[], info: Record<string, string> = machineInfo()): string {
  return [
    "# Benchmark results",
    "",
    "Generated by `bun bench/run.ts --results bench/RESULTS.md`.",
    "",
    formatTable(combinedTable(reports)),
    "## Machine",
    "",
    ...Object.entries(info).map(([k, v]) => `- ${k}: ${v.includes("\n") ? "\n\n```\n" + v + "\n```\n" : v}`),
    "",
    "## Details per benchmark",
    "",
    ...reports.flatMap((r) => r.tables.map(formatTable)),
  ].join("\n");
}

if (import.meta.main && flag(process.argv.slice(2), "child") !== undefined) {
  const args = process.argv.slice(2);
  await runChild(flag(args, "child")!, flag(args, "report")!, passThrough(args));
  process.exit(0);
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const reports = runAll(args);
  const info = machineInfo();
  process.stdout.write("\n" + formatTable(combinedTable(reports)) + "\n");
  const { "free -h": _free, ...brief } = info;
  process.stdout.write(Object.entries(brief).map(([k, v]) => `${k}: ${v}`).join("\n") + "\n");
  const results = flag(args, "results");
  if (results) {
    writeFileSync(results, resultsMarkdown(reports, info));
    process.stderr.write(`wrote ${results}\n`);
  }
  const failed = reports.filter((r) => !r.ok).map((r) => r.name);
  if (reports.length === 0) process.stderr.write("no benchmark ran\n");
  if (failed.length > 0) process.stderr.write(`goal missed or failed: ${failed.join(", ")}\n`);
  process.exit(reports.length > 0 && failed.length === 0 ? 0 : 1);
}
