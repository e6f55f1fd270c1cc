/**
 * `noema store audit`: walks a PostgreSQL store's decision log in chain
 * order, a page at a time (bounded memory), recomputes every row's hash here
 * (never trusting the database's), and names the first row that breaks the
 * chain: a row changed (its hash no longer matches), deleted (a gap in
 * `chain_seq`, or the next row's `prev_hash` no longer links), or inserted out
 * of band (no `chain_seq`, or a hash that does not link). A tombstone (a row
 * with `pruned_at`, its content cleared by retention) is checked only for
 * linkage, and carries its `row_hash` on. The encoding is
 * `decision_chain_sql.ts`'s, documented in docs/store.md ("Roles and audit").
 *
 * @module
 */
import { createHash } from "node:crypto";
import { Buffer } from "node:buffer";
import type postgres from "postgres";
import { CHAIN_FORMAT, CHAIN_GENESIS } from "./decision_chain_sql.ts";
import { auditDecisionRecords } from "./decision_records_audit.ts";

/** Rows read per page. */
const PAGE = 5000;

/** The fields of a row, in the order they are hashed. */
const FIELDS = [
  "chain_seq",
  "episode_id",
  "checkpoint_id",
  "state_hash",
  "checkpoint_digest",
  "decision",
  "decided_by",
  "decided_by_role",
  "authenticated_as",
  "claimed_by",
  "note",
  "host",
  "decided_at",
] as const;

/** One row as the audit reads it: every field as text (null when NULL); `decided_at` as the chain encodes it. */
export type ChainRow = Record<(typeof FIELDS)[number] | "prev_hash" | "row_hash" | "pruned_at", string | null>;

/** A head recorded elsewhere (`store audit --json`'s `head`): the row at `chain_seq` must still have this hash. */
export interface PinnedHead {
  chain_seq: number;
  row_hash: string;
}

/** What the audit found. */
export interface AuditReport {
  /** Whether the whole chain holds. */
  ok: boolean;
  /** Rows walked in the chain (tombstones included). */
  rows: number;
  /** Tombstones among them. */
  tombstones: number;
  /** The last row's `chain_seq` and `row_hash`: record it elsewhere, to catch a chain rewritten whole. */
  head: { chain_seq: number; row_hash: string } | null;
  /** Decision records the runs published (`approvals/*.json`) checked against the log (`decision_records_audit.ts`). */
  records: number;
  /**
   * The first break: the row, and what is wrong with it; or, the chain holding, the first published record that is
   * not the log's decision (`file` names it).
   */
  broken: {
    chain_seq: number | null;
    episode_id: string | null;
    checkpoint_id: string | null;
    problem: string;
    file?: string;
  } | null;
}

/**
 * A row's hash as the chain defines it: sha256 (hex) of `noema-decision/1|<prev_hash>|<field>|…`, each field
 * `<length in UTF-8 bytes>:<text>`, or `~` for NULL.
 *
 * @example
 * ```ts
 * import { chainRowHash } from "./decision_audit.ts";
 * // chainRowHash(row) === row.row_hash
 * ```
 */
export function chainRowHash(r: ChainRow): string {
  const parts = [CHAIN_FORMAT, r.prev_hash ?? ""];
  for (const f of FIELDS) {
    const v = r[f];
    parts.push(v === null ? "~" : `${Buffer.byteLength(v, "utf8")}:${v}`);
  }
  return createHash("sha256").update(parts.join("|"), "utf8").digest("hex");
}

function breakOf(r: ChainRow | null, problem: string): AuditReport["broken"] {
  return {
    chain_seq: r?.chain_seq == null ? null : Number(r.chain_seq),
    episode_id: r?.episode_id ?? null,
    checkpoint_id: r?.checkpoint_id ?? null,
    problem,
  };
}

/**
 * Walks the decision chain and reports the first break (see the module's doc).
 *
 * @example
 * ```ts
 * import { auditDecisions } from "./decision_audit.ts";
 * // const report = await auditDecisions(store.sql); if (!report.ok) console.error(report.broken);
 * ```
 */
export async function auditDecisions(sql: postgres.Sql, pinned?: PinnedHead): Promise<AuditReport> {
  const report: AuditReport = { ok: true, rows: 0, tombstones: 0, head: null, records: 0, broken: null };
  const [stray] = await sql`SELECT episode_id, checkpoint_id FROM noema_decisions WHERE chain_seq IS NULL LIMIT 1`;
  let prev = CHAIN_GENESIS, seq = 0;
  for (;;) {
    const page = await sql<ChainRow[]>`SELECT chain_seq::text, episode_id, checkpoint_id, state_hash,
        checkpoint_digest, decision, decided_by, decided_by_role, authenticated_as, claimed_by, note, host,
        to_char(decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS decided_at,
        prev_hash, row_hash, pruned_at::text
      FROM noema_decisions WHERE chain_seq > ${seq} ORDER BY noema_decisions.chain_seq LIMIT ${PAGE}`;
    for (const r of page) {
      const problem = rowProblem(r, seq, prev);
      const wrong = problem ??
        (pinned && Number(r.chain_seq) === pinned.chain_seq && r.row_hash !== pinned.row_hash
          ? `its row_hash ${r.row_hash} is not the pinned head's ${pinned.row_hash}: the chain was rewritten`
          : null);
      if (wrong !== null) return { ...report, ok: false, broken: breakOf(r, wrong) };
      report.rows++;
      if (r.pruned_at !== null) report.tombstones++;
      seq = Number(r.chain_seq);
      prev = r.row_hash!;
      report.head = { chain_seq: seq, row_hash: prev };
    }
    if (page.length < PAGE) break;
  }
  if (pinned && seq < pinned.chain_seq) {
    const problem = `the chain ends at chain_seq ${seq}, before the pinned head ${pinned.chain_seq}: rows were ` +
      `removed from its end`;
    return { ...report, ok: false, broken: { chain_seq: seq, episode_id: null, checkpoint_id: null, problem } };
  }
  if (stray) {
    const problem = "has no chain_seq: inserted out of band (not through noema_decide)";
    return { ...report, ok: false, broken: breakOf({ ...stray, chain_seq: null } as ChainRow, problem) };
  }
  const published = await auditDecisionRecords(sql);
  report.records = published.records;
  if (published.broken === null) return report;
  return { ...report, ok: false, broken: { chain_seq: null, ...published.broken } };
}

/** What is wrong with a row that follows `seq` (whose hash was `prev`), or null. */
function rowProblem(r: ChainRow, seq: number, prev: string): string | null {
  const n = Number(r.chain_seq);
  if (n !== seq + 1) {
    return `follows chain_seq ${seq}: row${n - seq > 2 ? `s ${seq + 1}…${n - 1} are` : ` ${seq + 1} is`} missing ` +
      `(deleted)`;
  }
  if (r.prev_hash !== prev) {
    return `its prev_hash ${r.prev_hash} does not link to the previous row's hash ${prev} (a row before it was ` +
      `changed, deleted or inserted out of band)`;
  }
  if (r.pruned_at !== null) return r.row_hash ? null : "a tombstone without its row_hash";
  const h = chainRowHash(r);
  if (r.row_hash !== h) {
    return `its content does not match its row_hash (changed after it was recorded: stored ${r.row_hash}, ` +
      `recomputed ${h})`;
  }
  return null;
}
