/**
 * The report's reading of an episode's files (`buildReport`, for `noema report`
 * and the served episode page). state.json and summary.json
 * (`src/report/json_artifact.ts`): the value or the error `readJsonFile` gives.
 * events.jsonl (`src/report/event_lines.ts`): the same
 * entries and problems as `readJsonl` on a log with long lines (a plan, a state
 * projection), damaged lines and a torn end; no forced garbage collection
 * while a model is built (under Bun, where `readJsonl` forces two around each
 * line longer than its buffer, 2 MiB: each costs the whole heap of the server the page is built
 * in); and the timeline's head and tail rows as the events give them.
 */
import { after, afterEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Buffer } from "node:buffer";
import { readEventLines } from "../src/report/event_lines.ts";
import { readJsonArtifact } from "../src/report/json_artifact.ts";
import { readJsonFile } from "../src/store/json_file.ts";
import { buildReport } from "../src/report/model.ts";
import { readJsonl } from "../src/store/jsonl.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-report-events-");
const ts = (i: number) => new Date(Date.parse("2026-01-01T00:00:00.000Z") + i * 1000).toISOString();
const event = (i: number, phase: string, payload: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id: `ev_${i}`, timestamp: ts(i), episode_id: "ep_1", phase, ...extra, payload });

/** A plan event of `n` steps (each with an input of `pad` characters): a line of about n × (pad + 90) bytes. */
function planLine(i: number, n: number, pad: number): string {
  const step_records = Array.from({ length: n }, (_, k) => ({
    id: `step-${k + 1}`,
    kind: "act",
    description: `Step ${k}`,
    status: "pending",
    inputs: { command: `echo ${"x".repeat(pad)}` },
  }));
  return event(i, "plan", { source: "planner:test", step_records });
}

/** A state projection line of `bytes` bytes or more (what a long run writes after its steps). */
function projectionLine(i: number, bytes: number): string {
  const actions = Array.from(
    { length: Math.ceil(bytes / 100) },
    (_, k) => ({ id: `act_${k}`, tool: "t", x: "y".repeat(64) }),
  );
  return event(i, "runtime", { kind: "run.state_projection", status: "ok", outcomes: { actions } }, {
    event_type: "run.state_projection",
  });
}

const savedLimit = process.env.NOEMA_MAX_LINE_BYTES;
afterEach(() => {
  if (savedLimit === undefined) delete process.env.NOEMA_MAX_LINE_BYTES;
  else process.env.NOEMA_MAX_LINE_BYTES = savedLimit;
});

describe("readEventLines", () => {
  test("gives readJsonl's entries and problems, long lines included", () => {
    process.env.NOEMA_MAX_LINE_BYTES = String(3 * 1024 * 1024);
    const parts: (string | Buffer)[] = [
      "\uFEFF" + event(1, "start", { task: "t" }), // a BOM on line 1
      planLine(2, 2000, 100), // ~380 KB: over the long-line threshold, under a chunk
      projectionLine(3, 2_000_000), // over a chunk (1 MiB): readJsonl's long-line path
      projectionLine(4, 3_500_000), // over the line limit
      "",
      "{not json",
      "[1,2]",
      Buffer.concat([
        Buffer.from('{"phase":"observe","payload":{"x":"'),
        Buffer.from([0xff, 0xfe]),
        Buffer.from('"}}'),
      ]),
      Buffer.concat([Buffer.from(planLine(9, 2000, 100).slice(0, -2)), Buffer.from([0xc3]), Buffer.from("}}")]),
      event(10, "act", { step_id: "step-1", step_status: "done" }) + "\r",
      '{"torn": tr',
    ];
    const bytes = Buffer.concat(
      parts.flatMap((p, i) => [Buffer.from(p), Buffer.from(i < parts.length - 1 ? "\n" : "")]),
    );
    const path = tmp.file("mixed.jsonl", "");
    writeFileSync(path, bytes);
    const strip = (e: Record<string, unknown>) => {
      const { text: _text, ...rest } = e;
      return rest;
    };
    const ours = [...readEventLines(path)].map(strip), theirs = [...readJsonl(path)].map(strip);
    assert.equal(ours.length, 11);
    assert.deepEqual(ours.map((e) => e.problem ?? "ok"), [
      "json", // the BOM
      "ok",
      "ok",
      "too_long",
      "blank",
      "json",
      "not_object",
      "utf8",
      "utf8",
      "ok",
      "torn",
    ]);
    assert.deepEqual(ours, theirs);
  });
});

describe("readJsonArtifact", () => {
  test("gives readJsonFile's value, or its error", () => {
    const deep = (n: number) => `{"a":${"[".repeat(n - 1)}${"]".repeat(n - 1)}}`;
    const cases: [string, string | Buffer][] = [
      ["state.json", JSON.stringify({ outcomes: { status: "ok", actions: [{ id: "a" }] }, plan: { steps: [] } })],
      ["deep-ok.json", deep(256)],
      ["deep.json", deep(257)],
      ["bom.json", "\uFEFF{}"],
      ["utf8.json", Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff]), Buffer.from('"}')])],
      ["fffd.json", '{"a":"\uFFFD"}'],
      ["bad.json", '{"a": 1,}'],
      ["array.json", "[1]"],
      ["empty.json", ""],
    ];
    const outcome = (read: () => unknown) => {
      try {
        return { value: read() };
      } catch (e) {
        return { error: `${(e as Error).name}: ${(e as Error).message}` };
      }
    };
    for (const [name, text] of cases) {
      const path = join(tmp.path, "artifacts", name);
      mkdirSync(join(tmp.path, "artifacts"), { recursive: true });
      writeFileSync(path, text);
      assert.deepEqual(outcome(() => readJsonArtifact(path)), outcome(() => readJsonFile(path)), name);
    }
    assert.match(outcome(() => readJsonArtifact(join(tmp.path, "artifacts", "deep.json"))).error ?? "", /deeper/);
    for (const path of [join(tmp.path, "artifacts"), join(tmp.path, "artifacts", "missing.json")]) {
      assert.deepEqual(outcome(() => readJsonArtifact(path)), outcome(() => readJsonFile(path)), path);
    }
  });
});

describe("buildReport", () => {
  test("forces no garbage collection on a log with lines of 3 MB (Bun)", () => {
    const dir = join(tmp.path, "long", "episodes", "ep_long");
    mkdirSync(dir, { recursive: true });
    const lines = [event(1, "start", { task: "long" }), planLine(2, 6000, 500)];
    for (let k = 1; k <= 20; k++) {
      lines.push(event(2 + k, "act", { step_id: `step-${k}`, step_status: "done", result_status: "ok", tool: "t" }));
    }
    lines.push(projectionLine(30, 3_000_000));
    writeFileSync(join(dir, "events.jsonl"), lines.join("\n") + "\n");
    const g = globalThis as { Bun?: { gc(sync: boolean): unknown } };
    const bun = g.Bun;
    let forced = 0;
    // Counted where the runtime can be asked to collect (Bun: Bun.gc); elsewhere a stand-in only counts the asks.
    const gc = bun ? bun.gc.bind(bun) : () => undefined;
    const counting = (sync: boolean) => {
      forced++;
      return gc(sync);
    };
    if (bun) bun.gc = counting;
    else g.Bun = { gc: counting };
    let m;
    try {
      m = buildReport({ id: "ep_long", dir });
    } finally {
      if (bun) bun.gc = gc;
      else delete g.Bun;
    }
    assert.equal(m.steps.length, 6000);
    assert.equal(m.steps[0].status, "done");
    assert.equal(m.counts.events, 23);
    assert.equal(forced, 0, `${forced} forced garbage collections while building the model`);
  });

  test("the timeline keeps its first and last events, summarized, with their time since the first", () => {
    const dir = join(tmp.path, "timeline", "episodes", "ep_tl");
    mkdirSync(dir, { recursive: true });
    const lines = [event(1, "start", { task: "tl" })];
    for (let i = 2; i <= 12; i++) {
      lines.push(
        i === 11
          ? projectionLine(i, 40_000) // a large event in the tail: summarized as it comes
          : event(i, "act", { step_id: `step-${i}`, step_status: "done", result_status: i === 12 ? "error" : "ok" }),
      );
    }
    writeFileSync(join(dir, "events.jsonl"), lines.join("\n") + "\n");
    const m = buildReport({ id: "ep_tl", dir }, { timelineHead: 2, timelineTail: 4 });
    assert.deepEqual(m.timeline.head.map((r) => [r.n, r.phase, r.delta_ms]), [[1, "start", 0], [2, "act", 1000]]);
    assert.deepEqual(m.timeline.tail.map((r) => [r.n, r.delta_ms, r.mark]), [
      [9, 8000, null],
      [10, 9000, null],
      [11, 10000, null],
      [12, 11000, "error"],
    ]);
    assert.equal(m.timeline.tail[0].summary, "step_id=step-9 step_status=done result_status=ok");
    assert.equal(m.timeline.tail[2].summary, "run.state_projection status=ok");
    assert.equal(m.timeline.omitted, 6);
    // Fewer events than the tail holds: all of them, in order.
    const short = buildReport({ id: "ep_tl", dir }, { timelineHead: 9, timelineTail: 5 });
    assert.deepEqual(short.timeline.tail.map((r) => r.n), [10, 11, 12]);
    assert.equal(short.timeline.omitted, 0);
  });
});

// node:test's after, not process "exit": one runtime ended its test process without the exit event, leaving the folder.
after(() => tmp.cleanup());
