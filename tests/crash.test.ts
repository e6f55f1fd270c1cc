/**
 * Fault injection: real `noema run` processes are killed with SIGKILL at
 * random moments; every episode left behind must validate, and every killed
 * one must resume (crash recovery) into an episode that validates.
 * `bench/crash.ts` runs the same loop with more kills.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { killLoop } from "./helpers/crash.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-crash-");
after(() => tmp.cleanup());
const KILLS = Number(process.env.NOEMA_CRASH_KILLS ?? 25);

test(`SIGKILL at ${KILLS} random moments: every episode validates or resumes`, { timeout: 600_000 }, async () => {
  const report = await killLoop(tmp.path, KILLS);
  process.stderr.write(
    `crash test: ${report.kills} kills: ${report.beforeCreation} before the episode existed, ${report.completed} after it finished, ` +
      `${report.midRun} mid-run (${report.invalidUntilResumed} invalid until resumed), all resumed\n`,
  );
  assert.deepEqual(report.failures, []);
  assert.equal(report.beforeCreation + report.completed + report.midRun, KILLS);
});
