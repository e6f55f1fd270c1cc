/**
 * Racing recoveries, shared by `tests/lock.test.ts` and `bench/crash.ts`: a
 * real `noema run` is crashed (its process group SIGKILLed mid-action), then
 * five `noema resume` start at once. Exactly one may run: the log must end
 * with one `terminate`, the others must exit 10.
 *
 * The resumed action waits for a `go` file that is only created once the
 * other four resumes have exited, so a loser can never arrive after the
 * winner finished: the outcome does not depend on timing.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { cliCommand } from "./cli.ts";

/** One finished child process. */
interface Exit {
  code: number | null;
  stderr: string;
}

function start(args: string[], options: { setsid?: boolean } = {}): { pid: number; done: Promise<Exit> } {
  const cli = cliCommand();
  const argv = options.setsid ? ["setsid", ...cli, ...args] : [...cli, ...args];
  const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr!.on("data", (d) => (stderr += d));
  const done = new Promise<Exit>((resolve) => child.on("close", (code) => resolve({ code, stderr })));
  return { pid: child.pid!, done };
}

async function until(cond: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 15));
  }
}

/**
 * The shell command of the crashed run: first time it writes its pid, marks
 * and sleeps (as that pid); on resume it waits for `go`.
 */
export function raceCommand(dir: string): string {
  const mark = join(dir, "mark");
  const go = join(dir, "go");
  return `if [ -e '${mark}' ]; then while [ ! -e '${go}' ]; do sleep 0.02; done; exit 0; fi; ` +
    `echo $$ > '${join(dir, "action.pid")}'; touch '${mark}'; exec sleep 30`;
}

/**
 * Stops the action a killed run left behind ({@link raceCommand}'s sleep): it
 * runs in a process group of its own, which the SIGKILL of the run's group
 * does not reach, and would otherwise outlive the test by 30 s.
 */
export function stopCrashedAction(dir: string): void {
  try {
    process.kill(Number(readFileSync(join(dir, "action.pid"), "utf8").trim()), "SIGKILL");
  } catch {
    // already gone (or never started)
  }
}

/**
 * Starts `noema run` under `setsid` with {@link raceCommand}, waits until the
 * action runs, and SIGKILLs the whole process group. Returns the episode dir.
 */
export async function crashedRun(root: string, dir: string, id: string): Promise<string> {
  const run = start(
    [
      "run",
      "race",
      "--root",
      root,
      "--quiet",
      "--episode-id",
      id,
      "--using",
      "command",
      "--",
      "sh",
      "-c",
      raceCommand(dir),
    ],
    { setsid: true },
  );
  const episode = join(root, "episodes", id);
  await until(() => existsSync(join(dir, "mark")) && existsSync(join(episode, "lock")), `${id} to start its action`);
  process.kill(-run.pid, "SIGKILL");
  await run.done;
  stopCrashedAction(dir);
  return episode;
}

/** What one race gave. */
export interface RaceOutcome {
  /** Exit codes of the five resumes, sorted. */
  codes: (number | null)[];
  /** `terminate` events in the log afterwards. */
  terminates: number;
  /** `run.resume` events in the log afterwards. */
  resumes: number;
  /** stderr of each resume that did not exit 0, trimmed. */
  loserMessages: string[];
}

/** Crashes a run in `dir` and races `n` resumes of it. */
export async function raceResumes(root: string, dir: string, id: string, n = 5): Promise<RaceOutcome> {
  const episode = await crashedRun(root, dir, id);
  const procs = Array.from({ length: n }, () => start(["resume", id, "--root", root]));
  const exits: Exit[] = [];
  let settled = 0;
  const all = procs.map((p) => p.done.then((e) => (exits.push(e), settled++, e)));
  // Let the winner finish once every other contender has given up (or after a bound, if two won).
  await until(() => settled >= n - 1, "the losing resumes to exit", 60_000).catch(() => {});
  writeFileSync(join(dir, "go"), "");
  await Promise.all(all);
  let terminates = 0, resumes = 0;
  for (const line of readFileSync(join(episode, "events.jsonl"), "utf8").split("\n")) {
    if (line.includes('"phase":"terminate"')) terminates++;
    if (line.includes('"event_type":"run.resume"')) resumes++;
  }
  return {
    codes: exits.map((e) => e.code).sort((a, b) => (a ?? -1) - (b ?? -1)),
    terminates,
    resumes,
    loserMessages: exits.filter((e) => e.code !== 0).map((e) => e.stderr.trim()),
  };
}
