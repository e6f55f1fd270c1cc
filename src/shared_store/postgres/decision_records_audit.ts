/**
 * The other half of `noema store audit`: the decision records the runs
 * published (`approvals/<checkpoint>.json` in `noema_files`) against the
 * store's decision log. A record that says the store authenticated its
 * decider (`authenticated_as` `database_role` or `serve_token`: a decision
 * made through the store) must be the log's row for that checkpoint: the same
 * decision, made by the same login role. A runner's role can publish any file
 * of its own runs, so a record it wrote itself ("approved by ana", as the
 * database would say it) is caught here, where every reader of the run would
 * otherwise believe it. Records of decisions made without the store (`os_user`)
 * claim nothing the log could hold. Read a page at a time (bounded memory); a
 * record over 1 MiB is not one noema wrote, and is reported unread.
 *
 * @module
 */
import type postgres from "postgres";

/** Records read per page. */
const PAGE = 1000;
/** The most of one record read: noema's are a few hundred bytes. */
const MAX_RECORD_BYTES = 1 << 20;
/** What a record says authenticated its decider, when that was the store. */
const BY_THE_STORE = new Set(["database_role", "serve_token"]);

/** The first published decision record that is not the store's decision, and how many were checked. */
export interface RecordsAudit {
  /** Decision records read (those of decisions made without the store included). */
  records: number;
  /** The first record that is not what the decision log holds (`file`: its name in the episode), or null. */
  broken: { episode_id: string; checkpoint_id: string | null; file: string; problem: string } | null;
}

/** A log row as compared (null fields as NULL). */
interface LoggedDecision {
  decision: string | null;
  decided_by: string | null;
  decided_by_role: string | null;
  authenticated_as: string | null;
  pruned_at: string | null;
}

/**
 * Checks every published decision record against the decision log (see the module's doc).
 *
 * @example
 * ```ts
 * import { auditDecisionRecords } from "./decision_records_audit.ts";
 * // const { records, broken } = await auditDecisionRecords(store.sql);
 * ```
 */
export async function auditDecisionRecords(sql: postgres.Sql): Promise<RecordsAudit> {
  let records = 0, after = { episode: "", name: "" };
  for (;;) {
    const page = await sql<{ episode_id: string; name: string; size: number; bytes: Buffer | null }[]>`
      SELECT episode_id, name, octet_length(bytes) AS size,
          CASE WHEN octet_length(bytes) <= ${MAX_RECORD_BYTES} THEN bytes END AS bytes
        FROM noema_files WHERE name LIKE 'approvals/%' AND (episode_id, name) > (${after.episode}, ${after.name})
        ORDER BY episode_id, name LIMIT ${PAGE}`;
    if (page.length === 0) return { records, broken: null };
    const logged = await loggedDecisions(sql, [...new Set(page.map((f) => f.episode_id))]);
    for (const f of page) {
      records++;
      const problem = recordProblem(f, logged);
      if (problem !== null) {
        const checkpoint = /^approvals\/(.+)\.json$/.exec(f.name)?.[1] ?? null;
        return { records, broken: { episode_id: f.episode_id, checkpoint_id: checkpoint, file: f.name, problem } };
      }
    }
    if (page.length < PAGE) return { records, broken: null };
    after = { episode: page.at(-1)!.episode_id, name: page.at(-1)!.name };
  }
}

/** The decision log's rows of these episodes, by `episode_id checkpoint_id`. */
async function loggedDecisions(sql: postgres.Sql, episodes: string[]): Promise<Map<string, LoggedDecision>> {
  const rows = await sql<(LoggedDecision & { episode_id: string; checkpoint_id: string })[]>`
    SELECT episode_id, checkpoint_id, decision, decided_by, decided_by_role, authenticated_as, pruned_at::text
    FROM noema_decisions WHERE episode_id = ANY(${episodes})`;
  return new Map(rows.map((r) => [`${r.episode_id} ${r.checkpoint_id}`, r]));
}

/** What is wrong with one published record, or null. */
function recordProblem(
  f: { episode_id: string; name: string; size: number; bytes: Buffer | null },
  logged: Map<string, LoggedDecision>,
): string | null {
  if (f.bytes === null) return `${f.name} is ${f.size} bytes: not a decision record noema wrote (not read)`;
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(f.bytes));
  } catch {
    return `${f.name} is not JSON: not a decision record noema wrote`;
  }
  if (typeof r !== "object" || r === null || Array.isArray(r)) return `${f.name} is not a JSON object`;
  if (!BY_THE_STORE.has(String(r.authenticated_as))) return null; // decided without the store: the log holds nothing
  const row = logged.get(`${f.episode_id} ${String(r.checkpoint_id)}`);
  const says = `${f.name} says the store authenticated ${JSON.stringify(r.database_role ?? r.by ?? null)} ` +
    `(${r.authenticated_as}) deciding ${JSON.stringify(r.decision ?? null)}`;
  if (row === undefined) return `${says}, but the decision log holds no decision on that checkpoint: not the store's`;
  if (row.pruned_at !== null) return null; // its content cleared by retention: nothing left to compare
  const differs = row.decision !== r.decision
    ? "decision"
    : row.decided_by_role !== (r.database_role ?? null)
    ? "database_role"
    : row.authenticated_as !== r.authenticated_as
    ? "authenticated_as"
    : null;
  return differs === null
    ? null
    : `${says}, but the decision log's row has another ${differs} (${
      JSON.stringify(differs === "database_role" ? row.decided_by_role : row[differs])
    }): not the store's decision`;
}
