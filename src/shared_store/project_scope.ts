/**
 * A shared store seen through one project: what `list`, `approvals`,
 * `serve`, `pull`, reading by id, `events --follow` and deciding see when a
 * project is in force (`--project`, `NOEMA_PROJECT`, `project` in
 * noema.jsonc) and `--all-projects` is not given.
 *
 * The catalog is filtered (`list`, `waiting`, `prune`, `searchEvents`), and an episode of
 * another project (or of none) is as if absent: `get` gives null, its lines
 * and files are not there, a decision on it is refused as on an episode the
 * store does not hold. Writes (publishing, leases) pass through unchanged:
 * a run is published under the project it was started with.
 *
 * This is a view for the commands, not a boundary: a role the database must
 * keep out of other projects is limited by row-level security (docs/store.md).
 *
 * @module
 */
import { NoemaError } from "../errors.ts";
import type {
  AppendResult,
  CatalogEntry,
  CatalogFilter,
  CatalogRow,
  EventSearchOptions,
  EventSearchResult,
  FencingToken,
  LeaseOptions,
  LeaseOwner,
  PruneBatch,
  PruneOptions,
  SharedStore,
  StoredDecision,
  StoredFile,
  StoreStatus,
  StreamDigest,
  WaitingRow,
} from "./shared_store.ts";

/**
 * A view of `inner` holding only the runs of `project`.
 *
 * @example
 * ```ts
 * import { ProjectScopedStore } from "./project_scope.ts";
 * // const store = new ProjectScopedStore(await openSharedStore(url), "payments");
 * // await store.list(); // the runs of project payments only
 * ```
 */
export class ProjectScopedStore implements SharedStore {
  readonly kind: string;
  readonly location: string;
  /** Whether each episode asked about is of the project (asked of the catalog once). */
  readonly #mine = new Map<string, boolean>();
  /** The inner store's, when it has them: roles and the decision log are the store's own, not a project's. */
  readonly createRoles?: SharedStore["createRoles"];
  readonly audit?: SharedStore["audit"];

  constructor(readonly inner: SharedStore, readonly project: string) {
    this.kind = inner.kind;
    this.location = inner.location;
    if (inner.createRoles) this.createRoles = () => inner.createRoles!();
    if (inner.audit) this.audit = (pinned) => inner.audit!(pinned);
  }

  async #of(id: string): Promise<boolean> {
    const known = this.#mine.get(id);
    if (known !== undefined) return known;
    const row = await this.inner.get(id);
    const mine = row !== null && row.project === this.project;
    if (row !== null) this.#mine.set(id, mine); // a run not cataloged yet may be soon
    return mine;
  }

  migrate(): Promise<{ from: number; to: number }> {
    return this.inner.migrate();
  }
  status(): Promise<StoreStatus> {
    return this.inner.status();
  }
  async lineCount(id: string, stream: string): Promise<number> {
    return (await this.#of(id)) ? this.inner.lineCount(id, stream) : 0;
  }
  appendLines(id: string, stream: string, first: number, lines: Uint8Array[], t?: FencingToken): Promise<AppendResult> {
    return this.inner.appendLines(id, stream, first, lines, t);
  }
  async readLines(id: string, stream: string, fromSeq: number, limit: number): Promise<Uint8Array[]> {
    return (await this.#of(id)) ? this.inner.readLines(id, stream, fromSeq, limit) : [];
  }
  async streams(id: string): Promise<{ stream: string; lines: number }[]> {
    return (await this.#of(id)) ? this.inner.streams(id) : [];
  }
  async streamDigest(id: string, stream: string): Promise<StreamDigest> {
    if (await this.#of(id)) return this.inner.streamDigest(id, stream);
    return { lines: 0, last_seq: 0, size_bytes: 0, sha256: "sha256:" + EMPTY_SHA256 };
  }
  putFile(id: string, name: string, bytes: Uint8Array, token?: FencingToken): Promise<void> {
    return this.inner.putFile(id, name, bytes, token);
  }
  async listFiles(id: string): Promise<StoredFile[]> {
    return (await this.#of(id)) ? this.inner.listFiles(id) : [];
  }
  async readFile(id: string, name: string, maxBytes?: number): Promise<Uint8Array | null> {
    return (await this.#of(id)) ? this.inner.readFile(id, name, maxBytes) : null;
  }
  upsertCatalog(row: CatalogRow, token?: FencingToken): Promise<void> {
    return this.inner.upsertCatalog(row, token);
  }
  acquireLease(id: string, owner: LeaseOwner, options?: LeaseOptions): Promise<FencingToken> {
    return this.inner.acquireLease(id, owner, options);
  }
  releaseLease(id: string, token: FencingToken): Promise<void> {
    return this.inner.releaseLease(id, token);
  }
  list(filter: CatalogFilter = {}): Promise<CatalogEntry[]> {
    return this.inner.list({ ...filter, project: this.project });
  }
  async get(id: string): Promise<CatalogEntry | null> {
    const row = await this.inner.get(id);
    return row !== null && row.project === this.project ? row : null;
  }
  async subscribe(id: string, wake: () => void): Promise<() => Promise<void>> {
    return await this.inner.subscribe(id, wake);
  }
  async decide(d: StoredDecision): Promise<StoredDecision> {
    if (!(await this.#of(d.episode_id))) {
      throw new NoemaError(
        "not_found",
        `episode ${d.episode_id} is not a run of project ${this.project} in ${this.location} ` +
          `(give --all-projects, or its --project)`,
      );
    }
    return await this.inner.decide(d);
  }
  async decision(id: string, checkpointId: string): Promise<StoredDecision | null> {
    return (await this.#of(id)) ? this.inner.decision(id, checkpointId) : null;
  }
  waiting(limit?: number): Promise<WaitingRow[]> {
    return this.inner.waiting(limit, { project: this.project });
  }
  prune(options: PruneOptions, onBatch: (batch: PruneBatch) => void): Promise<void> {
    return this.inner.prune({ ...options, project: this.project }, onBatch);
  }
  searchEvents(query: string, options: EventSearchOptions = {}): Promise<EventSearchResult> {
    return this.inner.searchEvents(query, { ...options, project: this.project });
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** The SHA-256 of nothing: the digest of a stream with no lines. */
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
