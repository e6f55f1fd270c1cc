/**
 * Report benchmark: `noema report` of a real 10,000-step episode (run once
 * with the minimal adapter, then reused from `bench/.work/`; no policy: a
 * policy file's worker currently gets state that grows with the episode, so
 * 10,000 steps with one take many minutes), against a baseline measured in
 * the same run:
 *
 * - writing the page, against writing the same events as plain text
 *   (`bench/tasks/events-text.ts`: one line per event);
 * - rendering the page in headless Chromium (parse, style and layout, timed
 *   inside the page), against the same plain text in a `<pre>`. Goal: under
 *   2 s. Skipped (and said so) without Chromium.
 *
 *     bun bench/report.ts [--steps 10000] [--runs 3]
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import {
  BENCH_DIR,
  type BenchReport,
  BUN,
  fixed,
  flag,
  type Measure,
  measureRuns,
  REPO_ROOT,
  runStandalone,
  workDir,
} from "./lib.ts";
import {
  chromiumArgs,
  findChromium,
  plainPage,
  RENDER_PROBE,
  stepsTask,
  timedPage,
} from "../tests/helpers/report_page.ts";

const CLI = join(REPO_ROOT, "src", "cli", "main.ts");
/** Render goal in Chromium, ms. */
export const RENDER_GOAL_MS = 2000;

/** Runs the episode once (reused while the step count is the same); returns its directory. */
export function episode(steps: number): string {
  const root = join(workDir("."), `report-${steps}-v2`);
  const id = `ep_01K9REP0RT${String(steps).padStart(16, "0")}`.slice(0, 29);
  const dir = join(root, "episodes", id);
  if (existsSync(join(dir, "manifest.json"))) return dir;
  rmSync(root, { recursive: true, force: true });
  const task = join(workDir("."), `report-${steps}.json`);
  writeFileSync(task, JSON.stringify(stepsTask(steps)));
  const r = spawnSync(BUN, [CLI, "run", task, "--root", root, "--episode-id", id, "-q"], {
    encoding: "utf8",
    maxBuffer: 1 << 26,
    // Over the default plan limit (5,000 steps): raised, as a user with a long plan would.
    env: { ...process.env, NOEMA_MAX_PLAN_STEPS: String(Math.max(steps, 5000)) },
  });
  if (r.status !== 0) throw new Error(`noema run exited ${r.status}: ${r.stderr}`);
  return dir;
}

/** Best of `runs` in-page render times (ms since navigation start, after a forced layout) of an HTML file. */
function renderMs(browser: string, page: string, runs: number): number {
  const html = timedPage(readFileSync(page, "utf8"));
  const tmp = mkdtempSync(join(tmpdir(), "noema-bench-report-"));
  try {
    const timed = join(tmp, "timed.html");
    writeFileSync(timed, html);
    let best = Infinity;
    for (let i = 0; i < runs; i++) {
      const r = spawnSync(browser, chromiumArgs(join(tmp, `profile-${i}`), ["--dump-dom"], timed), {
        encoding: "utf8",
        maxBuffer: 1 << 28,
      });
      const m = RENDER_PROBE.exec(r.stdout ?? "");
      if (!m) throw new Error(`chromium did not run the probe: ${r.stderr?.slice(-500)}`);
      best = Math.min(best, Number(m[1]));
    }
    return best;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const steps = Number(flag(args, "steps") ?? 10_000);
  const runs = Number(flag(args, "runs") ?? 3);
  const dir = episode(steps);
  const out = workDir("report-out");
  const page = join(out, "report.html"), text = join(out, "events.txt");
  const report = await measureRuns([BUN, CLI, "report", dir, "-o", page], runs);
  const plain = await measureRuns(
    [BUN, join(BENCH_DIR, "tasks", "events-text.ts"), join(dir, "events.jsonl"), text],
    runs,
  );
  const ratio = report.seconds / plain.seconds;
  const mib = (p: string) => fixed(statSync(p).size / 2 ** 20, 1);
  const measures: Measure[] = [{
    measure: `report of ${steps.toLocaleString("en")} steps: write the page (ms)`,
    value: fixed(report.seconds * 1000, 0),
    baseline: `events as text ${fixed(plain.seconds * 1000, 0)}`,
    ratio: `${fixed(ratio)}×`,
    goal: "-",
    met: "-",
  }];
  const notes = [
    `Median of ${runs} runs, each a child process under bun (start-up included). Page ${mib(page)} MiB, ` +
    `text ${mib(text)} MiB, events.jsonl ${mib(join(dir, "events.jsonl"))} MiB.`,
  ];
  let ok = true;
  const browser = findChromium();
  if (browser) {
    const pre = join(out, "events.html");
    writeFileSync(pre, plainPage(readFileSync(text, "utf8")));
    const ms = renderMs(browser, page, runs), base = renderMs(browser, pre, runs);
    ok = ms < RENDER_GOAL_MS;
    measures.push({
      measure: `report of ${steps.toLocaleString("en")} steps: render in Chromium (ms)`,
      value: fixed(ms, 0),
      baseline: `events as text ${fixed(base, 0)}`,
      ratio: `${fixed(ms / base)}×`,
      goal: `< ${RENDER_GOAL_MS} ms`,
      met: ok ? "yes" : "NO",
    });
    notes.push(`Render: best of ${runs} loads, timed inside the page (parse, style, layout), headless Chromium.`);
  } else {
    notes.push("Render: SKIPPED, Chromium not found (apt-get install chromium).");
  }
  return {
    name: "report",
    ok,
    measures,
    tables: [{
      title: `report: ${steps.toLocaleString("en")} steps`,
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows: measures.map((m) => [m.measure, m.value, m.baseline, m.ratio, m.goal, m.met]),
      notes,
    }],
  };
}

if (import.meta.main) await runStandalone(main);
