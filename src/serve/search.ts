/**
 * Search over the runs of a root: the text given (case-insensitive, as is)
 * in each run's task, its tool calls' inputs and outputs (the excerpts its
 * `act` events keep) and its policies' reasons (direction advice, governance
 * reasons), newest runs first. A bounded scan: at most `maxEpisodes` runs and
 * `maxBytes` of events are read per search (it says when it stopped early);
 * a file is searched whole in memory and parsed only at the lines that match.
 *
 * @module
 */
import { closeSync, fstatSync, readdirSync, readSync } from "node:fs";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { asRecord } from "../json.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";
import { openRegularFile } from "../store/regular_file.ts";

/** Where in a run the text was found. */
export type SearchField = "task" | "input" | "output" | "reason";

/** One place the text was found. */
export interface SearchHit {
  episode_id: string;
  field: SearchField;
  /** The step of the tool call or verdict, null for the task. */
  step_id: string | null;
  /** The tool (an input or output) or the policy or rule (a reason), else null. */
  source: string | null;
  /** Up to 80 characters before the match, the match as written, up to 80 after. */
  before: string;
  match: string;
  after: string;
}

/** What a search found. */
export interface SearchResult {
  query: string;
  hits: SearchHit[];
  /** Runs read. */
  scanned: number;
  /** Runs in the root. */
  total: number;
  /** The scan stopped at its bound (runs or bytes) before the oldest run, or at the most hits shown. */
  truncated: boolean;
}

/** Bounds of one search. */
export interface SearchOptions {
  /** Most runs read, newest first. @default {5000} */
  maxEpisodes?: number;
  /** Most bytes of events.jsonl read in all. @default {256 MiB} */
  maxBytes?: number;
  /** Most hits returned. @default {200} */
  maxHits?: number;
  /** Most hits from one run. @default {5} */
  perEpisode?: number;
}

const CONTEXT = 80;
/** Bytes of one events.jsonl searched (its beginning). */
const FILE_BYTES = 32 * 1024 * 1024;

function readHead(path: string, max: number): string | null {
  let fd: number;
  try {
    fd = openRegularFile(path, path, { noFollow: true }); // no FIFO, no link out of the root
  } catch {
    return null;
  }
  try {
    const size = Math.min(fstatSync(fd).size, max);
    const buf = Buffer.allocUnsafe(size);
    let n = 0;
    while (n < size) {
      const got = readSync(fd, buf, n, size - n, n);
      if (got === 0) break;
      n += got;
    }
    return buf.subarray(0, n).toString("utf8");
  } finally {
    closeSync(fd);
  }
}

/**
 * The hit in `text` around its first match of `lower` (the query in lower case), or null.
 *
 * @example
 * ```ts
 * import { hitIn } from "./search.ts";
 * hitIn("Deploy the app", "the")?.match; // "the"
 * ```
 */
export function hitIn(text: string, lower: string): Pick<SearchHit, "before" | "match" | "after"> | null {
  const at = text.toLowerCase().indexOf(lower);
  if (at < 0) return null;
  const end = at + lower.length;
  return {
    before: (at > CONTEXT ? "…" : "") + text.slice(Math.max(0, at - CONTEXT), at),
    match: text.slice(at, end),
    after: text.slice(end, end + CONTEXT) + (text.length > end + CONTEXT ? "…" : ""),
  };
}

const asText = (x: unknown): string | null =>
  x === undefined || x === null ? null : typeof x === "string" ? x : JSON.stringify(x);

/** The searchable texts of one event: (field, source, step, text). */
function textsOf(e: Record<string, unknown>): [SearchField, string | null, string | null, string | null][] {
  const p = asRecord(e.payload);
  const step = typeof p.step_id === "string" ? p.step_id : null;
  if (e.phase === "act") {
    const tool = typeof p.tool === "string" ? p.tool : null;
    return [["input", tool, step, asText(p.input) ?? asText(p.input_excerpt)], [
      "output",
      tool,
      step,
      asText(p.output),
    ]];
  }
  if (e.phase === "direction" || e.phase === "governance") {
    const source = asText(p.policy_id ?? p.rule ?? p.policy);
    return [["reason", source, step, asText(p.advice ?? p.reason ?? p.message ?? p.error)]];
  }
  if (e.phase === "start") return [["task", null, null, asText(p.task)]];
  return [];
}

/** The hits in one run's events (`text` is its events.jsonl, `lower` its lower case). */
function searchEvents(id: string, text: string, needle: string, jsonNeedle: string, max: number): SearchHit[] {
  const hits: SearchHit[] = [];
  const lower = text.toLowerCase();
  let from = 0;
  while (hits.length < max) {
    const at = lower.indexOf(jsonNeedle, from);
    if (at < 0) break;
    const start = lower.lastIndexOf("\n", at) + 1;
    let end = lower.indexOf("\n", at);
    if (end < 0) end = lower.length;
    from = end + 1;
    let e: Record<string, unknown>;
    try {
      e = asRecord(JSON.parse(text.slice(start, end)));
    } catch {
      continue;
    }
    for (const [field, source, step, t] of textsOf(e)) {
      const h = t === null ? null : hitIn(t, needle);
      if (h && hits.length < max) hits.push({ episode_id: id, field, step_id: step, source, ...h });
    }
  }
  return hits;
}

/**
 * Searches the runs of `root` for `query` (see the module doc).
 *
 * @example
 * ```ts
 * import { searchRoot } from "./search.ts";
 * searchRoot(".noema", "permission denied").hits.length;
 * ```
 */
export function searchRoot(root: string, query: string, o: SearchOptions = {}): SearchResult {
  const maxEpisodes = o.maxEpisodes ?? 5000, maxBytes = o.maxBytes ?? 256 * 1024 * 1024;
  const maxHits = o.maxHits ?? 200, perEpisode = o.perEpisode ?? 5;
  const needle = query.toLowerCase();
  const jsonNeedle = JSON.stringify(query).slice(1, -1).toLowerCase();
  let names: string[] = [];
  try {
    names = readdirSync(episodesDir(root), { withFileTypes: true })
      .filter((d) => d.isDirectory() && !episodeIdProblem(d.name)) // a linked "episode" is not followed
      .map((d) => d.name).sort().reverse();
  } catch { /* no episodes yet */ }
  const hits: SearchHit[] = [];
  let scanned = 0, bytes = 0, truncated = false;
  for (const id of names) {
    if (scanned >= maxEpisodes || bytes >= maxBytes || hits.length >= maxHits) {
      truncated = true;
      break;
    }
    scanned++;
    const text = readHead(join(episodesDir(root), id, "events.jsonl"), Math.min(FILE_BYTES, maxBytes - bytes));
    if (text === null) continue;
    bytes += text.length;
    hits.push(...searchEvents(id, text, needle, jsonNeedle, Math.min(perEpisode, maxHits - hits.length)));
  }
  return { query, hits, scanned, total: names.length, truncated };
}
