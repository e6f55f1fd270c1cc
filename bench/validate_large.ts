/**
 * `noema validate` of an episode of 200,000 small events plus two long lines
 * (9 MB and 18 MB; the line limit raised with `NOEMA_MAX_LINE_BYTES`), against
 * `jq -c .` over the same `events.jsonl`, interleaved, with each one's peak RSS.
 *
 * Goals: validate takes at most half jq's time (median wall time), within
 * 64 MB plus 3× the longest line.
 *
 *     bun bench/validate_large.ts [--runs 3]
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { readLines } from "../src/store/jsonl.ts";
import {
  type BenchReport,
  BUN,
  fixed,
  flag,
  hasCommand,
  measureInterleaved,
  REPO_ROOT,
  runStandalone,
  workDir,
} from "./lib.ts";
import { appendBigLines, generateEvents } from "./stream.ts";

/** The episode id the stream generator writes into every event. */
const EPISODE_ID = "ep_01K9RBBMXXRSFWR49SXFGF4SPR";
const ENV = { NOEMA_MAX_LINE_BYTES: String(64 << 20) };
const NOEMA = join(REPO_ROOT, "bin", "noema.ts");

/**
 * The episode (made once): the stream generator's 200,000-event timeline, then two `observe` events with a 9 MB and
 * an 18 MB note, a `learn.jsonl` and the non-terminal `state.json` the timeline's last projection describes.
 */
function episode(dir: string): { root: string; events: string } {
  const root = join(dir, "root");
  const epDir = join(root, "episodes", EPISODE_ID);
  const events = join(epDir, "events.jsonl");
  if (existsSync(join(dir, "complete"))) return { root, events };
  rmSync(root, { recursive: true, force: true });
  mkdirSync(epDir, { recursive: true });
  const part = `${events}.part`;
  generateEvents(part, 200_000);
  const first = JSON.parse(readFileSync(part, "utf8").slice(0, 64 * 1024).split("\n")[0]) as Record<string, unknown>;
  let outcomes: unknown = null;
  for (const l of readLines(part)) {
    if (l.text?.includes('"event_type":"run.state_projection"')) outcomes = JSON.parse(l.text).payload.outcomes;
  }
  appendBigLines(part, first);
  renameSync(part, events);
  writeFileSync(join(epDir, "learn.jsonl"), "");
  writeFileSync(
    join(epDir, "state.json"),
    JSON.stringify({
      version: "1.0",
      state_schema_version: "1.0.0",
      episode: { id: EPISODE_ID, started_at: first.timestamp },
      goal: { task: (first.payload as { task: string }).task },
      plan: { steps: [] },
      outcomes,
      links: { events: "events.jsonl", learn: "learn.jsonl" },
    }),
  );
  writeFileSync(join(dir, "complete"), "");
  return { root, events };
}

function longestLineMb(path: string): number {
  let most = 0;
  for (const l of readLines(path, { maxLineBytes: 0 })) most = Math.max(most, l.bytes);
  return most / (1 << 20);
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const runs = Number(flag(args, "runs") ?? 3);
  const { root, events } = episode(workDir("validate-large-v1"));
  const longest = longestLineMb(events);
  const memoryGoal = 64 + 3 * longest;
  const validate = [BUN, NOEMA, "--root", root, "validate", EPISODE_ID];
  const haveJq = hasCommand("jq");
  const cmds = haveJq ? [validate, ["jq", "-c", ".", events]] : [validate];
  const [noema, jq] = await measureInterleaved(cmds, runs, { env: ENV, discardStdout: true });
  const ratio = jq ? noema.seconds / jq.seconds : NaN;
  const timeMet = jq ? ratio <= 0.5 : undefined;
  const memoryMet = noema.peakRssMb <= memoryGoal;
  const met = (x: boolean | undefined) => (x === undefined ? "-" : x ? "yes" : "NO");
  const rows = [
    [
      "noema validate <episode>: time (s)",
      fixed(noema.seconds),
      jq ? `jq -c . ${fixed(jq.seconds)}` : "jq not installed",
      jq ? `${fixed(ratio)}×` : "-",
      "≤ 0.5× jq",
      met(timeMet),
    ],
    [
      "noema validate <episode>: peak RSS (MiB)",
      fixed(noema.peakRssMb, 0),
      `longest line ${fixed(longest, 1)} MiB`,
      `${fixed(noema.peakRssMb / memoryGoal)}× the goal`,
      `≤ 64 + 3× longest line = ${fixed(memoryGoal, 0)}`,
      met(memoryMet),
    ],
    ...(jq ? [["jq -c . events.jsonl: peak RSS (MiB)", fixed(jq.peakRssMb, 0), "", "", "", ""]] : []),
  ];
  return {
    name: "validate_large",
    ok: timeMet !== false && memoryMet,
    tables: [{
      title: "validate: 200,000 events with 9 MB and 18 MB lines, against jq",
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows,
      notes: [
        `Median of ${runs} interleaved runs each (wall time); peak RSS is the largest of the runs. Both read the same`,
        `events.jsonl (${events}); validate reads the whole episode (state.json and learn.jsonl too), under`,
        "NOEMA_MAX_LINE_BYTES=64 MiB, so the long lines are read, not skipped.",
        ...(haveJq ? [] : ["jq is not installed (apt-get install jq): no baseline, the time goal is not judged."]),
      ],
    }],
  };
}

if (import.meta.main) await runStandalone(main);
