/**
 * `noema policy backtest` of a rules file and one policy file over 10,000
 * recorded episodes of 10 actions each (a local root). Goal: ≤ 60 s on 2
 * cores, and memory flat: the peak RSS over all the episodes at most 1.5×
 * the peak RSS over a tenth of them.
 *
 * The episodes are copies of one real episode recorded by `noema run` (a
 * shell task of 10 commands, governed by a rules file and a policy file),
 * each under a new id, generated once under `bench/.work/backtest-<n>/` and
 * reused while the generator is unchanged. The candidate set replaces the
 * rules file (one command of the ten now denied) and the policy (one more
 * command vetoed): 2 flips per episode, checked against the totals.
 *
 *     bun bench/backtest.ts [--episodes 10000] [--runs 1]
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { newEpisodeId } from "../src/store/ids.ts";
import { writeManifest } from "../src/store/manifest.ts";
import { pgUnavailable, startPostgres } from "../tests/helpers/postgres.ts";
import {
  type BenchReport,
  BUN,
  fixed,
  flag,
  type Measure,
  measure,
  type Measurement,
  REPO_ROOT,
  runStandalone,
  workDir,
} from "./lib.ts";

const GENERATOR_VERSION = "2";
const MAIN = join(REPO_ROOT, "src", "cli", "main.ts");
const COMMANDS = ["echo 0", "true", "pwd", "echo 3", "date", "echo 5", "uname", "echo 7", "printf 8", "echo 9"];

const policy = (vetoed: string[]) =>
  `export default {
  name: "BenchGuard",
  version: "1.0",
  api: "1.0",
  advise(state) {
    const c = state.action.command;
    if (${
    JSON.stringify(vetoed)
  }.some((p) => c.startsWith(p))) return { kind: "veto", advice: "no " + c, confidence: 1 };
    return undefined;
  },
};
`;

/** Records one episode with `noema run`, then copies it `n` times under new ids (once; reused after). */
export function generate(dir: string, n: number): void {
  const marker = join(dir, "complete.json");
  const want = JSON.stringify({ n, version: GENERATOR_VERSION });
  if (existsSync(marker) && readFileSync(marker, "utf8") === want) return;
  rmSync(dir, { recursive: true, force: true });
  const building = `${dir}.building`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  // The recorded files stay where the seed episode names them (its start event records their paths).
  const seed = join(dir, "..", "backtest-seed");
  rmSync(seed, { recursive: true, force: true });
  mkdirSync(seed, { recursive: true });
  writeFileSync(join(seed, "rules.jsonc"), JSON.stringify({ deny: ["Bash(rm:*)"] }));
  writeFileSync(join(seed, "guard.ts"), policy(["git push"]));
  writeFileSync(
    join(seed, "task.json"),
    JSON.stringify({
      task: "bench backtest",
      using: "shell",
      rules_file: "rules.jsonc",
      policies: ["guard.ts"],
      steps: COMMANDS.map((command, i) => ({ kind: "act", description: `step ${i}`, inputs: { command } })),
    }),
  );
  const seedRoot = join(seed, "root");
  const r = spawnSync(BUN, [MAIN, "--root", seedRoot, "run", "task.json"], {
    cwd: seed,
    encoding: "utf8",
    env: { ...process.env, NOEMA_USER_RULES: "" },
  });
  if (r.status !== 0) throw new Error(`the seed run failed (${r.status}): ${r.stdout}${r.stderr}`);
  const seedId = readdirSync(join(seedRoot, "episodes"))[0];
  const seedDir = join(seedRoot, "episodes", seedId);
  const files = readdirSync(seedDir).filter((f) => f !== "lock" && !f.startsWith("lock.") && f !== "manifest.json");
  const texts = new Map(files.map((f) => [f, readFileSync(join(seedDir, f), "utf8")]));
  const seal = JSON.parse(readFileSync(join(seedDir, "manifest.json"), "utf8")) as {
    plugins: Parameters<typeof writeManifest>[2];
    created_at: string;
  };
  const episodes = join(building, "root", "episodes");
  mkdirSync(episodes, { recursive: true });
  process.stderr.write(`backtest: generating ${n.toLocaleString("en")} episodes…\n`);
  const t0 = Date.parse("2026-01-01T00:00:00.000Z");
  for (let i = 0; i < n; i++) {
    const id = newEpisodeId(t0 + i * 1000);
    const out = join(episodes, id);
    mkdirSync(out);
    for (const [f, text] of texts) writeFileSync(join(out, f), text.replaceAll(seedId, id));
    // Sealed again: the copy's digests (a store checks a pulled copy against its manifest).
    writeManifest(out, id, seal.plugins, seal.created_at, null);
  }
  rmSync(seedRoot, { recursive: true, force: true });
  writeFileSync(join(building, "complete.json"), want);
  renameSync(building, dir);
}

/** One backtest run's command: the edited rules file and policy file replace the recorded ones. */
function backtestCommand(dir: string, root: string, store: string[] = []): string[] {
  return [
    BUN,
    MAIN,
    "--root",
    root,
    ...store,
    "policy",
    "backtest",
    "--json",
    "--rules",
    join(dir, "rules.jsonc"),
    "--policy",
    join(dir, "guard.ts"),
  ];
}

const noema = (args: string[]) => spawnSync(BUN, [MAIN, ...args], { encoding: "utf8", maxBuffer: 1 << 28 });

/** Publishes the generated episodes to the store at `url` (`noema store init`, then `noema sync`). */
function publish(dir: string, url: string): void {
  const init = noema(["store", "init", "--store", url]);
  if (init.status !== 0) throw new Error(`store init failed: ${init.stderr}`);
  const sync = noema(["--root", join(dir, "root"), "sync", "--store", url, "--json"]);
  const failed = sync.stdout.split("\n").filter((l) => l.trim() !== "" && JSON.parse(l).error != null);
  if (sync.status !== 0 || failed.length > 0) throw new Error(`sync failed: ${failed[0] ?? sync.stderr}`);
}

/** A files store holding the generated episodes (published once by `noema sync`; reused after). */
function publishedStore(dir: string): string {
  const url = pathToFileURL(join(dir, "store")).href;
  const marker = join(dir, "store.complete");
  if (existsSync(marker)) return url;
  rmSync(join(dir, "store"), { recursive: true, force: true });
  process.stderr.write("backtest: publishing the episodes to a files store…\n");
  publish(dir, url);
  writeFileSync(marker, "");
  return url;
}
/** A root holding copies of the first `n` episodes of the generated ones (made once). */
function subsetRoot(dir: string, n: number): string {
  const root = join(dir, `subset-${n}`);
  if (existsSync(join(root, "complete"))) return root;
  rmSync(root, { recursive: true, force: true });
  mkdirSync(join(root, "episodes"), { recursive: true });
  for (const id of readdirSync(join(dir, "root", "episodes")).sort().slice(0, n)) {
    cpSync(join(dir, "root", "episodes", id), join(root, "episodes", id), { recursive: true });
  }
  writeFileSync(join(root, "complete"), "");
  return root;
}

/** `runs` runs of a backtest (it exits 3: verdicts flip): the median time, the largest peak RSS. */
async function measureBacktest(
  cmd: string[],
  runs: number,
): Promise<{ seconds: number; peakRssMb: number; runs: Measurement[] }> {
  const all: Measurement[] = [];
  for (let i = 0; i < runs; i++) {
    const m = await measure(cmd);
    if (m.exitCode !== 3) throw new Error(`${cmd.join(" ")} exited with ${m.exitCode}\n${m.stderr.slice(-2000)}`);
    all.push(m);
  }
  const times = all.map((m) => m.seconds).sort((a, b) => a - b);
  return {
    seconds: times[Math.floor(times.length / 2)],
    peakRssMb: Math.max(...all.map((m) => m.peakRssMb)),
    runs: all,
  };
}

/** The totals of a backtest's output must show every action and the 2 flips per episode. */
function checkTotals(m: Measurement, n: number): void {
  const totals = JSON.parse(m.stdout.trim().split("\n").at(-1)!);
  if (totals.actions !== n * COMMANDS.length || totals.flips.allow_to_deny !== 2 * n) {
    throw new Error(`unexpected totals: ${JSON.stringify(totals)}`);
  }
}

const goalSeconds = (n: number) => 60 * (n / 10_000);

/** The backtest over the root, and over a root holding a tenth of the episodes (memory flat). */
async function measureRoot(dir: string, candidate: string, n: number, runs: number): Promise<Measure[]> {
  const small = Math.max(1, Math.floor(n / 10));
  const full = await measureBacktest(backtestCommand(candidate, join(dir, "root")), runs);
  const tenth = await measureBacktest(backtestCommand(candidate, subsetRoot(dir, small)), runs);
  checkTotals(full.runs[0], n);
  const rssRatio = full.peakRssMb / tenth.peakRssMb;
  return [{
    measure: `backtest of ${n.toLocaleString("en")} episodes × 10 actions (s)`,
    value: fixed(full.seconds, 1),
    baseline: `${small.toLocaleString("en")} episodes ${fixed(tenth.seconds, 1)}`,
    ratio: `${fixed((full.seconds * 1e6) / (n * COMMANDS.length), 0)} µs/action`,
    goal: `≤ ${fixed(goalSeconds(n), 0)} s`,
    met: full.seconds <= goalSeconds(n) ? "yes" : "NO",
  }, {
    measure: "backtest peak RSS (MB)",
    value: fixed(full.peakRssMb, 1),
    baseline: `${small.toLocaleString("en")} episodes ${fixed(tenth.peakRssMb, 1)}`,
    ratio: `${fixed(rssRatio)}×`,
    goal: "≤ 1.5× (flat)",
    met: rssRatio <= 1.5 ? "yes" : "NO",
  }];
}

/** The same backtest over a store (`--store URL`), and with `--limit` a tenth (memory flat); nothing written. */
async function measureStore(label: string, url: string, dir: string, candidate: string, n: number, runs: number) {
  const small = Math.max(1, Math.floor(n / 10));
  const reader = join(dir, "reader");
  const cmd = backtestCommand(candidate, reader, ["--store", url]);
  const full = await measureBacktest(cmd, runs);
  const tenth = await measureBacktest([...cmd, "--limit", String(small)], runs);
  if (existsSync(reader)) throw new Error("the backtest over the store wrote to its root");
  checkTotals(full.runs[0], n);
  const rssRatio = full.peakRssMb / tenth.peakRssMb;
  const measures: Measure[] = [{
    measure: `the same over ${label} (s)`,
    value: fixed(full.seconds, 1),
    baseline: `${small.toLocaleString("en")} episodes ${fixed(tenth.seconds, 1)}`,
    ratio: `${fixed((full.seconds * 1e6) / (n * COMMANDS.length), 0)} µs/action`,
    goal: `≤ ${fixed(goalSeconds(n), 0)} s`,
    met: full.seconds <= goalSeconds(n) ? "yes" : "NO",
  }, {
    measure: `over ${label}: peak RSS (MB)`,
    value: fixed(full.peakRssMb, 1),
    baseline: `${small.toLocaleString("en")} episodes ${fixed(tenth.peakRssMb, 1)}`,
    ratio: `${fixed(rssRatio)}×`,
    goal: "≤ 1.5× (flat)",
    met: rssRatio <= 1.5 ? "yes" : "NO",
  }];
  return measures;
}

/** The same over a PostgreSQL store of its own (published by `noema sync` each time), when PostgreSQL is here. */
async function measurePostgres(dir: string, candidate: string, n: number, runs: number): Promise<Measure[]> {
  const why = pgUnavailable();
  if (why) {
    return [{ measure: `PostgreSQL skipped: ${why}`, value: "-", baseline: "-", ratio: "-", goal: "-", met: "-" }];
  }
  const pg = await startPostgres();
  try {
    const url = pg.createDatabase();
    process.stderr.write("backtest: publishing the episodes to PostgreSQL…\n");
    publish(dir, url);
    return await measureStore("PostgreSQL", url, dir, candidate, n, runs);
  } finally {
    pg.stop();
  }
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const n = Number(flag(args, "episodes") ?? 10_000);
  const runs = Number(flag(args, "runs") ?? 1);
  const dir = join(workDir("."), `backtest-${n}`);
  const t = performance.now();
  generate(dir, n);
  const genSeconds = (performance.now() - t) / 1000;
  // The candidate set: the rules file now denies `date`, the policy also vetoes `uname` (2 flips per episode).
  const candidate = join(dir, "candidate");
  mkdirSync(candidate, { recursive: true });
  writeFileSync(join(candidate, "rules.jsonc"), JSON.stringify({ deny: ["Bash(rm:*)", "Bash(date:*)"] }));
  writeFileSync(join(candidate, "guard.ts"), policy(["git push", "uname"]));
  const measures = [
    ...await measureRoot(dir, candidate, n, runs),
    ...await measureStore("a files store", publishedStore(dir), dir, candidate, n, runs),
    ...(flag(args, "postgres") === "no" ? [] : await measurePostgres(dir, candidate, n, runs)),
  ];
  return {
    name: "backtest",
    ok: measures.every((m) => m.met !== "NO"),
    measures,
    tables: [{
      title: `policy backtest: ${n.toLocaleString("en")} episodes, a rules file and a policy file`,
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows: measures.map((m) => [m.measure, m.value, m.baseline, m.ratio, m.goal, m.met]),
      notes: [
        `Median of ${runs} run(s), each a child process (noema under bun, start-up included); the policy in its ` +
        "worker. " +
        (genSeconds > 1 ? `Generated the episodes in ${fixed(genSeconds, 1)} s.` : "Episodes reused from bench/.work."),
      ],
    }],
  };
}

if (import.meta.main) await runStandalone(main);
