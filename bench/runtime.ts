/**
 * Runtime overhead: a scripted episode of N steps with one policy, against a
 * raw baseline that appends the same bytes (the episode's own events.jsonl,
 * one write per line, plus its JSON artifacts); and 1k vs 10k steps.
 *
 * Goals: the 10k-step run (the median of three) ≤ 3× serializing and
 * appending its bytes (a recorder with no logic; the best of three) and
 * ≤ 350 ms; time per step at 10k within 1.25× of time per step at 1k
 * (linear). The raw append is shown for comparison, and
 * so is the same run with no policy against its own bytes (what the policy
 * path adds: the snapshot, the call, a `direction` event per step), and the
 * contract's floor: what any implementation pays for the same events (ids,
 * timestamps, the secret pre-filter, a write before each act, the decision
 * hash, the durable end; see `contractFloor`).
 *
 *     bun bench/runtime.ts [--steps 10000]
 *
 * @module
 */
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Redactor, run, sha256 } from "../mod.ts";
import { monotonicUlid } from "../src/store/ulid.ts";
import { type BenchReport, fixed, flag, runStandalone, tempDir } from "./lib.ts";

/** The policy of the benchmark: a hint every 100th step. */
const BENCH_POLICY = {
  name: "Bench",
  version: "1.0",
  advise: (s: { step: { index: number } }) =>
    s.step.index % 100 === 0 ? { kind: "hint" as const, advice: "checkpoint" } : undefined,
};

async function episode(root: string, steps: number, script: string, policy = true) {
  const t = performance.now();
  const cpu = process.cpuUsage();
  const r = await run(`bench ${steps}`, {
    root,
    using: "scripted",
    adapter: { script },
    learn_mode: "off",
    policies: policy ? [BENCH_POLICY] : [],
    steps: Array.from(
      { length: steps },
      (_, i) => ({ kind: "act" as const, description: `step ${i}`, inputs: { n: i, sql: `SELECT ${i}` } }),
    ),
  });
  const ms = performance.now() - t;
  const used = process.cpuUsage(cpu);
  return { ms, cpu: (used.user + used.system) / 1000, dir: r.episode_dir, status: r.status };
}

/** The run of median time of three, each in a root of its own. */
async function medianEpisode(root: string, steps: number, script: string, policy: boolean) {
  const runs = [];
  for (const i of [1, 2, 3]) runs.push(await episode(`${root}-${i}`, steps, script, policy));
  return runs.sort((x, y) => x.ms - y.ms)[1];
}

/**
 * Baselines over the same bytes the episode wrote: `raw` appends its
 * events.jsonl lines as pre-serialized strings (pure I/O), `serialize`
 * JSON-encodes the parsed events first (a recorder with no logic). Both also
 * write the JSON artifacts once.
 */
function baseline(dir: string, into: string, serialize: boolean): number {
  const lines = readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter((l) => l !== "");
  const values = serialize ? lines.map((l) => JSON.parse(l)) : [];
  const others = ["state.json", "summary.json", "manifest.json"].map((n) => readFileSync(join(dir, n)));
  mkdirSync(into);
  const t = performance.now();
  const fd = openSync(join(into, "events.jsonl"), "a");
  if (serialize) { for (const v of values) writeSync(fd, JSON.stringify(v) + "\n"); }
  else for (const l of lines) writeSync(fd, l + "\n");
  closeSync(fd);
  others.forEach((bytes, i) => writeFileSync(join(into, `artifact-${i}.json`), bytes));
  return performance.now() - t;
}

/**
 * The floor of what the contract asks of every step, over the events the run wrote: each event gets a fresh id and
 * timestamp, is serialised and scanned by noema's secret pre-filter, and the events before each `act` are written in
 * one call (the decision is on disk before the action runs); one SHA-256 of ~700 bytes per action candidate (the
 * decision state's hash); then `state.json` is serialised, scanned, written and fsynced, and the log fsynced. No
 * policy, snapshot, adapter, redaction walk, check or copy: what any implementation of the contract pays here.
 */
function contractFloor(dir: string, into: string): number {
  const events = readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter((l) => l !== "").map((l) =>
    JSON.parse(l)
  );
  const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
  const redactor = new Redactor();
  const ulid = monotonicUlid();
  mkdirSync(into);
  const t = performance.now();
  const fd = openSync(join(into, "events.jsonl"), "a");
  let batch = "";
  for (const e of events) {
    const ms = Date.now();
    e.id = `ev_${ulid(ms)}`;
    e.timestamp = new Date(ms).toISOString();
    const text = JSON.stringify(e);
    if (redactor.mightContain(text)) throw new Error("the benchmark's events hold no secret");
    if (e.phase === "action_candidate") sha256(text.slice(0, 700));
    if (e.phase === "act" && batch !== "") {
      writeSync(fd, batch);
      batch = "";
    }
    batch += text + "\n";
  }
  writeSync(fd, batch);
  const text = JSON.stringify(state);
  if (redactor.mightContain(text)) throw new Error("the benchmark's state holds no secret");
  const sfd = openSync(join(into, "state.json"), "w");
  writeSync(sfd, text + "\n");
  fsyncSync(sfd);
  closeSync(sfd);
  fsyncSync(fd);
  closeSync(fd);
  return performance.now() - t;
}

/** Runs the benchmark and prints its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const big = Number(flag(args, "steps") ?? 10_000);
  // Over the default plan limit (5,000 steps): raised, as a user with a long plan would.
  process.env.NOEMA_MAX_PLAN_STEPS = String(Math.max(big, 5000));
  const small = Math.max(1, Math.round(big / 10));
  const tmp = tempDir("noema-bench-runtime-");
  try {
    const script = join(tmp.path, "script.json");
    writeFileSync(
      script,
      JSON.stringify({ results: [], default: { status: "ok", outcome: "ok", output: { rows: 1 } } }),
    );
    await episode(join(tmp.path, "warm"), 500, script);
    const a = await episode(join(tmp.path, "small"), small, script);
    // Each run of N steps three times: the median (a single run varies by ±10% on a busy VM).
    const b = await medianEpisode(join(tmp.path, "big"), big, script, true);
    // The same run with no policy: what the policy path (snapshot, consult, `direction` event) adds.
    const bare = await medianEpisode(join(tmp.path, "bare"), big, script, false);
    if (a.status !== "ok" || b.status !== "ok" || bare.status !== "ok") {
      throw new Error("benchmark episodes did not complete");
    }
    let n = 0;
    const best = (serialize: boolean, dir = b.dir) =>
      Math.min(...[0, 1, 2].map(() => baseline(dir, join(tmp.path, `base-${n++}`), serialize)));
    const raw = best(false), ser = best(true), bareSer = best(true, bare.dir);
    const floor = Math.min(...[0, 1, 2].map(() => contractFloor(b.dir, join(tmp.path, `base-${n++}`))));
    const vsRaw = b.ms / raw, vsSer = b.ms / ser;
    const perSmall = a.ms / small, perBig = b.ms / big;
    const linear = perBig / perSmall;
    const serMet = vsSer <= 3 && b.ms <= 350;
    const ok = serMet && linear <= 1.25;
    const met = (x: boolean) => (x ? "yes" : "NO");
    const table = {
      title: `runtime: ${big}-step scripted episode, one policy (median of three runs)`,
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows: [
        [
          `run ${big} steps (ms)`,
          fixed(b.ms, 0),
          `raw append ${fixed(raw, 0)}`,
          `${fixed(vsRaw)}×`,
          "-",
          "-",
        ],
        [
          `run ${big} steps (ms)`,
          fixed(b.ms, 0),
          `serialize+append ${fixed(ser, 0)}`,
          `${fixed(vsSer)}×`,
          "≤ 3× and ≤ 350 ms",
          met(serMet),
        ],
        [
          `run ${big} steps (ms)`,
          fixed(b.ms, 0),
          `the contract's floor ${fixed(floor, 0)}`,
          `${fixed(b.ms / floor)}×`,
          "-",
          "-",
        ],
        [`run ${big} steps: CPU of this process (ms)`, fixed(b.cpu, 0), "", "", "", ""],
        [
          `run ${big} steps, no policy (ms)`,
          fixed(bare.ms, 0),
          `its serialize+append ${fixed(bareSer, 0)}`,
          `${fixed(bare.ms / bareSer)}×`,
          "-",
          "-",
        ],
        ["actions/second", fixed(big / (b.ms / 1000), 0), "", "", "", ""],
        [
          `per step at ${small} vs ${big} (µs)`,
          fixed(perBig * 1000, 1),
          fixed(perSmall * 1000, 1),
          `${fixed(linear)}×`,
          "≤ 1.25× (linear)",
          met(linear <= 1.25),
        ],
      ],
      notes: [`events.jsonl of the ${big}-step run: ${readFileSync(join(b.dir, "events.jsonl")).length} bytes`],
    };
    return { name: "runtime", tables: [table], ok };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
