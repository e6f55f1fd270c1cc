/**
 * Live OpenTelemetry export: a 10,000-step `noema run` (scripted adapter)
 * with `--otel URL` to a collector on 127.0.0.1 (this process: it answers
 * 200 and keeps the bodies), against the same run without export,
 * interleaved. Goal: ≤ 1.05× (live export adds ≤ 5%). After the runs, the
 * requests of the exported runs are decoded (protobuf) and counted: every
 * run must have delivered its root and one span per step (what a run did not
 * send by its end is sent by the background process it hands over to).
 *
 *     bun bench/otel.ts [--steps 10000] [--runs 3]
 *
 * @module
 */
import http from "node:http";
import { join } from "node:path";
import process from "node:process";
import { decodeProtobufRequest } from "../tests/helpers/otlp_receiver.ts";
import {
  type BenchReport,
  BUN,
  fixed,
  flag,
  measureInterleaved,
  REPO_ROOT,
  runStandalone,
  scriptedTaskFile,
  tempDir,
} from "./lib.ts";

/** A collector that only keeps what it is sent (decoding is done after the timed runs). */
async function collector(): Promise<{ url: string; bodies: Buffer[]; close(): Promise<void> }> {
  const bodies: Buffer[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      bodies.push(Buffer.concat(chunks));
      res.writeHead(200, { "content-type": "application/x-protobuf" });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const steps = Number(flag(args, "steps") ?? 10_000);
  const runs = Number(flag(args, "runs") ?? 3);
  const tmp = tempDir("noema-bench-otel-");
  const c = await collector();
  try {
    const task = scriptedTaskFile(tmp.path, steps);
    // A 10,000-step plan is over the default limit (5,000 steps): raised, as a user with a long plan would.
    const planLimit = `NOEMA_MAX_PLAN_STEPS=${Math.max(steps, 5000)}`;
    const cmd = [BUN, join(REPO_ROOT, "src/cli/main.ts")];
    const [plain, exported] = await measureInterleaved(
      [
        [
          "env",
          `NOEMA_ROOT=${join(tmp.path, "plain")}`,
          "OTEL_EXPORTER_OTLP_ENDPOINT=",
          planLimit,
          ...cmd,
          "run",
          task,
          "-q",
        ],
        [
          ...["env", `NOEMA_ROOT=${join(tmp.path, "exported")}`, "OTEL_EXPORTER_OTLP_ENDPOINT=", planLimit],
          ...[...cmd, "--otel", c.url, "run", task, "-q"],
        ],
      ],
      runs,
    );
    // What a run did not send in the 5% of its time it waits at its end is sent by a background process.
    // Each request decoded once (polling must not starve the background process, which runs at a lower priority).
    const traces = new Map<string, Set<string>>();
    let decoded = 0, total = 0;
    const counted = () => {
      for (; decoded < c.bodies.length; decoded++) {
        for (const s of decodeProtobufRequest(c.bodies[decoded])) {
          traces.set(s.traceId, (traces.get(s.traceId) ?? new Set()).add(s.spanId));
          total++;
        }
      }
      return [...traces.values()].filter((ids) => ids.size === steps + 1).length;
    };
    const until = Date.now() + 120_000;
    while (counted() < runs && Date.now() < until) await new Promise((r) => setTimeout(r, 1000));
    const complete = counted();
    const ratio = exported.seconds / plain.seconds;
    const ok = ratio <= 1.05 && complete === runs;
    const table = {
      title: `OpenTelemetry: a ${steps}-step run exported live (http/protobuf, 127.0.0.1 collector)`,
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows: [
        [
          `run ${steps} steps with --otel (s)`,
          fixed(exported.seconds, 2),
          `no export ${fixed(plain.seconds, 2)}`,
          `${fixed(ratio)}×`,
          "≤ 1.05×",
          ratio <= 1.05 ? "yes" : "NO",
        ],
        [
          "runs whose whole trace arrived",
          String(complete),
          "-",
          "-",
          `${runs} (${steps + 1} spans each)`,
          complete === runs ? "yes" : "NO",
        ],
      ],
      notes: [`${total.toLocaleString("en")} spans in ${c.bodies.length} requests over ${runs} runs.`],
    };
    return { name: "otel", tables: [table], ok };
  } finally {
    await c.close();
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
