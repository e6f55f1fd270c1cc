/**
 * Crash recovery under fault injection: SIGKILL real `noema run` processes at
 * many random moments (default 200); every episode must validate, and every
 * killed run must resume into a valid episode. Goal: 100%. Then the
 * concurrency row: crash a run (SIGKILL of its process group mid-action) and
 * start five `noema resume` at once, `--races` times (default 50); goal: 0
 * double writers (exactly one resume runs, one `terminate`, the others exit 10).
 * Then the orphan row, `--orphans` times (default 10) in each of two ways: a
 * `command` run whose program appends its pid to a file every 250 ms is
 * SIGKILLed (noema's pid alone); goal: 0 processes of the action left 4 s
 * after the kill; and, with a program that escaped its supervisor, 0 left
 * after `noema resume`, and never two copies writing the file at once.
 *
 *     bun bench/crash.ts [--kills 200] [--races 50] [--orphans 10]
 *
 * @module
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { killLoop, orphanTrial } from "../tests/helpers/crash.ts";
import { raceResumes } from "../tests/helpers/race.ts";
import { type BenchReport, flag, runStandalone, tempDir } from "./lib.ts";

/** Runs the kill loop and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const kills = Number(flag(args, "kills") ?? 200);
  const tmp = tempDir("noema-bench-crash-");
  try {
    const r = await killLoop(tmp.path, kills);
    const races = Number(flag(args, "races") ?? 50);
    const raceRoot = join(tmp.path, "race-root");
    let doubles = 0, raceFailures = 0;
    const raceNotes: string[] = [];
    for (let i = 0; i < races; i++) {
      const dir = join(tmp.path, `race-${i}`);
      mkdirSync(dir, { recursive: true });
      const o = await raceResumes(raceRoot, dir, `ep_race_${i}`);
      const winners = o.codes.filter((c) => c === 0).length;
      if (winners > 1 || o.terminates > 1 || o.resumes > 1) doubles++;
      if (o.codes.join() !== "0,10,10,10,10" || o.terminates !== 1) {
        raceFailures++;
        raceNotes.push(`race ${i}: exits ${o.codes.join()}, ${o.terminates} terminate`);
      }
    }
    const orphans = await orphanRows(tmp.path, Number(flag(args, "orphans") ?? 10));
    const ok = r.failures.length === 0 && doubles === 0 && raceFailures === 0 && orphans.ok;
    return {
      name: "crash",
      ok,
      tables: [{
        title: `crash recovery: ${kills} SIGKILLs of real runs`,
        columns: ["measure", "value", "goal", "met"],
        rows: [
          ["killed before the episode existed", String(r.beforeCreation), "", ""],
          ["finished before the kill (valid)", String(r.completed), "", ""],
          ["killed mid-run, resumed", String(r.midRun), "", ""],
          ["  of which invalid until resumed", String(r.invalidUntilResumed), "", ""],
          ["episodes not valid at the end", String(r.failures.length), "0", r.failures.length === 0 ? "yes" : "NO"],
        ],
        notes: [
          `one whole run: ${r.fullRunMs.toFixed(0)} ms, its episode directory there after ${r.createdMs.toFixed(0)} ms`,
          ...r.failures.slice(0, 5),
        ],
      }, {
        title: `concurrency: ${races} crashed runs, 5 \`noema resume\` started at once on each`,
        columns: ["measure", "value", "goal", "met"],
        rows: [
          ["trials", String(races), ">= 50", races >= 50 ? "yes" : "NO"],
          ["double writers (>1 resume ran, or >1 terminate)", String(doubles), "0", doubles === 0 ? "yes" : "NO"],
          ["trials not exactly 1 run + 4 exit 10", String(raceFailures), "0", raceFailures === 0 ? "yes" : "NO"],
        ],
        notes: raceNotes.slice(0, 5),
      }, orphans.table],
    };
  } finally {
    tmp.cleanup();
  }
}

/** The orphan check: processes of a killed run's action left behind, in `trials` kills of each kind. */
async function orphanRows(dir: string, trials: number): Promise<{ ok: boolean; table: BenchReport["tables"][number] }> {
  let afterKill = 0, escapedLeft = 0, escapedSurvived = 0, interleaved = 0, notRecorded = 0;
  const notes: string[] = [];
  for (let i = 0; i < trials; i++) {
    for (const escape of [false, true]) {
      const t = await orphanTrial(dir, `orphan-${i}-${escape ? "escaped" : "plain"}`, { escape });
      if (t.pgid === null) notRecorded++;
      if (escape) {
        if (t.orphansAfterKill > 0) escapedSurvived++;
        escapedLeft += t.orphansAfterResume;
      } else afterKill += t.orphansAfterKill;
      if (t.interleaved) interleaved++;
      if (t.status !== "ok") notes.push(`${t.episode}: resumed as ${t.status}`);
    }
  }
  const row = (name: string, n: number) => [name, String(n), "0", n === 0 ? "yes" : "NO"];
  return {
    ok: afterKill + escapedLeft + interleaved + notRecorded === 0 && notes.length === 0,
    table: {
      title: `orphans: ${trials} SIGKILLs of noema mid-action, each kind (command adapter, program appends its pid)`,
      columns: ["measure", "value", "goal", "met"],
      rows: [
        row("process groups not recorded before the program ran", notRecorded),
        row("processes left 4 s after noema was killed (supervised)", afterKill),
        ["escaped programs alive after the kill (the case under test)", String(escapedSurvived), String(trials), ""],
        row("processes left after noema resume (escaped)", escapedLeft),
        row("outputs with lines of two copies interleaved", interleaved),
      ],
      notes: notes.slice(0, 5),
    },
  };
}

if (import.meta.main) await runStandalone(main);
