/**
 * Search in a PostgreSQL store: the stored `events.jsonl` lines holding the
 * text, found by the trigram index of schema version 7 over each line as
 * escaped text (`encode(bytes, 'escape')`, immutable, and never failing on
 * a line that is not UTF-8), then parsed here, where
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
 * Bounded: the index finds at most {@link CAP} lines (a needle rare enough
 * for the index: found wherever it is). A needle the index cannot serve (no
 * three letters or digits in a row) or one found in more lines than that is
 * looked for in the newest {@link SCAN_EPISODES} runs, newest first, and the
 * result says it stopped early.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import type postgres from "postgres";
import { lineHits } from "../../read/event_search.ts";
import type { EventSearchHit, EventSearchOptions, EventSearchResult } from "../shared_store.ts";

/** Most lines the index path reads. */
export const CAP = 2000;
/** Runs the scan path reads, newest first. */
export const SCAN_EPISODES = 1000;
/** Most matching lines read per run. */
const LINES_PER_EPISODE = 20;

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

type Row = { episode_id: string; seq: string | number; host: string; bytes: Uint8Array; found?: string | number };

function scoped(sql: postgres.Sql, project: string | undefined): postgres.PendingQuery<postgres.Row[]> {
  return project === undefined ? sql`TRUE` : sql`e.project = ${project}`;
}

/** The index path: every line the index finds (at most CAP + 1), newest runs first. */
async function indexed(sql: postgres.Sql, pattern: string, project: string | undefined): Promise<Row[]> {
  return await sql<Row[]>`WITH m AS MATERIALIZED (
      SELECT l.episode_id, l.seq, l.bytes, e.host, e.stored_at
      FROM noema_lines l JOIN noema_episodes e ON e.episode_id = l.episode_id
      WHERE l.stream = 'events.jsonl' AND encode(l.bytes, 'escape') ILIKE ${pattern} AND ${scoped(sql, project)}
      LIMIT ${CAP + 1})
    SELECT episode_id, seq, bytes, host, found FROM (
      SELECT m.*, row_number() OVER (PARTITION BY episode_id ORDER BY seq) AS nth, count(*) OVER () AS found FROM m
    ) r WHERE nth <= ${LINES_PER_EPISODE}
    ORDER BY stored_at DESC, episode_id DESC, seq`;
}

/** The scan path: the newest SCAN_EPISODES runs' lines, each run's read by its key (the index is not used). */
async function scanned(sql: postgres.Sql, pattern: string, project: string | undefined): Promise<Row[]> {
  return await sql<Row[]>`SELECT e.episode_id, l.seq, l.bytes, e.host
    FROM (SELECT e.episode_id, e.host, e.stored_at FROM noema_episodes e WHERE ${scoped(sql, project)}
      ORDER BY e.stored_at DESC, e.episode_id DESC LIMIT ${SCAN_EPISODES}) e
    CROSS JOIN LATERAL (SELECT seq, bytes FROM noema_lines l
      WHERE l.episode_id = e.episode_id AND l.stream = 'events.jsonl'
        AND (encode(l.bytes, 'escape') || '') ILIKE ${pattern} -- not the index's expression: read by the key
      ORDER BY seq LIMIT ${LINES_PER_EPISODE}) l
    ORDER BY e.stored_at DESC, e.episode_id DESC, l.seq`;
}

/** Whether the project's catalog holds more runs than the scan path reads. */
async function moreThanScanned(sql: postgres.Sql, project: string | undefined): Promise<boolean> {
  const [r] = await sql`SELECT EXISTS (SELECT 1 FROM noema_episodes e WHERE ${scoped(sql, project)}
    OFFSET ${SCAN_EPISODES}) AS more`;
  return Boolean(r.more);
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
  let rows: Row[] = [], truncated = false;
  // pg_trgm takes trigrams from runs of letters and digits: a needle without three in a row gives the index nothing.
  if (/[a-z0-9]{3}/i.test(pattern)) {
    rows = await indexed(sql, pattern, o.project);
    truncated = rows.length > 0 && Number(rows[0].found) > CAP;
  }
  if (truncated || !/[a-z0-9]{3}/i.test(pattern)) {
    const newest = await scanned(sql, pattern, o.project);
    const seen = new Set(newest.map((r) => `${r.episode_id} ${r.seq}`));
    rows = [...newest, ...rows.filter((r) => !seen.has(`${r.episode_id} ${r.seq}`))];
    truncated ||= await moreThanScanned(sql, o.project);
  }
  return hitsOf(rows, query, o, truncated);
}

function hitsOf(rows: Row[], query: string, o: EventSearchOptions, truncated: boolean): EventSearchResult {
  const limit = o.limit ?? 200, perEpisode = o.perEpisode ?? 5;
  const hits: EventSearchHit[] = [];
  const per = new Map<string, number>();
  for (const r of rows) {
    const n = per.get(r.episode_id) ?? 0;
    if (n >= perEpisode) continue;
    const found = lineHits(Buffer.from(r.bytes).toString("utf8"), query).slice(0, perEpisode - n);
    if (found.length === 0) continue;
    if (hits.length + found.length > limit) return { hits, truncated: true };
    per.set(r.episode_id, n + found.length);
    for (const h of found) hits.push({ episode_id: r.episode_id, seq: Number(r.seq), host: r.host, ...h });
  }
  return { hits, truncated };
}
