/**
 * Event validation speed: noema's valibot check (`checkEvent`, the schema and
 * the phase payload rules) against ajv running the generated JSON Schema
 * (`schemas/event.schema.json`, compiled once), over the same parsed events.
 * Goal: valibot at least half ajv's speed (ratio of times ≤ 2×).
 *
 * Then the peak memory of `noema validate` on large inputs, against the goal
 * that validating any episode takes at most 64 MB plus 3× its longest line:
 * a 200,000-event `events.jsonl` with one 9 MB and one 18 MB event line
 * (validated as a file), and a 100,000-step episode written by noema itself
 * (the minimal adapter; validated as an episode). Both under
 * `NOEMA_MAX_LINE_BYTES` = 64 MiB, so the long lines are read, not skipped,
 * and `NOEMA_MAX_PLAN_STEPS=100000` (the default limit refuses such a plan).
 * A third row validates a 5,000-step episode, the largest plan noema writes
 * under its default limits. Inputs are made once under
 * `bench/.work/validate-memory-v1/`.
 *
 *     bun bench/validation.ts [--events 200000] [--runs 1]
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { checkEvent } from "../mod.ts";
import { readLines } from "../src/store/jsonl.ts";
import {
  type BenchReport,
  type BenchTable,
  BUN,
  fixed,
  flag,
  measureRuns,
  REPO_ROOT,
  runStandalone,
  tempDir,
  workDir,
} from "./lib.ts";
import { appendBigLines, generateEvents } from "./stream.ts";

const addFormats = addFormatsModule.default;

function best(runs: number, fn: () => number): { ms: number; result: number } {
  let ms = Infinity, result = 0;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    result = fn();
    ms = Math.min(ms, performance.now() - t);
  }
  return { ms, result };
}

const ENV = { NOEMA_MAX_LINE_BYTES: String(64 << 20), NOEMA_MAX_PLAN_STEPS: "100000" };
const NOEMA = join(REPO_ROOT, "bin", "noema.ts");

/** The 200,000-event file with a 9 MB and an 18 MB line (made once). */
function bigLinesFile(dir: string): string {
  const path = join(dir, "200k-9mb-18mb-events.jsonl");
  if (existsSync(path)) return path;
  const part = `${path}.part`;
  generateEvents(part, 200_000);
  const first = JSON.parse(readFileSync(part, "utf8").slice(0, 64 * 1024).split("\n")[0]) as Record<string, unknown>;
  appendBigLines(part, first);
  renameSync(part, path);
  return path;
}

/** An episode of `steps` steps written by `noema run` with `env` (made once); returns its root and id. */
function planEpisode(dir: string, steps: number, env: Record<string, string>): { root: string; id: string } {
  const root = join(dir, `root-${steps}-steps`);
  const idFile = join(dir, `episode-${steps}-steps.txt`);
  if (existsSync(idFile)) return { root, id: readFileSync(idFile, "utf8").trim() };
  const task = join(dir, `task-${steps}-steps.json`);
  writeFileSync(
    task,
    JSON.stringify({ task: `a ${steps}-step plan`, steps: Array.from({ length: steps }, (_, i) => `act:step ${i}`) }),
  );
  const r = spawnSync(BUN, [NOEMA, "--root", root, "run", task, "-q"], {
    env: { ...process.env, ...env },
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`noema run of ${task} exited with ${r.status}: ${r.stderr}`);
  writeFileSync(idFile, r.stdout.trim());
  return { root, id: r.stdout.trim() };
}

function longestLineMb(path: string): number {
  let most = 0;
  for (const l of readLines(path, { maxLineBytes: 0 })) most = Math.max(most, l.bytes);
  return most / (1 << 20);
}

/** Validate's peak RSS on both inputs, against 64 MB + 3× the longest line. */
async function memoryTable(runs: number): Promise<{ table: BenchTable; ok: boolean }> {
  const dir = workDir("validate-memory-v1");
  const file = bigLinesFile(dir);
  const episode = (steps: number, env: Record<string, string>, name: string) => {
    const { root, id } = planEpisode(dir, steps, env);
    const longest = longestLineMb(join(root, "episodes", id, "events.jsonl"));
    return { name, cmd: [BUN, NOEMA, "--root", root, "validate", id], longest, env };
  };
  const cases = [
    {
      name: "validate 200,000 events with 9 MB and 18 MB lines (file)",
      cmd: [BUN, NOEMA, "validate", file],
      longest: longestLineMb(file),
      env: ENV,
    },
    episode(100_000, ENV, "validate a 100,000-step episode (written by noema)"),
    episode(5_000, {}, "validate a 5,000-step episode (the largest plan, default limits)"),
  ];
  let ok = true;
  const rows: string[][] = [];
  for (const c of cases) {
    const m = await measureRuns(c.cmd, runs, { env: c.env, discardStdout: true });
    const goal = 64 + 3 * c.longest;
    const met = m.peakRssMb <= goal;
    ok &&= met;
    rows.push([
      `${c.name}, peak RSS (MiB)`,
      fixed(m.peakRssMb, 0),
      `longest line ${fixed(c.longest, 1)} MiB`,
      `${fixed(m.peakRssMb / goal)}× the goal`,
      `≤ 64 + 3× longest line = ${fixed(goal, 0)}`,
      met ? "yes" : "NO",
    ]);
  }
  return {
    ok,
    table: {
      title: "validate memory: large episodes",
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows,
      notes: [
        "The first two are written and read with NOEMA_MAX_LINE_BYTES=64 MiB (so every line is read, not skipped) and",
        "NOEMA_MAX_PLAN_STEPS=100000 (the default limits refuse a 100,000-step plan); the third with the defaults.",
      ],
    },
  };
}

/** Runs the benchmark and returns its tables. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const speed = speedTable(args);
  const memory = await memoryTable(Number(flag(args, "runs") ?? 1));
  return { name: "validation", ok: speed.ok && memory.ok, tables: [speed.table, memory.table] };
}

/** valibot against ajv over the same parsed events. */
function speedTable(args: string[]): { table: BenchTable; ok: boolean } {
  const count = Number(flag(args, "events") ?? 200_000);
  const tmp = tempDir("noema-bench-validation-");
  try {
    const path = join(tmp.path, "events.jsonl");
    generateEvents(path, count);
    const events = readFileSync(path, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
    const ajv = new Ajv2020({ strict: false, allErrors: false });
    addFormats(ajv);
    const validateAjv = ajv.compile(JSON.parse(readFileSync(join(REPO_ROOT, "schemas", "event.schema.json"), "utf8")));
    // Warm both up, then take the best of three passes.
    for (const e of events.slice(0, 5000)) {
      checkEvent(e);
      validateAjv(e);
    }
    const valibot = best(3, () => events.reduce((bad, e) => bad + (checkEvent(e).length > 0 ? 1 : 0), 0));
    const ajvRun = best(3, () => events.reduce((bad, e) => bad + (validateAjv(e) ? 0 : 1), 0));
    if (valibot.result !== 0 || ajvRun.result !== 0) {
      throw new Error(`generated events should be valid (valibot ${valibot.result}, ajv ${ajvRun.result} invalid)`);
    }
    const ratio = valibot.ms / ajvRun.ms;
    const ok = ratio <= 2;
    const perEvent = (ms: number) => fixed((ms * 1000) / count, 2);
    return {
      ok,
      table: {
        title: `event validation: ${count} events, valibot vs ajv`,
        columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
        rows: [
          [
            "valibot checkEvent (µs/event)",
            perEvent(valibot.ms),
            `ajv ${perEvent(ajvRun.ms)}`,
            `${fixed(ratio)}×`,
            "≤ 2× (≥ 0.5× ajv's speed)",
            ok ? "yes" : "NO",
          ],
        ],
        notes: ["ajv compiles the generated JSON Schema to JavaScript; valibot interprets the schema per call."],
      },
    };
  } finally {
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
