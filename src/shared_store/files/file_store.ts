/**
 * The files backend of the shared store: a directory on a team's shared file
 * system (NFS, a mounted volume), selected by a `file:///abs/path` URL. The
 * same semantics as the PostgreSQL backend, with files:
 *
 * - lines keyed `(episode, stream, seq)` with their exact bytes
 *   (`./lines.ts`); an identical resend is ignored, a different line throws
 *   {@link StoreConflictError} and nothing of the batch is stored;
 * - whole files, replaced atomically when their digest changes;
 * - a catalog row per episode, filtered and ordered as in SQL, by a scan;
 * - a decision per checkpoint created exclusively (`link()`), so exactly one
 *   decider wins across processes and hosts;
 * - a lease with a fencing token, read and written under the episode's write
 *   lock (`./write_lock.ts`), which every write holds;
 * - `subscribe` by polling.
 *
 * Nothing is written through a symbolic link or outside the directory; every
 * write is atomic (`src/store/atomic.ts`). Layout: `./layout.ts`.
 *
 * @module
 */
import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  opendirSync,
  openSync,
  readdirSync,
  readFileSync,
} from "node:fs";
import { Buffer } from "node:buffer";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { writeFileAtomic } from "../../store/atomic.ts";
import { sha256, sha256File } from "../../store/hash.ts";
import { episodeIdProblem } from "../../store/ids.ts";
import { readJsonText } from "../../store/json_file.ts";
import { limits } from "../../store/limits.ts";
import { mkdirBelow, O_NOFOLLOW, refuseSymlinks } from "../../store/nofollow.ts";
import { leaseText, readEpisodeLease, takeLease } from "./lease.ts";
import {
  AlreadyDecidedError,
  type AppendResult,
  type CatalogEntry,
  type CatalogFilter,
  type CatalogRow,
  type EventSearchOptions,
  type EventSearchResult,
  type FencingToken,
  isUnreadable,
  type LeaseOptions,
  type LeaseOwner,
  PRUNE_BATCH,
  type PruneBatch,
  type PruneOptions,
  type SharedStore,
  StaleLeaseError,
  StoreConflictError,
  type StoredDecision,
  type StoredFile,
  StoredFileTooLargeError,
  StoreSchemaError,
  type StoreStatus,
  StoreUnreachableError,
  type StreamDigest,
  type WaitingRow,
} from "../shared_store.ts";
import { catalogEntry, readableFields, unreadableRow } from "../catalog_row.ts";
import { matchesFilter, TopRows } from "./catalog.ts";
import { decodeName, encodeName, episodePath, STORED_AT_FILE, streamPath, VERSION_FILE } from "./layout.ts";
import { appendStoredLines, countLines, readStoredHead, readStoredLines } from "./lines.ts";
import { SCAN, scanEvents } from "./search.ts";
import { withWriteLock } from "./write_lock.ts";
import { leaseLive, pruneEpisodeDir } from "./prune.ts";
import { digestByPages } from "../stream_digest.ts";

/** The schema version of the files layout this noema writes. */
export const FILES_SCHEMA_VERSION = 1;

/** How often a subscriber looks for changes, in ms. */
const POLL_MS = 200;

function iso(v: string | null): string | null {
  if (v === null) return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? v : new Date(t).toISOString();
}

/**
 * A shared store in a directory.
 *
 * @example
 * ```ts
 * import { FileStore } from "./file_store.ts";
 * const store = new FileStore("file:///mnt/noema");
 * await store.migrate();
 * await store.close();
 * ```
 */
export class FileStore implements SharedStore {
  readonly kind = "files";
  readonly location: string;
  /** The store's directory (absolute). */
  readonly dir: string;
  #ready = false;
  readonly #timers = new Set<ReturnType<typeof setInterval>>();

  /** @param url a `file:///abs/path` URL */
  constructor(url: string) {
    this.location = url;
    this.dir = fileURLToPath(url).replace(/\/+$/, "") || "/";
  }

  /**
   * Reads a small file below the store's directory, never through a symlink; null when absent. One over `maxBytes` is
   * not read (`tooLarge` is called with its size).
   */
  #read(path: string, maxBytes?: number, tooLarge?: (size: number) => never): Buffer | null {
    refuseSymlinks(path, this.dir, "read");
    let fd: number;
    try {
      fd = openSync(path, constants.O_RDONLY | O_NOFOLLOW);
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return null;
      throw e;
    }
    try {
      if (maxBytes !== undefined && tooLarge) {
        const size = fstatSync(fd).size;
        if (size > maxBytes) tooLarge(size);
      }
      return readFileSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  #text(path: string): string | null {
    return this.#read(path)?.toString("utf8") ?? null;
  }

  #json<T>(path: string): T | null {
    const b = this.#read(path);
    if (b === null) return null;
    try {
      return JSON.parse(b.toString("utf8")) as T;
    } catch (e) {
      throw new StoreSchemaError(`the shared store file ${path} is not valid JSON: ${(e as Error).message}`);
    }
  }

  #write(path: string, data: string | Uint8Array, exclusive = false): void {
    writeFileAtomic(path, data, { root: this.dir, exclusive });
  }

  #version(): number {
    if (!existsSync(this.dir)) throw new StoreUnreachableError(this.location, `no such directory ${this.dir}`);
    return this.#json<{ version?: number }>(join(this.dir, VERSION_FILE))?.version ?? 0;
  }

  /** Throws unless the layout is initialised and not newer than this noema's. */
  #check(): void {
    if (this.#ready) return;
    const v = this.#version();
    if (v === 0) {
      throw new StoreSchemaError(`the shared store at ${this.location} has no noema schema: run noema store init`);
    }
    if (v > FILES_SCHEMA_VERSION) throw this.#newer(v);
    this.#ready = true;
  }

  #newer(v: number): StoreSchemaError {
    return new StoreSchemaError(
      `the shared store at ${this.location} has schema version ${v}, newer than this noema's ` +
        `${FILES_SCHEMA_VERSION}: upgrade noema`,
    );
  }

  /** The episode's directory, after the checks every operation makes. */
  #ep(episodeId: string): string {
    this.#check();
    return episodePath(this.dir, episodeId);
  }

  /** Inside the write lock: refuses a write whose fencing token is not the lease's current one. */
  #fence(ep: string, episodeId: string, token: FencingToken | undefined): void {
    if (token === undefined) return;
    const current = readEpisodeLease((p) => this.#text(p), ep)?.token ?? 0n;
    if (current !== token) throw new StaleLeaseError(episodeId, token, current);
  }

  migrate(): Promise<{ from: number; to: number }> {
    return Promise.resolve().then(() => {
      mkdirBelow(join(this.dir, "episodes"), this.dir);
      const from = this.#version();
      if (from > FILES_SCHEMA_VERSION) throw this.#newer(from);
      if (from === 0) {
        try {
          this.#write(join(this.dir, VERSION_FILE), JSON.stringify({ version: FILES_SCHEMA_VERSION }) + "\n", true);
        } catch (e) {
          if ((e as { code?: string }).code !== "EEXIST") throw e;
          return { from: this.#version(), to: FILES_SCHEMA_VERSION }; // a racing migrator made it
        }
      }
      return { from, to: Math.max(from, FILES_SCHEMA_VERSION) };
    });
  }

  status(): Promise<StoreStatus> {
    return Promise.resolve().then(() => {
      const version = this.#version();
      let episodes: number | null = null;
      if (version > 0) {
        episodes = 0;
        this.#scan(() => episodes!++);
      }
      return {
        kind: this.kind,
        location: this.location,
        schema_version: version,
        latest_version: FILES_SCHEMA_VERSION,
        episodes,
      };
    });
  }

  /**
   * Calls `see` with every catalog row (or the marker of one that cannot be read) and the fields of it a filter may
   * use, reading one at a time (the episodes directory is streamed).
   */
  #scan(see: (row: CatalogEntry, fields: CatalogRow) => void): void {
    const root = join(this.dir, "episodes");
    refuseSymlinks(root, this.dir, "read");
    const d = opendirSync(root);
    try {
      for (let e = d.readSync(); e !== null; e = d.readSync()) {
        if (!e.isDirectory() || episodeIdProblem(e.name)) continue;
        const got = this.#catalog(e.name, join(root, e.name));
        if (got) see(got.row, got.fields);
      }
    } finally {
      d.closeSync();
    }
  }

  /**
   * The catalog row in episode directory `ep`, checked: a row that is not valid UTF-8 or JSON, not of the right
   * types, larger than the limit (never read then), not a regular file, or naming another episode than `id` (a row
   * copied from another episode's folder) is an unreadable marker; with the fields of it that can be read, for
   * filters. Null when the episode has no row.
   */
  #catalog(id: string, ep: string): { row: CatalogEntry; fields: CatalogRow } | null {
    const path = join(ep, "catalog.json");
    const maxBytes = limits().catalogRowBytes;
    let value: Record<string, unknown>;
    try {
      refuseSymlinks(path, this.dir, "read");
      value = readJsonText(path, path, { noFollow: true, maxBytes }).value;
    } catch (e) {
      if ((e as { code?: string }).code === "not_found") return null;
      const stored_at = this.#storedAt(ep);
      return {
        row: { ...unreadableRow(id, (e as Error).message ?? String(e)), stored_at },
        fields: { ...readableFields(null, id), stored_at },
      };
    }
    const stored_at = this.#storedAt(ep);
    const project = readableFields(value, id).project;
    return {
      row: { ...catalogEntry(value, id, path), stored_at, ...(project ? { project } : {}) },
      fields: { ...readableFields(value, id), stored_at },
    };
  }

  lineCount(episodeId: string, stream: string): Promise<number> {
    return Promise.resolve().then(() => countLines(streamPath(this.#ep(episodeId), stream), this.dir));
  }

  async appendLines(
    episodeId: string,
    stream: string,
    firstSeq: number,
    lines: Uint8Array[],
    token?: FencingToken,
  ): Promise<AppendResult> {
    const ep = this.#ep(episodeId);
    const dir = streamPath(ep, stream);
    if (lines.length === 0) return { inserted: 0, duplicates: 0 };
    return await withWriteLock(ep, this.dir, () => {
      this.#fence(ep, episodeId, token);
      const stored = countLines(dir, this.dir);
      if (firstSeq > stored + 1) {
        // Lines follow each other: a batch that would leave a gap is refused (its lines would be shifted).
        throw new StoreConflictError(
          episodeId,
          stream,
          firstSeq,
          `would leave a gap: the store holds lines up to ${stored}`,
        );
      }
      const overlap = Math.min(lines.length, stored - firstSeq + 1);
      const old = overlap > 0 ? readStoredLines(dir, this.dir, firstSeq, overlap) : [];
      old.forEach((b, i) => {
        if (Buffer.compare(b, lines[i]) !== 0) throw new StoreConflictError(episodeId, stream, firstSeq + i);
      });
      appendStoredLines(dir, this.dir, lines.slice(Math.max(0, overlap)));
      return { inserted: lines.length - Math.max(0, overlap), duplicates: Math.max(0, overlap) };
    });
  }

  readLines(episodeId: string, stream: string, fromSeq: number, limit: number): Promise<Uint8Array[]> {
    return Promise.resolve().then(() =>
      readStoredLines(streamPath(this.#ep(episodeId), stream), this.dir, fromSeq, limit)
    );
  }

  streamDigest(episodeId: string, stream: string): Promise<StreamDigest> {
    // Lines follow each other here (an append with a gap is refused): the count is the highest seq.
    const dir = streamPath(this.#ep(episodeId), stream);
    const last = countLines(dir, this.dir);
    return digestByPages((from, n) => Promise.resolve(readStoredLines(dir, this.dir, from, n)), last);
  }

  streams(episodeId: string): Promise<{ stream: string; lines: number }[]> {
    return Promise.resolve().then(() => {
      const dir = join(this.#ep(episodeId), "lines");
      return this.#entries(dir).filter((s) => !episodeIdProblem(s)).sort()
        .map((stream) => ({ stream, lines: countLines(streamPath(dirname(dir), stream), this.dir) }))
        .filter((s) => s.lines > 0);
    });
  }

  /** The names in a directory below the store's (none when it does not exist). */
  #entries(dir: string): string[] {
    refuseSymlinks(dir, this.dir, "read");
    try {
      return readdirSync(dir);
    } catch (e) {
      if ((e as { code?: string }).code === "ENOENT") return [];
      throw e;
    }
  }

  async putFile(episodeId: string, name: string, bytes: Uint8Array, token?: FencingToken): Promise<void> {
    const ep = this.#ep(episodeId);
    const path = join(ep, "files", encodeName(name));
    await withWriteLock(ep, this.dir, () => {
      this.#fence(ep, episodeId, token);
      refuseSymlinks(path, this.dir);
      if (existsSync(path) && sha256File(path).sha256 === sha256(bytes)) return; // unchanged
      this.#write(path, bytes);
    });
  }

  listFiles(episodeId: string): Promise<StoredFile[]> {
    return Promise.resolve().then(() => {
      const dir = join(this.#ep(episodeId), "files");
      const out: StoredFile[] = [];
      for (const entry of this.#entries(dir)) {
        const name = decodeName(entry);
        if (name === null || !lstatSync(join(dir, entry)).isFile()) continue;
        const d = sha256File(join(dir, entry));
        out.push({ name, size: d.size_bytes, sha256: d.sha256 });
      }
      return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    });
  }

  readFile(episodeId: string, name: string, maxBytes?: number): Promise<Uint8Array | null> {
    return Promise.resolve().then(() => {
      const b = this.#read(join(this.#ep(episodeId), "files", encodeName(name)), maxBytes, (size) => {
        throw new StoredFileTooLargeError(episodeId, name, size, maxBytes!);
      });
      return b === null ? null : new Uint8Array(b.buffer, b.byteOffset, b.length);
    });
  }

  /**
   * An episode's catalog row, with `stored_at`: the mtime of its `stored_at` file (made with the first row), by the
   * shared directory's clock; for a row stored before that file existed, its `catalog.json`'s (its last write).
   */
  /** When the store first stored the episode's catalog row, by the shared directory's clock (see STORED_AT_FILE). */
  #storedAt(ep: string): string | null {
    const st = lstatSync(join(ep, STORED_AT_FILE), { throwIfNoEntry: false }) ??
      lstatSync(join(ep, "catalog.json"), { throwIfNoEntry: false });
    return st ? st.mtime.toISOString() : null;
  }

  async upsertCatalog(row: CatalogRow, token?: FencingToken): Promise<void> {
    const ep = this.#ep(row.episode_id);
    const { stored_at: _, ...fields } = row; // the directory's clock, when the first row is stored
    const { project: _p, ...unprojected } = fields; // written only when set: a row of none reads as it was
    const stored: CatalogRow = {
      ...unprojected,
      ...(row.project ? { project: row.project } : {}),
      started_at: iso(row.started_at),
      ended_at: iso(row.ended_at),
      pending: row.pending ?? null,
    };
    await withWriteLock(ep, this.dir, () => {
      this.#fence(ep, row.episode_id, token);
      // The project is set by the first write that names one; a later write keeps it.
      const before = this.#catalog(row.episode_id, ep)?.fields.project;
      if (before) stored.project = before;
      if (!existsSync(join(ep, STORED_AT_FILE))) this.#write(join(ep, STORED_AT_FILE), "");
      this.#write(join(ep, "catalog.json"), JSON.stringify(stored) + "\n");
    });
  }

  async acquireLease(episodeId: string, owner: LeaseOwner, options: LeaseOptions = {}): Promise<FencingToken> {
    const ep = this.#ep(episodeId);
    return await withWriteLock(
      ep,
      this.dir,
      () => takeLease(ep, episodeId, owner, options, (p) => this.#text(p), (p, d) => this.#write(p, d)),
    );
  }

  async releaseLease(episodeId: string, token: FencingToken): Promise<void> {
    const ep = this.#ep(episodeId);
    await withWriteLock(ep, this.dir, () => {
      const l = readEpisodeLease((p) => this.#text(p), ep);
      if (l && l.token === token) this.#write(join(ep, "lease.json"), leaseText({ ...l, released: true }));
    });
  }

  list(filter: CatalogFilter = {}): Promise<CatalogEntry[]> {
    return Promise.resolve().then(() => {
      this.#check();
      const top = new TopRows(filter.limit ?? 50);
      this.#scan((row, fields) => {
        if (matchesFilter(fields, filter)) top.add(row);
      });
      return top.rows;
    });
  }

  /** A bounded scan of the newest runs' stored events (`search.ts`). */
  async searchEvents(query: string, options: EventSearchOptions = {}): Promise<EventSearchResult> {
    const rows = await this.list({ limit: SCAN.episodes + 1, project: options.project });
    const head = (id: string, max: number) => {
      const got = readStoredHead(streamPath(this.#ep(id), "events.jsonl"), this.dir, max);
      return { text: got.bytes.toString("utf8"), cut: got.cut };
    };
    return scanEvents(rows, head, query, options);
  }

  get(episodeId: string): Promise<CatalogEntry | null> {
    return Promise.resolve().then(() => this.#catalog(episodeId, this.#ep(episodeId))?.row ?? null);
  }

  subscribe(episodeId: string, wake: () => void): Promise<() => Promise<void>> {
    return Promise.resolve().then(() => this.#poll(this.#ep(episodeId), wake));
  }

  /** Calls `wake` when the episode's signature changes; returns what stops it. */
  #poll(ep: string, wake: () => void): () => Promise<void> {
    let last = this.#signature(ep);
    const timer = setInterval(() => {
      const now = this.#signature(ep);
      if (now !== last) {
        last = now;
        wake();
      }
    }, POLL_MS);
    this.#timers.add(timer);
    return () => {
      clearInterval(timer);
      this.#timers.delete(timer);
      return Promise.resolve();
    };
  }

  /** What changes when lines, the catalog row or a decision of an episode are stored. */
  #signature(ep: string): string {
    const parts: string[] = [];
    const stat = (p: string) => {
      const s = lstatSync(p, { throwIfNoEntry: false });
      parts.push(s ? `${s.size}:${s.mtimeMs}:${s.ino}` : "-");
    };
    try {
      for (const s of this.#entries(join(ep, "lines")).sort()) stat(join(ep, "lines", s, "index"));
      stat(join(ep, "catalog.json"));
      stat(join(ep, "decisions"));
    } catch {
      parts.push("?"); // unreadable now: the poller of the follower reads again
    }
    return parts.join("|");
  }

  decide(d: StoredDecision): Promise<StoredDecision> {
    return Promise.resolve().then(() => {
      const path = join(this.#ep(d.episode_id), "decisions", encodeName(d.checkpoint_id));
      const stored: StoredDecision = { ...d, at: iso(d.at) ?? d.at };
      try {
        this.#write(path, JSON.stringify(stored) + "\n", true); // link(): exactly one decider creates it
      } catch (e) {
        if ((e as { code?: string }).code !== "EEXIST") throw e;
        throw new AlreadyDecidedError(this.#json<StoredDecision>(path)!);
      }
      return stored;
    });
  }

  decision(episodeId: string, checkpointId: string): Promise<StoredDecision | null> {
    return Promise.resolve().then(() =>
      this.#json<StoredDecision>(join(this.#ep(episodeId), "decisions", encodeName(checkpointId)))
    );
  }

  async waiting(limit = 50, filter: { project?: string } = {}): Promise<WaitingRow[]> {
    const out: WaitingRow[] = [];
    for (const row of await this.list({ run_state: ["waiting_for_approval"], limit, project: filter.project })) {
      const decision = row.pending ? await this.decision(row.episode_id, row.pending.checkpoint_id) : null;
      out.push({ row, decision });
    }
    return out;
  }

  async prune(options: PruneOptions, onBatch: (batch: PruneBatch) => void): Promise<void> {
    this.#check();
    // Counted on this machine's clock against the shared directory's file times (as list's --since).
    const cutoff = Date.now() - options.older_than_ms;
    const size = options.batch ?? PRUNE_BATCH;
    const root = join(this.dir, "episodes");
    refuseSymlinks(root, this.dir, "read");
    let ids: string[] = [];
    const flush = async () => {
      if (ids.length > 0) onBatch(await this.#pruneSome(ids, cutoff, options));
      ids = [];
    };
    const d = opendirSync(root);
    try {
      for (let e = d.readSync(); e !== null; e = d.readSync()) {
        if (!e.isDirectory() || episodeIdProblem(e.name)) continue;
        if (this.#prunable(e.name, cutoff, options.project)) ids.push(e.name);
        if (ids.length >= size) await flush();
      }
      await flush();
    } finally {
      d.closeSync();
    }
  }

  /** Whether an episode may be pruned: a readable row of a finished run stored before `cutoff`, no live lease. */
  #prunable(id: string, cutoff: number, project: string | undefined): boolean {
    const ep = episodePath(this.dir, id);
    const got = this.#catalog(id, ep);
    if (!got || isUnreadable(got.row) || got.row.run_state !== "terminal") return false;
    if (project !== undefined && got.row.project !== project) return false;
    const t = Date.parse(got.row.stored_at ?? "");
    if (Number.isNaN(t) || t >= cutoff) return false;
    try {
      return !leaseLive(readEpisodeLease((p) => this.#text(p), ep));
    } catch {
      return false; // a lease that cannot be read may be a live writer's
    }
  }

  /** Prunes (or counts) a batch of episodes, each under its write lock, checked again there. */
  async #pruneSome(ids: string[], cutoff: number, options: PruneOptions): Promise<PruneBatch> {
    const sum: PruneBatch = { episode_ids: [], rows: 0, lines: 0, files: 0, bytes: 0, tombstones: 0 };
    for (const id of ids) {
      const ep = episodePath(this.dir, id);
      const one = options.dry_run ? pruneEpisodeDir(this.dir, ep, id, false) : await withWriteLock(
        ep,
        this.dir,
        () => this.#prunable(id, cutoff, options.project) ? pruneEpisodeDir(this.dir, ep, id, true) : null,
      );
      if (one === null) continue;
      sum.episode_ids.push(id);
      sum.rows += one.rows;
      sum.lines += one.lines;
      sum.files += one.files;
      sum.bytes += one.bytes;
      sum.tombstones += one.tombstones;
    }
    return sum;
  }

  close(): Promise<void> {
    for (const t of this.#timers) clearInterval(t);
    this.#timers.clear();
    return Promise.resolve();
  }
}
