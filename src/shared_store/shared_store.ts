/**
 * The shared store: where a fleet of noema processes publishes its episodes
 * so that any machine can list, read and pull them. Local files stay the
 * format and the default; a shared store is a replica of the episode
 * directories, a catalog of their runs, and (later) a message bus.
 *
 * Every backend implements {@link SharedStore}; the conformance suite in
 * `tests/shared_store_conformance.test.ts` runs against each of them.
 *
 * What is stored for an episode:
 * - each line of its `*.jsonl` streams (`events.jsonl`, `learn.jsonl`,
 *   `model.jsonl`), keyed `(episode_id, stream, seq)`, with its exact bytes;
 * - each other artifact file (`state.json`, `summary.json`, `manifest.json`,
 *   checkpoints, approvals, snapshots…), whole, with its exact bytes;
 * - a catalog row ({@link CatalogRow}) kept current.
 *
 * @module
 */
import { EXIT, NoemaError } from "../errors.ts";

import type { RunState } from "../read/list.ts";
import type { TextHit } from "../read/event_search.ts";
import type { AuditReport, PinnedHead } from "./postgres/decision_audit.ts";

/** Where a run is now, as `noema list` says (`terminal`, `running`, `waiting_for_approval`, `paused`, `crashed`…). */
export type CatalogRunState = RunState;

/** One row of the catalog: an episode's facts, for listing and filtering without reading its files. */
export interface CatalogRow {
  /** The episode id. */
  episode_id: string;
  /** `goal.task`. */
  task: string | null;
  /** Where the run is. */
  run_state: CatalogRunState;
  /** `outcomes.status` (`ok`, `error`, `vetoed`, `aborted`, `partial`, `pending`). */
  status: string;
  /** The verification outcome (`summary.json` `outcome`), terminal runs only. */
  outcome: string | null;
  /** `episode.started_at` (ISO 8601), by the clock of the host that ran it. */
  started_at: string | null;
  /** When the run ended (start + `duration_sec`), terminal runs only. */
  ended_at: string | null;
  /** The host name of the machine that ran it. */
  host: string;
  /** `episode.using`. */
  adapter: string | null;
  /** The ids of the policies consulted (from `direction` events' `policy_id`). */
  policy_ids: string[];
  /** `episode.tags`. */
  tags: Record<string, string>;
  /** Steps in the plan. */
  step_count: number;
  /** Policy vetoes. */
  veto_count: number;
  /** For a run waiting for approval: what waits (see {@link PendingCall}); otherwise null. */
  pending?: PendingCall | null;
  /**
   * When the store first stored this row (ISO 8601), by the store's clock: PostgreSQL's `now()`, or the shared
   * directory's file time. The catalog is ordered, filtered (`since`) and paged by it, since hosts' clocks disagree.
   * Set by the store; ignored when a row is written.
   */
  stored_at?: string | null;
  /**
   * The project the run was published under (`--project`, `NOEMA_PROJECT`, `project` in noema.jsonc), or null for
   * none. Set by the first write that names one; a later write keeps it.
   */
  project?: string | null;
}

/**
 * A catalog row that cannot be read: not valid JSON, fields of the wrong type,
 * too large, or naming another episode than its own (a row copied from one
 * episode to another). It stands in the listing under its id with nothing of
 * what it says (no task, host or pending call), so it is never taken for a
 * real run, and it never stops the other rows from being read.
 */
export interface UnreadableCatalogRow extends Omit<CatalogRow, "run_state" | "status" | "host"> {
  /** Not a run state: the row says nothing that is shown. */
  run_state: "unreadable";
  /** As `noema list` says of a local episode it cannot read. */
  status: "unreadable";
  /** Its host is not known (what the row says is not believed). */
  host: null;
  /** What is wrong with it, naming where. */
  error: string;
}

/** What the catalog gives for an episode: its row, or the marker of a row that cannot be read. */
export type CatalogEntry = CatalogRow | UnreadableCatalogRow;

/**
 * Whether a catalog entry is the marker of a row that cannot be read.
 *
 * @example
 * ```ts
 * import { isUnreadable } from "./shared_store.ts";
 * // for (const r of await store.list()) if (isUnreadable(r)) console.error(r.episode_id, r.error);
 * ```
 */
export function isUnreadable(r: CatalogEntry): r is UnreadableCatalogRow {
  return r.run_state === "unreadable";
}

/** The call a paused run waits on, as the catalog shows it to approvers anywhere. */
export interface PendingCall {
  /** The checkpoint a decision is bound to. */
  checkpoint_id: string;
  /** `sha256:` of `state.json` at the pause; a decision carries it. */
  state_hash: string;
  /** `approval`, `review` or `veto`. */
  kind: string;
  /** The step. */
  step_id: string;
  /** Why it waits. */
  reason: string;
  /** The policy that asked, if any. */
  policy_id: string | null;
  /** The pending action's tool and input excerpt (masked as in the files). */
  action: { tool: string | null; input_excerpt: string };
  /** When the run paused. */
  created_at: string;
}

/** A decision on a paused run's checkpoint, made on any machine. */
export interface StoredDecision {
  episode_id: string;
  checkpoint_id: string;
  /** Must equal the checkpoint's `state_hash`. */
  state_hash: string;
  decision: "approved" | "rejected";
  /**
   * Who decided, as authenticated ({@link StoredDecision.authenticated_as}): PostgreSQL's `session_user`, stamped by
   * the database; the label of the `noema serve` token; or the OS user (a files store). A record written before
   * schema version 5 holds what its client said.
   */
  by: string;
  note: string | null;
  /** The host it was made on. */
  host: string;
  /** ISO 8601 (PostgreSQL: the database's clock). */
  at: string;
  /** What `by` is; null (or absent) for a record written before it was recorded. */
  authenticated_as?: DeciderAuthentication | null;
  /** PostgreSQL's `session_user` of the connection that wrote it (for `noema serve`, the server's role). */
  database_role?: string | null;
  /** The name the decider gave (`--by`, `timeout` for a wait that ran out): shown beside `by`, never trusted. */
  claimed_by?: string | null;
  /** `sha256:` over the canonical JSON of the checkpoint's action, state hash and policy (PostgreSQL records it). */
  checkpoint_digest?: string | null;
  /** When the store pruned the decided run: the decision is a tombstone (its note cleared). Absent otherwise. */
  pruned_at?: string | null;
}

/** How a decision's `by` was authenticated. */
export type DeciderAuthentication = "database_role" | "serve_token" | "os_user";

/**
 * A decider as shown: the authenticated identity, with the claimed name beside it when it differs
 * (`ana (claimed: carol)`).
 *
 * @example
 * ```ts
 * import { deciderText } from "./shared_store.ts";
 * deciderText({ by: "ana", claimed_by: "carol" }); // "ana (claimed: carol)"
 * ```
 */
export function deciderText(d: { by: string; claimed_by?: string | null }): string {
  // Names are the deciders' own words (`--by`): on one line, so a message quoting them cannot forge a line of ours.
  const text = d.claimed_by && d.claimed_by !== d.by ? `${d.by} (claimed: ${d.claimed_by})` : d.by;
  return text.replace(/\s+/g, " ");
}

/** A run waiting for approval, as `noema approvals` sees it: its catalog row and the decision the store holds on it. */
export interface WaitingRow {
  /** The catalog row (`run_state` `waiting_for_approval`), or the marker of one that cannot be read. */
  row: CatalogEntry;
  /**
   * The decision on the checkpoint it waits on (`row.pending`), made but not yet applied by the run's host, which
   * keeps the row waiting until it resumes; null while no one decided.
   */
  decision: StoredDecision | null;
}

/** A checkpoint that already has a decision: the second decider loses (exit 8, as locally). */
export class AlreadyDecidedError extends NoemaError {
  constructor(readonly existing: StoredDecision) {
    super(
      "already_decided",
      `checkpoint ${existing.checkpoint_id} of ${existing.episode_id} was already ${existing.decision} by ` +
        `${deciderText(existing)} on ${existing.host} at ${existing.at}`,
      { exitCode: EXIT.CONSUMED },
    );
    this.name = "AlreadyDecidedError";
  }
}

/** Filters of {@link SharedStore.list}; every given filter must match. */
export interface CatalogFilter {
  /**
   * Status words as `noema list --status` takes them (any of): a terminal run's
   * `outcomes.status` (`ok`, `vetoed`…) or an unfinished run's state (`running`,
   * `waiting_for_approval`, `paused`, `crashed`).
   */
  status?: string[];
  /** Run states (any of). */
  run_state?: CatalogRunState[];
  /** Tags that must all be present with these values. */
  tags?: Record<string, string>;
  /** Case-insensitive substring of the task. */
  task?: string;
  /** Stored at or after this ISO 8601 time (`stored_at`, the store's clock: not the hosts' `started_at`). */
  since?: string;
  /**
   * Stored within this many milliseconds before the store's now (`--since 1h`): counted on the database's clock, so
   * a reader whose clock is off sees the same runs (a files store counts on the reader's clock).
   */
  within_ms?: number;
  /** Host name. */
  host?: string;
  /** Adapter label. */
  adapter?: string;
  /** A policy id that must be among `policy_ids`. */
  policy?: string;
  /** Only the runs of this project (undefined: every project, and the runs of none). */
  project?: string;
  /** Most rows returned, newest first. @default {50} */
  limit?: number;
}

/** Bounds and scope of {@link SharedStore.searchEvents}. */
export interface EventSearchOptions {
  /** Most hits returned, newest runs first. @default {200} */
  limit?: number;
  /** Most hits from one run. @default {5} */
  perEpisode?: number;
  /** Only the runs of this project (undefined: every project, and the runs of none). */
  project?: string;
}

/** One place a search found the text, inside a stored event line of a run the catalog holds. */
export interface EventSearchHit extends TextHit {
  episode_id: string;
  /** The line of `events.jsonl` (its `seq`). */
  seq: number;
  /** The host that ran it (the catalog's). */
  host: string;
}

/** What {@link SharedStore.searchEvents} found. */
export interface EventSearchResult {
  hits: EventSearchHit[];
  /** It stopped at a bound (hits, lines read, runs or bytes scanned) before it had searched every run. */
  truncated: boolean;
}

/** Episodes a prune handles per transaction (per batch) unless told. */
export const PRUNE_BATCH = 500;

/** What {@link SharedStore.prune} removes: finished runs stored before a time, of one project or all. */
export interface PruneOptions {
  /** Runs first stored (`stored_at`, the store's clock) more than this many milliseconds before the store's now. */
  older_than_ms: number;
  /** Only the runs of this project (undefined: every project). */
  project?: string;
  /** Count and list only; remove nothing. */
  dry_run: boolean;
  /** Episodes handled per transaction. @default {500} */
  batch?: number;
}

/** One batch of {@link SharedStore.prune}: the episodes it removed (or would), and what they held. */
export interface PruneBatch {
  /** The episode ids, oldest first. */
  episode_ids: string[];
  /** Rows removed: catalog rows, lines, files and leases. */
  rows: number;
  /** Stored lines among them. */
  lines: number;
  /** Stored files among them. */
  files: number;
  /** Bytes of the stored lines (without their newlines) and files. */
  bytes: number;
  /** Decisions kept as tombstones (`pruned_at` set, note cleared). */
  tombstones: number;
}

/** A stored artifact file's name, size and digest. */
export interface StoredFile {
  /** Relative POSIX path inside the episode directory. */
  name: string;
  /** Size in bytes. */
  size: number;
  /** `sha256:<hex>` of its bytes. */
  sha256: string;
}

/** What {@link SharedStore.appendLines} did. */
export interface AppendResult {
  /** Lines newly stored. */
  inserted: number;
  /** Lines already stored with identical bytes (ignored). */
  duplicates: number;
}

/** What {@link SharedStore.status} reports. */
export interface StoreStatus {
  /** `postgres` or `files`. */
  kind: string;
  /** Where it is, with any password masked. */
  location: string;
  /** The schema version in force (0: not initialised). */
  schema_version: number;
  /** The schema version this noema writes. */
  latest_version: number;
  /** Episodes in the catalog (null when not initialised). */
  episodes: number | null;
  /** PostgreSQL: the connected login role (`session_user`) and what it may do. Absent for a files store. */
  role?: { name: string; powers: RolePowers };
  /**
   * PostgreSQL: the connection's TLS, `"TLSv1.3 TLS_AES_256_GCM_SHA384"`,
   * or null when it is not encrypted. Absent for a files store.
   */
  tls?: string | null;
}

/** What a store's role may do, as the database grants it. */
export interface RolePowers {
  /** Publish episodes: insert lines and files, write catalog rows and leases. */
  publish: boolean;
  /** Decide on paused runs (through `noema_decide`). */
  decide: boolean;
  /** Decide for `noema serve`'s token holders, naming a token's label as the decider (a member of `noema_server`). */
  serve: boolean;
  /** Read the catalog, lines, files and decisions. */
  read: boolean;
  /** Own the schema (migrate it; change or delete rows: what `noema store audit` catches in the decision log). */
  own: boolean;
}

/**
 * A line stored under the same `(episode_id, stream, seq)` with different
 * bytes: the store never overwrites it, and the publisher reports it loudly.
 */
export class StoreConflictError extends NoemaError {
  /** @param why what is wrong at line `seq`, when it is not a line stored with different bytes */
  constructor(readonly episodeId: string, readonly stream: string, readonly seq: number, why?: string) {
    super(
      "store_conflict",
      `shared store conflict: ${episodeId}/${stream} line ${seq} ${
        why ?? "is already stored with different bytes (two writers for one episode?)"
      }; the stored lines are kept`,
    );
    this.name = "StoreConflictError";
  }
}

/**
 * The shared copy of a sealed episode differs from its manifest: a stream or
 * file the store holds does not have the digest the episode's
 * `manifest.json` lists. Nothing reports success over it: the catalog row is
 * not marked terminal, `noema sync` exits 1 naming the file, `noema pull`
 * keeps nothing.
 */
export class StoreCorruptError extends NoemaError {
  constructor(readonly episodeId: string, readonly file: string, detail: string) {
    super(
      "store_corrupt",
      `the shared copy of ${episodeId}/${file} does not match the episode's manifest: ${detail}`,
      { file },
    );
    this.name = "StoreCorruptError";
  }
}

/** What a stream of an episode holds in the store: its lines, and the digest of the file they make. */
export interface StreamDigest {
  /** Lines stored (their count; without a gap, also the highest `seq`). */
  lines: number;
  /** The highest `seq` stored (0 when none). */
  last_seq: number;
  /** Bytes of the file the lines make, each with its newline. */
  size_bytes: number;
  /** `sha256:<hex>` of that file: equal to the manifest's digest of the stream when the copy is whole. */
  sha256: string;
}

/**
 * A lease's fencing token: a bigint, exact past 2^53 (PostgreSQL's `bigint`
 * column, the files backend's decimal string), so a token never repeats.
 */
export type FencingToken = bigint;

/** Who writes an episode: a process on a host. */
export interface LeaseOwner {
  host: string;
  pid: number;
}

/** Options of {@link SharedStore.acquireLease}. */
export interface LeaseOptions {
  /** A lease not renewed for this long may be taken over from another host. @default {60000} */
  staleAfterMs?: number;
  /** For a lease held by another process of this host: whether that process is gone (then it is taken over). */
  ownerGone?: (pid: number) => boolean;
}

/** Another live writer holds the episode's lease. */
export class LeaseHeldError extends NoemaError {
  constructor(readonly episodeId: string, readonly owner: LeaseOwner) {
    super(
      "lease_held",
      `another writer holds ${episodeId} in the shared store (${owner.host} pid ${owner.pid}); ` +
        `one writer per episode: this copy is not published`,
      { exitCode: EXIT.LOCKED },
    );
    this.name = "LeaseHeldError";
  }
}

/** A stored file larger than its reader takes (see {@link SharedStore.readFile}): not read. */
export class StoredFileTooLargeError extends NoemaError {
  constructor(readonly episodeId: string, readonly file: string, readonly size: number, readonly maxBytes: number) {
    super(
      "stored_file_too_large",
      `${file} of ${episodeId} in the shared store is ${size} bytes, over the ${maxBytes} bytes read of it: not read`,
    );
    this.name = "StoredFileTooLargeError";
  }
}

/** A write carrying a fencing token older than the lease's: a newer writer took the episode over. */
export class StaleLeaseError extends NoemaError {
  constructor(readonly episodeId: string, readonly token: FencingToken, readonly current: FencingToken) {
    super(
      "stale_lease",
      `the shared store refused a write to ${episodeId}: fencing token ${token} is stale ` +
        `(the lease is at ${current}; another writer took the episode over)`,
    );
    this.name = "StaleLeaseError";
  }
}

/** A store whose schema is missing or older than this noema needs. */
export class StoreSchemaError extends NoemaError {
  constructor(message: string) {
    super("store_schema", message);
    this.name = "StoreSchemaError";
  }
}

/** The store cannot be reached (down, refusing, wrong credentials, no such database). */
export class StoreUnreachableError extends NoemaError {
  constructor(location: string, why: string) {
    super("store_unreachable", `the shared store at ${location} cannot be reached: ${why}`);
    this.name = "StoreUnreachableError";
  }
}

/**
 * The store took a call but did not answer it in time: a cut network link (a
 * partition sends no refusal, the connection just stalls), or a server too
 * overloaded to answer. Not "cannot be reached": nothing refused anything.
 */
export class StoreTimeoutError extends NoemaError {
  constructor(location: string, readonly seconds: number, what = "") {
    super(
      "store_timeout",
      `the shared store at ${location} did not answer within ${seconds} s${what ? ` (${what})` : ""}: ` +
        `a cut network link or an overloaded server (NOEMA_STORE_TIMEOUT_MS sets the bound)`,
    );
    this.name = "StoreTimeoutError";
  }
}

/**
 * A shared store backend. Every method is idempotent where it can be: an
 * episode published twice stores each line and file once.
 *
 * @example
 * ```ts
 * import { openSharedStore } from "./open.ts";
 * const store = await openSharedStore("postgres://noema@127.0.0.1:5432/noema");
 * console.log(await store.status());
 * await store.close();
 * ```
 */
export interface SharedStore {
  /** `postgres` or `files`. */
  readonly kind: string;
  /** Where it is, with any password masked (safe to print). */
  readonly location: string;
  /** Creates or migrates the schema (under a lock); returns the versions before and after. */
  migrate(): Promise<{ from: number; to: number }>;
  /** The schema version and counts. */
  status(): Promise<StoreStatus>;
  /** Lines stored for a stream of an episode (its highest `seq`; seqs start at 1). */
  lineCount(episodeId: string, stream: string): Promise<number>;
  /**
   * Stores lines `firstSeq…` of a stream, each its exact bytes without the
   * newline. An identical line already stored is ignored; a different one
   * throws {@link StoreConflictError} and nothing of the batch is stored.
   * With a fencing `token`, a stale one throws {@link StaleLeaseError}.
   */
  appendLines(
    episodeId: string,
    stream: string,
    firstSeq: number,
    lines: Uint8Array[],
    token?: FencingToken,
  ): Promise<AppendResult>;
  /** Lines `fromSeq…` of a stream (at most `limit`), in order. */
  readLines(episodeId: string, stream: string, fromSeq: number, limit: number): Promise<Uint8Array[]>;
  /** The streams stored for an episode, with their line counts. */
  streams(episodeId: string): Promise<{ stream: string; lines: number }[]>;
  /**
   * The digest of a stream as the file its stored lines make (each line and
   * its newline, in `seq` order), to compare with the episode's manifest.
   */
  streamDigest(episodeId: string, stream: string): Promise<StreamDigest>;
  /** Stores (or replaces) a whole artifact file; with a fencing `token`, only while that token is current. */
  putFile(episodeId: string, name: string, bytes: Uint8Array, token?: FencingToken): Promise<void>;
  /** The whole files stored for an episode. */
  listFiles(episodeId: string): Promise<StoredFile[]>;
  /**
   * A stored file's bytes, or null. With `maxBytes`, a larger file is never loaded: {@link StoredFileTooLargeError}
   * (a row another writer filled must not take a reader's memory).
   */
  readFile(episodeId: string, name: string, maxBytes?: number): Promise<Uint8Array | null>;
  /** Creates or updates an episode's catalog row; with a fencing `token`, only while that token is current. */
  upsertCatalog(row: CatalogRow, token?: FencingToken): Promise<void>;
  /**
   * Takes (or renews) the episode's lease for `owner`; returns its fencing
   * token, which every later write of this writer carries. A lease held by a
   * live writer elsewhere throws {@link LeaseHeldError}; a stale or released
   * one is taken over with a higher token, so the old writer's writes are
   * refused ({@link StaleLeaseError}).
   */
  acquireLease(episodeId: string, owner: LeaseOwner, options?: LeaseOptions): Promise<FencingToken>;
  /** Gives the lease up (a finished run): anyone may take it next. */
  releaseLease(episodeId: string, token: FencingToken): Promise<void>;
  /**
   * Catalog rows matching a filter, newest first. A row that cannot be read
   * comes as an {@link UnreadableCatalogRow} (filtered on the fields of it
   * that can be read) and never stops the others.
   */
  list(filter?: CatalogFilter): Promise<CatalogEntry[]>;
  /** The catalog row of one episode (an {@link UnreadableCatalogRow} when it cannot be read), or null. */
  get(episodeId: string): Promise<CatalogEntry | null>;
  /**
   * Calls `wake` soon after new lines or a catalog change of an episode are
   * stored (best effort: a lost wake-up is made up for by polling). Returns
   * a function that stops it.
   */
  subscribe(episodeId: string, wake: () => void): Promise<() => Promise<void>>;
  /**
   * Records a decision and returns it as recorded (PostgreSQL stamps the decider and the time); throws
   * {@link AlreadyDecidedError} when the checkpoint has one.
   */
  decide(decision: StoredDecision): Promise<StoredDecision>;
  /** The decision on a checkpoint, or null. */
  decision(episodeId: string, checkpointId: string): Promise<StoredDecision | null>;
  /**
   * The runs waiting for approval, newest first (at most `limit`, default 50), each with the decision the store holds
   * on the checkpoint it waits on, if any.
   */
  waiting(limit?: number, filter?: { project?: string }): Promise<WaitingRow[]>;
  /**
   * Removes the finished runs (`run_state` `terminal`, no live lease) first stored more than `older_than_ms` ago: their
   * catalog rows, lines, files and leases, in batches (each in one transaction that checks the condition again), their
   * decisions kept as tombstones. `onBatch` is told each batch; with `dry_run` nothing is removed and the batches are
   * what a prune would remove. Returns when every batch is done.
   */
  prune(options: PruneOptions, onBatch: (batch: PruneBatch) => void): Promise<void>;
  /**
   * Finds `query` (case-insensitive, as written) fleet-wide in the stored `events.jsonl` lines of the runs the
   * catalog holds: their tasks, tool inputs and outputs, and policies' reasons (`src/read/event_search.ts` says which
   * fields), newest runs first, bounded (it says when it stopped early). PostgreSQL by a trigram index over the lines;
   * a files store by a bounded scan.
   */
  searchEvents(query: string, options?: EventSearchOptions): Promise<EventSearchResult>;
  /** PostgreSQL: creates or updates the roles the database enforces (`noema store init --roles`). */
  createRoles?(): Promise<void>;
  /** PostgreSQL: walks the hash-chained decision log and reports its first break (`noema store audit`). */
  audit?(pinned?: PinnedHead): Promise<AuditReport>;
  /** Releases connections. */
  close(): Promise<void>;
}
