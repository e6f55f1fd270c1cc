/**
 * `noema mcp`: the latency a `tools/call` gains through the gateway (its
 * proposal to the episode with a policy file in a worker, the act record,
 * the relay both ways), beside the same call made directly to the same
 * server in the same run. One SDK client per path, the calls interleaved
 * (direct, gateway, direct…) so both see the same machine load; each call
 * timed on its own after a warm-up. Also the gateway's resident memory
 * after the warm-up and at every tenth of the calls (`/proc/<pid>/status`
 * VmRSS): past 5,000 calls the session goes on in a new episode, so it stays
 * bounded.
 *
 *     bun bench/mcp_gateway.ts [--calls 1000]
 *
 * Goals: added latency ≤ 2 ms median and ≤ 5 ms at p99.
 *
 * @module
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { type BenchReport, BUN, fixed, flag, type Measure, median, REPO_ROOT, runStandalone, tempDir } from "./lib.ts";

const SERVER = join(REPO_ROOT, "tests", "helpers", "mcp_fs_server.ts");
const MAIN = join(REPO_ROOT, "src", "cli", "main.ts");

const p99 = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.99)];

function rssMb(pid: number | null): number {
  if (pid === null || !existsSync(`/proc/${pid}/status`)) return NaN;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function client(command: string, args: string[], env: Record<string, string>) {
  const transport = new StdioClientTransport({ command, args, env, stderr: "ignore" });
  const c = new Client({ name: "bench", version: "1.0" });
  await c.connect(transport);
  return { c, pid: () => transport.pid };
}

async function timed(c: Client): Promise<number> {
  const t = performance.now();
  const r = await c.callTool({ name: "read_file", arguments: { path: "a.txt" } });
  if ((r as { isError?: boolean }).isError) throw new Error(`the call failed: ${JSON.stringify(r)}`);
  return performance.now() - t;
}

/** Runs the benchmark. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const calls = Number(flag(args, "calls") ?? 1000);
  const tmp = tempDir("noema-bench-mcp-");
  try {
    const dir = join(tmp.path, "served");
    mkdirSync(dir);
    writeFileSync(join(dir, "a.txt"), "alpha\n");
    const policy = join(tmp.path, "allow.ts");
    writeFileSync(policy, 'export default { name: "AllowAll", version: "1.0", advise() {} };\n');
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("NOEMA_")) env[k] = v;
    env.NOEMA_ROOT = join(tmp.path, "root");
    const server = [SERVER, dir, join(tmp.path, "calls.jsonl")];
    const direct = await client(BUN, server, env);
    const gateway = await client(BUN, [MAIN, "mcp", "--name", "fs", "--policy", policy, "--", BUN, ...server], env);
    try {
      for (let i = 0; i < 50; i++) await timed(direct.c), await timed(gateway.c); // warm-up: JIT, policy worker
      const before = rssMb(gateway.pid());
      const d: number[] = [], g: number[] = [], rss: number[] = [];
      for (let i = 0; i < calls; i++) {
        d.push(await timed(direct.c));
        g.push(await timed(gateway.c));
        if ((i + 1) % Math.max(1, Math.floor(calls / 10)) === 0) rss.push(rssMb(gateway.pid()));
      }
      return report(calls, d, g, before, rss);
    } finally {
      await direct.c.close();
      await gateway.c.close();
    }
  } finally {
    tmp.cleanup();
  }
}

function report(calls: number, d: number[], g: number[], before: number, rss: number[]): BenchReport {
  const addedMedian = median(g) - median(d), addedP99 = p99(g) - p99(d);
  const ms = (x: number) => fixed(x, 3);
  const measures: Measure[] = [
    {
      measure: "tools/call through noema mcp, added (ms, median)",
      value: ms(addedMedian),
      baseline: `direct ${ms(median(d))}`,
      ratio: `${fixed(median(g) / median(d))}×`,
      goal: "≤ 2 ms",
      met: addedMedian <= 2 ? "yes" : "NO",
    },
    {
      measure: "tools/call through noema mcp, added (ms, p99)",
      value: ms(addedP99),
      baseline: `direct ${ms(p99(d))}`,
      ratio: `${fixed(p99(g) / p99(d))}×`,
      goal: "≤ 5 ms",
      met: addedP99 <= 5 ? "yes" : "NO",
    },
  ];
  const table = {
    title: `mcp_gateway: ${calls} read_file calls each, direct and through noema mcp (policy file in a worker)`,
    columns: ["path", "median (ms)", "p99 (ms)"],
    rows: [["direct", ms(median(d)), ms(p99(d))], ["noema mcp", ms(median(g)), ms(p99(g))]],
    notes: [
      `gateway RSS (MiB) after the warm-up ${fixed(before, 1)}, then every ${Math.floor(calls / 10)} calls: ` +
      rss.map((x) => fixed(x, 1)).join(", ") + " (a session's episode holds at most NOEMA_MAX_PLAN_STEPS calls)",
    ],
  };
  return { name: "mcp_gateway", tables: [table], ok: measures.every((m) => m.met === "yes"), measures };
}

if (import.meta.main) await runStandalone(main);
