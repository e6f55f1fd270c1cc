/**
 * The shared store's copy of an episode under faults (issue 35), on a real
 * PostgreSQL started for the run. Each trial, from a seeded PRNG:
 *
 * - a scripted `noema run` of 1,000–3,000 steps (`--min-steps`,
 *   `--max-steps`) with `NOEMA_STORE` and a signing key set (signed
 *   manifests), SIGKILLed while it takes its steps (at a random share of
 *   the events it writes) or between its seal and its exit (at a random
 *   moment); in a quarter of the trials its publishing process is SIGKILLed
 *   instead, from the run's seal to just after its exit;
 * - `noema resume` of it, itself SIGKILLed at a random moment in about half
 *   the trials, then resumed again until it exits 0 (or 5: the run was
 *   sealed already);
 * - once the episode's publish-pending marker is gone (`noema sync` once
 *   when it names a process that is gone), `noema pull` into a fresh root.
 *
 * A trial is corrupted unless the pull exits 0, the pulled tree is
 * byte-identical to the local one (the `lock` file and its temporaries left
 * out) and `noema verify --strict` of the pulled copy exits 0. Goal: 0
 * corrupted.
 *
 *     bun bench/store_faults.ts [--trials 100] [--seed N] [--min-steps 1000] [--max-steps 3000]
 *
 * Skipped (a row saying why) where PostgreSQL is not installed.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import process from "node:process";
import { pidsWithEnv } from "../tests/helpers/processes.ts";
import { pgUnavailable, startPostgres } from "../tests/helpers/postgres.ts";
import { prng } from "../tests/helpers/prng.ts";
import {
  type BenchReport,
  BUN,
  fixed,
  flag,
  median,
  REPO_ROOT,
  runStandalone,
  scriptedTaskFile,
  tempDir,
} from "./lib.ts";

const MAIN = join(REPO_ROOT, "src/cli/main.ts");
const KEY = "store faults bench key";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What one noema process did: its exit code (null when killed) and the first line of its stderr. */
interface Exit {
  code: number | null;
  stderr: string;
}

/** A started noema process: its pid, and its end. */
interface Started {
  pid: number;
  child: ChildProcess;
  done: Promise<Exit>;
}

/** Starts `noema <args>` with the store and the signing key in its environment. */
function noema(args: string[], env: Record<string, string>): Started {
  const child = spawn(BUN, [MAIN, ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr += d));
  const done = new Promise<Exit>((resolve) => {
    child.on("error", (e) => resolve({ code: -1, stderr: String(e) }));
    child.on("close", (code) => resolve({ code, stderr }));
  });
  return { pid: child.pid ?? 0, child, done };
}

/** Runs `noema <args>` to its end, killed after `timeoutMs` (a hang, not a fault). */
async function noemaDone(args: string[], env: Record<string, string>, timeoutMs = 180_000): Promise<Exit> {
  const p = noema(args, env);
  const t = setTimeout(() => p.child.kill("SIGKILL"), timeoutMs);
  try {
    return await p.done;
  } finally {
    clearTimeout(t);
  }
}

const firstLine = (text: string) => text.trim().split("\n")[0] ?? "";

/** Whether a process still runs (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** The publishing processes (`noema __store-live`) of runs under `root`, found by their environment. */
function publishers(root: string): number[] {
  return pidsWithEnv((e) => e.startsWith("NOEMA_STORE_LIVE_START=") && e.includes(root)).filter(alive);
}

/**
 * Every file of a directory tree, relative path → bytes, the lock and its own temporaries (`lock.tmp-*`: a claim or
 * takeover token a killed contender left) left out: local machinery, never part of the record (`verify` reports a
 * left one as a `stale_lock` warning).
 */
function tree(dir: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name !== "lock" && !e.name.startsWith("lock.tmp-")) out.set(relative(dir, p), readFileSync(p));
    }
  };
  walk(dir);
  return out;
}

/** How two trees differ (the first difference), or null when they are byte-identical. */
function treeDifference(local: Map<string, Buffer>, pulled: Map<string, Buffer>): string | null {
  for (const [path, bytes] of local) {
    const other = pulled.get(path);
    if (!other) return `${path} is missing from the pulled copy`;
    if (!other.equals(bytes)) return `${path} differs (local ${bytes.length} bytes, pulled ${other.length})`;
  }
  for (const path of pulled.keys()) if (!local.has(path)) return `${path} is only in the pulled copy`;
  return null;
}

/** What a trial did and how it ended. */
interface Trial {
  index: number;
  steps: number;
  /**
   * Where the first fault hit: the run before or after its seal, its publishing process, or nothing (the process
   * had ended before its kill).
   */
  runFault: "run" | "sealed run" | "publish" | "none";
  /** What the run's kill was planned on: its steps, its end (after its seal), or its publishing process. */
  plan: "steps" | "end" | "publisher";
  /** When it hit: ms after the run was started. */
  runKillMs: number;
  /** The planned kill of the first resume: ms after it started (null: none planned). */
  resumeKillMs: number | null;
  resumeKilled: boolean;
  resumes: number;
  seconds: number;
  /** Why the trial counts as corrupted (null: the pulled copy was whole). */
  failure: string | null;
  /** Seconds per phase (run, resume, published, pull). */
  phases: string[];
}

/** What every trial shares: the store, the signing key, the random numbers, the run's expected length. */
interface Setup {
  url: string;
  dir: string;
  rand: () => number;
  /** How long an unkilled run of `minSteps` and of `maxSteps` steps took (measured before the trials). */
  timing: { min: RunTiming; max: RunTiming };
  /**
   * How long a run's end (its seal to its exit) lasted, in ms: those of the unkilled runs measured first, then of
   * every trial's run that ended before its kill planned there. Kills at the end are placed within the median.
   */
  sealToExit: number[];
  minSteps: number;
  maxSteps: number;
}

/** Numbers in [0, 1) from `seed`, mixed first: xorshift's first numbers from a small seed are small. */
function seeded(seed: number): () => number {
  const rand = prng(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) >>> 0);
  for (let i = 0; i < 16; i++) rand();
  return rand;
}

/** The environment of every noema process of a trial. */
function envOf(s: Setup, steps: number): Record<string, string> {
  return { NOEMA_STORE: s.url, NOEMA_SIGNING_KEY: KEY, NOEMA_MAX_PLAN_STEPS: String(Math.max(steps, 5000)) };
}

/** Waits until `f` holds or `ms` passed; true when it held. */
async function until(f: () => boolean, ms: number, every = 10): Promise<boolean> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) return false;
    await sleep(every);
  }
  return true;
}

/** An unkilled run: how long it lasted, how long from its seal (the manifest) to its exit, its events file's size. */
interface RunTiming {
  /** From its start to its exit (ms). */
  total: number;
  /** From its seal to its exit (ms): its end, while its publishing process sends what is left. */
  sealToExit: number;
  /** The size of its `events.jsonl` (the same for every run of as many steps, whatever the load). */
  eventsBytes: number;
}

/** The expected run of `steps` steps, between the two measured. */
function expected(s: Setup, steps: number): RunTiming {
  const f = s.maxSteps === s.minSteps ? 1 : (steps - s.minSteps) / (s.maxSteps - s.minSteps);
  const { min, max } = s.timing;
  const between = (k: keyof RunTiming) => min[k] + f * (max[k] - min[k]);
  return { total: between("total"), sealToExit: between("sealToExit"), eventsBytes: between("eventsBytes") };
}

/** The size of a file (0 while there is none). */
function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * The run, SIGKILLed at a random moment: half of the kills while it takes
 * its steps (once its events file holds a random share of what a whole run
 * writes: placed by progress, not time, so a loaded machine does not move
 * them), half between its seal (the manifest) and its exit; or, in a quarter
 * of the trials, its publishing process (found while the run goes) instead,
 * between the run's seal and 50 ms after its exit: what it still had to send
 * is left to the commands after it.
 */
async function faultyRun(s: Setup, t: Trial, root: string, task: string, id: string): Promise<string | null> {
  const env = envOf(s, t.steps);
  const [episode, run] = [
    join(root, "episodes", id),
    noema(["--root", root, "run", task, "--episode-id", id, "-q"], env),
  ];
  const [events, manifest] = [join(episode, "events.jsonl"), join(episode, "manifest.json")];
  const onPublisher = s.rand() < 0.25;
  const { eventsBytes } = expected(s, t.steps);
  const [u, early] = [s.rand(), s.rand() < 0.5];
  t.plan = onPublisher ? "publisher" : early ? "steps" : "end";
  let ended = false;
  run.done.then(() => (ended = true));
  const seen = new Set<number>();
  const look = (done: () => boolean) => () => {
    if (onPublisher && !ended) { for (const pid of publishers(root)) seen.add(pid); }
    return done() || ended;
  };
  const t0 = Date.now();
  if (early && !onPublisher) {
    const size = () => sizeOf(events);
    await until(() => (size() > 0 && size() >= u * eventsBytes) || existsSync(manifest) || ended, 120_000, 2);
  } else {
    await until(look(() => existsSync(manifest)), 120_000, onPublisher ? 50 : 2);
    const sealed = Date.now();
    const killAt = sealed + u * (median(s.sealToExit) + (onPublisher ? 50 : 0));
    while (Date.now() < killAt && !ended) { // its publishing process looked up (every 50 ms: /proc costs CPU)
      await Promise.race([run.done, sleep(Math.min(onPublisher ? 50 : 2, killAt - Date.now()))]);
      look(() => false)();
    }
    if (ended && !onPublisher) s.sealToExit.push(Date.now() - sealed); // how long a run's end lasts here, now
  }
  t.runKillMs = Date.now() - t0;
  if (onPublisher) {
    for (const pid of [...seen].filter(alive)) {
      process.kill(pid, "SIGKILL");
      t.runFault = "publish";
    }
  } else if (!ended) {
    process.kill(run.pid, "SIGKILL");
    t.runFault = existsSync(manifest) ? "sealed run" : "run";
  }
  const r = await run.done;
  if (t.runFault !== "publish" && t.runFault !== "none") return null;
  if (r.code !== 0) return `run exited ${r.code}: ${firstLine(r.stderr)}`;
  await until(() => publishers(root).length === 0, 30_000, 50);
  return null;
}

/** `noema resume`, SIGKILLed at a random moment in about half the trials, then again until it exits 0 or 5. */
async function faultyResume(s: Setup, t: Trial, root: string, id: string): Promise<string | null> {
  const env = envOf(s, t.steps);
  const args = ["--root", root, "resume", id];
  if (s.rand() < 0.5) {
    t.resumeKillMs = Math.round(s.rand() * expected(s, t.steps).total);
    const r = noema(args, env);
    let ended = false;
    r.done.then(() => (ended = true));
    await until(() => ended, t.resumeKillMs);
    if (!ended) {
      process.kill(r.pid, "SIGKILL");
      t.resumeKilled = true;
    }
    const e = await r.done;
    t.resumes++;
    t.phases.push(t.resumeKilled ? "resume killed" : `resume exit ${e.code}`);
    if (!t.resumeKilled && e.code !== 0 && e.code !== 5) return `resume exited ${e.code}: ${firstLine(e.stderr)}`;
    if (!t.resumeKilled) return null;
    // Its publishing process sees the resume's end and exits; the next resume claims the run from it.
    await until(() => publishers(root).length === 0, 30_000);
  }
  for (let i = 0; i < 5; i++) {
    const e = await noemaDone(args, env);
    t.resumes++;
    t.phases.push(`resume exit ${e.code}`);
    if (e.code === 0 || e.code === 5) return null;
    if (e.code !== 10) return `resume exited ${e.code}: ${firstLine(e.stderr)}`;
    await sleep(500); // 10: the run is held (a publishing process still going): again shortly
  }
  return "resume still refused (exit 10) after 5 tries";
}

/** Waits (≤ 2 min) until the publish-pending marker is gone; `noema sync` once if it names no live process. */
async function published(s: Setup, t: Trial, root: string, id: string): Promise<string | null> {
  const marker = join(root, "state", "publish-pending", id);
  const end = Date.now() + 120_000;
  let synced = false;
  while (existsSync(marker)) {
    if (Date.now() > end) return "the publish-pending marker was still there after 2 min";
    let pid = 0;
    try {
      pid = Number(readFileSync(marker, "utf8").trim()) || 0;
    } catch { /* removed meanwhile */ }
    if (!synced && (pid === 0 || !alive(pid)) && existsSync(marker)) {
      synced = true;
      const e = await noemaDone(["--root", root, "sync", id], envOf(s, t.steps));
      if (e.code !== 0) return `sync exited ${e.code}: ${firstLine(e.stderr)}`;
    }
    await sleep(50);
  }
  return null;
}

/** Pulls the episode into `fresh`: null when the copy is byte-identical and verifies strictly, else why not. */
async function checkPulled(s: Setup, t: Trial, root: string, fresh: string, id: string): Promise<string | null> {
  const env = envOf(s, t.steps);
  const p = await noemaDone(["--root", fresh, "pull", id], env);
  if (p.code !== 0) return `pull exited ${p.code}: ${firstLine(p.stderr)}`;
  const diff = treeDifference(tree(join(root, "episodes", id)), tree(join(fresh, "episodes", id)));
  if (diff) return `not byte-identical: ${diff}`;
  const v = await noemaDone(["--root", fresh, "verify", id, "--strict"], env);
  if (v.code !== 0) return `verify --strict exited ${v.code}: ${firstLine(v.stderr)}`;
  return null;
}

/** One trial, in a directory of its own (removed after it). */
async function trial(s: Setup, index: number): Promise<Trial> {
  const steps = s.minSteps + Math.floor(s.rand() * (s.maxSteps - s.minSteps + 1));
  const t: Trial = {
    index,
    steps,
    runFault: "none",
    plan: "steps",
    runKillMs: 0,
    resumeKillMs: null,
    resumeKilled: false,
    resumes: 0,
    seconds: 0,
    failure: null,
    phases: [],
  };
  const dir = join(s.dir, `trial-${index}`);
  const [root, fresh] = [join(dir, "a"), join(dir, "b")];
  const id = `ep_faults_${index}`;
  const t0 = performance.now();
  try {
    mkdirSync(dir, { recursive: true });
    const task = scriptedTaskFile(dir, steps);
    const phase = async (name: string, f: () => Promise<string | null>) => {
      const p0 = performance.now();
      const r = await f();
      t.phases.push(`${name} ${fixed((performance.now() - p0) / 1000, 1)}`);
      return r;
    };
    t.failure = (await phase("run", () => faultyRun(s, t, root, task, id))) ??
      (await phase("resume", () => faultyResume(s, t, root, id))) ??
      (await phase("published", () => published(s, t, root, id))) ??
      (await phase("pull", () => checkPulled(s, t, root, fresh, id)));
  } catch (e) {
    t.failure = `threw: ${firstLine(String((e as Error)?.message ?? e))}`;
  } finally {
    for (const pid of publishers(root)) process.kill(pid, "SIGKILL"); // a failed trial's leftovers
    rmSync(dir, { recursive: true, force: true });
  }
  t.seconds = (performance.now() - t0) / 1000;
  return t;
}

let calibrations = 0;

/** The timing of an unkilled run of `steps` steps with the store (the first is also the warm-up). */
async function calibrate(url: string, dir: string, steps: number): Promise<RunTiming> {
  const id = `ep_calibrate_${++calibrations}`; // its own: a run under an id the store holds is a conflict
  const d = join(dir, id);
  mkdirSync(d, { recursive: true });
  const task = scriptedTaskFile(d, steps);
  const root = join(d, "root");
  const env = { NOEMA_STORE: url, NOEMA_SIGNING_KEY: KEY, NOEMA_MAX_PLAN_STEPS: String(Math.max(steps, 5000)) };
  const t0 = performance.now();
  const run = noema(["--root", root, "run", task, "--episode-id", id, "-q"], env);
  let ended = false;
  run.done.then(() => (ended = true));
  const episode = join(root, "episodes", id);
  await until(() => existsSync(join(episode, "manifest.json")) || ended, 120_000, 2);
  const sealed = performance.now();
  const e = await run.done;
  const t2 = performance.now();
  if (e.code !== 0) throw new Error(`the calibration run exited ${e.code}: ${firstLine(e.stderr)}`);
  await until(() => publishers(root).length === 0, 120_000, 100);
  const eventsBytes = sizeOf(join(episode, "events.jsonl"));
  rmSync(d, { recursive: true, force: true });
  return { total: t2 - t0, sealToExit: t2 - sealed, eventsBytes };
}

/** A trial's faults: `trial 3: 2,000 steps, run killed at 410 ms, resume killed at 90 ms (run 0.4, …)`. */
function whatHappened(t: Trial): string {
  const run = t.runFault === "none"
    ? `no kill (planned on the ${t.plan}; the run's processes ended by ${t.runKillMs} ms)`
    : `${t.runFault} killed at ${t.runKillMs} ms`;
  const resume = t.resumeKilled
    ? `killed at ${t.resumeKillMs} ms`
    : t.resumeKillMs === null
    ? "not killed"
    : `ended before its kill at ${t.resumeKillMs} ms`;
  return `trial ${t.index}: ${t.steps} steps, ${run}, resume ${resume}, ${t.resumes} resumes (${t.phases.join(", ")})`;
}

/** The table of a finished benchmark. */
function report(trials: Trial[], seed: number, s: Pick<Setup, "minSteps" | "maxSteps" | "timing" | "sealToExit">) {
  const corrupted = trials.filter((t) => t.failure !== null);
  const count = (f: (t: Trial) => boolean) => String(trials.filter(f).length);
  const row = (measure: string, value: string, goal = "-", met = "-") => [measure, value, goal, met];
  return {
    title: `shared store under faults: ${trials.length} trials, ${s.minSteps}–${s.maxSteps}-step runs (seed ${seed})`,
    columns: ["measure", "value", "goal", "met"],
    rows: [
      row("trials", String(trials.length)),
      row(
        "corrupted (pull fails, differs, or verify --strict fails)",
        String(corrupted.length),
        "0",
        corrupted.length === 0 ? "yes" : "NO",
      ),
      row("kills during the run, before its seal", count((t) => t.runFault === "run")),
      row("kills during the run, after its seal (its end)", count((t) => t.runFault === "sealed run")),
      row("kills of the publishing process at the run's end or after it", count((t) => t.runFault === "publish")),
      row("kills during resume", count((t) => t.resumeKilled)),
      row("median trial time (s)", fixed(median(trials.map((t) => t.seconds)), 1)),
    ],
    notes: [
      `Unkilled runs with the store took ${fixed(s.timing.min.total / 1000)} s (${s.minSteps} steps) and ` +
      `${fixed(s.timing.max.total / 1000)} s (${s.maxSteps}), of which ${fixed(s.timing.min.sealToExit / 1000)} ` +
      `and ${fixed(s.timing.max.sealToExit / 1000)} s from the seal (the manifest) to the exit; during the trials ` +
      `that end lasted ${fixed(median(s.sealToExit), 0)} ms (median of ${s.sealToExit.length}). A run killed before ` +
      "its seal is killed once its events file holds a random share of what the whole run writes; after it, at a " +
      "random moment of that end. A kill planned after its process ended counts none (the run's kill was planned on " +
      `its steps in ${count((t) => t.plan === "steps")} trials, on its end in ${count((t) => t.plan === "end")}, on ` +
      `its publishing process in ${count((t) => t.plan === "publisher")}).`,
      ...corrupted.map((t) => `corrupted (seed ${seed}): ${whatHappened(t)}: ${t.failure}`),
    ],
  };
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const why = pgUnavailable();
  if (why) {
    return {
      name: "store_faults",
      tables: [],
      ok: true,
      measures: [{ measure: `skipped: ${why}`, value: "-", baseline: "-", ratio: "-", goal: "-", met: "-" }],
    };
  }
  const trials = Number(flag(args, "trials") ?? 100);
  const seed = Number(flag(args, "seed") ?? 35);
  const minSteps = Number(flag(args, "min-steps") ?? 1000);
  const maxSteps = Number(flag(args, "max-steps") ?? 3000);
  const pg = await startPostgres();
  const tmp = tempDir("noema-bench-store-faults-");
  try {
    const url = pg.createDatabase();
    const init = await noemaDone(["store", "init", "--store", url], {});
    if (init.code !== 0) throw new Error(`noema store init exited ${init.code}: ${firstLine(init.stderr)}`);
    await calibrate(url, tmp.path, minSteps); // warm-up: Bun's transpiler cache, the page cache
    // The longer of two runs of each length: a run's end waits for its publishing process for 0–1 s (how far it
    // lags behind depends on the machine's load), and a kill planned after the exit is no fault.
    const longer = (a: RunTiming, b: RunTiming): RunTiming => ({
      total: Math.max(a.total, b.total),
      sealToExit: Math.max(a.sealToExit, b.sealToExit),
      eventsBytes: Math.max(a.eventsBytes, b.eventsBytes),
    });
    const min = longer(await calibrate(url, tmp.path, minSteps), await calibrate(url, tmp.path, minSteps));
    const max = longer(await calibrate(url, tmp.path, maxSteps), await calibrate(url, tmp.path, maxSteps));
    const timing = { min, max };
    const sealToExit = [min.sealToExit, max.sealToExit];
    const s: Setup = { url, dir: tmp.path, rand: seeded(seed), timing, sealToExit, minSteps, maxSteps };
    const done: Trial[] = [];
    for (let i = 0; i < trials; i++) {
      const t = await trial(s, i);
      done.push(t);
      process.stderr.write(`store_faults: ${whatHappened(t)}, ${fixed(t.seconds, 1)} s: ${t.failure ?? "ok"}\n`);
    }
    const table = report(done, seed, s);
    return { name: "store_faults", tables: [table], ok: done.every((t) => t.failure === null) };
  } finally {
    pg.stop();
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
