/**
 * Fault injection: real `noema run` processes are killed with SIGKILL at
 * random moments; every episode left behind must validate, or resume (crash
 * recovery) into an episode that validates.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { resume, validate } from "noema";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-crash-");
after(() => tmp.cleanup());
const repo = join(import.meta.dirname ?? ".", "..");
const isDeno = typeof (globalThis as { Deno?: unknown }).Deno !== "undefined";
const cli = isDeno
  ? [process.execPath, "run", "-A", "--config", join(repo, "deno.json"), join(repo, "src", "cli", "main.ts")]
  : [process.execPath, join(repo, "src", "cli", "main.ts")];
const KILLS = Number(process.env.NOEMA_CRASH_KILLS ?? 50);

function runAndKill(args: string[], afterMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(cli[0], [...cli.slice(1), ...args], { stdio: "ignore" });
    const timer = setTimeout(() => child.kill("SIGKILL"), afterMs);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

test(`SIGKILL at ${KILLS} random moments: every episode validates or resumes`, { timeout: 300_000 }, async () => {
  const root = join(tmp.path, "root");
  writeFileSync(join(tmp.path, "script.json"), JSON.stringify({ results: [], default: { status: "ok", outcome: "ok", delay_ms: 3 } }));
  const steps = Array.from({ length: 30 }, (_, i) => ({ kind: "act", description: `step ${i}`, inputs: { n: i } }));
  writeFileSync(
    join(tmp.path, "task.json"),
    JSON.stringify({ task: "crash me", using: "scripted", adapter: { script: "script.json" }, steps, policies: [] }),
  );
  // How long a whole run takes here, to spread the kills over it.
  const t0 = performance.now();
  assert.equal(await runAndKill(["run", join(tmp.path, "task.json"), "--root", root, "--quiet", "--episode-id", "full"], 60_000), 0);
  const full = performance.now() - t0;
  assert.deepEqual(validate(join(root, "episodes", "full")).problems, []);

  let killedMidRun = 0, resumed = 0, untouched = 0;
  for (let i = 0; i < KILLS; i++) {
    const id = `crash-${i}`;
    const at = Math.random() * full * 1.1;
    const code = await runAndKill(["run", join(tmp.path, "task.json"), "--root", root, "--quiet", "--episode-id", id], at);
    const dir = join(root, "episodes", id);
    if (!existsSync(dir)) {
      untouched++; // killed before the episode was created: nothing to validate
      continue;
    }
    const report = validate(dir); // must not throw, whatever the kill left
    if (code === 0) {
      assert.deepEqual(report.problems, [], `${id} completed and must validate`);
      continue;
    }
    killedMidRun++;
    if (!report.valid) resumed++;
    // Every killed run resumes (crash recovery) into a complete, valid episode.
    const r = await resume(dir);
    assert.ok(["ok", "partial"].includes(r.status), `${id}: resume ended ${r.status}`);
    assert.deepEqual(validate(dir).problems, [], `${id} must validate after resume`);
  }
  // Leftover staging directories of killed runs are hidden from list and validate.
  for (const name of readdirSync(join(root, "episodes"))) assert.ok(name.startsWith("crash-") || name === "full" || name.startsWith(".tmp-"));
  process.stderr.write(`crash test: ${KILLS} kills: ${untouched} before the episode existed, ${killedMidRun} mid-run (${resumed} of them invalid until resumed), all resumed and valid\n`);
  assert.ok(killedMidRun + untouched + resumed > 0);
});
