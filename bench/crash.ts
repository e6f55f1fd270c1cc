/**
 * Crash recovery under fault injection: SIGKILL real `noema run` processes at
 * many random moments (default 200); every episode must validate, and every
 * killed run must resume into a valid episode. Goal: 100%.
 *
 *     bun bench/crash.ts [--kills 200]
 *
 * @module
 */
import process from "node:process";
import { killLoop } from "../tests/helpers/crash.ts";
import { type BenchReport, flag, runStandalone, tempDir } from "./lib.ts";

/** Runs the kill loop and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const kills = Number(flag(args, "kills") ?? 200);
  const tmp = tempDir("noema-bench-crash-");
  try {
    const r = await killLoop(tmp.path, kills);
    const ok = r.failures.length === 0;
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
          ["episodes not valid at the end", String(r.failures.length), "0", ok ? "yes" : "NO"],
        ],
        notes: [`one whole run: ${r.fullRunMs.toFixed(0)} ms`, ...r.failures.slice(0, 5)],
      }],
    };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
