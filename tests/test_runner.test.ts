/**
 * scripts/run_half.mjs, which `npm test` (scripts/test.mjs) runs each half of the suite with: a half ends
 * when its runner exits even if an orphan still holds the output pipe, and an overall timeout kills the
 * runner's process group and says which half it was.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import process from "node:process";
import { describe, test } from "node:test";
import { runHalf, timeoutFromEnv } from "../scripts/run_half.mjs";

/** True while `pid` is a live process (a zombie counts as gone). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Whether `pid` is gone within `ms` (a SIGKILLed process takes a moment to die on a busy machine). */
async function goneWithin(pid: number, ms = 3_000): Promise<boolean> {
  const t0 = Date.now();
  while (alive(pid)) {
    if (Date.now() - t0 > ms) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

/** Fails instead of hanging when `p` has not settled within `ms` (below the test's own timeout). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout>;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still waiting after ${ms} ms`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

function orphanPid(out: string): number {
  const m = /orphan (\d+)/.exec(out);
  assert.ok(m, `the fake runner printed its orphan's pid: ${out}`);
  return Number(m[1]);
}

const quiet = { write: () => {} };
/** Real processes on a machine that may be busy. */
const SLOW = { timeout: 30_000 };

describe("run_half: one half of npm test", () => {
  test(
    "ends when the runner exits though an orphan in its group holds stdout, and kills the orphan",
    SLOW,
    async () => {
      // The fake runner backgrounds a sleep that inherits stdout, prints a result and exits.
      const script = 'sleep 120 & echo "orphan $!"; echo " 3 pass"; exit 0';
      const r = await within(runHalf("fake", "sh", ["-c", script], { ...quiet, graceMs: 200 }), 10_000, "runHalf");
      assert.equal(r.code, 0);
      assert.equal(r.timedOut, false);
      assert.match(r.out, / 3 pass/);
      const orphan = orphanPid(r.out);
      assert.ok(await goneWithin(orphan), "the orphan left in the runner's process group is killed");
    },
  );

  test("ends when the runner exits though an orphan that left its group holds stdout", SLOW, async () => {
    const script = 'setsid sleep 120 & echo "orphan $!"; exit 3';
    const r = await within(runHalf("fake", "sh", ["-c", script], { ...quiet, graceMs: 200 }), 10_000, "runHalf");
    const orphan = orphanPid(r.out);
    try {
      assert.equal(r.code, 3, "the runner's own exit code is reported");
      assert.equal(r.timedOut, false);
      assert.equal(alive(orphan), true, "an orphan outside the group is out of reach, yet the half ended");
    } finally {
      try {
        process.kill(orphan, "SIGKILL");
      } catch { /* gone */ }
    }
  });

  test("a runner that never exits is killed with its group at the timeout, named in the output", SLOW, async () => {
    const seen: string[] = [];
    const script = 'sleep 120 & echo "orphan $!"; sleep 120';
    let leader = 0;
    const r = await within(
      runHalf("bun", "sh", ["-c", script], {
        write: (s: string) => seen.push(s),
        timeoutMs: 1500,
        graceMs: 200,
        onStart: (pid: number) => leader = pid,
      }),
      10_000,
      "runHalf",
    );
    assert.equal(r.timedOut, true);
    assert.notEqual(r.code, 0);
    assert.equal(r.signal, "SIGKILL");
    assert.match(seen.join(""), /bun: TIMED OUT after 2 s; killing its process group/);
    assert.ok(await goneWithin(leader), "the runner is killed");
    assert.ok(await goneWithin(orphanPid(r.out)), "its child is killed with it");
  });

  test("output streams live, in order, and a quick runner takes no grace", async () => {
    const seen: string[] = [];
    const start = Date.now();
    const r = await runHalf("fake", "sh", ["-c", "echo one; echo two >&2; echo three"], {
      write: (s: string) => seen.push(s),
      graceMs: 60_000,
    });
    assert.equal(r.code, 0);
    assert.ok(Date.now() - start < 30_000, "finished on 'close', not after the 60 s grace");
    for (const word of ["one", "two", "three"]) assert.match(seen.join(""), new RegExp(word));
    assert.equal(seen.join(""), r.out);
  });

  test("NOEMA_TEST_TIMEOUT_MIN sets the timeout; nonsense is refused", () => {
    assert.equal(timeoutFromEnv({}), 40 * 60_000);
    assert.equal(timeoutFromEnv({ NOEMA_TEST_TIMEOUT_MIN: "1.5" }), 90_000);
    assert.throws(() => timeoutFromEnv({ NOEMA_TEST_TIMEOUT_MIN: "soon" }), /NOEMA_TEST_TIMEOUT_MIN/);
    assert.throws(() => timeoutFromEnv({ NOEMA_TEST_TIMEOUT_MIN: "0" }), /positive/);
  });
});
