/**
 * The other half of `noema store audit`: the decision records the runs
 * published (`approvals/<checkpoint>.json` in `noema_files`) against the
 * store's decision log. A record on a checkpoint the log holds a decision for
 * must be the log's row, every field the log holds: the decision, the decider
 * (`by`, `@host` or not), its login role and how it was authenticated, the
 * claimed name, the note (masked or not), the time, the state hash and the
 * checkpoint digest. A record of a decision made without the store
 * (`authenticated_as` `os_user`) on such a checkpoint contradicts the fleet's
 * one decision, and is named too. A record that says the store authenticated
 * its decider (`database_role` or `serve_token`) must have a row at all. A
 * runner's role can publish any file of its own runs, so a record it wrote
 * itself ("approved by ana", as the database would say it) is caught here,
 * where every reader of the run would otherwise believe it. Records of
 * decisions made without the store on checkpoints the store never decided
 * claim nothing the log could hold; records set aside for the store's
 * (`….json.overruled-<ms>`) are evidence, not claims. Read a page at a time
 * (bounded memory); a record over 1 MiB is not one noema wrote, and is
 * reported unread.
 *
 * @module
 */
import type postgres from "postgres";
import { isoTime } from "./row_time.ts";
import { decisionRecordDifference, recordCheckpoint } from "../decision_records.ts";
import type { StoredDecision } from "../shared_store.ts";

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

/** A log row as compared (null fields as NULL; `decided_at` as read, a Date). */
interface LoggedDecision {
  state_hash: string | null;
  checkpoint_digest: string | null;
  decision: string | null;
  decided_by: string | null;
  decided_by_role: string | null;
  authenticated_as: string | null;
  claimed_by: string | null;
  note: string | null;
  host: string | null;
  decided_at: unknown;
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
    SELECT episode_id, checkpoint_id, state_hash, checkpoint_digest, decision, decided_by, decided_by_role,
        authenticated_as, claimed_by, note, host, decided_at, pruned_at::text
    FROM noema_decisions WHERE episode_id = ANY(${episodes})`;
  return new Map(rows.map((r) => [`${r.episode_id} ${r.checkpoint_id}`, r]));
}

/** What is wrong with one published record, or null. */
function recordProblem(
  f: { episode_id: string; name: string; size: number; bytes: Buffer | null },
  logged: Map<string, LoggedDecision>,
): string | null {
  // A record set aside for the store's (`approvals/<checkpoint>.json.overruled-<ms>`) is kept as evidence: it
  // claims no decision, so only `approvals/<checkpoint>.json` is compared.
  const chk = recordCheckpoint(f.name);
  if (chk === null) return null;
  if (f.bytes === null) return `${f.name} is ${f.size} bytes: not a decision record noema wrote (not read)`;
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(f.bytes));
  } catch {
    return `${f.name} is not JSON: not a decision record noema wrote`;
  }
  if (typeof r !== "object" || r === null || Array.isArray(r)) return `${f.name} is not a JSON object`;
  const row = logged.get(`${f.episode_id} ${chk}`);
  const byTheStore = BY_THE_STORE.has(String(r.authenticated_as));
  const says = `${f.name} says ${byTheStore ? "the store authenticated" : "it was decided by"} ` +
    `${JSON.stringify((byTheStore ? r.database_role : null) ?? r.by ?? null)} (${r.authenticated_as ?? "unsaid"}) ` +
    `deciding ${JSON.stringify(r.decision ?? null)}`;
  if (row === undefined) {
    // Decided without the store, on a checkpoint the store never decided: the log holds nothing to compare.
    return byTheStore ? `${says}, but the decision log holds no decision on that checkpoint: not the store's` : null;
  }
  if (row.pruned_at !== null) return null; // its content cleared by retention: nothing left to compare
  if (r.authenticated_as === "os_user") {
    return `${says}, made without the store, but the decision log holds a decision on that checkpoint ` +
      `(${row.decision} by ${row.decided_by}): the store decides for the fleet, so this record contradicts it`;
  }
  const differs = decisionRecordDifference(r, storedOf(f.episode_id, chk, row));
  return differs === null
    ? null
    : `${says}, but the decision log's row has another ${differs[0]} (${
      JSON.stringify(differs[1])
    }): not the store's decision`;
}

/** A log row as the store's decision on `chk`. */
function storedOf(episodeId: string, chk: string, row: LoggedDecision): StoredDecision {
  return {
    episode_id: episodeId,
    checkpoint_id: chk,
    state_hash: String(row.state_hash),
    decision: row.decision as StoredDecision["decision"],
    by: String(row.decided_by),
    note: row.note,
    host: String(row.host),
    at: isoTime(row.decided_at) ?? String(row.decided_at),
    authenticated_as: row.authenticated_as as StoredDecision["authenticated_as"],
    database_role: row.decided_by_role,
    claimed_by: row.claimed_by,
    checkpoint_digest: row.checkpoint_digest,
  };
}
