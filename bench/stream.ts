/**
 * Streaming benchmark: a realistic 1,000,000-event `events.jsonl`, then
 *
 * - `noema validate` on it (`validateFile(path, { schema: "event" })`),
 * - streaming every event with `readJsonl`,
 * - the baseline `jq -c . file > /dev/null`,
 *
 * each as a child process, with wall time and peak RSS.
 *
 * Goal: validate is faster than jq and stays within 128 MB RSS.
 *
 *     bun bench/stream.ts [--events 1000000] [--runs 3] [--no-deno]
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, existsSync, openSync, readFileSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { mulberry32 as prng } from "../tests/helpers/prng.ts";
import {
  BENCH_DIR,
  type BenchReport,
  type BenchTable,
  BUN,
  DENO,
  fixed,
  flag,
  hasCommand,
  measureRuns,
  runStandalone,
  type Summary,
  workDir,
} from "./lib.ts";

/** Peak RSS goal for validate, MiB. */
export const RSS_GOAL_MB = 128;

/** Bump when the generator's output changes, so a cached file is rebuilt. */
const GENERATOR_VERSION = 3;

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** A ULID-shaped id: 10 time characters, then a counter (unique, sorted). */
function ulidLike(ms: number, n: number): string {
  let time = "", counter = "";
  for (let i = 0, t = ms; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  for (let i = 0, c = n; i < 16; i++, c = Math.floor(c / 32)) counter = CROCKFORD[c % 32] + counter;
  return time + counter;
}

const COMMANDS = [
  "ls -la src/",
  "rg -n 'TODO' --type ts",
  "cat package.json",
  "npm test -- --reporter dot",
  "git diff --stat HEAD~1",
  "sed -n 1,40p src/store/jsonl.ts",
  "jq '.outcomes.status' state.json",
  "psql -c 'select count(*) from runs'",
];
const OUTCOMES = ["ok", "ok", "ok", "exit 0: 14 files", "exit 1: 2 tests failed", "ok: 3 matches", "skipped"];
const POLICIES = ["SqlGuard@1.0", "BudgetPolicy@2.1", "ReadOnlyHint@0.3"];
const KINDS = ["detect", "analyze", "act", "verify"] as const;

/**
 * Writes a realistic episode timeline of `count` events: a start, observe and
 * plan, then step cycles of direction ×2 → action_candidate → governance → act
 * (with step ids, statuses and metrics), a state projection every 25 steps, a
 * re-plan every 100 and a learn pointer every 250, and a terminate at the end.
 * Every event is valid. Returns the file's size in bytes.
 */
export function generateEvents(path: string, count: number, seed = 42): number {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const episodeId = "ep_01K9RBBMXXRSFWR49SXFGF4SPR";
  const fd = openSync(path, "w");
  let ms = Date.parse("2026-11-23T09:00:00.000Z");
  let n = 0, bytes = 0, step = 0;
  let lastId: string | undefined;
  let buffer: string[] = [];
  let buffered = 0;
  const flush = () => {
    const text = buffer.join("");
    writeSync(fd, text);
    bytes += Buffer.byteLength(text);
    buffer = [];
    buffered = 0;
  };
  const emit = (phase: string, payload: Record<string, unknown>, extra: Record<string, unknown> = {}): string => {
    ms += 1 + Math.floor(rnd() * 40);
    const id = `ev_${ulidLike(ms, n)}`;
    const event: Record<string, unknown> = {
      id,
      timestamp: new Date(ms).toISOString(),
      episode_id: episodeId,
      agent_id: "noema",
      phase,
      ...(extra.faculty ? { faculty: extra.faculty } : {}),
      ...(extra.event_type ? { event_type: extra.event_type } : {}),
      payload,
      evidence_ids: extra.evidence_ids ?? [],
      ...(lastId ? { caused_by: lastId } : {}),
      ...(extra.metrics ? { metrics: extra.metrics } : {}),
    };
    const line = JSON.stringify(event) + "\n";
    buffer.push(line);
    buffered += line.length;
    if (buffered > 1 << 22) flush();
    lastId = id;
    n++;
    return id;
  };
  const metrics = () => {
    const d = Math.round(rnd() * 900_000) / 1000;
    return {
      started_at: new Date(ms).toISOString(),
      completed_at: new Date(ms + Math.ceil(d)).toISOString(),
      duration_ms: d,
    };
  };
  const plan = (revision: number) => {
    const steps = KINDS.map((kind, i) => ({
      id: `step-${revision}-${i + 1}`,
      kind,
      description: `${kind} the workspace`,
    }));
    return { source: revision === 0 ? "planner:minimal" : "planner:resume", step_records: steps, rationale: "cycle" };
  };
  try {
    emit("start", {
      task: "Fix the failing tests in the payments service",
      mode: "meta",
      intuition_mode: "hybrid",
      seed,
    });
    emit("observe", { cwd: "/work/app", files: 412, git: { branch: "main", dirty: false } });
    emit("plan", plan(0));
    while (n < count - 1) {
      step++;
      const stepId = `step-${Math.floor(step / 100)}-${(step % 4) + 1}`;
      const candidateId = `ac_${stepId}_${step}`;
      const command = pick(COMMANDS);
      const policy = pick(POLICIES);
      // One direction event per consulted policy (two per step here).
      const evidence: string[] = [];
      for (let k = 0; k < 2 && n < count - 1; k++) {
        evidence.push(emit("direction", {
          policy_id: POLICIES[(step + k) % POLICIES.length],
          kind: "hint",
          confidence: Math.round(rnd() * 100) / 100,
          status: "applied",
        }, { faculty: "direction" }));
      }
      if (n >= count - 1) break;
      emit("action_candidate", {
        schema_version: "action_candidate/1.0",
        action_candidate_id: candidateId,
        kind: "shell",
        payload: { tool: "shell", input: { command } },
        state_ref: "state.json",
        state_hash: `sha256:${ulidLike(ms, step).toLowerCase().padEnd(64, "0")}`,
        redaction: {},
      }, { evidence_ids: evidence });
      if (n >= count - 1) break;
      emit("governance", { decision: "allow", policy_id: policy }, { faculty: "governance" });
      if (n >= count - 1) break;
      const failed = rnd() < 0.05;
      emit("act", {
        input_excerpt: command,
        outcome: failed ? "exit 1: 2 tests failed" : pick(OUTCOMES),
        action_id: `act_${step}`,
        result_status: failed ? "error" : "ok",
        step_id: stepId,
        step_status: failed ? "failed" : "done",
      }, { metrics: metrics() });
      if (n >= count - 1) break;
      if (step % 25 === 0) {
        emit("runtime", {
          kind: "run.state_projection",
          status: "pending",
          outcomes: { status: "pending", metrics: { steps_completed: step } },
          links: { events: "events.jsonl", learn: "learn.jsonl" },
        }, { event_type: "run.state_projection" });
      }
      if (n < count - 1 && step % 100 === 0) emit("plan", plan(step / 100));
      if (n < count - 1 && step % 250 === 0) {
        emit("learn", {
          learn_path: "learn.jsonl",
          learn_schema: "learn/1.0",
          // None: the episodes made from this stream have an empty learn.jsonl, and validate checks the ids against it.
          proposal_count: 0,
          proposal_ids: [],
          applied: false,
        });
      }
    }
    emit("terminate", { status: "ok", message: "completed" });
    flush();
  } finally {
    closeSync(fd);
  }
  return bytes;
}

/** The benchmark input: generated once, rebuilt when the count or the generator changes. */
export function ensureEvents(count: number): { path: string; bytes: number; generated: boolean; seconds: number } {
  const dir = workDir("stream");
  const path = join(dir, `events-${count}.jsonl`);
  const stamp = join(dir, `events-${count}.stamp`);
  const want = JSON.stringify({ count, version: GENERATOR_VERSION });
  if (existsSync(path) && existsSync(stamp) && readFileSync(stamp, "utf8") === want) {
    return { path, bytes: statSync(path).size, generated: false, seconds: 0 };
  }
  const t0 = performance.now();
  const bytes = generateEvents(path, count);
  writeFileSync(stamp, want);
  return { path, bytes, generated: true, seconds: (performance.now() - t0) / 1000 };
}

interface Task {
  name: string;
  cmd: string[];
  goal: string;
  discardStdout?: boolean;
  /** Checks the result; returns the goal verdict (true = met, undefined = no goal). */
  judge?: (s: Summary, jq: Summary | undefined) => boolean | undefined;
}

/** Runs the benchmark (progress on stderr) and returns its table; `bench/run.ts` prints it. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const count = Number(flag(args, "events") ?? process.env.BENCH_EVENTS ?? 1_000_000);
  const runs = Number(flag(args, "runs") ?? process.env.BENCH_RUNS ?? 3);
  const input = ensureEvents(count);
  const mb = input.bytes / 2 ** 20;
  process.stderr.write(
    `stream: ${input.path} — ${count.toLocaleString("en")} events, ${fixed(mb, 1)} MiB, ` +
      `${fixed(input.bytes / count, 0)} bytes/line${
        input.generated ? ` (generated in ${fixed(input.seconds, 1)} s)` : " (cached)"
      }\n`,
  );

  const task = (name: string) => join(BENCH_DIR, "tasks", name);
  const validateGoal = (s: Summary, jq: Summary | undefined) =>
    s.peakRssMb <= RSS_GOAL_MB && (jq === undefined || s.seconds < jq.seconds);
  const tasks: Task[] = [
    {
      name: "noema validate (bun)",
      cmd: [BUN, task("validate-file.ts"), input.path],
      goal: `faster than jq, ≤ ${RSS_GOAL_MB} MB`,
      judge: validateGoal,
    },
    { name: "stream events, readJsonl (bun)", cmd: [BUN, task("stream-events.ts"), input.path], goal: "-" },
  ];
  if (!args.includes("--no-deno") && hasCommand(DENO)) {
    tasks.push({
      name: "noema validate (deno)",
      cmd: [DENO, "run", "--allow-read", "--allow-env", task("validate-file.ts"), input.path],
      goal: "(informational)",
    });
  }
  const haveJq = hasCommand("jq");
  if (haveJq) {
    tasks.push({
      name: "jq -c . > /dev/null (baseline)",
      cmd: ["jq", "-c", ".", input.path],
      goal: "baseline",
      discardStdout: true,
    });
  }

  const results = new Map<string, Summary>();
  for (const t of tasks) {
    process.stderr.write(`stream: ${t.name} × ${runs}…\n`);
    results.set(t.name, await measureRuns(t.cmd, runs, { discardStdout: t.discardStdout }));
  }
  const jq = haveJq ? results.get(tasks.at(-1)!.name) : undefined;

  let ok = true;
  const rows = tasks.map((t) => {
    const s = results.get(t.name)!;
    const verdict = t.judge?.(s, jq);
    if (verdict === false) ok = false;
    return [
      t.name,
      fixed(s.seconds),
      fixed(s.peakRssMb, 1),
      jq ? `${fixed(s.seconds / jq.seconds)}x` : "-",
      fixed(count / s.seconds / 1000, 0),
      verdict === undefined ? t.goal : `${t.goal}: ${verdict ? "met" : "MISSED"}`,
    ];
  });
  const table: BenchTable = {
    title: `Streaming ${count.toLocaleString("en")} events (${fixed(mb, 1)} MiB, ${
      fixed(input.bytes / count, 0)
    } B/line)`,
    columns: ["task", "time (s)", "peak RSS (MB)", "vs jq", "k events/s", "goal"],
    rows,
    notes: [
      `Median of ${runs} run(s) per task; peak RSS is the largest of the runs (MB = MiB). Each task is a child process.`,
      ...(haveJq ? [] : ["jq is not installed: no baseline."]),
    ],
  };
  return { name: "stream", tables: [table], ok };
}

if (import.meta.main) await runStandalone(main);

/**
 * Appends the two long lines of the validate benches (`observe` events of 9 MB and 18 MB, shaped like `first`, the
 * file's first event) to the events file at `path`.
 *
 * @example
 * ```ts
 * import { appendBigLines } from "./stream.ts";
 * // appendBigLines("events.jsonl.part", firstEvent);
 * ```
 */
export function appendBigLines(path: string, first: Record<string, unknown>): void {
  const fd = openSync(path, "a");
  try {
    for (const [i, size] of [9_000_000, 18_000_000].entries()) {
      const event = { ...first, id: `ev_big_${i}`, phase: "observe", payload: { note: "x".repeat(size) } };
      writeSync(fd, JSON.stringify(event) + "\n");
    }
  } finally {
    closeSync(fd);
  }
}
