/**
 * `noema store audit` over 100,000 decisions (issue 36): the hash-chained
 * decision log walked a page at a time, every row's hash recomputed in
 * TypeScript. The decisions are made through the real `noema_decide` (one
 * statement over `generate_series`), so each is stamped and chained as a real
 * one. Timed: the whole command (`bun src/cli/main.ts store audit --json`, a
 * child process, its start included) and the walk in this process; baselines
 * in the same run: `SELECT count(*)` of the table, and the same pages read
 * without hashing. Goal: **≤ 2 s** for the command.
 *
 *     bun bench/store_audit.ts [--decisions 100000] [--runs 3]
 *
 * @module
 */
import process from "node:process";
import { join } from "node:path";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import { auditDecisions } from "../src/shared_store/postgres/decision_audit.ts";
import { pgUnavailable, startPostgres } from "../tests/helpers/postgres.ts";
import { type BenchReport, BUN, fixed, flag, measureRuns, REPO_ROOT, runStandalone } from "./lib.ts";

/** The median of `runs` timings of `f`, ms. */
async function timeMs(f: () => Promise<unknown>, runs: number): Promise<number> {
  const ts: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await f();
    ts.push(performance.now() - t);
  }
  return ts.sort((a, b) => a - b)[Math.floor(ts.length / 2)];
}

/** Reads every row as the audit does (same query, same pages), without hashing: what the walk costs the database. */
async function readPages(store: PostgresStore): Promise<number> {
  let seq = 0, n = 0;
  for (;;) {
    const page = await store.sql`SELECT chain_seq::text, episode_id, checkpoint_id, state_hash, checkpoint_digest,
        decision, decided_by, decided_by_role, authenticated_as, claimed_by, note, host,
        to_char(decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS decided_at, prev_hash, row_hash,
        pruned_at::text
      FROM noema_decisions WHERE chain_seq > ${seq} ORDER BY noema_decisions.chain_seq LIMIT 5000`;
    n += page.length;
    if (page.length < 5000) return n;
    seq = Number(page.at(-1)!.chain_seq);
  }
}

export async function main(args: string[] = process.argv.slice(2)): Promise<BenchReport> {
  const why = pgUnavailable();
  const skipped = { measure: `skipped: ${why}`, value: "-", baseline: "-", ratio: "-", goal: "-", met: "-" };
  if (why) return { name: "store_audit", tables: [], ok: true, measures: [skipped] };
  const n = Number(flag(args, "decisions") ?? 100_000);
  const runs = Number(flag(args, "runs") ?? 3);
  const pg = await startPostgres();
  const url = pg.createDatabase();
  const store = new PostgresStore(url, { timeoutMs: 600_000 });
  try {
    await store.migrate();
    const t0 = performance.now();
    await store.sql`SELECT count(noema_decide('ep_' || i, 'chk_' || i, 'sha256:' || md5(i::text) || md5(i::text),
        CASE WHEN i % 5 = 0 THEN 'rejected' ELSE 'approved' END, CASE WHEN i % 3 = 0 THEN 'note ' || i END,
        'host-' || (i % 7), CASE WHEN i % 2 = 0 THEN 'claimant ' || i END, 'sha256:' || md5(i::text) || md5('d'),
        NULL))
      FROM generate_series(1, ${n}) AS i`;
    const fillS = (performance.now() - t0) / 1000;
    await store.sql`VACUUM ANALYZE noema_decisions`;
    const report = await auditDecisions(store.sql);
    if (!report.ok || report.rows !== n) throw new Error(`the filled chain does not audit: ${JSON.stringify(report)}`);
    const cli = await measureRuns(
      [BUN, join(REPO_ROOT, "src/cli/main.ts"), "store", "audit", "--json", "--store", url],
      runs,
    );
    const inProcess = await timeMs(() => auditDecisions(store.sql), runs);
    const pages = await timeMs(() => readPages(store), runs);
    const count = await timeMs(() => store.sql`SELECT count(*) FROM noema_decisions`, runs);
    const cliMs = cli.seconds * 1000;
    const ok = cliMs <= 2000;
    const rows = [
      [
        `store audit --json, ${n.toLocaleString("en")} decisions (ms)`,
        fixed(cliMs, 0),
        `count(*) ${fixed(count, 1)}`,
        `${fixed(cliMs / count, 0)}×`,
        "≤ 2000 ms",
        ok ? "yes" : "NO",
      ],
      [
        "the walk in this process (ms)",
        fixed(inProcess, 0),
        `pages read, no hashing ${fixed(pages, 0)}`,
        `${fixed(inProcess / pages)}×`,
        "-",
        "-",
      ],
    ];
    return {
      name: "store_audit",
      ok,
      tables: [{
        title: `store audit: a hash-chained log of ${n.toLocaleString("en")} decisions`,
        columns: ["measure", "value", "baseline", "ratio", "goal", "met"],
        rows,
        notes: [
          `${n.toLocaleString("en")} decisions made through noema_decide in one statement (${fixed(fillS, 1)} s). ` +
          `Medians of ${runs} runs. The command's time includes starting Bun and connecting.`,
        ],
      }],
      measures: rows.map(([measure, value, baseline, ratio, goal, met]) => ({
        measure,
        value,
        baseline,
        ratio,
        goal,
        met,
      })),
    };
  } finally {
    await store.close();
    pg.stop();
  }
}

if (import.meta.main) await runStandalone(main);
