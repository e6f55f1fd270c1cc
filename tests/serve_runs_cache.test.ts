/**
 * The runs cache of `noema serve` (`<root>/state/serve/runs-cache.jsonl`),
 * with the real server as a child process, restarted: the view sorted by cost
 * is the same from the cache as from the files; a run sealed after the cache
 * was written takes its place, one sealed again (a new manifest) shows its new
 * cost; a corrupt cache (garbage, a truncated or malformed line) is ignored
 * and replaced; a symbolic link at its path is neither read nor written
 * through.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { tempDir } from "./helpers/tmp.ts";
import { type Served, startServe } from "./helpers/serve.ts";
import { newEpisodeId } from "../src/store/ids.ts";
import { encodeRun, manifestSig, runsCachePath } from "../src/serve/runs_cache_file.ts";
import { formatUsd as usd } from "../src/report/metric_format.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const HEADER = '{"format":"noema-serve-runs","version":1}';
const T0 = Date.parse("2026-03-01T00:00:00.000Z");
let roots = 0;

/** Writes (again) a sealed run's summary with `usd` as its cost, and a new manifest renamed into place. */
function seal(dir: string, usd: number): void {
  writeFileSync(
    join(dir, "summary.json"),
    JSON.stringify({ task: "t", outcome: "success", duration_sec: usd * 10, metrics: { cost: { usd } } }),
  );
  writeFileSync(join(dir, "manifest.json.new"), JSON.stringify({ sealed_with: usd }));
  renameSync(join(dir, "manifest.json.new"), join(dir, "manifest.json"));
}

/** A sealed run costing `usd`, started `i` seconds after T0; its id. */
function run(root: string, i: number, usd: number): string {
  const at = T0 + i * 1000, id = newEpisodeId(at), dir = join(root, "episodes", id);
  mkdirSync(dir, { recursive: true });
  const ts = new Date(at).toISOString();
  writeFileSync(
    join(dir, "events.jsonl"),
    JSON.stringify({ id: "ev_0", timestamp: ts, episode_id: id, phase: "start", payload: { using: "shell" } }) + "\n",
  );
  writeFileSync(
    join(dir, "state.json"),
    JSON.stringify({
      episode: { id, started_at: ts, tags: { n: String(i) } },
      goal: { task: `task ${i}` },
      outcomes: { status: "ok" },
      links: { summary: "summary.json", manifest: "manifest.json" },
    }),
  );
  seal(dir, usd);
  return id;
}

/** A root of its own with runs costing `costs` (the i-th started i seconds after T0); their ids. */
function rootWith(costs: number[]): { root: string; ids: string[] } {
  const root = join(tmp.path, `r${roots++}`, ".noema");
  return { root, ids: costs.map((usd, i) => run(root, i, usd)) };
}

/** The rows of the runs page sorted by cost, most first: [id, cost cell]. */
async function byCost(s: Served): Promise<[string, string][]> {
  const r = await fetch(`${s.url}?sort=cost&dir=desc`);
  const html = await r.text();
  assert.equal(r.status, 200, html);
  return [...html.matchAll(/data-id="([^"]+)".*?<td class="num cost">([^<]*)<\/td>/gs)].map((m) => [m[1], m[2]]);
}

/** Waits (bounded: catches a hang only) until `ok()`; `what` names it when it never happens. */
async function until(what: string, ok: () => boolean, s?: Served): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (ok()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never happened: ${what}${s ? `\nserve stderr:\n${s.stderr()}` : ""}`);
}

/** The records of the cache file (its lines after the header); null when it holds no header. */
function records(root: string): string[] | null {
  if (!existsSync(runsCachePath(root))) return null;
  const lines = readFileSync(runsCachePath(root), "utf8").split("\n");
  return lines[0] === HEADER ? lines.slice(1).filter(Boolean) : null;
}

/** Serves `root` until a sorted view wrote the cache with `n` records; returns that view. */
async function buildCache(root: string, n: number): Promise<[string, string][]> {
  const s = await startServe(root);
  try {
    const rows = await byCost(s);
    await until(`the runs cache holds ${n} records`, () => records(root)?.length === n, s);
    return rows;
  } finally {
    await s.stop();
  }
}

const OPTS = { timeout: 180_000 };

describe("serve: the runs cache", () => {
  test("a restarted server sorts by cost from its runs cache, as from the files", OPTS, async () => {
    const { root, ids } = rootWith([0.3, 0.1, 0.5, 0.2]);
    const first = await buildCache(root, 4);
    assert.deepEqual(first.map((r) => r[0]), [ids[2], ids[0], ids[3], ids[1]]);
    assert.deepEqual(first.map((r) => r[1]), [usd(0.5), usd(0.3), usd(0.2), usd(0.1)]);
    const api = await (async () => {
      const s = await startServe(root);
      try {
        await until("the cache read back", () => /runs cache: 4 of 4 runs read back/.test(s.stderr()), s);
        assert.deepEqual(await byCost(s), first, "the same rows from the cache");
        return await (await fetch(`${s.url}api/episodes?sort=cost&dir=desc`)).json();
      } finally {
        await s.stop();
      }
    })();
    rmSync(runsCachePath(root));
    const s = await startServe(root);
    try {
      const fresh = await (await fetch(`${s.url}api/episodes?sort=cost&dir=desc`)).json();
      assert.deepEqual(api, fresh, "the entries from the cache are those read from the files");
    } finally {
      await s.stop();
    }
  });

  test(
    "a run sealed after the cache was written takes its place; one sealed again shows its new cost",
    OPTS,
    async () => {
      const { root, ids } = rootWith([0.3, 0.1, 0.5]);
      await buildCache(root, 3);
      const later = run(root, 10, 0.4);
      seal(join(root, "episodes", ids[1]), 0.9); // sealed again: a new manifest
      const s = await startServe(root);
      try {
        await until("the cache read back", () => /runs cache: \d+ of 3 runs read back/.test(s.stderr()), s);
        assert.deepEqual(await byCost(s), [
          [ids[1], usd(0.9)],
          [ids[2], usd(0.5)],
          [later, usd(0.4)],
          [ids[0], usd(0.3)],
        ]);
        assert.match(s.stderr(), /runs cache: 2 of 3 runs read back/, "the record of the run sealed again is not used");
        await until("the cache written again", () => (records(root) ?? []).some((l) => l.includes("0.9")), s);
        assert.equal(records(root)!.length, 4);
      } finally {
        await s.stop();
      }
    },
  );

  test(
    "a corrupt cache (garbage; a malformed, a wrong-shaped and a truncated line) is ignored and replaced",
    OPTS,
    async () => {
      const { root, ids } = rootWith([0.3, 0.1, 0.5]);
      const want = [[ids[2], usd(0.5)], [ids[0], usd(0.3)], [ids[1], usd(0.1)]];
      mkdirSync(join(root, "state", "serve"), { recursive: true });
      writeFileSync(runsCachePath(root), "\u0000\xff garbage {[\n".repeat(100));
      assert.deepEqual(await buildCache(root, 3), want);
      const lines = records(root)!;
      // Another record's line made to claim a wrong cost under this run's id: cut in half (truncated), it is no record.
      const claim = lines.find((l) => l.includes(ids[0]))!.replace("0.3", "7.7");
      const rest = lines.filter((l) => !l.includes(ids[0]));
      writeFileSync(
        runsCachePath(root),
        [HEADER, "not json", '["ep_x","1:2:3:4"]', ...rest, claim.slice(0, claim.length - 5)].join("\n"),
      );
      const s = await startServe(root);
      try {
        await until("the cache read back", () => /runs cache: 2 of 2 runs read back/.test(s.stderr()), s);
        assert.deepEqual(await byCost(s), want);
        await until("the cache replaced", () => records(root)?.length === 3, s);
        assert.ok(!readFileSync(runsCachePath(root), "utf8").includes("not json"));
      } finally {
        await s.stop();
      }
    },
  );

  test("a symbolic link at the cache's path is neither read nor written through", OPTS, async () => {
    const { root, ids } = rootWith([0.3, 0.1]);
    // What the link leads to is a well-formed cache claiming another cost for a run, with its manifest's identity.
    const dir = join(root, "episodes", ids[1]);
    const lie = encodeRun({
      id: ids[1],
      sig: manifestSig(dir)!,
      entry: {
        episode_id: ids[1],
        lifecycle: "terminal",
        status: "ok",
        task: "t",
        started_at: null,
        tags: {},
        run_state: "terminal",
      },
      facts: {
        duration_ms: 1,
        adapter: "shell",
        policies: [],
        models: [],
        cost_usd: 9,
        cost_note: null,
        vetoes: 0,
        would_vetoes: 0,
        approved: 0,
        rejected: 0,
      },
    });
    const outside = tmp.file(`outside-${roots}.jsonl`, `${HEADER}\n${lie}\n`);
    mkdirSync(join(root, "state", "serve"), { recursive: true });
    symlinkSync(outside, runsCachePath(root));
    const s = await startServe(root);
    try {
      assert.deepEqual(await byCost(s), [[ids[0], usd(0.3)], [ids[1], usd(0.1)]], "not read through the link");
      await until("the refusal said", () => /runs cache: .* not written \(.*symbolic link/.test(s.stderr()), s);
    } finally {
      await s.stop();
    }
    assert.equal(readFileSync(outside, "utf8"), `${HEADER}\n${lie}\n`, "nothing written through the link");
    assert.ok(lstatSync(runsCachePath(root)).isSymbolicLink());
    assert.deepEqual(readdirSync(join(root, "state", "serve")), ["runs-cache.jsonl"], "no temp file left");
  });
});
