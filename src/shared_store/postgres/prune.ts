/**
 * `noema store prune` in PostgreSQL: one batch of finished runs removed (or,
 * in a dry run, counted) in one transaction.
 *
 * A run is pruned when its catalog row says it ended (`run_state` `terminal`),
 * it was first stored before the cutoff (`stored_at`, the database's clock),
 * it is of the project asked for (if any), and no live writer holds its lease
 * (one not released and renewed within the last 60 s). The batch's rows are
 * locked (`FOR UPDATE`, so a concurrent write is waited for and the condition
 * checked again on what it wrote), and so are their leases, checked again
 * too; then its lines, files, lease and catalog row are deleted and its
 * decisions kept as tombstones (`pruned_at = now()`, the note cleared), so
 * that a chain of decisions still links. A dry run runs the same query
 * without deleting: what it lists is what a prune removes, barring runs that
 * change in between.
 *
 * @module
 */
import type postgres from "postgres";
import { PRUNE_BATCH, type PruneBatch, type PruneOptions } from "../shared_store.ts";

/** Where the next batch starts: after this row, in (`stored_at`, `episode_id`) order. */
export interface PruneCursor {
  /** As the database prints it, sent back as text: a Date (or a timestamptz parameter) loses the microseconds, and a page would repeat itself. */
  stored_at: string;
  episode_id: string;
}

/** A lease renewed within this many seconds, and not released, is a live writer's: its run is never pruned. */
const LIVE_LEASE_SEC = 60;

/**
 * The next batch after `after` (null: from the oldest): what it removed (or would), and where the next one starts
 * (null when there is none).
 *
 * @example
 * ```ts
 * import { pruneBatch } from "./prune.ts";
 * // const { batch, last } = await pruneBatch(sql, cutoff, { older_than_ms: 90 * 86400e3, dry_run: true }, null);
 * ```
 */
export function pruneBatch(
  sql: postgres.Sql,
  cutoff: Date,
  options: PruneOptions,
  after: PruneCursor | null,
  timeoutMs: number,
): Promise<{ batch: PruneBatch; last: PruneCursor | null }> {
  const size = options.batch ?? PRUNE_BATCH;
  return sql.begin(async (tx) => {
    await tx.unsafe(`SET LOCAL statement_timeout = ${Math.ceil(timeoutMs)}`);
    const project = options.project === undefined ? tx`TRUE` : tx`e.project = ${options.project}`;
    const from = after === null
      ? tx`TRUE`
      : tx`(e.stored_at, e.episode_id) > (${after.stored_at}::text::timestamptz, ${after.episode_id})`;
    const lock = options.dry_run ? tx`` : tx`FOR UPDATE OF e`;
    const page = await tx`SELECT e.episode_id, e.stored_at::text AS at FROM noema_episodes e
      WHERE e.run_state = 'terminal' AND e.stored_at < ${cutoff} AND ${project} AND ${from}
        AND NOT EXISTS (SELECT 1 FROM noema_leases l WHERE l.episode_id = e.episode_id AND NOT l.released
          AND l.renewed_at > now() - make_interval(secs => ${LIVE_LEASE_SEC}))
      ORDER BY e.stored_at, e.episode_id LIMIT ${size} ${lock}`;
    const empty = { episode_ids: [], rows: 0, lines: 0, files: 0, bytes: 0, tombstones: 0 };
    if (page.length === 0) return { batch: empty, last: null };
    const lastRow = page[page.length - 1];
    const last = { stored_at: String(lastRow.at), episode_id: String(lastRow.episode_id) };
    let ids = page.map((r) => String(r.episode_id));
    if (!options.dry_run) {
      // A writer that took a lease meanwhile (waited for here, its row locked) keeps its run.
      const live = await tx`SELECT episode_id FROM noema_leases WHERE episode_id = ANY(${ids}::text[])
        AND NOT released AND renewed_at > now() - make_interval(secs => ${LIVE_LEASE_SEC}) FOR UPDATE`;
      const held = new Set(live.map((r) => String(r.episode_id)));
      ids = ids.filter((id) => !held.has(id));
    }
    return { batch: await removeOrCount(tx, ids, options.dry_run), last };
  }) as Promise<{ batch: PruneBatch; last: PruneCursor | null }>;
}

/** Deletes (or counts) the lines, files, lease and catalog row of `ids`, and makes (or counts) their tombstones. */
async function removeOrCount(tx: postgres.TransactionSql, ids: string[], dryRun: boolean): Promise<PruneBatch> {
  const of = tx`episode_id = ANY(${ids}::text[])`;
  const count = async (q: postgres.PendingQuery<postgres.Row[]>) => {
    const [r] = await q;
    return { n: Number(r.n), bytes: Number(r.b ?? 0) };
  };
  if (dryRun) {
    const lines = await count(tx`SELECT count(*) AS n, coalesce(sum(octet_length(bytes)), 0) AS b
      FROM noema_lines WHERE ${of}`);
    const files = await count(tx`SELECT count(*) AS n, coalesce(sum(size), 0) AS b FROM noema_files WHERE ${of}`);
    const leases = await count(tx`SELECT count(*) AS n FROM noema_leases WHERE ${of}`);
    const tombs = await count(tx`SELECT count(*) AS n FROM noema_decisions WHERE ${of} AND pruned_at IS NULL`);
    return batchOf(ids, ids.length, lines, files, leases.n, tombs.n);
  }
  const lines = await count(tx`WITH d AS (DELETE FROM noema_lines WHERE ${of} RETURNING octet_length(bytes) AS b)
    SELECT count(*) AS n, coalesce(sum(b), 0) AS b FROM d`);
  const files = await count(tx`WITH d AS (DELETE FROM noema_files WHERE ${of} RETURNING size AS b)
    SELECT count(*) AS n, coalesce(sum(b), 0) AS b FROM d`);
  const leases = await count(
    tx`WITH d AS (DELETE FROM noema_leases WHERE ${of} RETURNING 1) SELECT count(*) AS n FROM d`,
  );
  const tombs = await count(tx`WITH d AS (UPDATE noema_decisions SET pruned_at = now(), note = NULL
    WHERE ${of} AND pruned_at IS NULL RETURNING 1) SELECT count(*) AS n FROM d`);
  const rows = await count(
    tx`WITH d AS (DELETE FROM noema_episodes WHERE ${of} RETURNING 1) SELECT count(*) AS n FROM d`,
  );
  return batchOf(ids, rows.n, lines, files, leases.n, tombs.n);
}

function batchOf(
  ids: string[],
  episodes: number,
  lines: { n: number; bytes: number },
  files: { n: number; bytes: number },
  leases: number,
  tombstones: number,
): PruneBatch {
  return {
    episode_ids: ids,
    rows: episodes + lines.n + files.n + leases,
    lines: lines.n,
    files: files.n,
    bytes: lines.bytes + files.bytes,
    tombstones,
  };
}
