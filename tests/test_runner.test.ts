/**
 * scripts/run_half.mjs, which `npm test` (scripts/test.mjs) runs each test file's runner with: a runner ends
 * when it exits even if an orphan still holds the output pipe, and an overall timeout kills the
 * runner's process group and says which runner it was. And scripts/test.mjs itself, on a directory of small test
 * files (NOEMA_TEST_DIR): a run cut short still counts the tests that finished and names what did not finish.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statfsSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import process from "node:process";
import { after, describe, test } from "node:test";
import { runHalf, timeoutFromEnv } from "../scripts/run_half.mjs";
import { MIN_FREE_BYTES, scratchBase } from "../scripts/scratch_dir.mjs";
import { REPO } from "./helpers/cli.ts";
import { specifiers } from "./helpers/import_graph.ts";
import { tempDir } from "./helpers/tmp.ts";

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

  test("output streams live, in order, and a quick runner takes no grace", SLOW, async () => {
    const seen: string[] = [];
    // A grace of 10 minutes, which a runner that ended on 'close' does not wait for (the bound only catches that).
    const r = await within(
      runHalf("fake", "sh", ["-c", "echo one; echo two >&2; echo three"], {
        write: (s: string) => seen.push(s),
        graceMs: 600_000,
      }),
      20_000,
      "runHalf (it waited for the grace?)",
    );
    assert.equal(r.code, 0);
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

/** Small test files for `npm test` to run, in a directory of their own; `marks` is where a hanging test says so. */
function fixtureSuite(files: Record<string, string>): { dir: string; marks: string } {
  const tmp = tempDir("noema-runner-");
  after(() => tmp.cleanup());
  for (const [name, text] of Object.entries(files)) tmp.file(name, text);
  return { dir: tmp.path, marks: tmp.path };
}

/** A test that says it hangs (a file in NOEMA_FIXTURE_MARKS named for its runtime), then waits 10 minutes. */
const HANGS = `test("hangs", async () => {
    writeFileSync(join(process.env.NOEMA_FIXTURE_MARKS!, "hanging-" + ("Deno" in globalThis ? "deno" : "bun")), "");
    await new Promise((r) => setTimeout(r, 600_000));
  });`;
const HEAD = `import { describe, test } from "node:test";\nimport assert from "node:assert/strict";\n` +
  `import { writeFileSync } from "node:fs";\nimport { join } from "node:path";\nimport process from "node:process";\n`;

/** Runs scripts/test.mjs on `dir`; `onStart` gets its pid. Resolves with its exit code and output. */
function runSuite(
  dir: string,
  env: Record<string, string>,
  onStart: (pid: number) => void = () => {},
): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("node", [join(REPO, "scripts", "test.mjs")], {
      cwd: REPO,
      env: { ...process.env, NOEMA_TEST_DIR: dir, NOEMA_FIXTURE_MARKS: dir, NOEMA_TEST_JOBS: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (c) => out += c);
    child.stderr.on("data", (c) => out += c);
    child.on("error", reject);
    if (child.pid !== undefined) onStart(child.pid);
    child.on("close", (code) => resolve({ code, out }));
  });
}

/** Waits until `path` exists (a generous bound that only catches a hang). */
async function appears(path: string, ms = 120_000): Promise<void> {
  const t0 = Date.now();
  while (!existsSync(path)) {
    if (Date.now() - t0 > ms) throw new Error(`${path} did not appear`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("npm test (scripts/test.mjs): a run cut short still counts tests", () => {
  test(
    "the tests that finished are counted, the file killed and the files never started are named",
    { timeout: 300_000 },
    async () => {
      // One file at a time, in name order, each under Deno then Bun: Deno's run of b_hangs.test.ts hangs in its
      // second test, and the run is ended there (SIGUSR1 ends it as its timeout does).
      const { dir, marks } = fixtureSuite({
        "a_done.test.ts": HEAD + `describe("done", () => {
  test("one", () => {});
  test("two", () => {});
  test("fails", () => assert.equal(1, 2));
});\n`,
        "b_hangs.test.ts": HEAD + `describe("hanger", () => {
  test("quick", () => {});
  ${HANGS}
  test("after", () => {});
});\n`,
        "c_later.test.ts": HEAD + `test("later", () => {});\n`,
      });
      let pid = 0;
      const run = runSuite(dir, {}, (p) => pid = p);
      await within(appears(join(marks, "hanging-deno")), 150_000, "Deno's run of b_hangs.test.ts");
      process.kill(pid, "SIGUSR1");
      const r = await within(run, 60_000, "npm test after SIGUSR1");
      const b = join(dir, "b_hangs.test.ts"), c = join(dir, "c_later.test.ts");
      assert.equal(r.code, 1, r.out);
      // a_done: 2 passed and 1 failed under each runtime; b_hangs under Deno: "quick" passed before the hang.
      assert.match(r.out, /^deno: 3 passed, 1 failed, in 2 files \(1 did not finish, 1 did not start\)$/m, r.out);
      assert.match(r.out, /^bun: 2 passed, 1 failed, in 1 files \(0 did not finish, 2 did not start\)$/m, r.out);
      assert.match(r.out, /^total: 5 passed, 2 failed \(not ok\), in /m);
      const killed = `DID NOT FINISH under deno: ${b} (killed: SIGUSR1; the last test that finished: hanger ... quick)`;
      assert.ok(r.out.includes(killed), r.out);
      for (const [rt, file] of [["bun", b], ["deno", c], ["bun", c]]) {
        assert.ok(r.out.includes(`NOT STARTED under ${rt}: ${file} (SIGUSR1)`), `${rt} ${file}: ${r.out}`);
      }
      assert.match(r.out, /^FAILED under deno: .*a_done\.test\.ts => done \.\.\. fails$/m);
      assert.match(r.out, /^FAILED under bun: .*a_done\.test\.ts: done > fails$/m);
      assert.equal(existsSync(join(marks, "hanging-bun")), false, "Bun's run of b_hangs.test.ts never started");
    },
  );

  test("at NOEMA_TEST_TIMEOUT_MIN the running file is killed and named, and the run fails", SLOW, async () => {
    const { dir } = fixtureSuite({ "hangs.test.ts": HEAD + HANGS + "\n" });
    const r = await within(runSuite(dir, { NOEMA_TEST_TIMEOUT_MIN: "0.02" }), 25_000, "npm test");
    const file = join(dir, "hangs.test.ts");
    assert.equal(r.code, 1, r.out);
    assert.ok(r.out.includes(`DID NOT FINISH under deno: ${file} (killed: timed out after 0.02 min; no test`), r.out);
    assert.ok(r.out.includes(`NOT STARTED under bun: ${file} (timed out after 0.02 min)`), r.out);
    assert.match(r.out, /^deno: 0 passed, 0 failed, in 1 files \(1 did not finish, 0 did not start\)$/m);
    assert.match(r.out, /^total: 0 passed, 0 failed \(not ok\), in /m);
  });
});

describe("npm test (scripts/test.mjs): the test files' TMPDIR", () => {
  test(
    "is a directory of the run's own, mode 1777, in NOEMA_TEST_TMPDIR, removed with what the tests left",
    SLOW,
    async () => {
      // Each runtime's run of the file writes its os.tmpdir() into marks, and leaves a file there.
      const { dir, marks } = fixtureSuite({
        "tmp.test.ts": HEAD + `import { tmpdir } from "node:os";
import { statSync } from "node:fs";
test("tmpdir", () => {
  const rt = "Deno" in globalThis ? "deno" : "bun";
  writeFileSync(join(process.env.NOEMA_FIXTURE_MARKS!, "tmpdir-" + rt), tmpdir());
  writeFileSync(join(tmpdir(), "left-by-" + rt), "x");
  const mode = (statSync(tmpdir()).mode & 0o7777).toString(8);
  writeFileSync(join(process.env.NOEMA_FIXTURE_MARKS!, "mode-" + rt), mode);
});\n`,
      });
      const base = tempDir("noema-scratch-base-");
      after(() => base.cleanup());
      const r = await within(runSuite(dir, { NOEMA_TEST_TMPDIR: base.path }), 120_000, "npm test");
      assert.equal(r.code, 0, r.out);
      for (const rt of ["deno", "bun"]) {
        const seen = readFileSync(join(marks, `tmpdir-${rt}`), "utf8");
        assert.match(seen, new RegExp(`^${base.path}/noema-test-[^/]+$`), `${rt}'s TMPDIR`);
        assert.ok(r.out.includes(`TMPDIR ${seen}`), `the run says where: ${r.out}`);
        assert.equal(readFileSync(join(marks, `mode-${rt}`), "utf8"), "1777");
      }
      assert.deepEqual(readdirSync(base.path), [], "the scratch directory is gone, with the files left in it");
    },
  );

  test("is made in /dev/shm when it is a writable directory with room, else in the fallback", () => {
    const shm = tempDir("noema-shm-");
    after(() => shm.cleanup());
    const free = statfsFree(shm.path);
    assert.equal(scratchBase({}, "/fallback", shm.path), free >= MIN_FREE_BYTES ? shm.path : "/fallback");
    assert.equal(scratchBase({}, "/fallback", join(shm.path, "missing")), "/fallback");
    shm.file("plain", "x");
    assert.equal(scratchBase({}, "/fallback", join(shm.path, "plain")), "/fallback", "a file is not a directory");
    assert.equal(scratchBase({ NOEMA_TEST_TMPDIR: "/chosen" }, "/fallback", shm.path), "/chosen");
    assert.ok(statSync(shm.path).isDirectory());
  });
});

/** The bytes free on the file system of `path`. */
function statfsFree(path: string): number {
  const fs = statfsSync(path);
  return fs.bavail * fs.bsize;
}

/** Whether `file` (relative to the repository) loads any of noema's code: `noema`, mod.ts or src/, at any depth. */
function loadsNoemaCode(file: string): boolean {
  const seen = new Set<string>();
  const todo = [file];
  while (todo.length > 0) {
    const f = todo.pop()!;
    if (seen.has(f)) continue;
    seen.add(f);
    if (f === "mod.ts" || f.startsWith("src/")) return true;
    for (const { spec, typeOnly } of specifiers(readFileSync(join(REPO, f), "utf8"))) {
      if (spec === "noema") return true;
      if (!typeOnly && spec.startsWith(".")) todo.push(relative(REPO, resolve(REPO, f, "..", spec)));
    }
  }
  return false;
}

test("the files npm test runs under Bun only for loading none of noema's code under Deno still load none", () => {
  const list = /const NO_NOEMA_CODE = new Set\(\[([^\]]*)\]\);/.exec(
    readFileSync(join(REPO, "scripts", "test.mjs"), "utf8"),
  )?.[1];
  assert.ok(list !== undefined, "scripts/test.mjs defines NO_NOEMA_CODE");
  const files = [...list.matchAll(/"([^"]+\.test\.ts)"/g)].map((m) => join("tests", m[1]));
  assert.ok(files.length > 0);
  // One that loads noema's code would lose its Deno run: take it off the list.
  assert.deepEqual(files.filter(loadsNoemaCode), []);
  // The walk finds noema's code where there is some.
  assert.equal(loadsNoemaCode(join("tests", "validate.test.ts")), true);
});
