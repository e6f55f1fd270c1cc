/**
 * Benchmark: workspace snapshot time of `captureSnapshot` against
 * `find DIR -type f -print0 | xargs -0 sha256sum > /dev/null` on the same
 * generated tree, with peak memory. Goal: ≤ 1.0× (no slower).
 *
 * ```sh
 * bun bench/snapshot.ts                      # 50k files / 1 GiB
 * bun bench/snapshot.ts --files 5000 --mb 100
 * bun bench/snapshot.ts --keep               # keep the tree under bench/.work/
 * ```
 *
 * Each tool runs twice and the second run is reported (warm page cache for
 * both). The tree: 1% of the files carry half of the bytes, the rest share
 * the other half, 100 files per directory, three levels deep.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { randomFillSync } from "node:crypto";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { Buffer } from "node:buffer";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { captureSnapshot, snapshotPolicy } from "../src/verify/mod.ts";
import { type BenchReport, runStandalone } from "./lib.ts";

/** What {@link main} measured. */
export interface SnapshotBenchResult {
  files: number;
  mib: number;
  /** Second-run wall time of `captureSnapshot`, ms. */
  snapshotMs: number;
  /** Second-run wall time of `find | xargs sha256sum`, ms; null when unavailable. */
  baselineMs: number | null;
  /** snapshotMs / baselineMs. */
  ratio: number | null;
  /** Peak RSS sampled while `captureSnapshot` ran, bytes. */
  snapshotPeakRss: number;
  /** VmHWM of this process at the end (includes tree generation), bytes; null off Linux. */
  processHwm: number | null;
  /** Peak RSS of the baseline pipeline (GNU time), bytes; null when unavailable. */
  baselinePeakRss: number | null;
  /** Whether the goal (≤ 1.0×) was met. */
  goalMet: boolean | null;
}

function arg(argv: readonly string[], name: string, fallback: number): number {
  const i = argv.indexOf(`--${name}`);
  if (i === -1) return fallback;
  const n = Number(argv[i + 1]);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`--${name} needs a positive number`);
  return n;
}

/** Generates the tree; returns the number of bytes written. */
function generate(dir: string, files: number, mib: number): number {
  const total = Math.round(mib * 1024 * 1024);
  const pool = Buffer.allocUnsafe(8 << 20);
  randomFillSync(pool);
  const nLarge = Math.max(1, Math.floor(files / 100));
  const large = Math.floor(total / 2 / nLarge);
  const small = Math.max(0, Math.floor((total - large * nLarge) / Math.max(1, files - nLarge)));
  let written = 0;
  for (let i = 0; i < files; i++) {
    const d = join(dir, `d${Math.floor(i / 1000)}`, `s${Math.floor(i / 100) % 10}`);
    if (i % 100 === 0) mkdirSync(d, { recursive: true });
    const size = i % 100 === 0 && i / 100 < nLarge ? large : small;
    const fd = openSync(join(d, `f${i}.bin`), "w");
    try {
      // Distinct content per file: a different offset into the random pool.
      let left = size, off = (i * 7919) % (1 << 20);
      while (left > 0) {
        const n = Math.min(left, pool.length - off);
        writeSync(fd, pool, off, n);
        left -= n;
        off = 0;
      }
    } finally {
      closeSync(fd);
    }
    written += size;
  }
  return written;
}

function vmHwm(): number | null {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

async function timeSnapshot(dir: string): Promise<{ ms: number; peak: number; files: number }> {
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const t = performance.now();
  const snap = await captureSnapshot(dir, snapshotPolicy());
  const ms = performance.now() - t;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { ms, peak, files: Object.keys(snap.files).length };
}

function timeBaseline(dir: string): { ms: number; peak: number | null } | null {
  const pipeline = `find "$1" -type f -print0 | xargs -0 sha256sum > /dev/null`;
  const gnuTime = existsSync("/usr/bin/time");
  const t = performance.now();
  const r = gnuTime
    ? spawnSync("/usr/bin/time", ["-f", "%M", "sh", "-c", pipeline, "sh", dir], { encoding: "utf8" })
    : spawnSync("sh", ["-c", pipeline, "sh", dir], { encoding: "utf8" });
  const ms = performance.now() - t;
  if (r.error || r.status !== 0) return null;
  const kb = gnuTime ? Number(/(\d+)\s*$/.exec(r.stderr ?? "")?.[1]) : NaN;
  return { ms, peak: Number.isFinite(kb) ? kb * 1024 : null };
}

const mibText = (bytes: number | null) => (bytes === null ? "n/a" : `${(bytes / 1048576).toFixed(1)} MiB`);
const secText = (ms: number | null) => (ms === null ? "n/a" : `${(ms / 1000).toFixed(2)} s`);

/**
 * Runs the benchmark and returns its report (for `bench/run.ts`). Flags: `--files N` (default
 * 50000), `--mb M` (default 1024), `--keep` (keep the generated tree).
 *
 * @example
 * ```ts
 * import { main } from "./snapshot.ts";
 * const report = await main(["--files", "5000", "--mb", "100"]);
 * console.log(report.result.ratio, report.ok);
 * ```
 */
export async function main(
  argv: readonly string[] = process.argv.slice(2),
): Promise<BenchReport & { result: SnapshotBenchResult }> {
  const files = Math.floor(arg(argv, "files", 50_000));
  const mib = arg(argv, "mb", 1024);
  const keep = argv.includes("--keep");
  const work = join(dirname(fileURLToPath(import.meta.url)), ".work");
  const dir = join(work, `snapshot-${files}-${mib}`);
  const marker = join(dir, ".complete");
  if (!existsSync(marker)) {
    rmSync(dir, { recursive: true, force: true });
    const t = performance.now();
    const bytes = generate(dir, files, mib);
    writeFileSync(marker, "");
    process.stdout.write(
      `generated ${files} files, ${mibText(bytes)} in ${secText(performance.now() - t)} under ${dir}\n`,
    );
  }
  try {
    await timeSnapshot(dir);
    const snap = await timeSnapshot(dir);
    if (snap.files !== files + 1) throw new Error(`captureSnapshot saw ${snap.files} files, expected ${files + 1}`);
    timeBaseline(dir);
    const base = timeBaseline(dir);
    const ratio = base === null ? null : snap.ms / base.ms;
    const result: SnapshotBenchResult = {
      files,
      mib,
      snapshotMs: snap.ms,
      baselineMs: base?.ms ?? null,
      ratio,
      snapshotPeakRss: snap.peak,
      processHwm: vmHwm(),
      baselinePeakRss: base?.peak ?? null,
      goalMet: ratio === null ? null : ratio <= 1,
    };
    const runtime = typeof (globalThis as { Bun?: { version: string } }).Bun !== "undefined"
      ? `bun ${(globalThis as unknown as { Bun: { version: string } }).Bun.version}`
      : typeof (globalThis as { Deno?: unknown }).Deno !== "undefined"
      ? "deno"
      : `node ${process.version}`;
    const report: BenchReport & { result: SnapshotBenchResult } = {
      name: "snapshot",
      ok: result.goalMet !== false,
      result,
      tables: [{
        title:
          `Workspace snapshot: ${files} files, ${mib} MiB (${runtime}, ${availableParallelism()} CPUs; 2nd of 2 runs)`,
        columns: ["tool", "time", "peak RSS"],
        rows: [
          ["captureSnapshot", secText(snap.ms), `${mibText(snap.peak)} (process VmHWM ${mibText(result.processHwm)})`],
          ["find + xargs sha256sum", secText(base?.ms ?? null), mibText(base?.peak ?? null)],
        ],
        notes: [
          `ratio: ${ratio === null ? "n/a" : ratio.toFixed(2) + "×"} — goal ≤ 1.0× (no slower): ${
            result.goalMet === null ? "not measured" : result.goalMet ? "met" : "NOT met"
          }`,
        ],
      }],
    };
    return report;
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) await runStandalone(main);
