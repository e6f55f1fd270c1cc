/**
 * The episode lock (issue 12 §1): zombie owners and reused pids count as dead,
 * a stale lock is taken over by exactly one of many contenders, and waiting
 * callers wait a bounded time.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import { EXIT } from "../src/errors.ts";
import {
  acquireLock,
  LOCK_FILE,
  type LockInfo,
  lockStatus,
  onlyALock,
  procStat,
  takeoverInfo,
} from "../src/store/lock.ts";
import { cli, cliCommand, runtimeCommand } from "./helpers/cli.ts";
import { raceCommand, raceResumes, stopCrashedAction } from "./helpers/race.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-lock-");
after(() => tmp.cleanup());

function plant(dir: string, info: Partial<LockInfo>): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, LOCK_FILE),
    JSON.stringify({ host: hostname(), started_at: new Date().toISOString(), purpose: "run", ...info }),
  );
}

function sleeper(seconds: number): { pid: number; exited: Promise<void> } {
  const child = spawn("sleep", [String(seconds)], { stdio: "ignore" });
  const exited = new Promise<void>((r) => child.on("exit", () => r()));
  return { pid: child.pid!, exited };
}

describe("lock status and liveness", () => {
  test("none, held by a live process, stale once it is dead", async () => {
    const dir = join(tmp.path, "status");
    mkdirSync(dir);
    assert.deepEqual(lockStatus(dir), { state: "none", info: null });
    const s = sleeper(30);
    plant(dir, { pid: s.pid, start_ticks: procStat(s.pid)!.startTicks });
    assert.equal(lockStatus(dir).state, "held");
    assert.equal(lockStatus(dir).info?.pid, s.pid);
    process.kill(s.pid, "SIGKILL");
    await s.exited;
    assert.equal(lockStatus(dir).state, "stale");
  });

  test("a zombie owner (killed, not reaped) is dead", () => {
    const dir = join(tmp.path, "zombie");
    // The child's parent is this process, blocked in a synchronous sleep: it stays a zombie meanwhile.
    const child = spawn("sh", ["-c", "exit 0"], { stdio: "ignore" });
    const pid = child.pid!;
    const t0 = Date.now();
    while (procStat(pid)?.state !== "Z" && Date.now() - t0 < 5000) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    }
    assert.equal(procStat(pid)?.state, "Z", "the child is a zombie");
    plant(dir, { pid });
    assert.equal(lockStatus(dir).state, "stale");
    const lock = acquireLock(dir, "resume");
    assert.equal(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")).pid, process.pid);
    lock.release();
    assert.ok(!existsSync(join(dir, LOCK_FILE)));
  });

  test("a reused pid (other start time) is dead; the lock records this process's start time", () => {
    const dir = join(tmp.path, "reuse");
    const mine = procStat(process.pid)!.startTicks;
    plant(dir, { pid: process.pid, start_ticks: mine - 1 });
    assert.equal(lockStatus(dir).state, "stale");
    const lock = acquireLock(dir, "resume");
    const info = JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")) as LockInfo;
    assert.equal(info.start_ticks, mine);
    assert.equal(typeof info.nonce, "string");
    assert.equal(lockStatus(dir).state, "held");
    // A second taker in this (live) process is refused.
    assert.throws(() => acquireLock(dir, "again"), (e: { exitCode?: number }) => e.exitCode === EXIT.LOCKED);
    lock.release();
  });

  test("another host's lock is never taken over", () => {
    const dir = join(tmp.path, "remote");
    plant(dir, { pid: 1, host: "some-other-host" });
    assert.equal(lockStatus(dir).state, "held");
    assert.throws(() => acquireLock(dir, "resume"), /locked by run \(pid 1 on some-other-host/);
  });
});

describe("waiting for the lock", () => {
  test("waitMs: waits while a live holder has it, then takes it when the holder dies", () => {
    const dir = join(tmp.path, "wait-ok");
    const s = sleeper(1);
    plant(dir, { pid: s.pid, start_ticks: procStat(s.pid)!.startTicks });
    const lock = acquireLock(dir, "hook", { waitMs: 60_000 });
    // Taken once the holder died (a zombie: this thread, blocked in the wait, has not reaped it), not while it lived.
    const state = procStat(s.pid)?.state;
    assert.ok(state === undefined || state === "Z", `the holder still ran (${state}) when the lock was taken`);
    lock.release();
  });

  test("waitMs: a holder that stays gives exit 10 naming it and how long we waited", async () => {
    const dir = join(tmp.path, "wait-fail");
    const s = sleeper(30);
    plant(dir, { pid: s.pid, start_ticks: procStat(s.pid)!.startTicks, purpose: "run" });
    const t0 = Date.now();
    try {
      assert.throws(
        () => acquireLock(dir, "hook", { waitMs: 300 }),
        (e: { exitCode?: number; message: string }) =>
          e.exitCode === EXIT.LOCKED && e.message.includes(`pid ${s.pid}`) && e.message.includes("run") &&
          /after waiting \d+ ms/.test(e.message),
      );
      const took = Date.now() - t0;
      assert.ok(took >= 300, `gave up after ${took} ms, not before the 300 ms asked`);
      // Without waitMs, the refusal is immediate.
      assert.throws(() => acquireLock(dir, "hook"), (e: { message: string }) => !e.message.includes("waiting"));
    } finally {
      process.kill(s.pid, "SIGKILL");
      await s.exited;
    }
  });
});

describe("crashed runs", () => {
  const root = join(tmp.path, "root");
  before(() => mkdirSync(root, { recursive: true }));

  test("resume --abort works while the killed owner is a zombie", { timeout: 120_000 }, async () => {
    const dir = join(tmp.path, "zombie-run");
    mkdirSync(dir);
    const id = "ep_zombie";
    const [cmd, ...args] = cliCommand();
    const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
    const inner = [cmd, ...args, "run", "z", "--root", root, "--quiet", "--episode-id", id, "--using", "command", "--"]
      .map(q).join(" ") + ` sh -c ${q(raceCommand(dir))}`;
    // The parent of the run execs into `sleep`, which never reaps it: the killed run stays a zombie.
    const parent = spawn("sh", ["-c", `setsid ${inner} & exec sleep 60`], { stdio: "ignore" });
    try {
      const lockPath = join(root, "episodes", id, LOCK_FILE);
      const t0 = Date.now();
      while (!(existsSync(join(dir, "mark")) && existsSync(lockPath)) && Date.now() - t0 < 60_000) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const owner = (JSON.parse(readFileSync(lockPath, "utf8")) as LockInfo).pid;
      process.kill(-owner, "SIGKILL");
      const t1 = Date.now();
      while (procStat(owner)?.state !== "Z" && Date.now() - t1 < 5000) await new Promise((r) => setTimeout(r, 10));
      assert.equal(procStat(owner)?.state, "Z", "the killed run is a zombie");
      assert.equal(lockStatus(join(root, "episodes", id)).state, "stale");
      const r = cli(["resume", id, "--abort", "--root", root]);
      assert.notEqual(r.code, EXIT.LOCKED, r.stderr);
      assert.ok(existsSync(join(root, "episodes", id, "manifest.json")), r.stderr);
      assert.equal(cli(["validate", id, "--root", root]).code, 0);
    } finally {
      parent.kill("SIGKILL");
      stopCrashedAction(dir);
    }
  });

  // Each trial spawns six real CLI processes (about 2.5 s of a core): the suite runs 10 under each runtime, and
  // `bench/crash.ts` races 50 (`--races N`) and records the outcome in bench/RESULTS.md.
  const trials = 10;
  test(`5 resumes of a crashed run at once, ${trials} times: exactly one runs, one terminate, others exit 10`, {
    timeout: 600_000,
  }, async () => {
    const bad: string[] = [];
    for (let i = 0; i < trials; i++) {
      const dir = join(tmp.path, `race-${i}`);
      mkdirSync(dir);
      const r = await raceResumes(root, dir, `ep_race_${i}`);
      if (r.codes.join() !== "0,10,10,10,10" || r.terminates !== 1 || r.resumes !== 1) {
        bad.push(`trial ${i}: exits ${r.codes.join()}, ${r.terminates} terminate, ${r.resumes} run.resume`);
      }
      // Every loser names the live winner, never the crashed run whose stale lock it found.
      for (const m of r.loserMessages.filter((m) => !/^noema: episode is locked by resume \(pid \d+/.test(m))) {
        bad.push(`trial ${i}: a loser said ${JSON.stringify(m)}`);
      }
    }
    assert.deepEqual(bad, []);
  });
});

describe("takeover of a stale lock", () => {
  test("the token of a takeover in a deep directory is a lock's record (a taker killed meanwhile leaves it)", () => {
    // A path longer than a lock's purpose may be: the token named it whole, and a sealed episode's checks then
    // listed the token left behind as a file the manifest does not list.
    const dir = join(tmp.path, "deep", "d".repeat(100), "e".repeat(100), "ep_01");
    mkdirSync(dir, { recursive: true });
    const info: LockInfo = {
      pid: process.pid,
      host: hostname(),
      started_at: new Date().toISOString(),
      purpose: "shared store write",
      start_ticks: null,
      nonce: `${process.pid.toString(36)}-abcdefghijkl`,
    };
    const token = takeoverInfo(join(dir, LOCK_FILE), info, 2);
    writeFileSync(join(dir, `${LOCK_FILE}.tmp-takeover-x`), JSON.stringify(token) + "\n");
    assert.ok(onlyALock(dir, `${LOCK_FILE}.tmp-takeover-x`), JSON.stringify(token));
    assert.equal(token.purpose, "takeover of lock for shared store write");
    assert.equal(token.nonce, `${info.nonce}t2`);
    assert.ok(takeoverInfo(join(dir, LOCK_FILE), { ...info, purpose: "p".repeat(128) }, 0).purpose.length <= 128);
  });

  test("4 processes taking over 150 stale locks at the same instant: exactly one winner each", async () => {
    const base = join(tmp.path, "contend");
    const count = 150;
    const dead = spawn("sh", ["-c", "exit 0"], { stdio: "ignore" });
    await new Promise((r) => dead.on("close", r));
    for (let i = 0; i < count; i++) plant(join(base, `d${i}`), { pid: dead.pid!, start_ticks: 1 });
    const script = new URL("./helpers/lock_contender.ts", import.meta.url).pathname;
    const runtime = [...runtimeCommand(), script];
    const t0 = String(Date.now() + 1500);
    const outs = await Promise.all(Array.from({ length: 4 }, () =>
      new Promise<number[]>((resolve, reject) => {
        const c = spawn(runtime[0], [...runtime.slice(1), base, String(count), t0, "4"], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        let out = "";
        c.stdout!.on("data", (d) => {
          out += d;
          if (out.endsWith("\n")) resolve(JSON.parse(out));
        });
        c.on("close", (code) => reject(new Error(`contender exited ${code}: ${out}`)));
      })));
    // Every contender reported while all were alive (a dead winner's lock may rightly be taken over).
    writeFileSync(join(base, "release"), "");
    const wins = new Array<number>(count).fill(0);
    for (const list of outs) for (const i of list) wins[i]++;
    const shared = wins.flatMap((n, i) => (n > 1 ? [`d${i}: ${n} owners`] : []));
    const lost = wins.flatMap((n, i) => (n === 0 ? [`d${i}: no owner`] : []));
    assert.deepEqual(shared, [], "a stale lock taken over twice");
    assert.deepEqual(lost, []);
  });
});
