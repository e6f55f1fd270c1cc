/**
 * `noema serve` benchmark, each goal against a baseline measured in the same run:
 *
 * - the runs page (first page) over 100,000 episodes (those of `bench/list.ts`),
 *   against reading and sorting the episodes directory in the same process.
 *   Goal: ≤ 300 ms;
 * - a 10,000-step episode (that of `bench/report.ts`) opened in Chromium (load
 *   event), against the same episode's static `noema report` page opened from
 *   a file. Goal: ≤ 1 s;
 * - a live event: a line appended to a run's events.jsonl until it shows on
 *   the open episode page, against a plain request from that page to the
 *   server. Goal: ≤ 500 ms.
 *
 *     bun bench/serve.ts [--episodes 100000] [--steps 10000] [--runs 5]
 *
 * @module
 */
import { appendFileSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { spawnSync } from "node:child_process";
import { chromium } from "playwright-core";
import { createApp } from "../src/serve/app.ts";
import { parseTokens } from "../src/serve/auth.ts";
import { startServer } from "../src/serve/server.ts";
import { newEpisodeId } from "../src/store/ids.ts";
import { type BenchReport, BUN, fixed, flag, type Measure, median, REPO_ROOT, runStandalone, workDir } from "./lib.ts";
import { generate } from "./list.ts";
import { episode } from "./report.ts";

async function timed(f: () => Promise<unknown> | unknown): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

/** A served root: the server's URL and how to stop it. */
async function serve(root: string): Promise<{ url: string; stop(): Promise<void> }> {
  const closing = new AbortController();
  const app = createApp({ root, tokens: parseTokens(""), readOnly: false, log: () => {}, closing: closing.signal });
  const s = await startServer("127.0.0.1", 0, app.fetch);
  return {
    url: `${s.url}/`,
    stop: async () => {
      closing.abort();
      await s.stop();
    },
  };
}

/** A live (non-terminal) episode with one start event, in a root of its own. */
function liveEpisode(): { root: string; id: string; events: string } {
  const root = join(workDir("."), "serve-live");
  rmSync(root, { recursive: true, force: true });
  const id = newEpisodeId(Date.now());
  const dir = join(root, "episodes", id);
  mkdirSync(dir, { recursive: true });
  const ts = new Date().toISOString();
  const events = join(dir, "events.jsonl");
  const line = (n: number, phase: string, payload: unknown) =>
    JSON.stringify({ id: `ev_${n}`, timestamp: ts, episode_id: id, phase, payload, evidence_ids: [] }) + "\n";
  writeFileSync(events, line(0, "start", { task: "live" }));
  writeFileSync(join(dir, "learn.jsonl"), "");
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      version: "1.0",
      state_schema_version: "1.0.0",
      episode: { id, started_at: ts },
      goal: { task: "live" },
      plan: { steps: [] },
      outcomes: { status: "pending" },
      links: { events: "events.jsonl", learn: "learn.jsonl" },
    }),
  );
  return { root, id, events };
}

function row(measure: string, value: number, baseline: string, base: number, goal: number): Measure {
  return {
    measure,
    value: fixed(value, 0),
    baseline: `${baseline} ${fixed(base, 0)}`,
    ratio: `${fixed(value / base)}×`,
    goal: `≤ ${goal} ms`,
    met: value <= goal ? "yes" : "NO",
  };
}

/** Runs the benchmark and returns its table. */
export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const n = Number(flag(args, "episodes") ?? 100_000);
  const steps = Number(flag(args, "steps") ?? 10_000);
  const runs = Number(flag(args, "runs") ?? 5);
  const measures: Measure[] = [];

  // 1. The runs page over n episodes.
  const listRoot = join(workDir("."), `list-${n}`);
  generate(listRoot, n);
  const many = await serve(listRoot);
  const pageMs: number[] = [], dirMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    pageMs.push(
      await timed(async () => {
        const r = await fetch(many.url);
        if (r.status !== 200 || !(await r.text()).includes("data-href")) throw new Error("the runs page failed");
      }),
    );
    dirMs.push(await timed(() => readdirSync(join(listRoot, "episodes")).sort()));
  }
  await many.stop();
  measures.push(
    row(`runs page over ${n.toLocaleString("en")} episodes (ms)`, median(pageMs), "readdir+sort", median(dirMs), 300),
  );

  // 2. A long episode opened in Chromium, and 3. a live event reaching the open page.
  const dir = episode(steps);
  const stepsRoot = join(dir, "..", "..");
  const id = dir.split("/").at(-1)!;
  const reportFile = join(workDir("serve-out"), "report.html");
  const r = spawnSync(BUN, [join(REPO_ROOT, "src", "cli", "main.ts"), "report", dir, "-o", reportFile], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`noema report failed: ${r.stderr}`);
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  const long = await serve(stepsRoot);
  const live = liveEpisode();
  const liveServer = await serve(live.root);
  try {
    const page = await browser.newPage();
    // The first open builds the report model (one pass over events.jsonl); later ones find it cached.
    const coldMs = await timed(() => page.goto(`${long.url}episodes/${id}`, { waitUntil: "load" }));
    const openMs: number[] = [], fileMs: number[] = [];
    for (let i = 0; i < runs; i++) {
      openMs.push(await timed(() => page.goto(`${long.url}episodes/${id}`, { waitUntil: "load" })));
      fileMs.push(await timed(() => page.goto(`file://${reportFile}`, { waitUntil: "load" })));
    }
    measures.push(row(
      `episode of ${steps.toLocaleString("en")} steps opens in Chromium (ms)`,
      median(openMs),
      "report file",
      median(fileMs),
      1000,
    ));
    measures.push({
      measure: `… its first open, the model not yet built (ms)`,
      value: fixed(coldMs, 0),
      baseline: `report file ${fixed(median(fileMs), 0)}`,
      ratio: `${fixed(coldMs / median(fileMs))}×`,
      goal: "-",
      met: "-",
    });
    await page.goto(`${liveServer.url}episodes/${live.id}`, { waitUntil: "load" });
    await page.waitForSelector("#live.live-on");
    const liveMs: number[] = [], fetchMs: number[] = [];
    for (let i = 1; i <= runs; i++) {
      const marker = `marker-${i}-${Date.now()}`;
      const seen = page.waitForFunction(
        (m: string) => {
          const doc =
            (globalThis as unknown as { document: { getElementById(id: string): { textContent: string } | null } })
              .document;
          return (doc.getElementById("live-events")?.textContent ?? "").includes(m);
        },
        marker,
        { polling: "raf", timeout: 10_000 },
      );
      const t = performance.now();
      appendFileSync(
        live.events,
        JSON.stringify({
          id: `ev_${i}`,
          timestamp: new Date().toISOString(),
          phase: "observe",
          payload: { note: marker },
        }) +
          "\n",
      );
      await seen;
      liveMs.push(performance.now() - t);
      fetchMs.push(
        await timed(() =>
          page.evaluate((u: string) => fetch(u).then((x) => x.text()), `/api/episodes/${live.id}/events`)
        ),
      );
    }
    measures.push(
      row("a live event reaches the open page (ms)", median(liveMs), "page→server request", median(fetchMs), 500),
    );
  } finally {
    await liveServer.stop();
    await long.stop();
    await browser.close();
  }
  const ok = measures.every((m) => m.met !== "NO"); // a row without a goal ("-") fails nothing
  return {
    name: "serve",
    ok,
    measures,
    tables: [{
      title: "serve",
      columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
      rows: measures.map((m) => [m.measure, m.value, m.baseline, m.ratio, m.goal, m.met]),
      notes: [`Median of ${runs} runs; the server runs in this process (bun), Chromium headless via playwright-core.`],
    }],
  };
}

if (import.meta.main) await runStandalone(main);
