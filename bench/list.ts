/**
 * `noema list --limit 20` over 100,000 episodes against `ls` of the episodes
 * directory (the least any listing must do: read the directory and sort the
 * names). Goal: ≤ 3× `ls`.
 *
 * The episodes are minimal valid non-terminal runs (`state.json`,
 * `events.jsonl` with a start event, empty `learn.jsonl`), generated once
 * under `bench/.work/list-<n>/` and reused while the generator is unchanged.
 *
 *     bun bench/list.ts [--episodes 100000] [--runs 3]
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { newEpisodeId } from "../src/store/ids.ts";
import {
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

const GENERATOR_VERSION = "1";

/** Generates `n` minimal episodes under `root` once (reused while the generator is unchanged). */
export function generate(root: string, n: number): void {
  const marker = join(root, "complete.json");
  const want = JSON.stringify({ n, version: GENERATOR_VERSION });
  if (existsSync(marker) && readFileSync(marker, "utf8") === want) return;
  rmSync(root, { recursive: true, force: true });
  const building = `${root}.building`;
  rmSync(building, { recursive: true, force: true });
  const episodes = join(building, "episodes");
  mkdirSync(episodes, { recursive: true });
  const t0 = Date.parse("2026-01-01T00:00:00.000Z");
  process.stderr.write(`list: generating ${n.toLocaleString("en")} episodes…\n`);
  for (let i = 0; i < n; i++) {
    const at = t0 + i * 1000;
    const id = newEpisodeId(at);
    const dir = join(episodes, id);
    mkdirSync(dir);
    const ts = new Date(at).toISOString();
    const task = `bench task ${i}`;
    writeFileSync(
      join(dir, "events.jsonl"),
      JSON.stringify({
        id: `ev_${id.slice(3)}`,
        timestamp: ts,
        episode_id: id,
        phase: "start",
        payload: { task },
        evidence_ids: [],
      }) + "\n",
    );
    writeFileSync(join(dir, "learn.jsonl"), "");
    writeFileSync(
      join(dir, "state.json"),
      JSON.stringify({
        version: "1.0",
        state_schema_version: "1.0.0",
        episode: { id, started_at: ts },
        goal: { task },
        plan: { steps: [] },
        outcomes: { status: "pending" },
        links: { events: "events.jsonl", learn: "learn.jsonl" },
      }),
    );
  }
  writeFileSync(join(building, "complete.json"), want);
  renameSync(building, root);
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const n = Number(flag(args, "episodes") ?? 100_000);
  const runs = Number(flag(args, "runs") ?? 3);
  const root = join(workDir("."), `list-${n}`);
  const t = performance.now();
  generate(root, n);
  const genSeconds = (performance.now() - t) / 1000;
  const episodes = join(root, "episodes");
  const ls = await measureRuns(["ls", episodes], runs, { discardStdout: true });
  const list = await measureRuns(
    [BUN, join(REPO_ROOT, "src", "cli", "main.ts"), "--root", root, "list", "--limit", "20"],
    runs,
    {
      discardStdout: true,
    },
  );
  const json = await measureRuns(
    [BUN, join(REPO_ROOT, "src", "cli", "main.ts"), "--root", root, "list", "--limit", "20", "--json"],
    1,
  );
  const rows = JSON.parse(json.runs[0].stdout) as unknown[];
  if (rows.length !== 20) throw new Error(`list --limit 20 printed ${rows.length} rows`);
  const ratio = list.seconds / ls.seconds;
  const measures: Measure[] = [
    {
      measure: `list --limit 20 over ${n.toLocaleString("en")} episodes (ms)`,
      value: fixed(list.seconds * 1000, 0),
      baseline: `ls ${fixed(ls.seconds * 1000, 0)}`,
      ratio: `${fixed(ratio)}×`,
      goal: "≤ 3×",
      met: ratio <= 3 ? "yes" : "NO",
    },
    {
      measure: "list peak RSS (MB)",
      value: fixed(list.peakRssMb, 1),
      baseline: `ls ${fixed(ls.peakRssMb, 1)}`,
      ratio: "-",
      goal: "-",
      met: "-",
    },
  ];
  return {
    name: "list",
    ok: ratio <= 3,
    measures,
    tables: [{
      title: `list: ${n.toLocaleString("en")} episodes`,
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows: measures.map((m) => [m.measure, m.value, m.baseline, m.ratio, m.goal, m.met]),
      notes: [
        `Median of ${runs} runs, each a child process (noema under bun, including its start-up). ` +
        (genSeconds > 1 ? `Generated the episodes in ${fixed(genSeconds, 1)} s.` : "Episodes reused from bench/.work."),
      ],
    }],
  };
}

if (import.meta.main) await runStandalone(main);
