/**
 * The live export's core (`src/export/otel/live_core.ts`, what the export
 * thread runs) against the scripted receiver: the file offsets it reports
 * as sent (where a run's hand-over goes on from) are reported only once the
 * collector accepted every span of the lines before them, even when the
 * batch processor's own eager export of a first batch is slower than the
 * rest; a resumed follower (`skipTo`) sends only what follows, and one
 * resumed at any chunk's offsets, a line longer than a chunk included, loses
 * no span.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LiveExportCore } from "../src/export/otel/live_core.ts";
import { OtelLiveSink } from "../src/export/otel/live.ts";
import { EpisodeFollower } from "../src/export/otel/follow.ts";
import { otelResource } from "../src/export/otel/exporter.ts";
import { spanIdOf } from "../src/export/otel/ids.ts";
import { runtimeCommand } from "./helpers/cli.ts";
import { startOtlpReceiver } from "./helpers/otlp_receiver.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-otel-live-");
after(() => tmp.cleanup());

/** An episode directory whose events.jsonl holds a start and `acts` act events (written here, not run). */
function episode(name: string, acts: number): { dir: string; id: string; ids: string[] } {
  const id = `ep_${name}`;
  const dir = join(tmp.path, id);
  mkdirSync(dir, { recursive: true });
  const t = Date.parse("2026-11-26T12:00:00.000Z");
  const ts = (i: number) => new Date(t + i).toISOString();
  const lines = [
    { id: "ev_start", timestamp: ts(0), episode_id: id, phase: "start", payload: { episode_id: id, using: "shell" } },
  ];
  const ids: string[] = [];
  for (let i = 1; i <= acts; i++) {
    ids.push(`ev_${i}`);
    lines.push({
      id: `ev_${i}`,
      timestamp: ts(i),
      episode_id: id,
      phase: "act",
      payload: { action_id: `act_step-${i}_${i}`, step_id: `step-${i}`, tool: "shell", result_status: "ok" } as never,
    });
  }
  writeFileSync(join(dir, "events.jsonl"), lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
  return { dir, id, ids };
}

describe("following an episode in chunks", () => {
  it("a hand-over at any chunk's offsets loses no span, a line longer than a chunk included", () => {
    const { dir, id } = episode("chunks", 3000);
    // A line longer than a read chunk (1 MiB) near the start, like a long plan's, then the acts.
    const path = join(dir, "events.jsonl");
    const lines = readFileSync(path, "utf8").trim().split("\n");
    const plan = JSON.stringify({
      id: "ev_plan",
      timestamp: "2026-11-26T12:00:00.000Z",
      episode_id: id,
      phase: "plan",
      payload: { rationale: "x".repeat(1_200_000) },
    });
    writeFileSync(path, [lines[0], plan, ...lines.slice(1)].join("\n") + "\n");
    const resource = otelResource();
    const f = new EpisodeFollower(dir, id, { resource });
    const chunks: { ids: string[]; offsets: number[] }[] = [];
    do {
      const ids = f.read(1 << 18).map((x) => x.spanContext().spanId);
      chunks.push({ ids, offsets: f.offsets() });
    } while (f.more);
    const all = new Set(chunks.flatMap((c) => c.ids));
    assert.equal(all.size, 3000, "read in chunks, every act's span");
    assert.ok(chunks.length > 3);
    chunks.forEach((c, k) => {
      const rest = new EpisodeFollower(dir, id, { resource });
      rest.skipTo(c.offsets);
      const got = new Set([
        ...chunks.slice(0, k + 1).flatMap((x) => x.ids),
        ...rest.read().map((x) => x.spanContext().spanId),
      ]);
      assert.equal(got.size, 3000, `handed over after chunk ${k + 1}: no span lost`);
    });
  });
});

describe("the live sink of a resumed run", () => {
  it("counts and sends only what follows where the episode stood when it resumed, and the root", async () => {
    const receiver = await startOtlpReceiver();
    try {
      const { dir, id } = episode("resumed", 20);
      const sink = new OtelLiveSink({
        url: `${receiver.url}/v1/traces`,
        protocol: "http/protobuf",
        timeoutMs: 10_000,
        capture: false,
      });
      sink.begin(dir, id, true);
      assert.equal(sink.backlogBytes(), 0, "not from the start: that was sent before the pause");
      const r = await sink.finish(true);
      assert.equal(r.failed, null);
      assert.deepEqual(receiver.spans().map((s) => s.parentSpanId), [""], "the root alone");
    } finally {
      await receiver.close();
    }
  });
});

describe("the live sink of a busy run", () => {
  it("sends spans while the run's thread never turns its event loop (kicks post at once, not by a timer)", async () => {
    // The receiver runs in a process of its own: this thread is kept busy, as a CPU-bound run keeps its own.
    const log = join(tmp.path, "arrivals.log");
    const script = join(tmp.path, "receiver.ts");
    writeFileSync(
      script,
      `import http from "node:http"; import { appendFileSync } from "node:fs";
const s = http.createServer((req, res) => { req.on("data", () => {}); req.on("end", () => {
  appendFileSync(${JSON.stringify(log)}, Date.now() + "\\n"); res.writeHead(200); res.end(); }); });
s.listen(0, "127.0.0.1", () => console.log(s.address().port));`,
    );
    const [cmd, ...args] = runtimeCommand();
    const child = spawn(cmd, [...args, script], { stdio: ["ignore", "pipe", "inherit"] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        child.stdout!.once("data", (d: Buffer) => resolve(Number(String(d).trim())));
        child.once("exit", (code) => reject(new Error(`the receiver exited (${code})`)));
      });
      const { dir, id } = episode("busy", 2000);
      const sink = new OtelLiveSink(
        { url: `http://127.0.0.1:${port}/v1/traces`, protocol: "http/protobuf", timeoutMs: 10_000, capture: false },
        { intervalMs: 0 },
      );
      sink.begin(dir, id);
      // Busy: kicks and sleeps without ever returning to the event loop (no timer can fire), until a request arrived.
      const nap = new Int32Array(new SharedArrayBuffer(4));
      const until = Date.now() + 30_000;
      let arrived = false;
      while (!arrived && Date.now() < until) {
        sink.kick();
        Atomics.wait(nap, 0, 0, 50);
        arrived = existsSync(log) && readFileSync(log, "utf8") !== "";
      }
      assert.ok(arrived, "no span reached the receiver while the run's thread was busy");
      await sink.finish(true, 10_000);
    } finally {
      child.kill();
    }
  });
});

describe("the live export's core", () => {
  it("reports offsets as sent only when every span before them was accepted", { timeout: 60_000 }, async () => {
    // The first request (the processor's own export of the first full batch) is answered late.
    const receiver = await startOtlpReceiver((n) => (n === 0 ? { delayMs: 1500 } : {}));
    try {
      // 512 spans: the processor exports them at once as a full batch, and its forceFlush finds nothing left.
      const { dir, id } = episode("acked", 512);
      const seen: number[] = [];
      const core = new LiveExportCore(
        { url: `${receiver.url}/v1/traces`, protocol: "http/protobuf", timeoutMs: 20_000, capture: false },
        (f) => assert.fail(`unexpected failure: ${f.message}`),
        () => seen.push(receiver.spans().length),
      );
      core.begin(dir, id, null);
      await core.pump();
      assert.ok(seen.length > 0, "offsets were reported");
      assert.equal(seen[0], 512, "every act span was accepted before the offsets were reported");
      const r = await core.finish(true);
      assert.equal(r.failed, null);
      assert.equal(receiver.spans().length, 513);
      assert.ok(receiver.spans().some((s) => s.spanId === spanIdOf(id, "root")));
    } finally {
      await receiver.close();
    }
  });

  it(
    "a pump reads about its budget (whole chunks), the rest at the next pump or at finish",
    { timeout: 60_000 },
    async () => {
      const receiver = await startOtlpReceiver();
      try {
        const { dir, id } = episode("budget", 12_000); // about 2 MiB of events: more than one chunk
        const size = statSync(join(dir, "events.jsonl")).size;
        assert.ok(size > 1.5 * (1 << 20), `the episode is ${size} bytes`);
        let acked = [0];
        const core = new LiveExportCore(
          { url: `${receiver.url}/v1/traces`, protocol: "http/protobuf", timeoutMs: 20_000, capture: false },
          () => {},
          (offsets) => acked = offsets,
        );
        core.begin(dir, id);
        await core.pump(1000);
        // One chunk (1 MiB, and the rest of the line it ends in), not the whole episode.
        assert.ok(
          acked[0] > 0 && acked[0] < (1 << 20) + 1000,
          `one chunk read for a budget of 1000 bytes, not ${acked[0]}`,
        );
        const sentFirst = receiver.spans().length;
        assert.ok(sentFirst > 0 && sentFirst < 12_000, `${sentFirst} spans after the first pump`);
        await core.finish(true);
        assert.equal(acked[0], size, "finish reads everything");
        assert.equal(new Set(receiver.spans().map((s) => s.spanId)).size, 12_001, "every act and the root, once");
      } finally {
        await receiver.close();
      }
    },
  );

  it("a follower resumed at offsets sends only the spans of the lines after them", { timeout: 60_000 }, async () => {
    const receiver = await startOtlpReceiver();
    try {
      const { dir, id, ids } = episode("skip", 10);
      const size = statSync(join(dir, "events.jsonl")).size;
      // Five more acts after the offsets a first export reached.
      const more = episode("skip", 15);
      assert.equal(more.dir, dir);
      const core = new LiveExportCore(
        { url: `${receiver.url}/v1/traces`, protocol: "http/json", timeoutMs: 20_000, capture: false },
      );
      core.begin(dir, id, [size, 0]);
      await core.finish(true);
      const got = receiver.spans().map((s) => s.spanId).sort();
      const want = [...more.ids.filter((e) => !ids.includes(e)).map((e) => spanIdOf(id, e)), spanIdOf(id, "root")];
      assert.deepEqual(got, want.sort());
    } finally {
      await receiver.close();
    }
  });
});
