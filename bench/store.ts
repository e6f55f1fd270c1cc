/**
 * The shared store (PostgreSQL), on a real server started for the run:
 *
 * - `list --limit 20` with a filter over 1,000,000 catalog rows: the query
 *   noema issues (round trip, median of 15), against the same query with
 *   index scans turned off (what it costs without the catalog's indexes).
 *   Goal: ≤ 50 ms per filtered list.
 * - Publishing: a 10,000-step `noema run` with `NOEMA_STORE`, against the same
 *   run without a store, interleaved, each timed alone (what a published run
 *   left to its publishing process is published before the next run starts).
 *   Goal: ≤ 1.10× (publishing adds ≤ 10%): the median of the runs' paired
 *   ratios (each published run against the run without a store just before
 *   it, so a change in the machine's load between pairs cancels out).
 *   Also the CPU time of the run's own thread (publishing runs in a process
 *   of its own), which a loaded machine disturbs far less than wall time.
 *
 *     bun bench/store.ts [--rows 1000000] [--steps 10000] [--runs 7]
 *
 * Skipped (a row saying why) where PostgreSQL is not installed.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import type { CatalogFilter } from "../src/shared_store/shared_store.ts";
import { pgUnavailable, startPostgres } from "../tests/helpers/postgres.ts";
import {
  type BenchReport,
  BUN,
  fixed,
  flag,
  measureOk,
  REPO_ROOT,
  runStandalone,
  scriptedTaskFile,
  tempDir,
} from "./lib.ts";

const FILTERS: [string, CatalogFilter][] = [
  ["status vetoed", { status: ["vetoed"] }],
  ["tag team=t7", { tags: { team: "t7" } }],
  ["task contains 'deploy 12345'", { task: "deploy 12345" }],
  ["host h42", { host: "h42" }],
  ["policy P3@1.0", { policy: "P3@1.0" }],
  ["waiting for approval", { status: ["waiting_for_approval"] }],
];

/** Fills the catalog with `rows` generated episodes (in SQL, so generation is not what is timed). */
async function fill(store: PostgresStore, rows: number): Promise<void> {
  await store.sql.unsafe(`
    INSERT INTO noema_episodes (episode_id, task, run_state, status, outcome, started_at, ended_at, host, adapter,
      policy_ids, tags, step_count, veto_count, stored_at)
    SELECT 'ep_' || lpad(i::text, 10, '0'),
      'deploy ' || i || ' of service ' || (i % 977),
      CASE WHEN i % 1000 = 0 THEN 'waiting_for_approval' ELSE 'terminal' END,
      CASE WHEN i % 1000 = 0 THEN 'pending' WHEN i % 50 = 0 THEN 'vetoed' WHEN i % 7 = 0 THEN 'error' ELSE 'ok' END,
      'success', timestamptz '2026-01-01' + i * interval '1 second', NULL, 'h' || (i % 100),
      CASE WHEN i % 3 = 0 THEN 'llm' ELSE 'claude-code' END,
      ARRAY['P' || (i % 10) || '@1.0'], jsonb_build_object('team', 't' || (i % 20)), 10, i % 3,
      timestamptz '2026-01-01' + i * interval '1 second' -- the store's clock, as it inserted them
    FROM generate_series(1, ${rows}) AS i`);
  // As after any bulk load: vacuumed and analyzed now, and written out, so that neither autovacuum nor a checkpoint of
  // the fill runs during the timed runs.
  await store.sql.unsafe(`VACUUM (ANALYZE) noema_episodes`);
  await store.sql.unsafe(`CHECKPOINT`);
}

async function timeList(store: PostgresStore, filter: CatalogFilter, n: number): Promise<number> {
  await store.list({ ...filter, limit: 20 }); // warm
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await store.list({ ...filter, limit: 20 });
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[Math.floor(n / 2)];
}

/**
 * A file for `bun --preload` that, as the process exits, appends the CPU time
 * of its main thread (Linux `/proc`; nothing elsewhere) to the file
 * `NOEMA_BENCH_THREAD_CPU` names.
 */
function threadCpuPreload(dir: string): string {
  const path = join(dir, "thread_cpu.ts");
  writeFileSync(
    path,
    `import { appendFileSync, readFileSync } from "node:fs";
import process from "node:process";
process.on("exit", () => {
  try {
    const f = readFileSync(\`/proc/self/task/\${process.pid}/stat\`, "utf8").split(") ")[1].split(" ");
    appendFileSync(process.env.NOEMA_BENCH_THREAD_CPU, \`\${(Number(f[11]) + Number(f[12])) / 100}\\n\`);
  } catch { /* not Linux */ }
});
`,
  );
  return path;
}

/** The median of the CPU times a variant's runs appended (NaN when none). */
function median(dir: string, name: string): number {
  let text = "";
  try {
    text = readFileSync(join(dir, `${name}.cpu`), "utf8");
  } catch { /* none */ }
  const v = text.split("\n").filter(Boolean).map(Number).sort((a, b) => a - b);
  return v.length ? v[Math.floor(v.length / 2)] : NaN;
}

/** The wall time of one run, in s (a failed run fails the benchmark). */
async function timed(cmd: string[]): Promise<number> {
  return (await measureOk(cmd)).seconds;
}

/** The median of some numbers. */
function middle(values: number[]): number {
  return [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
}

/** Waits (up to 2 min) until no episode under `root` is marked pending: the publishing processes are done. */
async function handedOverDone(root: string): Promise<void> {
  const dir = join(root, "state", "publish-pending");
  const end = Date.now() + 120_000;
  while (existsSync(dir) && readdirSync(dir).length > 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs the benchmark and prints its tables. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const why = pgUnavailable();
  if (why) {
    return {
      name: "store",
      tables: [],
      ok: true,
      measures: [{ measure: `skipped: ${why}`, value: "-", baseline: "-", ratio: "-", goal: "-", met: "-" }],
    };
  }
  const rows = Number(flag(args, "rows") ?? 1_000_000);
  const steps = Number(flag(args, "steps") ?? 10_000);
  const runs = Number(flag(args, "runs") ?? 7);
  const pg = await startPostgres();
  const url = pg.createDatabase();
  const store = new PostgresStore(url);
  const noIndex = new PostgresStore(url, { connection: { enable_indexscan: "off", enable_bitmapscan: "off" } });
  const tmp = tempDir("noema-bench-store-");
  try {
    await store.migrate();
    await fill(store, rows);
    const listRows: string[][] = [];
    let listOk = true;
    for (const [label, f] of FILTERS) {
      const ms = await timeList(store, f, 15);
      const base = await timeList(noIndex, f, 3);
      listOk &&= ms <= 50;
      listRows.push([
        `list --limit 20, ${label} (ms)`,
        fixed(ms, 1),
        `no index ${fixed(base, 1)}`,
        `${fixed(ms / base)}×`,
        "≤ 50 ms",
        ms <= 50 ? "yes" : "NO",
      ]);
    }
    const task = scriptedTaskFile(tmp.path, steps);
    // A 10,000-step plan is over the default limit (5,000 steps): raised, as a user with a long plan would.
    const planLimit = `NOEMA_MAX_PLAN_STEPS=${Math.max(steps, 5000)}`;
    const preload = threadCpuPreload(tmp.path);
    const cmd = [BUN, "--preload", preload, join(REPO_ROOT, "src/cli/main.ts"), "run", task, "-q"];
    const cpu = (name: string) => `NOEMA_BENCH_THREAD_CPU=${join(tmp.path, `${name}.cpu`)}`;
    const publishedRoot = join(tmp.path, "published");
    const local: number[] = [], published: number[] = [];
    // One pair untimed first: what the first run of each kind pays once (the page cache, Bun's transpiler cache) is
    // not counted; and the fill's pages written out (sync) before it.
    spawnSync("sync");
    await timed(["env", `NOEMA_ROOT=${join(tmp.path, "warm")}`, "NOEMA_STORE=", planLimit, ...cmd]);
    await timed(["env", `NOEMA_ROOT=${join(tmp.path, "warm")}`, `NOEMA_STORE=${url}`, planLimit, ...cmd]);
    await handedOverDone(join(tmp.path, "warm"));
    for (let i = 0; i < runs; i++) {
      local.push(
        await timed(["env", `NOEMA_ROOT=${join(tmp.path, "local")}`, "NOEMA_STORE=", planLimit, cpu("local"), ...cmd]),
      );
      published.push(
        await timed(["env", `NOEMA_ROOT=${publishedRoot}`, `NOEMA_STORE=${url}`, planLimit, cpu("published"), ...cmd]),
      );
      // What a run left to its publishing process is published before the next run starts: each run is timed alone.
      await handedOverDone(publishedRoot);
    }
    const [localS, publishedS] = [middle(local), middle(published)];
    const ratio = middle(published.map((p, i) => p / local[i])); // paired: load that drifts between pairs cancels
    const [threadLocal, threadPublished] = [median(tmp.path, "local"), median(tmp.path, "published")];
    const [count] = await store.sql`SELECT count(*) AS n FROM noema_lines`;
    const table = {
      title: `shared store: ${rows.toLocaleString("en")} catalog rows; a ${steps}-step run published live`,
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows: [
        ...listRows,
        [
          `run ${steps} steps with NOEMA_STORE (s)`,
          fixed(publishedS, 2),
          `no store ${fixed(localS, 2)}`,
          `${fixed(ratio)}×`,
          "≤ 1.10×",
          ratio <= 1.1 ? "yes" : "NO",
        ],
        [
          `run ${steps} steps with NOEMA_STORE: CPU of the run's own thread (s)`,
          fixed(threadPublished, 2),
          `no store ${fixed(threadLocal, 2)}`,
          `${fixed(threadPublished / threadLocal)}×`,
          "-",
          "-",
        ],
      ],
      notes: [
        `${Number(count.n).toLocaleString("en")} event lines stored by the published runs (${runs} runs, and one ` +
        "untimed warm-up pair before them). " +
        "The ratio is the median of the runs' paired ratios (each published run against the run just before it).",
        "A published run's process of its own sends its lines live at up to 4 MB/s (in the idle scheduling class " +
        "once connected), and the rest after the run; the next run starts once that is done, so each run is timed alone.",
        "CPU of the run's own thread (user + system, median; publishing runs in a process of its own): what " +
        "publishing costs the run itself, whatever else loads the machine.",
      ],
    };
    return { name: "store", tables: [table], ok: listOk && ratio <= 1.1 };
  } finally {
    await store.close();
    await noIndex.close();
    pg.stop();
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
