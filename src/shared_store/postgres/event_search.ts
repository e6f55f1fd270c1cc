/**
 * Search in a PostgreSQL store: the stored `events.jsonl` lines holding the
 * text, found by the trigram index of schema version 7 over each line of the
 * phases whose fields are searched ({@link SEARCHED_PHASES}), as escaped
 * text (`encode(bytes, 'escape')`, immutable, and never failing on a line
 * that is not UTF-8), then parsed here, where
 * `src/read/event_search.ts` decides which fields were hit (text found only in
 * a key, an id or a time is no hit).
 *
 * The needle is matched as it appears inside a line: JSON-escaped (a quote
 * is `\"`), then escaped as `encode` escapes (a backslash doubled, each byte
 * of a character outside ASCII as `\ooo`), then as a `LIKE` pattern (`%`,
 * `_` and `\` literal). `ILIKE` folds the case of ASCII letters; a letter
 * outside ASCII matches as written here, its case folded only when the line
 * is parsed.
 *
 * Bounded: the index path reads at most {@link CAP} lines, joined with the
 * catalog (project, host, order): a needle that rare is found wherever it
 * is. A needle found in more lines (common: the index's order is not the
 * newest first), or one the index cannot serve (no three letters or digits
 * in a row), is looked for in the newest runs instead, batch by batch
 * ({@link SCAN_BATCHES}: 1,000 runs at most), each run's lines read by key,
 * until there are enough hits; the result says it stopped early.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type postgres from "postgres";
import { lineHits } from "../../read/event_search.ts";
import type { EventSearchHit, EventSearchOptions, EventSearchResult } from "../shared_store.ts";

/** Most lines the index path reads: a needle found in more is common, and looked for in the newest runs instead. */
export const CAP = 500;
/** Runs the scan path reads at most, newest first, in batches of these sizes (it stops once it has enough hits). */
export const SCAN_BATCHES = [100, 300, 600];
/** Most matching lines read per run. */
const LINES_PER_EPISODE = 20;
/** pg_trgm takes trigrams from runs of letters and digits: a needle without three in a row gives the index nothing. */
const INDEXABLE = /[a-z0-9]{3}/i;

/**
 * The needle as a pattern over `encode(bytes, 'escape')` of a line: JSON-escaped, `encode`-escaped, LIKE-escaped.
 *
 * @example
 * ```ts
 * import { escapedPattern } from "./event_search.ts";
 * escapedPattern('50% "off"'); // '%50\\% \\\\\\\\"off\\\\\\\\"%'
 * ```
 */
export function escapedPattern(query: string): string {
  let escaped = "";
  for (const b of new TextEncoder().encode(JSON.stringify(query).slice(1, -1))) {
    if (b === 0 || b >= 0x80) escaped += "\\" + b.toString(8).padStart(3, "0");
    else if (b === 0x5c) escaped += "\\\\";
    else escaped += String.fromCharCode(b);
  }
  return "%" + escaped.replace(/[\\%_]/g, (c) => "\\" + c) + "%";
}

/**
 * The lines migration 7 indexes: the phases whose fields are searched (src/read/event_search.ts). As the index's
 * predicate says it, word for word, so that the planner sees the index serves the query.
 */
export const SEARCHED_PHASES: string = `(position('"phase":"act"'::bytea IN l.bytes) > 0
  OR position('"phase":"governance"'::bytea IN l.bytes) > 0 OR position('"phase":"direction"'::bytea IN l.bytes) > 0
  OR position('"phase":"start"'::bytea IN l.bytes) > 0)`;

type Row = { episode_id: string; seq: string | number; host: string; bytes: Uint8Array; found?: string | number };

function scoped(sql: postgres.Sql, project: string | undefined): postgres.PendingQuery<postgres.Row[]> {
  return project === undefined ? sql`TRUE` : sql`e.project = ${project}`;
}

/** The index path: every line the index finds (at most CAP + 1 read; each row says how many), newest runs first. */
async function indexed(sql: postgres.Sql, pattern: string, project: string | undefined): Promise<Row[]> {
  return await sql<Row[]>`WITH m AS MATERIALIZED (
      SELECT l.episode_id, l.seq, e.host, e.stored_at
      FROM noema_lines l JOIN noema_episodes e ON e.episode_id = l.episode_id
      WHERE l.stream = 'events.jsonl' AND ${sql.unsafe(SEARCHED_PHASES)} AND encode(l.bytes, 'escape') ILIKE ${pattern}
        AND ${scoped(sql, project)}
      LIMIT ${CAP + 1})
    SELECT r.episode_id, r.seq, r.host, r.found, CASE WHEN r.found <= ${CAP} THEN l.bytes END AS bytes FROM (
      SELECT m.*, row_number() OVER (PARTITION BY episode_id ORDER BY seq) AS nth, count(*) OVER () AS found FROM m
    ) r JOIN noema_lines l ON l.episode_id = r.episode_id AND l.stream = 'events.jsonl' AND l.seq = r.seq
    WHERE r.nth <= ${LINES_PER_EPISODE}
    ORDER BY r.stored_at DESC, r.episode_id DESC, r.seq`;
}

/**
 * The scan path, one batch: runs `offset…offset+size` of the newest, each run's lines read by its key (the index is
 * not used); a run without a match gives one row without bytes, so that the runs read are counted.
 */
async function scanned(
  sql: postgres.Sql,
  pattern: string,
  project: string | undefined,
  offset: number,
  size: number,
): Promise<Row[]> {
  return await sql<Row[]>`SELECT e.episode_id, l.seq, l.bytes, e.host
    FROM (SELECT e.episode_id, e.host, e.stored_at FROM noema_episodes e WHERE ${scoped(sql, project)}
      ORDER BY e.stored_at DESC, e.episode_id DESC LIMIT ${size} OFFSET ${offset}) e
    LEFT JOIN LATERAL (SELECT seq, bytes FROM noema_lines l
      WHERE l.episode_id = e.episode_id AND l.stream = 'events.jsonl'
        AND (encode(l.bytes, 'escape') || '') ILIKE ${pattern} -- not the index's expression: read by the key
      ORDER BY seq LIMIT ${LINES_PER_EPISODE}) l ON TRUE
    ORDER BY e.stored_at DESC, e.episode_id DESC, l.seq`;
}

/** Whether the project's catalog holds more runs than the scan path reads. */
async function moreThan(sql: postgres.Sql, project: string | undefined, n: number): Promise<boolean> {
  const [r] = await sql`SELECT EXISTS (SELECT 1 FROM noema_episodes e WHERE ${scoped(sql, project)} OFFSET ${n})
    AS more`;
  return Boolean(r.more);
}

/** Hits gathered from lines, newest runs first, within the bounds. */
class Hits {
  readonly hits: EventSearchHit[] = [];
  readonly #per = new Map<string, number>();
  full = false;
  constructor(readonly query: string, readonly limit: number, readonly perEpisode: number) {}

  add(rows: Row[]): void {
    for (const r of rows) {
      const n = this.#per.get(r.episode_id) ?? 0;
      if (r.bytes === null || r.bytes === undefined || n >= this.perEpisode || this.full) continue;
      const found = lineHits(Buffer.from(r.bytes).toString("utf8"), this.query).slice(0, this.perEpisode - n);
      if (found.length === 0) continue;
      if (this.hits.length + found.length > this.limit) {
        this.full = true;
        continue;
      }
      this.#per.set(r.episode_id, n + found.length);
      for (const h of found) this.hits.push({ episode_id: r.episode_id, seq: Number(r.seq), host: r.host, ...h });
      this.full = this.hits.length >= this.limit;
    }
  }
}

/**
 * Finds `query` in the stored event lines (see the module doc).
 *
 * @example
 * ```ts
 * import { searchStoredEvents } from "./event_search.ts";
 * // (await searchStoredEvents(store.sql, "permission denied", { limit: 200 })).hits
 * ```
 */
export async function searchStoredEvents(
  sql: postgres.Sql,
  query: string,
  o: EventSearchOptions,
): Promise<EventSearchResult> {
  const pattern = escapedPattern(query);
  const found = new Hits(query, o.limit ?? 200, o.perEpisode ?? 5);
  if (INDEXABLE.test(pattern)) {
    const rows = await indexed(sql, pattern, o.project);
    if (rows.length === 0 || Number(rows[0].found) <= CAP) {
      found.add(rows);
      return { hits: found.hits, truncated: found.full };
    }
  }
  // Newest first, batch by batch, until the hits are enough or the runs run out.
  let offset = 0;
  for (const size of SCAN_BATCHES) {
    const rows = await scanned(sql, pattern, o.project, offset, size);
    found.add(rows);
    offset += size;
    if (found.full) return { hits: found.hits, truncated: true };
    if (new Set(rows.map((r) => r.episode_id)).size < size) return { hits: found.hits, truncated: false };
  }
  return { hits: found.hits, truncated: await moreThan(sql, o.project, offset) };
}
