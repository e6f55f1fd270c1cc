/**
 * Fault injection shared by `tests/crash.test.ts` and `bench/crash.ts`: run
 * real `noema run` processes, SIGKILL them at random moments, then check that
 * every episode left behind validates and every killed one resumes into a
 * valid episode.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { resume, validate } from "../../mod.ts";
import { cliCommand } from "./cli.ts";

function runAndKill(cli: string[], args: string[], afterMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(cli[0], [...cli.slice(1), ...args], { stdio: "ignore" });
    const timer = setTimeout(() => child.kill("SIGKILL"), afterMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
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
}

/**
 * Runs `kills` episodes of a 30-step scripted task under `dir`, each killed
 * at a random moment within the length of a whole run.
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
  const fullCode = await runAndKill(cli, ["run", task, "--root", root, "--quiet", "--episode-id", "full"], 120_000);
  const report: CrashReport = {
    kills,
    beforeCreation: 0,
    completed: 0,
    midRun: 0,
    invalidUntilResumed: 0,
    failures: [],
    fullRunMs: performance.now() - t0,
  };
  if (fullCode !== 0 || !validate(join(root, "episodes", "full")).valid) report.failures.push("full (not killed)");
  for (let i = 0; i < kills; i++) {
    const id = `crash-${i}`;
    const code = await runAndKill(
      cli,
      ["run", task, "--root", root, "--quiet", "--episode-id", id],
      Math.random() * report.fullRunMs * 1.1,
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
