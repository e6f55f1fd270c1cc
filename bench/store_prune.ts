/**
 * `noema store prune` over a large PostgreSQL store, on a real server started for the run: N catalog rows (one in ten
 * still running), 20 lines of 200 bytes and one 1 KB file each, a decision on one in seven; the dry run and the prune
 * through the CLI, each timed (wall clock, the process's start included), with what they counted. The two must
 * agree. Batches of 500 episodes: one progress line on stderr per full batch.
 *
 *     bun bench/store_prune.ts [--episodes 20000]
 *
 * Measured once on the 2-core test machine (shared, busy): 20,000 rows, 18,000 pruned (396,000 rows, 90 MB) in
 * 1.2 s dry and 1.6 s for the prune.
 *
 * @module
 */
import process from "node:process";
import { cli } from "../tests/helpers/cli.ts";
import { pgUnavailable, startPostgres } from "../tests/helpers/postgres.ts";

const at = process.argv.indexOf("--episodes");
const episodes = at > 0 ? Number(process.argv[at + 1]) : 20_000;
const why = pgUnavailable();
if (why) {
  console.log(`store prune: skipped: ${why}`);
  process.exit(0);
}
const pg = await startPostgres();
try {
  const url = pg.createDatabase();
  cli(["store", "init", "--store", url]);
  const series = `generate_series(1, ${episodes}) i`;
  pg.psql(
    url,
    `INSERT INTO noema_episodes (episode_id, run_state, status, host, stored_at) SELECT 'ep_' || i,
      CASE WHEN i % 10 = 0 THEN 'running' ELSE 'terminal' END, 'ok', 'h', now() - interval '100 days' FROM ${series}`,
  );
  pg.psql(
    url,
    `INSERT INTO noema_lines (episode_id, stream, seq, bytes) SELECT 'ep_' || i, 'events.jsonl', s,
      convert_to(repeat('x', 200), 'UTF8') FROM ${series}, generate_series(1, 20) s`,
  );
  pg.psql(
    url,
    `INSERT INTO noema_files (episode_id, name, bytes, size, sha256) SELECT 'ep_' || i, 'state.json',
      convert_to(repeat('y', 1000), 'UTF8'), 1000, 'sha256:x' FROM ${series}`,
  );
  pg.psql(
    url,
    `INSERT INTO noema_decisions (episode_id, checkpoint_id, state_hash, decision, decided_by, host)
      SELECT 'ep_' || i, 'chk', 'sha256:x', 'approved', 'ana', 'h' FROM generate_series(1, ${episodes}, 7) i`,
  );
  const counted: string[] = [];
  for (const extra of [["--dry-run"], []]) {
    const t = performance.now();
    const r = cli(["store", "prune", "--older-than", "90d", "--store", url, "--json", ...extra], {
      timeoutMs: 600_000,
    });
    const ms = Math.round(performance.now() - t);
    if (r.code !== 0) throw new Error(r.stderr);
    const j = JSON.parse(r.stdout);
    counted.push(JSON.stringify([j.episodes, j.rows, j.bytes, j.tombstones]));
    console.log(
      `store prune ${extra.join(" ") || "(real)"}: ${ms} ms for ${episodes} rows: ${j.episodes} episodes, ` +
        `${j.rows} rows, ${j.bytes} bytes, ${j.tombstones} tombstones`,
    );
  }
  if (counted[0] !== counted[1]) throw new Error(`the dry run counted ${counted[0]}, the prune ${counted[1]}`);
} finally {
  pg.stop();
}
