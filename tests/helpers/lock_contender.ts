/**
 * One contender for stale episode locks, run as a child process by
 * `tests/lock.test.ts`: from the start time `t0`, every `slotMs` it tries
 * the next directory's lock (all contenders try the same one at the same
 * moment), keeps the locks it wins (so this process stays their live owner),
 * prints the indexes it won as JSON, and stays alive (the owner of what it
 * won) until the file `<base>/release` exists.
 *
 *     <runtime> tests/helpers/lock_contender.ts <base> <count> <t0> <slotMs>
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { acquireLock } from "../../src/store/lock.ts";

const [base, count, t0, slotMs] = process.argv.slice(2).filter((a) => !a.startsWith("-"));
const won: number[] = [];
for (let i = 0; i < Number(count); i++) {
  const at = Number(t0) + i * Number(slotMs);
  while (Date.now() < at) { /* spin: start together */ }
  try {
    acquireLock(join(base, `d${i}`), "contender");
    won.push(i);
  } catch {
    // refused: someone else won this one
  }
}
process.stdout.write(JSON.stringify(won) + "\n");
// Wait for the test to release us; never outlive it (an orphan would hold the runner's output pipe open).
const parent = process.ppid;
const deadline = Date.now() + 120_000;
while (!existsSync(join(base, "release")) && existsSync(base) && process.ppid === parent && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, 20));
}
