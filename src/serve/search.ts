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
import { hitIn, type SearchField, searchJsonl, type TextHit } from "../read/event_search.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";
import { openRegularFile } from "../store/regular_file.ts";

export { hitIn, type SearchField };

/** One place the text was found. */
export interface SearchHit extends TextHit {
  episode_id: string;
  /** The host that holds the run, for a run found in a shared store (absent for the root's own runs). */
  host?: string;
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
    const found = searchJsonl(text, query, Math.min(perEpisode, maxHits - hits.length));
    hits.push(...found.map(({ seq: _seq, ...h }) => ({ episode_id: id, ...h })));
  }
  return { query, hits, scanned, total: names.length, truncated };
}
