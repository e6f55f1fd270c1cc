/**
 * Fault injection shared by `tests/crash.test.ts` and `bench/crash.ts`: run
 * real `noema run` processes, SIGKILL them at random moments, then check that
 * every episode left behind validates and every killed one resumes into a
 * valid episode.
 *
 * @module
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { resume, validate } from "../../mod.ts";
import { cliCommand } from "./cli.ts";

function runAndKill(
  cli: string[],
  args: string[],
  afterMs: number,
  watch?: { path: string; seenAtMs?: number },
): Promise<number | null> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const child = spawn(cli[0], [...cli.slice(1), ...args], { stdio: "ignore" });
    const timer = setTimeout(() => child.kill("SIGKILL"), afterMs);
    // When `watch.path` first exists, in ms after the start (polled every 5 ms).
    const poll = watch && setInterval(() => {
      if (watch.seenAtMs === undefined && existsSync(watch.path)) watch.seenAtMs = performance.now() - t0;
    }, 5);
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (poll) clearInterval(poll);
      resolve(code);
    });
  });
}

/** What a kill loop saw. */
export interface CrashReport {
  kills: number;
  /** Killed before the episode directory existed. */
  beforeCreation: number;
  /** Finished before the kill. */
  completed: number;
  /** Killed while running: each was resumed. */
  midRun: number;
  /** Of those, how many did not validate until resumed. */
  invalidUntilResumed: number;
  /** Episodes that did not end valid (must be empty). */
  failures: string[];
  /** Milliseconds of one whole run. */
  fullRunMs: number;
  /** Milliseconds from its start until its episode directory existed. */
  createdMs: number;
}

/**
 * Runs `kills` episodes of a 30-step scripted task under `dir`, each killed
 * at a random moment of a whole run's life. Most of a short run is the start
 * of its process, so the moments are drawn from just before its episode
 * directory appears to just after its end: few kills are spent before there
 * is anything to recover.
 */
export async function killLoop(dir: string, kills: number): Promise<CrashReport> {
  const cli = cliCommand();
  const root = join(dir, "root");
  writeFileSync(
    join(dir, "script.json"),
    JSON.stringify({ results: [], default: { status: "ok", outcome: "ok", delay_ms: 3 } }),
  );
  const steps = Array.from({ length: 30 }, (_, i) => ({ kind: "act", description: `step ${i}`, inputs: { n: i } }));
  writeFileSync(
    join(dir, "task.json"),
    JSON.stringify({ task: "crash me", using: "scripted", adapter: { script: "script.json" }, steps }),
  );
  const task = join(dir, "task.json");
  const t0 = performance.now();
  const watch: { path: string; seenAtMs?: number } = { path: join(root, "episodes", "full") };
  const fullCode = await runAndKill(
    cli,
    ["run", task, "--root", root, "--quiet", "--episode-id", "full"],
    120_000,
    watch,
  );
  const report: CrashReport = {
    kills,
    beforeCreation: 0,
    completed: 0,
    midRun: 0,
    invalidUntilResumed: 0,
    failures: [],
    fullRunMs: performance.now() - t0,
    createdMs: watch.seenAtMs ?? 0,
  };
  const from = report.createdMs * 0.8, to = report.fullRunMs * 1.1;
  if (fullCode !== 0 || !validate(join(root, "episodes", "full")).valid) report.failures.push("full (not killed)");
  for (let i = 0; i < kills; i++) {
    const id = `crash-${i}`;
    const code = await runAndKill(
      cli,
      ["run", task, "--root", root, "--quiet", "--episode-id", id],
      from + Math.random() * (to - from),
    );
    const episode = join(root, "episodes", id);
    if (!existsSync(episode)) {
      report.beforeCreation++;
      continue;
    }
    try {
      const first = validate(episode); // must not throw, whatever the kill left
      // Finished (exit 0), or killed after the manifest sealed it: complete, and it must be valid.
      if (code === 0 || existsSync(join(episode, "manifest.json"))) {
        report.completed++;
        if (!first.valid) report.failures.push(`${id}: completed but invalid`);
        continue;
      }
      report.midRun++;
      if (!first.valid) report.invalidUntilResumed++;
      const r = await resume(episode);
      const after = validate(episode);
      if (!["ok", "partial"].includes(r.status) || !after.valid) {
        report.failures.push(
          `${id}: resumed as ${r.status}; ${after.problems.map((p) => `${p.rule}: ${p.message}`).join("; ")}`,
        );
      }
    } catch (e) {
      report.failures.push(`${id}: ${(e as Error).message}`);
    }
  }
  return report;
}

/** What {@link orphanTrial} saw. */
export interface OrphanTrial {
  /** The process group the `action.process` event recorded (null: none recorded). */
  pgid: number | null;
  /** Processes of that group alive 4 s after noema was killed (they outlived it). */
  orphansAfterKill: number;
  /** Processes of that group alive after `resume` ended. */
  orphansAfterResume: number;
  /** The pids in the program's output file, in order. */
  pids: number[];
  /** Whether two copies of the program wrote at once (a pid reappears after another pid's lines). */
  interleaved: boolean;
  /** How `resume` ended. */
  status: string;
  /** The episode directory. */
  episode: string;
}

/** Pids of the live (not zombie) processes in process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[2]) === pgid && f[0] !== "Z") out.push(Number(name));
    } catch {
      // gone
    }
  }
  return out;
}

async function until(check: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/**
 * A `command` run whose program appends its pid to a file every 250 ms
 * (for 10 s) is SIGKILLed (noema's pid alone) once the program has
 * written twice; then `noema resume` runs it (2 s). With `escape`, the program first
 * kills its own supervisor's watcher (as a program that escaped it would),
 * so it outlives noema and `resume` must stop it.
 */
export async function orphanTrial(
  dir: string,
  id: string,
  options: { escape?: boolean; retry?: boolean } = {},
): Promise<OrphanTrial> {
  const root = join(dir, "root"), out = join(dir, `${id}.pids`);
  const program = join(dir, "append-pid.sh");
  writeFileSync(
    program,
    `#!/bin/sh
if [ "$ESCAPE" = 1 ]; then ps -eo pid=,pgid=,args= | awk -v g=$$ '$2 == g && /[n]oema-supervisor/ {print $1}' | xargs -r kill -9; fi
i=0
while [ $i -lt "$LOOPS" ]; do echo $$ >> "$OUT"; sleep 0.25; i=$((i + 1)); done
`,
    { mode: 0o755 },
  );
  const cli = cliCommand();
  // The killed copy would run 10 s; the resumed one runs 2 s.
  const env = { ...process.env, OUT: out, LOOPS: "40", ESCAPE: options.escape ? "1" : "0" };
  const child = spawn(
    cli[0],
    [
      ...cli.slice(1),
      "run",
      "orphans",
      "--using",
      "command",
      "--root",
      root,
      "--quiet",
      "--episode-id",
      id,
      "--",
      program,
    ],
    { stdio: "ignore", env },
  );
  const exited = new Promise((r) => child.on("exit", r));
  const lines = () => existsSync(out) ? readFileSync(out, "utf8").split("\n").filter(Boolean) : [];
  await until(() => lines().length >= 2, 60_000);
  child.kill("SIGKILL"); // noema alone: its process group (and the program's own) is left as a crash leaves it
  await exited;
  const episode = join(root, "episodes", id);
  const pgid = recordedGroup(episode);
  await until(() => pgid !== null && groupMembers(pgid).length === 0, 4_000);
  const orphansAfterKill = pgid === null ? 0 : groupMembers(pgid).length;
  const resumed = spawnSync(
    cli[0],
    [...cli.slice(1), "resume", episode, "--json", ...(options.retry === false ? ["--no-retry"] : [])],
    { env: { ...env, LOOPS: "8" }, encoding: "utf8", timeout: 60_000 },
  );
  const r = JSON.parse(resumed.stdout || '{"status":"no output"}') as { status: string };
  const orphansAfterResume = pgid === null ? 0 : groupMembers(pgid).length;
  if (pgid !== null) { for (const p of groupMembers(pgid)) process.kill(p, "SIGKILL"); // leave nothing behind
   }
  const pids = lines().map(Number);
  const seen = new Set<number>();
  let interleaved = false;
  pids.forEach((p, i) => {
    if (i > 0 && pids[i - 1] !== p && seen.has(p)) interleaved = true;
    seen.add(p);
  });
  return { pgid, orphansAfterKill, orphansAfterResume, pids, interleaved, status: r.status, episode };
}

/** The process group of the last `action.process` event of an episode, or null. */
function recordedGroup(episode: string): number | null {
  let pgid: number | null = null;
  for (const line of readFileSync(join(episode, "events.jsonl"), "utf8").split("\n")) {
    if (!line.includes('"action.process"')) continue;
    try {
      const e = JSON.parse(line);
      if (e.event_type === "action.process") pgid = e.payload.pgid;
    } catch {
      // a torn last line
    }
  }
  return pgid;
}
