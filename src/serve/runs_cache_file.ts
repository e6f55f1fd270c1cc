/**
 * The runs cache file of `noema serve`: `<root>/state/serve/runs-cache.jsonl`,
 * the list entry and the facts (see `run_facts.ts`) of each sealed run, so a
 * restarted server sorts 100,000 runs by cost without reading 100,000
 * summaries. A line per run, after a header line naming the format and its
 * version:
 *
 * ```text
 * {"format":"noema-serve-runs","version":1}
 * ["ep_…","<manifest size>:<mtime ms>:<ctime ms>:<inode>","ok","the task","2026-…",{tags},"success",0, <facts…>]
 * ```
 *
 * A record holds only while the run's `manifest.json` has the identity it
 * names (see {@link manifestSig}): a run sealed again, edited or replaced
 * is read again. The file is only a cache: one that is missing, of another
 * version, a symbolic link, or holds a line that is not a whole, well-formed
 * record (garbage, a truncated last line) loses that line or all of it, never
 * more; it is read in chunks (bounded lines, records and bytes) and written to
 * a temp file renamed over it, never through a symbolic link (see
 * `src/store/nofollow.ts`), so two servers on one root each replace it whole.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readSync, rmSync, statSync } from "node:fs";
import { open, rename, rm, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import process from "node:process";
import type { EpisodeEntry } from "../read/list.ts";
import { mkdirBelow, O_NOFOLLOW, refuseSymlinks } from "../store/nofollow.ts";
import type { RunFacts } from "./run_facts.ts";

/** The header line: the format and its version (a file of another version is not read). */
const HEADER = JSON.stringify({ format: "noema-serve-runs", version: 1 });
/** A record line longer than this is not written, and skipped when read. */
export const MAX_LINE_BYTES = 16 * 1024;
/** Records written and read at most. */
export const MAX_RECORDS = 250_000;
/** Bytes written and read at most. */
export const MAX_FILE_BYTES = 128 * 1024 * 1024;
/** Bytes read or written at a time. */
const CHUNK = 1 << 20;

/** One sealed run as the cache holds it. */
export interface CachedRun {
  /** The episode id (its directory's name). */
  id: string;
  /** The identity of its manifest when it was read (see {@link manifestSig}). */
  sig: string;
  /** Its list entry, without `episode_dir` (the directory it is found in). */
  entry: Omit<EpisodeEntry, "episode_dir">;
  /** Its facts. */
  facts: RunFacts;
}

/**
 * Where the runs cache of `root` lives.
 *
 * @example
 * ```ts
 * import { runsCachePath } from "./runs_cache_file.ts";
 * runsCachePath("/w/.noema"); // "/w/.noema/state/serve/runs-cache.jsonl"
 * ```
 */
export function runsCachePath(root: string): string {
  return join(root, "state", "serve", "runs-cache.jsonl");
}

/** The identity of a file from its stat. */
function sigOf(s: { size: number; mtimeMs: number; ctimeMs: number; ino: number }): string {
  return `${s.size}:${s.mtimeMs}:${s.ctimeMs}:${s.ino}`;
}

/**
 * The identity of the manifest in episode directory `dir` (size, modification and change times, inode: a sealed
 * run's manifest is renamed into place, so sealing it again changes it), or null when it has none.
 *
 * @example
 * ```ts
 * import { manifestSig } from "./runs_cache_file.ts";
 * manifestSig(".noema/episodes/ep_1"); // "1234:1767225600000.5:1767225600000.5:4242"
 * ```
 */
export function manifestSig(dir: string): string | null {
  const s = statSync(join(dir, "manifest.json"), { throwIfNoEntry: false });
  return s?.isFile() ? sigOf(s) : null;
}

/**
 * {@link manifestSig}, without blocking.
 *
 * @example
 * ```ts
 * import { manifestSigAsync } from "./runs_cache_file.ts";
 * await manifestSigAsync(".noema/episodes/ep_1");
 * ```
 */
export async function manifestSigAsync(dir: string): Promise<string | null> {
  try {
    const s = await stat(join(dir, "manifest.json"));
    return s.isFile() ? sigOf(s) : null;
  } catch {
    return null;
  }
}

const isStr = (v: unknown): v is string => typeof v === "string";
const strOrNull = (v: unknown) => v === null || typeof v === "string";
const num = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const numOrNull = (v: unknown) => v === null || num(v);
function strings(v: unknown): v is string[] {
  if (!Array.isArray(v)) return false;
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== "string") return false;
  return true;
}

/** A record as one line (no newline), or null when it would be longer than {@link MAX_LINE_BYTES}. */
export function encodeRun(r: CachedRun): string | null {
  const e = r.entry, f = r.facts;
  const line = JSON.stringify([
    r.id,
    r.sig,
    e.status,
    e.task,
    e.started_at,
    e.tags,
    e.outcome ?? null,
    e.would_veto_count ?? null,
    f.duration_ms,
    f.adapter,
    f.policies,
    f.models,
    f.cost_usd,
    f.cost_note,
    f.vetoes,
    f.would_vetoes,
    f.approved,
    f.rejected,
  ]);
  return Buffer.byteLength(line) > MAX_LINE_BYTES ? null : line;
}

/** A line as a record, or null for anything but a whole, well-formed record. */
export function decodeRun(line: string): CachedRun | null {
  let a: unknown;
  try {
    a = JSON.parse(line);
  } catch {
    return null;
  }
  if (!Array.isArray(a) || a.length !== 18) return null;
  if (!isStr(a[0]) || !isStr(a[1]) || !isStr(a[2]) || !strOrNull(a[3]) || !strOrNull(a[4])) return null;
  const tags = a[5];
  if (typeof tags !== "object" || tags === null || Array.isArray(tags) || !strOrNull(a[6])) return null;
  if (!numOrNull(a[7]) || !numOrNull(a[8]) || !strOrNull(a[9]) || !strings(a[10]) || !strings(a[11])) return null;
  if (!numOrNull(a[12]) || !strOrNull(a[13]) || !num(a[14]) || !num(a[15]) || !num(a[16]) || !num(a[17])) return null;
  const entry: CachedRun["entry"] = {
    episode_id: a[0],
    lifecycle: "terminal",
    status: a[2],
    task: a[3],
    started_at: a[4],
    tags,
    run_state: "terminal",
  };
  if (a[6] !== null) entry.outcome = a[6];
  if (a[7] !== null) entry.would_veto_count = a[7];
  const facts: RunFacts = {
    duration_ms: a[8],
    adapter: a[9],
    policies: a[10],
    models: a[11],
    cost_usd: a[12],
    cost_note: a[13],
    vetoes: a[14],
    would_vetoes: a[15],
    approved: a[16],
    rejected: a[17],
  };
  return { id: a[0], sig: a[1], entry, facts };
}

/** Splits decoded chunks into lines, skipping any longer than {@link MAX_LINE_BYTES}; the first must be the header. */
class LineReader {
  readonly runs = new Map<string, CachedRun>();
  #decoder = new TextDecoder();
  #carry = "";
  #lines = 0;
  /** False once the header is wrong or a bound is reached: read no more. */
  ok = true;

  push(bytes: Uint8Array | null): void {
    const text = this.#carry +
      (bytes === null ? this.#decoder.decode() : this.#decoder.decode(bytes, { stream: true }));
    const parts = text.split("\n");
    this.#carry = bytes === null ? "" : parts.pop()!; // the last line without its newline: truncated
    if (this.#carry.length > MAX_LINE_BYTES) this.#carry = "\u0000"; // too long: never a record
    for (const line of parts) this.#line(line);
  }

  #line(line: string): void {
    if (!this.ok) return;
    if (this.#lines++ === 0) {
      this.ok = line === HEADER;
      return;
    }
    const r = line.length <= MAX_LINE_BYTES ? decodeRun(line) : null;
    if (r !== null) this.runs.set(r.id, r);
    if (this.runs.size >= MAX_RECORDS) this.ok = false;
  }
}

const READ_FLAGS = constants.O_RDONLY | O_NOFOLLOW | (constants.O_NONBLOCK ?? 0);

/**
 * The records of the runs cache of `root`, by episode id; none when there is none, or it cannot be read as one
 * (another version, a symbolic link at it or at `state/` or `state/serve/`, not a regular file).
 *
 * @example
 * ```ts
 * import { readRunsCache } from "./runs_cache_file.ts";
 * readRunsCache(".noema").size;
 * ```
 */
export function readRunsCache(root: string): Map<string, CachedRun> {
  const path = runsCachePath(root), reader = new LineReader();
  let fd: number | undefined;
  try {
    refuseSymlinks(path, root, "read");
    fd = openSync(path, READ_FLAGS);
    if (!fstatSync(fd).isFile()) return reader.runs;
    const buf = Buffer.allocUnsafe(CHUNK);
    let total = 0;
    while (reader.ok && total < MAX_FILE_BYTES) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n === 0) break;
      total += n;
      reader.push(buf.subarray(0, n));
    }
    reader.push(null);
  } catch {
    // no cache, or not one to read: every run is read from its files
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  return reader.runs;
}

/**
 * {@link readRunsCache} without blocking for long: read a chunk at a time.
 *
 * @example
 * ```ts
 * import { readRunsCacheAsync } from "./runs_cache_file.ts";
 * (await readRunsCacheAsync(".noema")).size;
 * ```
 */
export async function readRunsCacheAsync(root: string): Promise<Map<string, CachedRun>> {
  const path = runsCachePath(root), reader = new LineReader();
  try {
    refuseSymlinks(path, root, "read");
    const fh = await open(path, READ_FLAGS);
    try {
      if (!(await fh.stat()).isFile()) return reader.runs;
      const buf = Buffer.allocUnsafe(CHUNK);
      let total = 0;
      while (reader.ok && total < MAX_FILE_BYTES) {
        const { bytesRead } = await fh.read(buf, 0, CHUNK, null);
        if (bytesRead === 0) break;
        total += bytesRead;
        reader.push(buf.subarray(0, bytesRead));
      }
      reader.push(null);
    } finally {
      await fh.close();
    }
  } catch {
    // as readRunsCache
  }
  return reader.runs;
}

let counter = 0;
/** A temp file older than this was left by a server that died while writing it. */
const STALE_TEMP_MS = 10 * 60_000;

/** Removes temp files of the cache left by killed servers. */
function removeStaleTemps(path: string): void {
  const dir = dirname(path), prefix = `${path.slice(dir.length + 1)}.tmp-`;
  try {
    for (const name of readdirSync(dir)) {
      if (!name.startsWith(prefix)) continue;
      const s = lstatSync(join(dir, name), { throwIfNoEntry: false });
      if (s?.isFile() && Date.now() - s.mtimeMs > STALE_TEMP_MS) rmSync(join(dir, name), { force: true });
    }
  } catch { /* nothing to clean */ }
}

/**
 * Replaces the runs cache of `root` with `runs` (at most {@link MAX_RECORDS} records and {@link MAX_FILE_BYTES}
 * bytes; a record too long to keep is left out): written to a temp file beside it, a chunk at a time, then
 * renamed over it. Throws (nothing replaced) when a component below the root is a symbolic link or it cannot write.
 *
 * @example
 * ```ts
 * import { writeRunsCache } from "./runs_cache_file.ts";
 * await writeRunsCache(".noema", []);
 * ```
 */
export async function writeRunsCache(root: string, runs: Iterable<CachedRun>): Promise<number> {
  const path = runsCachePath(root);
  mkdirBelow(dirname(path), root);
  refuseSymlinks(path, root);
  removeStaleTemps(path);
  const tmp = `${path}.tmp-${process.pid}-${(counter++).toString(36)}`;
  const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o600);
  let written = 0;
  try {
    let chunk = HEADER + "\n", bytes = chunk.length;
    for (const r of runs) {
      const line = encodeRun(r);
      if (line === null) continue;
      const size = Buffer.byteLength(line) + 1;
      if (written >= MAX_RECORDS || bytes + size > MAX_FILE_BYTES) break;
      chunk += line + "\n";
      bytes += size;
      written++;
      if (chunk.length >= CHUNK) {
        await fh.write(chunk);
        chunk = "";
      }
    }
    await fh.write(chunk);
    await fh.close();
    refuseSymlinks(path, root); // a link planted meanwhile: rename would replace it, but say so instead
    await rename(tmp, path);
  } catch (e) {
    await fh.close().catch(() => {});
    await rm(tmp, { force: true });
    throw e;
  }
  return written;
}
