/**
 * Publishing one episode directory to the shared store: its JSONL streams
 * line by line (exact bytes, keyed by line number), its other artifact files
 * whole, and its catalog row. It reads what noema already wrote, so
 * everything published has passed the same secret masking as the files: the
 * store never holds more than the episode directory holds.
 *
 * A publisher is incremental: it remembers how far each stream and file was
 * published, so calling {@link EpisodePublisher.publish} again sends only
 * what is new. A fresh publisher (another process, `noema sync`) first asks
 * the store how many lines it has and re-sends the last of them, so a line
 * that differs from the stored one is caught as a conflict.
 *
 * @module
 */
import { closeSync, existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { Buffer } from "node:buffer";
import process from "node:process";
import { readEpisodeEntry } from "../read/list.ts";
import { lockStatus, processGone } from "../store/lock.ts";
import { sha256Fd } from "../store/hash.ts";
import { openRegularFile, readFromStart } from "../store/regular_file.ts";
import { readJsonFile } from "../store/json_file.ts";
import { ARTIFACTS, refuseSymlinkedArtifacts } from "../store/layout.ts";
import { listArtifactFiles } from "../store/manifest.ts";
import { publishingHost } from "./host.ts";
import { pendingCallOf } from "./pending_call.ts";
import { publishingProject } from "./project.ts";
import { readNewLines } from "./line_tail.ts";
import { recordCheckpoint, refuseContradictingRecord } from "./decision_records.ts";
import { NoemaError } from "../errors.ts";
import {
  type CatalogRow,
  LeaseHeldError,
  type PendingCall,
  type SharedStore,
  StoreConflictError,
  StoreCorruptError,
} from "./shared_store.ts";

/** Options of {@link EpisodePublisher.publish}. */
export interface PublishOptions {
  /** Only the stream lines (not the whole files, nor the catalog row). @default {false} */
  linesOnly?: boolean;
  /** About this many bytes of lines at most (at least one batch); the rest goes next time. @default {Infinity} */
  maxLineBytes?: number;
  /**
   * Check a sealed episode's shared copy against its manifest even when nothing is sent (what is sent of a sealed
   * episode is always checked before its catalog row says it ended). @default {false}
   */
  verify?: boolean;
}
import type { FencingToken, LeaseOwner } from "./shared_store.ts";

/**
 * A publish given up before it took the episode's lease: it was no longer
 * wanted (see the `abandoned` option of {@link EpisodePublisher}).
 *
 * @example
 * ```ts
 * import { PublishAbandonedError } from "./publish.ts";
 * const e = new PublishAbandonedError("ep_1");
 * e.message; // "publishing ep_1 was given up: the run it published for is gone"
 * ```
 */
export class PublishAbandonedError extends Error {
  constructor(readonly episodeId: string) {
    super(`publishing ${episodeId} was given up: the run it published for is gone`);
    this.name = "PublishAbandonedError";
  }
}

/** What one {@link EpisodePublisher.publish} sent. */
export interface PublishStats {
  /** Lines newly stored. */
  lines: number;
  /** Files stored or replaced. */
  files: number;
}

const isStream = (name: string) => name.endsWith(".jsonl");

const START = Buffer.from('"phase":"start"');
const VETO = Buffer.from('"decision":"veto"');

/**
 * Skips the first `count` complete lines of a file, showing them to `see`; returns the offset after them and how
 * many there were (fewer than `count` when the file ends first).
 */
function offsetAfter(
  path: string,
  count: number,
  see: (lines: Uint8Array[]) => void,
): { offset: number; seen: number } {
  let offset = 0;
  let seen = 0;
  while (seen < count) {
    const { lines, offset: next } = readNewLines(path, offset, 8 << 20);
    if (lines.length === 0) break;
    const take = Math.min(lines.length, count - seen);
    see(lines.slice(0, take));
    if (take === lines.length) offset = next;
    else for (let i = 0; i < take; i++) offset += lines[i].length + 1;
    seen += take;
  }
  return { offset, seen };
}

/**
 * Where a fresh publisher takes up a stream the store holds `stored` lines of: after line `stored - 1` (the last
 * stored line is sent again, so a local line that differs from it is a conflict). This copy must hold every stored
 * line: one that holds fewer is not the episode the store holds (another host's run under the same id) or lost
 * lines, and publishing on from it would store its lines shifted. That is a conflict, and nothing is sent.
 */
function resumeCursor(
  episodeId: string,
  path: string,
  stream: string,
  stored: number,
  see: (lines: Uint8Array[]) => void,
): { offset: number; seq: number } {
  const seq = Math.max(0, stored - 1);
  const there = existsSync(path);
  const { offset, seen } = there ? offsetAfter(path, seq, see) : { offset: 0, seen: 0 };
  // The last stored line must be here too (it is sent again from `offset`).
  const local = seen +
    (there && seen === seq && stored > 0 ? Math.min(1, readNewLines(path, offset, 1).lines.length) : 0);
  if (local < stored) {
    throw new StoreConflictError(
      episodeId,
      stream,
      local + 1,
      `is stored (the store holds ${stored} lines) but this copy has only ${local}: the stored episode is not ` +
        `this one (another host's run under the same id?) or this copy lost lines`,
    );
  }
  return { offset, seq };
}

/** The files a sealed episode's `manifest.json` lists, with their digests (none when it cannot be read). */
function manifestFiles(dir: string): { name: string; sha256: string; size_bytes: number }[] {
  try {
    const files = readJsonFile(join(dir, ARTIFACTS.manifest)).files;
    return Array.isArray(files)
      ? files.filter((f) => typeof f?.name === "string" && typeof f?.sha256 === "string")
      : [];
  } catch {
    return []; // validate and verify report an unreadable manifest; publishing sends it as it is
  }
}

/** Whether an episode driven through its core (`core.json`: hooks, agent runs) is paused now. */
function pausedInCore(dir: string): boolean {
  try {
    return typeof readJsonFile(join(dir, "core.json")).paused_at === "string";
  } catch {
    return false; // not driven through a core, or unreadable: as the episode's own state says
  }
}

/**
 * Publishes one episode directory, incrementally.
 *
 * @example
 * ```ts
 * import { EpisodePublisher } from "./publish.ts";
 * const p = new EpisodePublisher(store, ".noema/episodes/ep_1", "ep_1");
 * await p.publish(); // everything new since the last call
 * ```
 */
export class EpisodePublisher {
  readonly #streams = new Map<string, { offset: number; seq: number }>();
  readonly #files = new Map<string, string>();
  #policies: string[] = [];
  #vetoes = 0;
  #eventsScanned = 0; // event lines already read for the catalog
  #token: FencingToken = 0n; // the lease's fencing token
  #cataloged = false; // the store has this episode's catalog row
  #started = false;
  #sealing = false; // the row last sent says running for an episode sealed during that publish: the next one says so

  /** The host name recorded in the catalog. */
  readonly host: string;
  /** The project recorded in the catalog (`NOEMA_PROJECT`, see {@link publishingProject}), or null. */
  readonly project: string | null;

  readonly #onSent: () => void;
  readonly #keepWaiting: (owner: LeaseOwner, waitedMs: number) => boolean;
  readonly #adoptPid: number | undefined;
  readonly #abandoned: () => boolean;
  /** The publish going on, if any: publishes never overlap (they share the cursors). */
  #chain: Promise<unknown> = Promise.resolve();

  /**
   * @param options.host the host name for the catalog (default {@link publishingHost})
   * @param options.onSent called after each write the store accepted (the lease, a batch of lines, a file, the catalog row)
   * @param options.heldWaitMs how long a publish waits for the episode's lease while another process of this host
   *   holds it (the run before a resume, still publishing its last lines; a background sync), in ms. @default {0}
   * @param options.keepWaiting instead of `heldWaitMs`: asked each time another process of this host holds the lease,
   *   with that process and how long the publish has waited (ms); true to try again 200 ms later.
   * @param options.adoptPid a process of this host whose lease this publisher takes over as its own: the run it
   *   publishes for, which took the lease before anything ran (a resume claims its episode first)
   * @param options.project the project for the catalog (default {@link publishingProject} of the environment)
   * @param options.abandoned asked before each try for the lease: true when this publishing is no longer wanted (the
   *   run it published for died before it asked for the rest; a resume publishes its episode now). The publish then
   *   fails with {@link PublishAbandonedError} rather than take the lease back from the resume that claimed it.
   */
  constructor(
    readonly store: SharedStore,
    readonly dir: string,
    readonly episodeId: string,
    options: {
      host?: string;
      onSent?: () => void;
      heldWaitMs?: number;
      keepWaiting?: (owner: LeaseOwner, waitedMs: number) => boolean;
      adoptPid?: number;
      project?: string | null;
      abandoned?: () => boolean;
    } = {},
  ) {
    this.host = options.host ?? publishingHost();
    this.project = options.project !== undefined ? options.project : publishingProject(process.env);
    this.#onSent = options.onSent ?? (() => {});
    const heldWaitMs = options.heldWaitMs ?? 0;
    this.#keepWaiting = options.keepWaiting ?? ((_, waitedMs) => waitedMs < heldWaitMs);
    this.#adoptPid = options.adoptPid;
    this.#abandoned = options.abandoned ?? (() => false);
  }

  /** Takes (or renews) the episode's lease, waiting while a process of this host holds it as `keepWaiting` says. */
  async #lease(): Promise<FencingToken> {
    const started = Date.now();
    for (;;) {
      if (this.#abandoned()) throw new PublishAbandonedError(this.episodeId);
      try {
        return await this.store.acquireLease(this.episodeId, { host: this.host, pid: process.pid }, {
          ownerGone: (pid) => pid === this.#adoptPid || processGone(pid),
        });
      } catch (e) {
        if (!(e instanceof LeaseHeldError) || e.owner.host !== this.host) throw e;
        if (!this.#keepWaiting(e.owner, Date.now() - started)) throw e;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /**
   * Sends what is new: stream lines, then changed files (`manifest.json`
   * last), then the catalog row. With `maxLineBytes`, at most about that
   * many bytes of lines (the rest goes next time). With `linesOnly`, only the stream lines (a
   * running episode rewrites `state.json` at every step: the live publisher
   * sends it, and the catalog, every few seconds and at the end).
   */
  publish(options: PublishOptions = {}): Promise<PublishStats> {
    // One at a time, whoever calls: two publishes reading the same lines at once would move the cursors twice.
    const run = this.#chain.then(() => this.#publishNow(options));
    this.#chain = run.then(() => {}, () => {});
    return run;
  }

  /**
   * Gives back the lease this publisher took, if it took one: a claim refused after taking it (the store has gone on
   * without this copy) must not keep fencing out the run's own writer.
   *
   * @example
   * ```ts
   * // try { await p.publish(); } catch (e) { await p.releaseLease(); throw e; }
   * ```
   */
  async releaseLease(): Promise<void> {
    if (this.#token !== 0n) await this.store.releaseLease(this.episodeId, this.#token);
  }

  async #publishNow(options: PublishOptions): Promise<PublishStats> {
    const stats: PublishStats = { lines: 0, files: 0 };
    if (!existsSync(this.dir)) return stats; // not created yet (a new episode is renamed into place)
    // What the team's store holds is what the episode holds: a planted symlink (`events.jsonl -> ~/.ssh/id_rsa`), a
    // FIFO or a device is refused, naming it, before anything is read or sent (sealing refuses it too).
    refuseSymlinkedArtifacts(this.dir, "publish");
    // One writer per episode across machines: take (or renew) the lease; every write carries its token.
    this.#token = await this.#lease();
    this.#onSent();
    if (!this.#started) await this.#start();
    // Whether the episode was sealed before its files were listed: one sealed meanwhile is not called terminal yet
    // (its summary may have come after the listing); the next publish sends the rest, and says so.
    const sealedBefore = existsSync(join(this.dir, ARTIFACTS.manifest));
    const names = listArtifactFiles(this.dir);
    await this.#refuseContradictingRecords(names);
    const budget = { bytes: options.maxLineBytes ?? Infinity };
    for (const name of names.filter(isStream)) {
      stats.lines += await this.#publishStream(name, budget);
      if (options.linesOnly) continue;
      // An empty stream exists too: stored as an empty file until its first line.
      if (!this.#streams.has(name) && statSync(join(this.dir, name)).size === 0 && await this.#publishFile(name)) {
        stats.files++;
      }
    }
    if (options.linesOnly) return stats;
    const files = names.filter((n) => !isStream(n));
    if (existsSync(join(this.dir, ARTIFACTS.manifest))) files.push(ARTIFACTS.manifest);
    for (const name of files) if (await this.#publishFile(name)) stats.files++;
    // The catalog row changes with the files; a copy that sends nothing new (a pulled episode synced again on
    // another machine) leaves the row, and the host it names, as they are.
    if (stats.lines + stats.files === 0 && this.#cataloged && !this.#sealing) {
      // A sealed episode's lease is given back whoever took it (another sync may come from another machine).
      if (existsSync(join(this.dir, ARTIFACTS.manifest))) {
        if (options.verify) await this.#verifySealed();
        await this.store.releaseLease(this.episodeId, this.#token);
      }
      return stats;
    }
    const row = this.catalogRow();
    this.#sealing = row.run_state === "terminal" && !sealedBefore && existsSync(join(this.dir, ARTIFACTS.manifest));
    if (this.#sealing) row.run_state = "running";
    // A catalog that says a run ended has all of it: what the store holds is checked against the manifest first.
    if (row.run_state === "terminal") await this.#verifySealed();
    await this.store.upsertCatalog(row, this.#token);
    this.#onSent();
    this.#cataloged = true;
    if (row.run_state === "terminal") await this.store.releaseLease(this.episodeId, this.#token);
    return stats;
  }

  /**
   * Bytes of stream lines written but not yet published (0 before the first
   * publish: nothing is known yet). A run that ends far ahead of its publisher
   * hands the rest over at once rather than waiting for what cannot be sent in time.
   */
  backlogBytes(): number {
    let n = 0;
    for (const [name, cursor] of this.#streams) {
      try {
        n += Math.max(0, statSync(join(this.dir, name)).size - cursor.offset);
      } catch { /* gone: nothing to send */ }
    }
    return n;
  }

  /** Learns what the store already holds, so nothing is sent twice. */
  async #start(): Promise<void> {
    for (const s of await this.store.streams(this.episodeId)) {
      const path = join(this.dir, s.stream);
      // Re-send the last stored line: a local line that differs from it is a conflict, caught by appendLines.
      const see = s.stream === ARTIFACTS.events ? (lines: Uint8Array[]) => this.#scan(lines) : () => {};
      this.#streams.set(s.stream, resumeCursor(this.episodeId, path, s.stream, s.lines, see));
    }
    for (const f of await this.store.listFiles(this.episodeId)) this.#files.set(f.name, f.sha256);
    const row = await this.store.get(this.episodeId);
    this.#cataloged = row !== null;
    // A stored row that says running for an episode sealed here (cut short while it was sealed) is brought up to date.
    this.#sealing = row !== null && row.run_state !== "terminal" && existsSync(join(this.dir, ARTIFACTS.manifest));
    this.#started = true;
  }

  /** Sends a stream's new lines, as many as `budget` allows (at least one batch); `budget` is spent. */
  async #publishStream(name: string, budget: { bytes: number }): Promise<number> {
    let sent = 0;
    while (budget.bytes > 0) {
      const cursor = this.#streams.get(name) ?? { offset: 0, seq: 0 };
      const { lines, offset } = readNewLines(join(this.dir, name), cursor.offset, Math.min(4 << 20, budget.bytes));
      if (lines.length === 0) break;
      budget.bytes -= offset - cursor.offset;
      if (name === ARTIFACTS.events) this.#scan(lines.slice(Math.max(0, this.#eventsScanned - cursor.seq)));
      const r = await this.store.appendLines(this.episodeId, name, cursor.seq + 1, lines, this.#token);
      this.#onSent();
      sent += r.inserted;
      // The offset and the line number move together, from what was read (never by adding to a shared cursor).
      this.#streams.set(name, { offset, seq: cursor.seq + lines.length });
    }
    return sent;
  }

  /**
   * Checks the shared copy of a sealed episode against its manifest: each stream's stored lines make the file the
   * manifest lists (digest and size), each other file has the listed digest. Throws {@link StoreCorruptError}
   * naming the first that differs.
   */
  async #verifySealed(): Promise<void> {
    const listed = manifestFiles(this.dir);
    if (listed.length === 0) return;
    const stored = new Map((await this.store.listFiles(this.episodeId)).map((f) => [f.name, f.sha256]));
    for (const f of listed) {
      if (isStream(f.name) && f.size_bytes > 0) {
        const d = await this.store.streamDigest(this.episodeId, f.name);
        if (d.sha256 === f.sha256 && d.size_bytes === f.size_bytes) continue;
        throw new StoreCorruptError(
          this.episodeId,
          f.name,
          `the store holds ${d.lines} lines (up to line ${d.last_seq}; ${d.size_bytes} bytes, ${d.sha256}), ` +
            `the manifest lists ${f.size_bytes} bytes, ${f.sha256}`,
        );
      }
      const got = stored.get(f.name);
      if (got !== f.sha256) {
        throw new StoreCorruptError(
          this.episodeId,
          f.name,
          got === undefined ? "the store does not hold it" : `the store holds ${got}, the manifest lists ${f.sha256}`,
        );
      }
    }
  }

  /** Picks the catalog's facts out of event lines: the policies (start event) and the vetoes. */
  #scan(lines: Uint8Array[]): void {
    this.#eventsScanned += lines.length;
    for (const bytes of lines) {
      const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
      if (buf.indexOf(START) === -1 && buf.indexOf(VETO) === -1) continue; // most lines: no decoding at all
      try {
        const e = JSON.parse(buf.toString("utf8")) as {
          phase?: string;
          payload?: { policies?: unknown; decision?: string };
        };
        if (e.phase === "start" && Array.isArray(e.payload?.policies)) {
          this.#policies = e.payload.policies.filter((p): p is string => typeof p === "string");
        }
        if (e.phase === "governance" && e.payload?.decision === "veto") this.#vetoes++;
      } catch { /* validate reports a bad line; publishing sends it as it is */ }
    }
  }

  /**
   * Refuses (exit 7, nothing sent, the lease given back) to publish a decision record the store contradicts (see
   * {@link refuseContradictingRecord}): each record not yet stored as it is now is checked before anything is sent.
   */
  async #refuseContradictingRecords(names: string[]): Promise<void> {
    for (const name of names) {
      if (recordCheckpoint(name) === null) continue;
      const path = join(this.dir, name);
      const fd = openRegularFile(path, path, { noFollow: true });
      let text: string;
      try {
        const digest = sha256Fd(fd);
        if (this.#files.get(name) === digest.sha256 || digest.size_bytes > 1 << 20) continue;
        text = readFromStart(fd, digest.size_bytes).toString("utf8");
      } finally {
        closeSync(fd);
      }
      let record: unknown;
      try {
        record = JSON.parse(text);
      } catch {
        continue; // not a record noema wrote: validate reports it; it decides nothing
      }
      if (typeof record !== "object" || record === null || Array.isArray(record)) continue;
      const known = this.#files.has(`checkpoints/${recordCheckpoint(name)}.json`);
      try {
        await refuseContradictingRecord(this.store, this.episodeId, name, record as Record<string, unknown>, known);
      } catch (e) {
        if (e instanceof NoemaError && e.code === "decision_conflict") await this.releaseLease();
        throw e;
      }
    }
  }

  async #publishFile(name: string): Promise<boolean> {
    const path = join(this.dir, name);
    // Opened once, without following a link: a symlink planted since the listing is refused, never followed, and
    // the bytes sent are the bytes hashed (artifacts are replaced by a rename, never rewritten in place).
    const fd = openRegularFile(path, path, { noFollow: true });
    let sha256: string, bytes: Buffer;
    try {
      const digest = sha256Fd(fd);
      if (this.#files.get(name) === digest.sha256) return false;
      sha256 = digest.sha256;
      bytes = readFromStart(fd, digest.size_bytes);
    } finally {
      closeSync(fd);
    }
    await this.store.putFile(this.episodeId, name, bytes, this.#token);
    this.#onSent();
    this.#files.set(name, sha256);
    return true;
  }

  /** The episode's catalog row, from its files. */
  catalogRow(): CatalogRow {
    let adapter: string | null = null, steps = 0, endedAt: string | null = null, vetoes = this.#vetoes;
    const e = readEpisodeEntry(this.episodeId, this.dir, (state) => {
      const episode = state.episode as { using?: unknown } | undefined;
      adapter = typeof episode?.using === "string" ? episode.using : null;
      const plan = state.plan as { steps?: unknown[] } | undefined;
      steps = Array.isArray(plan?.steps) ? plan.steps.length : 0;
    });
    if (e.lifecycle === "terminal") {
      try {
        const summary = readJsonFile(join(this.dir, ARTIFACTS.summary));
        const start = Date.parse(String(summary.started_at));
        const dur = Number(summary.duration_sec);
        if (!Number.isNaN(start) && Number.isFinite(dur)) endedAt = new Date(start + dur * 1000).toISOString();
        const v = (summary.metrics as { veto_count?: unknown } | undefined)?.veto_count;
        if (typeof v === "number") vetoes = v;
      } catch { /* an unreadable summary is listed as such (status "unreadable") */ }
    }
    // An episode paused at a checkpoint while its writer keeps it open (a hook waiting for the decision) waits.
    const waiting = e.run_state === "waiting_for_approval" ||
      (e.run_state === "running" && e.pending !== undefined && pausedInCore(this.dir));
    return {
      episode_id: this.episodeId,
      task: e.task,
      // Sealing puts summary, state and manifest into place in turn: until the manifest is there, a run whose
      // writer still holds it is not terminal yet (a reader would pull it without its manifest).
      run_state: e.run_state === "terminal" && !existsSync(join(this.dir, ARTIFACTS.manifest)) &&
          lockStatus(this.dir).state === "held"
        ? "running"
        : waiting
        ? "waiting_for_approval"
        : e.run_state,
      status: e.status,
      outcome: e.outcome ?? null,
      started_at: e.started_at,
      ended_at: endedAt,
      host: this.host,
      adapter,
      policy_ids: this.#policies,
      tags: Object.fromEntries(Object.entries(e.tags).map(([k, v]) => [k, String(v)])),
      step_count: steps,
      veto_count: vetoes,
      pending: waiting && e.pending ? this.#pendingCall(e.pending.checkpoint_id) : null,
      project: this.project,
    };
  }

  /** What a paused run waits on, from its checkpoint file (already masked, as every artifact). */
  #pendingCall(checkpointId: string): PendingCall | null {
    try {
      return pendingCallOf(readJsonFile(join(this.dir, "checkpoints", `${checkpointId}.json`)), checkpointId);
    } catch {
      return null; // an unreadable checkpoint is reported by validate and resume
    }
  }
}
