/**
 * Single-binary benchmark: builds `dist/noema` (`scripts/build.ts`), records
 * one episode with it in a temp directory, then measures cold starts as child
 * processes:
 *
 * - `dist/noema --version`,
 * - `dist/noema summary <id> --json` (reads and prints `summary.json`),
 * - the baseline `jq . summary.json` on the same file,
 * - for comparison, `bun src/cli/main.ts summary <id> --json` (from source),
 *
 * and reports the binary's size.
 *
 * Goal: `noema summary` is no slower than jq (median wall time).
 *
 *     bun bench/binary.ts [--runs 20] [--no-build]
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { build, DEFAULT_OUTFILE } from "../scripts/build.ts";
import {
  type BenchReport,
  type BenchTable,
  BUN,
  fixed,
  flag,
  hasCommand,
  type Measure,
  measureInterleaved,
  measureRuns,
  REPO_ROOT,
  runStandalone,
  type Summary,
  tempDir,
} from "./lib.ts";

/** Default number of runs per command (cold starts are short: take many). */
export const DEFAULT_RUNS = 20;

/**
 * Runs the benchmark and returns its tables; `ok` is false when
 * `noema summary` is slower than `jq .` on the same file.
 *
 * @example
 * ```ts
 * import { main } from "./binary.ts";
 * const report = await main(["--runs", "5"]);
 * console.log(report.ok);
 * ```
 */
export async function main(args: string[] = []): Promise<BenchReport> {
  const runs = Number(flag(args, "runs") ?? process.env.BENCH_RUNS ?? DEFAULT_RUNS);
  let binary = DEFAULT_OUTFILE;
  let buildNote = "reused the existing dist/noema (--no-build)";
  if (!args.includes("--no-build") || !existsSync(binary)) {
    const built = build();
    binary = built.outfile;
    buildNote = `built in ${fixed(built.ms / 1000, 1)} s: ${
      built.command.slice(1).join(" ").replace(REPO_ROOT + "/", "")
    }`;
  }
  const bytes = statSync(binary).size;

  const tmp = tempDir("noema-bench-binary-");
  try {
    const root = join(tmp.path, ".noema");
    const recorded = spawnSync(binary, ["run", "Survey the project", "--json", "--tag", "bench=binary"], {
      cwd: tmp.path,
      encoding: "utf8",
      env: { ...process.env, NOEMA_ROOT: root },
    });
    if (recorded.status !== 0) throw new Error(`dist/noema run failed: ${recorded.stderr}`);
    const id = (JSON.parse(recorded.stdout) as { episode_id: string }).episode_id;
    const summaryFile = join(root, "episodes", id, "summary.json");
    const options = { cwd: tmp.path, env: { NOEMA_ROOT: root } };

    const rows: [string, Summary][] = [];
    rows.push(["dist/noema --version", await measureRuns([binary, "--version"], runs, options)]);
    // noema and jq interleaved: drift on a shared machine hits both alike.
    const noemaCmd = [binary, "summary", id, "--json"];
    const [summary, jq] = hasCommand("jq")
      ? await measureInterleaved([noemaCmd, ["jq", ".", summaryFile]], runs, options)
      : [await measureRuns(noemaCmd, runs, options), null];
    rows.push(["dist/noema summary <id> --json", summary]);
    if (jq) rows.push(["jq . summary.json", jq]);
    rows.push([
      "bun src/cli/main.ts summary <id> --json",
      await measureRuns(
        [BUN, join(REPO_ROOT, "src", "cli", "main.ts"), "summary", id, "--json"],
        Math.min(runs, 10),
        options,
      ),
    ]);

    const ok = jq === null || summary.seconds <= jq.seconds;
    const table: BenchTable = {
      title: `Single binary: cold start (median of ${runs} runs) and size`,
      columns: ["command", "median ms", "best ms", "peak RSS MiB"],
      rows: rows.map(([name, s]) => [name, fixed(s.seconds * 1000, 1), fixed(s.best * 1000, 1), fixed(s.peakRssMb, 1)]),
      notes: [
        `binary size: ${fixed(bytes / 2 ** 20, 1)} MiB (${bytes} bytes)`,
        buildNote,
        jq === null
          ? "jq is not installed: goal not checked"
          : `goal (noema summary no slower than jq): ${ok ? "met" : "MISSED"} ` +
            `(${fixed(summary.seconds * 1000, 1)} ms vs ${fixed(jq.seconds * 1000, 1)} ms)`,
      ],
    };
    const version = rows[0][1];
    const measures: Measure[] = [
      {
        measure: "dist/noema summary <id> --json cold start (ms)",
        value: fixed(summary.seconds * 1000, 1),
        baseline: jq ? `jq . ${fixed(jq.seconds * 1000, 1)}` : "-",
        ratio: jq ? `${fixed(summary.seconds / jq.seconds)}×` : "-",
        goal: jq ? "≤ 1× jq" : "-",
        met: jq ? (ok ? "yes" : "NO") : "-",
      },
      {
        measure: "dist/noema --version cold start (ms)",
        value: fixed(version.seconds * 1000, 1),
        baseline: "-",
        ratio: "-",
        goal: "-",
        met: "-",
      },
      {
        measure: "dist/noema size (MiB)",
        value: fixed(bytes / 2 ** 20, 1),
        baseline: "-",
        ratio: "-",
        goal: "-",
        met: "-",
      },
    ];
    return { name: "binary", tables: [table], ok, measures };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
