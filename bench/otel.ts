/**
 * Live OpenTelemetry export: a 10,000-step `noema run` (scripted adapter)
 * with `--otel URL` to a collector on 127.0.0.1 (this process: it answers
 * 200 and keeps the bodies), against the same run without export,
 * interleaved. Goal: ≤ 1.05× (live export adds ≤ 5%), the median of the
 * runs' paired ratios (each exported run against the run without export
 * just before it, so a change in the machine's load between pairs cancels). The
 * requests are decoded (protobuf) and counted: every run must deliver its
 * root and one span per step (what a run did not send by its end, its export
 * process sends after it). The next run starts once the last one's whole
 * trace arrived, so no run shares the machine with the export of another.
 * Then a run at a pace that leaves the CPU free (shell steps of 50 ms): how
 * many of its tool spans arrived while it ran.
 *
 *     bun bench/otel.ts [--steps 10000] [--runs 9]
 *
 * @module
 */
import http from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { decodeProtobufRequest } from "../tests/helpers/otlp_receiver.ts";
import {
  type BenchReport,
  BUN,
  fixed,
  flag,
  measureOk,
  median,
  REPO_ROOT,
  runStandalone,
  scriptedTaskFile,
  tempDir,
} from "./lib.ts";

/** A collector that only keeps what it is sent (decoding is done after the timed runs). */
async function collector(): Promise<{ url: string; bodies: Buffer[]; at: number[]; close(): Promise<void> }> {
  const bodies: Buffer[] = [], at: number[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      bodies.push(Buffer.concat(chunks));
      at.push(Date.now());
      res.writeHead(200, { "content-type": "application/x-protobuf" });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    at,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A run at a pace that leaves the CPU free, exported live: how many of its tool spans arrived before it ended. */
async function pacedRun(
  dir: string,
  c: { url: string; bodies: Buffer[]; at: number[] },
  cmd: string[],
): Promise<{ steps: number; live: number }> {
  const steps = 40;
  const task = join(dir, "paced.json");
  writeFileSync(
    task,
    JSON.stringify({
      task: "paced",
      using: "shell",
      steps: Array.from(
        { length: steps },
        (_, i) => ({ kind: "act", description: `s${i}`, inputs: { command: "sleep 0.05" } }),
      ),
    }),
  );
  const first = c.bodies.length;
  const argv = ["env", `NOEMA_ROOT=${join(dir, "paced")}`, "OTEL_EXPORTER_OTLP_ENDPOINT=", ...cmd, "--otel", c.url];
  await measureOk([...argv, "run", task, "-q"]);
  const ended = Date.now();
  let live = 0;
  for (let i = first; i < c.bodies.length; i++) {
    if (c.at[i] > ended) continue;
    live += decodeProtobufRequest(c.bodies[i]).filter((s) => s.name.startsWith("execute_tool")).length;
  }
  return { steps, live };
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const steps = Number(flag(args, "steps") ?? 10_000);
  const runs = Number(flag(args, "runs") ?? 9);
  const tmp = tempDir("noema-bench-otel-");
  const c = await collector();
  try {
    const task = scriptedTaskFile(tmp.path, steps);
    // A 10,000-step plan is over the default limit (5,000 steps): raised, as a user with a long plan would.
    const planLimit = `NOEMA_MAX_PLAN_STEPS=${Math.max(steps, 5000)}`;
    const cmd = [BUN, join(REPO_ROOT, "src/cli/main.ts")];
    const plainCmd = [
      ...["env", `NOEMA_ROOT=${join(tmp.path, "plain")}`, "OTEL_EXPORTER_OTLP_ENDPOINT=", planLimit],
      ...[...cmd, "run", task, "-q"],
    ];
    const exportedCmd = [
      ...["env", `NOEMA_ROOT=${join(tmp.path, "exported")}`, "OTEL_EXPORTER_OTLP_ENDPOINT=", planLimit],
      ...[...cmd, "--otel", c.url, "run", task, "-q"],
    ];
    // Each request decoded once, as it arrives.
    const traces = new Map<string, Set<string>>();
    let decoded = 0, total = 0, live = 0;
    const windows: [number, number][] = []; // when each exported run ran
    const counted = () => {
      for (; decoded < c.bodies.length; decoded++) {
        const during = windows.some(([from, to]) => c.at[decoded] >= from && c.at[decoded] <= to);
        for (const s of decodeProtobufRequest(c.bodies[decoded])) {
          traces.set(s.traceId, (traces.get(s.traceId) ?? new Set()).add(s.spanId));
          total++;
          if (during) live++;
        }
      }
      return [...traces.values()].filter((ids) => ids.size === steps + 1).length;
    };
    const plainRuns: number[] = [], exportedRuns: number[] = [];
    for (let i = 0; i < runs; i++) {
      plainRuns.push((await measureOk(plainCmd)).seconds);
      const from = Date.now();
      exportedRuns.push((await measureOk(exportedCmd)).seconds);
      windows.push([from, Date.now()]);
      // What a run did not send in the 5% of its time it waits at its end is sent by its export process after it.
      // The next run starts once the whole trace arrived, so each run is timed alone.
      const until = Date.now() + 120_000;
      while (counted() < i + 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    }
    const plain = { seconds: median(plainRuns) }, exported = { seconds: median(exportedRuns) };
    const complete = counted();
    const paced = await pacedRun(tmp.path, c, cmd);
    const ratio = median(exportedRuns.map((e, i) => e / plainRuns[i])); // paired: drifting load cancels
    const ok = ratio <= 1.05 && complete === runs && paced.live === paced.steps;
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
        [
          `a run of ${paced.steps} shell steps of 50 ms: tool spans that arrived while it ran`,
          String(paced.live),
          "-",
          "-",
          `${paced.steps} (all)`,
          paced.live === paced.steps ? "yes" : "NO",
        ],
      ],
      notes: [
        `${total.toLocaleString("en")} spans in ${c.bodies.length} requests over ${runs} runs; ` +
        `${live.toLocaleString("en")} of them (${fixed((100 * live) / Math.max(1, total), 0)}%) arrived while their ` +
        "run ran, the rest after it, from the run's export process (a process of its own, in the idle scheduling " +
        "class: it gets the CPU the run leaves, and this run leaves it little). The ratio is the median of " +
        "the runs' paired ratios (each exported run against the run just before it).",
      ],
    };
    return { name: "otel", tables: [table], ok };
  } finally {
    await c.close();
    tmp.cleanup();
  }
}

if (import.meta.main) await runStandalone(main);
