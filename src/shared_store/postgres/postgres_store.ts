/**
 * The PostgreSQL backend of the shared store, through the `postgres` client
 * (no dependencies; the same under Bun, Deno and the compiled binary).
 *
 * - Lines are stored with `INSERT … ON CONFLICT DO NOTHING`, then compared:
 *   an identical line sent twice is ignored, a different one under the same
 *   key rolls the batch back and throws {@link StoreConflictError}.
 * - Bytes travel as `bytea`, so a line is stored exactly as written.
 * - The schema is created and migrated under an advisory lock
 *   ({@link MIGRATION_LOCK_KEY}) with a version table.
 *
 * @module
 */
import process from "node:process";
import postgres from "postgres";
import { NoemaError } from "../../errors.ts";
import { sha256 } from "../../store/hash.ts";
import {
  AlreadyDecidedError,
  type AppendResult,
  type CatalogEntry,
  type CatalogFilter,
  type CatalogRow,
  type EventSearchOptions,
  type EventSearchResult,
  type FencingToken,
  LeaseHeldError,
  type LeaseOptions,
  type LeaseOwner,
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
  StoreTimeoutError,
  StoreUnreachableError,
  type StreamDigest,
  type WaitingRow,
} from "../shared_store.ts";
import { digestByPages } from "../stream_digest.ts";
import { pruneBatch, type PruneCursor } from "./prune.ts";
import { catalogEntry, unreadableRow } from "../catalog_row.ts";
import { isoTime, UNREADABLE_TIME, unreadableTime } from "./row_time.ts";
import { maskStoreUrl } from "../store_url.ts";
import { searchStoredEvents } from "./event_search.ts";
import { LATEST_SCHEMA_VERSION, MIGRATION_LOCK_KEY, MIGRATIONS } from "./migrations.ts";
import { connectionTarget, firstHostUrl, urlHasPassword, urlHostPorts } from "./conninfo.ts";
import { connectFirstHost } from "./multi_host.ts";
import { pgpassLookup } from "./pgpass.ts";
import { clientTls } from "./tls.ts";
import { createRoles, rolePowers } from "./roles.ts";
import { auditDecisions, type AuditReport, type PinnedHead } from "./decision_audit.ts";

type Sql = postgres.Sql;

/** Decodes UTF-8, refusing anything that is not (and keeping a byte order mark as text). */
const STRICT_UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** Streams up to this size are hashed by the database in one value (a bytea holds at most 1 GB). */
const DIGEST_IN_DATABASE_BYTES = 256 << 20;

/** The NOTIFY channel: its payload is the id of an episode that got new lines or a new catalog row. */
export const NOTIFY_CHANNEL = "noema_episode";

/** How long connecting may take (TCP, TLS, login), in seconds: a server that does not answer then is timed out. */
const CONNECT_TIMEOUT_SEC = 5;

/**
 * TCP keepalive probes start after a connection was silent this long, in seconds: the client's socket option, and
 * the server's for its side of each connection (`tcp_keepalives_idle`, `_interval`), so each side finds a peer that a
 * cut link took away.
 */
const KEEPALIVE_SEC = 10;

/** Unanswered keepalive probes after which the server drops a connection (its session, its locks). */
const KEEPALIVE_PROBES = 3;

/** A migration (which waits for racing migrators, and may rewrite big tables) is given this many times a call's bound. */
const MIGRATION_TIMEOUT_FACTOR = 20;

/**
 * How long one store call may go unanswered before it fails, in ms: `NOEMA_STORE_TIMEOUT_MS`, default 30,000.
 * A cut network link sends no refusal: without this bound a call on a stalled connection waits until TCP gives up
 * (a quarter of an hour and more).
 *
 * @example
 * ```ts
 * import { storeCallTimeoutMs } from "./postgres_store.ts";
 * const ms = storeCallTimeoutMs(); // 30000 unless NOEMA_STORE_TIMEOUT_MS says otherwise
 * ```
 */
export function storeCallTimeoutMs(): number {
  const v = Number(process.env.NOEMA_STORE_TIMEOUT_MS);
  return process.env.NOEMA_STORE_TIMEOUT_MS && Number.isFinite(v) && v > 0 ? v : 30_000;
}

/** Error codes that mean the store cannot be used at all (connection, authentication, database). */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "EPIPE",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "28P01", // password authentication failed
  "28000", // no such role / not allowed
  "3D000", // no such database
  "57P01", // terminated by an administrator (a server shutting down)
  "57P03", // the server is starting up or shutting down
]);

/** A failed TLS handshake or certificate check (Node's codes: `SELF_SIGNED_CERT_IN_CHAIN`, `ERR_TLS_CERT_ALTNAME_INVALID`…). */
const TLS_FAILURE = /CERT|^ERR_TLS_|^ERR_SSL_|^EPROTO$/;

/** A refused login: a wrong or missing password (28P01), or no `pg_hba.conf` entry for this role and host (28000). */
const REFUSED_LOGIN = new Set(["28P01", "28000"]);

/**
 * Turns what the client threw into an error that says what happened: a failed TLS check, a refused login (with why
 * the password file was not used), a role that may not create the schema (`creating`: what was attempted was `store
 * init`/`migrate`), a refused write of a read-only role, no schema, an unreachable server.
 */
function explain(
  e: unknown,
  location: string,
  passwordNote: string | null = null,
  tls = "",
  creating = false,
  connectSec = CONNECT_TIMEOUT_SEC,
): unknown {
  const err = e as { code?: string; message?: string; address?: string; port?: number };
  if (err?.code === "CONNECT_TIMEOUT") {
    const where = err.port === undefined ? err.address : `${err.address}:${err.port}`;
    return new StoreTimeoutError(location, connectSec, `connecting${where ? ` to ${where}` : ""}`);
  }
  if (TLS_FAILURE.test(String(err?.code))) {
    return new NoemaError(
      "store_tls",
      `the shared store at ${location} failed TLS: ${err.message} (${err.code}${tls ? `; ${tls}` : ""})`,
    );
  }
  if (REFUSED_LOGIN.has(String(err?.code))) {
    return new NoemaError(
      "store_login",
      `the shared store at ${location} refused the login: ${err.message}` +
        (passwordNote ? `; ${passwordNote}` : "") +
        `. Give the password in ~/.pgpass (chmod 0600), in PGPASSWORD, or in the URL (see docs/store.md)`,
    );
  }
  // insufficient_privilege while creating the schema: a writer role (which may write rows) lacks CREATE on it.
  if (err?.code === "42501" && creating) {
    return new NoemaError(
      "store_privilege",
      `the shared store at ${location} refused to create noema's schema: this role may not create tables, it ` +
        `lacks CREATE on the schema (${err.message}). Run noema store init as the schema's owner; runners need only ` +
        `a writer role's grants (see docs/store.md, Roles and audit).`,
    );
  }
  if (err?.code === "42501" || err?.code === "25006") {
    return new NoemaError(
      "store_read_only",
      `the shared store at ${location} refused a write: this role may only read (${err.message}). ` +
        `Use a writer role for runners (see docs/store.md).`,
    );
  }
  if (err?.code === "42P01") {
    return new StoreSchemaError(`the shared store at ${location} has no noema schema: run noema store init`);
  }
  if (UNREACHABLE.has(String(err?.code))) return new StoreUnreachableError(location, String(err?.message));
  return e;
}

/**
 * One catalog row as stored, back to the interface shape and checked: a row whose jsonb (`tags`, `pending`), array
 * or run state is not what noema writes (written by hand, or by another program) is an unreadable marker.
 */
function rowOf(r: Record<string, unknown>): CatalogEntry {
  const iso = (v: unknown) => isoTime(v) ?? null;
  const id = String(r.episode_id);
  const where = `the catalog row of ${id} (noema_episodes)`;
  // A time JavaScript cannot hold ('infinity', a year past 275760): this row is unreadable, naming the field.
  const badTime = unreadableTime({ started_at: r.started_at, ended_at: r.ended_at, stored_at: r.stored_at });
  const entry = badTime !== null ? unreadableRow(id, `${where}: ${badTime}: ${UNREADABLE_TIME}`) : catalogEntry(
    {
      episode_id: id,
      task: r.task ?? null,
      run_state: r.run_state,
      status: r.status,
      outcome: r.outcome ?? null,
      started_at: iso(r.started_at),
      ended_at: iso(r.ended_at),
      host: r.host,
      adapter: r.adapter ?? null,
      policy_ids: r.policy_ids ?? [],
      tags: r.tags ?? {},
      step_count: r.step_count,
      veto_count: r.veto_count,
      pending: r.pending ?? null,
      stored_at: iso(r.stored_at),
    },
    id,
    where,
  );
  // When the store first stored it (its clock), for its place in the order, whether or not the rest can be read.
  // Its project when it has one (a row of none reads as it was written, without the key).
  return { ...entry, stored_at: iso(r.stored_at), ...(r.project ? { project: String(r.project) } : {}) };
}

function decisionOf(r: Record<string, unknown>): StoredDecision {
  const str = (v: unknown) => (v == null ? null : String(v));
  return {
    episode_id: String(r.episode_id),
    checkpoint_id: String(r.checkpoint_id),
    state_hash: String(r.state_hash),
    decision: r.decision as StoredDecision["decision"],
    by: String(r.decided_by),
    note: (r.note as string | null) ?? null,
    host: String(r.host),
    at: isoTime(r.decided_at) ?? String(r.decided_at),
    // Null for a row decided before schema version 5 (its decided_by is what the client said).
    authenticated_as: str(r.authenticated_as) as StoredDecision["authenticated_as"],
    database_role: str(r.decided_by_role),
    claimed_by: str(r.claimed_by),
    checkpoint_digest: str(r.checkpoint_digest),
    ...(r.pruned_at == null ? {} : {
      pruned_at: isoTime(r.pruned_at) ?? String(r.pruned_at),
    }),
  };
}

/**
 * A shared store in a PostgreSQL database.
 *
 * @example
 * ```ts
 * import { PostgresStore } from "./postgres_store.ts";
 * const store = new PostgresStore("postgres://noema@127.0.0.1:5432/noema");
 * await store.migrate();
 * await store.close();
 * ```
 */
export class PostgresStore implements SharedStore {
  readonly kind = "postgres";
  readonly location: string;
  /** The client; replaced by a fresh one after a call timed out (its connections may be stalled on a dead link). */
  get sql(): Sql {
    return this.#sql;
  }
  #sql: Sql;
  readonly #newClient: () => Sql;
  /** How long a call may go unanswered, ms ({@link storeCallTimeoutMs}). */
  readonly #timeoutMs: number;
  /** How long connecting may take, s. */
  readonly #connectSec: number;

  /** @param url a `postgres://` URL; `sslmode` and the other options in it pass through to the client. */
  /**
   * @param options.connection server settings for each connection (e.g. `{ statement_timeout: "5s" }`)
   */
  constructor(
    url: string,
    options: { connectTimeoutSec?: number; connection?: Record<string, string>; timeoutMs?: number } = {},
  ) {
    this.location = maskStoreUrl(url);
    // The password file, as libpq reads it (the client does not): only when neither the URL nor PGPASSWORD has one.
    let pass: string | undefined;
    if (!urlHasPassword(url) && !process.env.PGPASSWORD) {
      const found = pgpassLookup(connectionTarget(url));
      pass = found.password ?? undefined;
      this.#passwordNote = found.ignored;
    }
    const tls = clientTls(url); // sslrootcert, sslcert, sslkey: read here, never sent to the server as settings
    this.#tlsSummary = tls.summary;
    this.#timeoutMs = options.timeoutMs ?? storeCallTimeoutMs();
    this.#connectSec = options.connectTimeoutSec ?? CONNECT_TIMEOUT_SEC;
    // The server gives up on what this client no longer waits for: a statement past the bound, a transaction left
    // open by a client cut off mid-way (whose row locks, a lease's, would otherwise be held until TCP gives up).
    const bound = Math.ceil(this.#timeoutMs); // ms
    // Several hosts: each connection tries them in order (the client's own several-host mode never gives up).
    const hosts = urlHostPorts(url);
    const several = hosts.length > 1
      ? {
        socket: async () => {
          const socket = await connectFirstHost(hosts, this.#connectSec * 1000);
          socket.setKeepAlive(true, KEEPALIVE_SEC * 1000); // as keep_alive does for the client's own sockets
          return socket;
        },
      }
      : {};
    const target = hosts.length > 1 ? firstHostUrl(tls.url) : tls.url;
    this.#newClient = () =>
      postgres(target, {
        ...(several as Record<string, never>), // `socket` is not in the client's types
        ...(pass === undefined ? {} : { pass }),
        ...(tls.ssl === undefined ? {} : { ssl: tls.ssl }),
        onnotice: () => {},
        max: 4,
        idle_timeout: 20,
        connect_timeout: this.#connectSec,
        keep_alive: KEEPALIVE_SEC,
        connection: {
          application_name: "noema",
          statement_timeout: bound,
          idle_in_transaction_session_timeout: bound,
          // A session whose client was cut off in the middle of sending a message waits for the rest in no
          // statement and no idle transaction: only the server's keepalive ends it (and frees a lease row it
          // locked), after 10 + 3 × 10 s instead of the system's default of two hours.
          tcp_keepalives_idle: KEEPALIVE_SEC,
          tcp_keepalives_interval: KEEPALIVE_SEC,
          tcp_keepalives_count: KEEPALIVE_PROBES,
          ...options.connection,
        },
      });
    this.#sql = this.#newClient();
  }

  /** The URL's `sslmode` and `sslrootcert`, for a TLS failure's message. */
  readonly #tlsSummary: string = "";

  /** Why the password file was not used, for a refused login's message; null when it was, or there is none. */
  readonly #passwordNote: string | null = null;

  /** Whether the database's encoding is UTF8 (asked once). */
  #utf8: boolean | null = null;

  /**
   * Runs one store call: what the client throws is explained, and a call not answered within the bound fails as a
   * {@link StoreTimeoutError}. Its connections are then dropped (they may be stalled on a dead link, and later calls
   * would queue behind them); the next call connects afresh.
   */
  async #guard<T>(f: () => Promise<T>, timeoutMs = this.#timeoutMs, creating = false): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const call = f();
    call.catch(() => {}); // a call given up on may still fail later: that is not unhandled
    const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), timeoutMs)));
    try {
      const r = await Promise.race([call, late]);
      if (r !== "late") return r as T;
    } catch (e) {
      // The server's statement_timeout (the same bound) ran out first: the same fault, said the same way.
      const server = e as { code?: string; message?: string };
      if (server?.code === "57014" && /statement timeout/.test(String(server.message))) {
        throw new StoreTimeoutError(this.location, timeoutMs / 1000, "the server's statement_timeout");
      }
      throw explain(e, this.location, this.#passwordNote, this.#tlsSummary, creating, this.#connectSec);
    } finally {
      clearTimeout(timer);
    }
    const stalled = this.#sql;
    this.#sql = this.#newClient();
    void stalled.end({ timeout: 0 }).catch(() => {});
    throw new StoreTimeoutError(this.location, timeoutMs / 1000);
  }

  async #version(sql: Sql | postgres.TransactionSql): Promise<number> {
    const [t] = await sql`SELECT to_regclass('noema_schema_version') IS NOT NULL AS present`;
    if (!t.present) return 0;
    const [v] = await sql`SELECT coalesce(max(version), 0) AS v FROM noema_schema_version`;
    return Number(v.v);
  }

  /**
   * Inside a transaction: refuses a write whose fencing token is not the lease's current one. The token also goes to
   * the database (`noema.fencing_token`, for this transaction), whose trigger checks it again (schema version 5).
   */
  async #fence(tx: postgres.TransactionSql, episodeId: string, token: FencingToken | undefined): Promise<void> {
    if (token === undefined) return;
    await tx`SELECT set_config('noema.fencing_token', ${token.toString()}, true)`;
    const [l] = await tx`SELECT token::text FROM noema_leases WHERE episode_id = ${episodeId} FOR SHARE`;
    const current = l ? BigInt(l.token) : 0n;
    if (current !== token) throw new StaleLeaseError(episodeId, token, current);
  }

  acquireLease(episodeId: string, owner: LeaseOwner, options: LeaseOptions = {}): Promise<FencingToken> {
    const staleMs = options.staleAfterMs ?? 60_000;
    return this.#guard(() =>
      this.sql.begin(async (tx) => {
        const [l] = await tx`SELECT host, pid, token::text, released,
            extract(epoch FROM (now() - renewed_at)) * 1000 AS age_ms
          FROM noema_leases WHERE episode_id = ${episodeId} FOR UPDATE`;
        if (!l) {
          // No row to lock yet: two first writers race here; ON CONFLICT makes the loser see the winner's row.
          const [made] = await tx`INSERT INTO noema_leases (episode_id, host, pid, token)
            VALUES (${episodeId}, ${owner.host}, ${owner.pid}, 1) ON CONFLICT (episode_id) DO NOTHING RETURNING token`;
          if (made) return 1n;
          const [other] = await tx`SELECT host, pid FROM noema_leases WHERE episode_id = ${episodeId} FOR UPDATE`;
          throw new LeaseHeldError(episodeId, { host: String(other.host), pid: Number(other.pid) });
        }
        const mine = l.host === owner.host && Number(l.pid) === owner.pid && !l.released;
        if (mine) {
          await tx`UPDATE noema_leases SET renewed_at = now() WHERE episode_id = ${episodeId}`;
          return BigInt(l.token);
        }
        const gone = l.released || Number(l.age_ms) > staleMs ||
          (l.host === owner.host && (options.ownerGone?.(Number(l.pid)) ?? false));
        const holder = { host: String(l.host), pid: Number(l.pid) };
        if (!gone) throw new LeaseHeldError(episodeId, holder);
        try {
          const [n] = await tx`UPDATE noema_leases SET host = ${owner.host}, pid = ${owner.pid}, token = token + 1,
              renewed_at = now(), released = false
            WHERE episode_id = ${episodeId} RETURNING token::text`;
          return BigInt(n.token);
        } catch (e) {
          // The database's own refusal (another login role holds a live lease: its process may look gone from here,
          // on another host of the same name): held, as noema's own check says it, not a role that may only read.
          if (LEASE_HELD_BY_ROLE.test(String((e as Error).message))) throw new LeaseHeldError(episodeId, holder);
          throw e;
        }
      })
    );
  }

  releaseLease(episodeId: string, token: FencingToken): Promise<void> {
    return this.#guard(async () => {
      await this.sql`UPDATE noema_leases SET released = true
        WHERE episode_id = ${episodeId} AND token = ${token.toString()}::bigint`;
    });
  }

  migrate(): Promise<{ from: number; to: number }> {
    const timeoutMs = this.#timeoutMs * MIGRATION_TIMEOUT_FACTOR;
    return this.#guard(
      () =>
        this.sql.begin(async (tx) => {
          await tx.unsafe(`SET LOCAL statement_timeout = ${Math.ceil(timeoutMs)}`);
          await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
          await tx`CREATE TABLE IF NOT EXISTS noema_schema_version (
          version integer PRIMARY KEY, description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
          const from = await this.#version(tx);
          if (from > LATEST_SCHEMA_VERSION) {
            throw new StoreSchemaError(
              `the shared store at ${this.location} has schema version ${from}, newer than this noema's ` +
                `${LATEST_SCHEMA_VERSION}: upgrade noema`,
            );
          }
          // Every migration not recorded yet, in order: one numbered below the newest recorded (built on a branch of
          // its own, as 5 and 6 were) still runs, so no store misses one.
          const done = new Set((await tx`SELECT version FROM noema_schema_version`).map((r) => Number(r.version)));
          for (const m of MIGRATIONS.filter((m) => !done.has(m.version))) {
            for (const s of m.statements) await tx.unsafe(s);
            await tx`INSERT INTO noema_schema_version (version, description) VALUES (${m.version}, ${m.description})`;
          }
          return { from, to: Math.max(from, LATEST_SCHEMA_VERSION) };
        }),
      timeoutMs,
      true,
    );
  }

  status(): Promise<StoreStatus> {
    return this.#guard(async () => {
      const version = await this.#version(this.sql);
      const episodes = version === 0 ? null : Number((await this.sql`SELECT count(*) AS n FROM noema_episodes`)[0].n);
      // Every connection of the pool is opened with the same TLS settings: this one's tells for all.
      const [tls] = await this.sql`SELECT version, cipher FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl`;
      return {
        kind: this.kind,
        location: this.location,
        schema_version: version,
        latest_version: LATEST_SCHEMA_VERSION,
        episodes,
        tls: tls ? `${tls.version} ${tls.cipher}` : null,
        ...(version >= 5 ? { role: await rolePowers(this.sql) } : {}),
      };
    });
  }

  /** Creates or updates the roles the database enforces (`noema store init --roles`; see `roles.ts`). */
  createRoles(): Promise<void> {
    return this.#guard(async () => {
      try {
        await this.sql.begin((tx) => createRoles(tx));
      } catch (e) {
        const err = e as { code?: string; message?: string };
        if (err?.code !== "42501") throw e;
        throw new NoemaError(
          "store_privilege",
          `the shared store at ${this.location} refused to create noema's roles: ${err.message}. Run noema store ` +
            `init --roles as the schema's owner with CREATEROLE, or have an administrator run its SQL (docs/store.md, ` +
            `Roles and audit)`,
        );
      }
    });
  }

  /** Walks the decision chain and reports the first break (`noema store audit`; see `decision_audit.ts`). */
  audit(pinned?: PinnedHead): Promise<AuditReport> {
    // A long chain is walked page by page: each page is one call within the bound, the walk as long as it takes.
    return this.#guard(() => auditDecisions(this.sql, pinned), this.#timeoutMs * MIGRATION_TIMEOUT_FACTOR);
  }

  lineCount(episodeId: string, stream: string): Promise<number> {
    return this.#guard(async () => {
      const [r] = await this.sql`SELECT coalesce(max(seq), 0) AS n FROM noema_lines
        WHERE episode_id = ${episodeId} AND stream = ${stream}`;
      return Number(r.n);
    });
  }

  appendLines(
    episodeId: string,
    stream: string,
    firstSeq: number,
    lines: Uint8Array[],
    token?: FencingToken,
  ): Promise<AppendResult> {
    if (lines.length === 0) return Promise.resolve({ inserted: 0, duplicates: 0 });
    // One bytea holding every line, cut apart in the database: far less work than an array of hex strings.
    const blob = Buffer.concat(lines);
    const offsets: number[] = [], lengths: number[] = [];
    let at = 0;
    for (const l of lines) {
      offsets.push(at);
      lengths.push(l.length);
      at += l.length;
    }
    return this.#guard(() =>
      this.sql.begin(async (tx) => {
        await this.#fence(tx, episodeId, token);
        // Lines follow each other: a batch that would leave a gap is refused (its lines would be shifted).
        const [last] = await tx`SELECT coalesce(max(seq), 0) AS n FROM noema_lines
          WHERE episode_id = ${episodeId} AND stream = ${stream}`;
        if (firstSeq > Number(last.n) + 1) {
          throw new StoreConflictError(
            episodeId,
            stream,
            firstSeq,
            `would leave a gap: the store holds lines up to ${last.n}`,
          );
        }
        const text = await this.#asText(tx, blob);
        // The blob converted once (OFFSET 0 keeps the subquery from being folded into each row), then cut apart.
        const bytes = text === null
          ? tx`SELECT ${blob}::bytea AS blob OFFSET 0`
          : tx`SELECT convert_to(${text}::text, 'UTF8') AS blob OFFSET 0`;
        const batch = tx`SELECT ${firstSeq}::bigint + i - 1 AS s, substring(all_lines.blob FROM o + 1 FOR n) AS b
          FROM (${bytes}) AS all_lines, unnest(${offsets}::int[], ${lengths}::int[]) WITH ORDINALITY AS t(o, n, i)`;
        const inserted = await tx`INSERT INTO noema_lines (episode_id, stream, seq, bytes)
          SELECT ${episodeId}, ${stream}, s, b FROM (${batch}) AS lines
          ON CONFLICT DO NOTHING RETURNING seq`;
        if (inserted.length < lines.length) {
          const clash = await this.#firstClash(
            tx,
            episodeId,
            stream,
            firstSeq,
            lines,
            inserted.map((r) => Number(r.seq)),
          );
          if (clash !== null) throw new StoreConflictError(episodeId, stream, clash);
        }
        if (inserted.length > 0) await tx`SELECT pg_notify(${NOTIFY_CHANNEL}, ${episodeId})`;
        return { inserted: inserted.length, duplicates: lines.length - inserted.length };
      })
    );
  }

  /**
   * The lines as one text, when the database can take them so: valid UTF-8
   * without NUL, and a UTF8 database (whose `convert_to` gives the bytes back
   * as they were). Text travels at the size of the lines, where `bytea`
   * travels as hex, twice that, encoded here and decoded there. Else null.
   */
  async #asText(tx: postgres.TransactionSql, blob: Buffer): Promise<string | null> {
    if (this.#utf8 === null) {
      const [r] = await tx`SHOW server_encoding`;
      this.#utf8 = String(r.server_encoding).toUpperCase() === "UTF8";
    }
    if (!this.#utf8 || blob.includes(0)) return null;
    try {
      return STRICT_UTF8.decode(blob);
    } catch {
      return null; // not UTF-8: sent as bytes
    }
  }

  /**
   * The first line of a batch that the store already held with other bytes,
   * or null. Only the lines not inserted are compared, by their SHA-256 (a
   * join of the stored lines with the whole batch cut apart again costs
   * seconds for a batch of megabytes).
   */
  async #firstClash(
    tx: postgres.TransactionSql,
    episodeId: string,
    stream: string,
    firstSeq: number,
    lines: Uint8Array[],
    inserted: readonly number[],
  ): Promise<number | null> {
    const fresh = new Set(inserted);
    const seqs: number[] = [], digests: string[] = [];
    for (let i = 0; i < lines.length; i++) {
      if (fresh.has(firstSeq + i)) continue;
      seqs.push(firstSeq + i);
      digests.push(sha256(lines[i]).slice("sha256:".length));
    }
    const [clash] = await tx`SELECT l.seq FROM noema_lines l
      JOIN unnest(${seqs}::bigint[], ${digests}::text[]) AS d(s, h) ON l.seq = d.s
      WHERE l.episode_id = ${episodeId} AND l.stream = ${stream} AND encode(sha256(l.bytes), 'hex') <> d.h
      ORDER BY l.seq LIMIT 1`;
    return clash ? Number(clash.seq) : null;
  }

  readLines(episodeId: string, stream: string, fromSeq: number, limit: number): Promise<Uint8Array[]> {
    return this.#guard(async () => {
      const rows = await this.sql`SELECT bytes FROM noema_lines
        WHERE episode_id = ${episodeId} AND stream = ${stream} AND seq >= ${fromSeq}
        ORDER BY seq LIMIT ${limit}`;
      return rows.map((r) => new Uint8Array(r.bytes as Buffer));
    });
  }

  streams(episodeId: string): Promise<{ stream: string; lines: number }[]> {
    return this.#guard(async () => {
      const rows = await this.sql`SELECT stream, max(seq) AS n FROM noema_lines
        WHERE episode_id = ${episodeId} GROUP BY stream ORDER BY stream`;
      return rows.map((r) => ({ stream: String(r.stream), lines: Number(r.n) }));
    });
  }

  streamDigest(episodeId: string, stream: string): Promise<StreamDigest> {
    return this.#guard(async () => {
      const [c] = await this.sql`SELECT count(*) AS n, coalesce(max(seq), 0) AS last,
          coalesce(sum(length(bytes) + 1), 0) AS size
        FROM noema_lines WHERE episode_id = ${episodeId} AND stream = ${stream}`;
      const lines = Number(c.n), last = Number(c.last), size = Number(c.size);
      // Hashed in the database when the stream fits one value comfortably (no bytes travel); else page by page here.
      if (size > DIGEST_IN_DATABASE_BYTES) {
        return digestByPages((from, n) => this.readLines(episodeId, stream, from, n), last);
      }
      const [d] = await this.sql`SELECT encode(sha256(coalesce(string_agg(bytes || '\x0a'::bytea, ''::bytea
          ORDER BY seq), ''::bytea)), 'hex') AS h
        FROM noema_lines WHERE episode_id = ${episodeId} AND stream = ${stream}`;
      return { lines, last_seq: last, size_bytes: size, sha256: `sha256:${d.h}` };
    });
  }

  putFile(episodeId: string, name: string, bytes: Uint8Array, token?: FencingToken): Promise<void> {
    const digest = sha256(bytes);
    return this.#guard(() =>
      this.sql.begin(async (tx) => {
        await this.#fence(tx, episodeId, token);
        await tx`INSERT INTO noema_files (episode_id, name, bytes, size, sha256)
        VALUES (${episodeId}, ${name}, ${Buffer.from(bytes)}, ${bytes.length}, ${digest})
        ON CONFLICT (episode_id, name) DO UPDATE SET bytes = EXCLUDED.bytes, size = EXCLUDED.size,
          sha256 = EXCLUDED.sha256, updated_at = now()
        WHERE noema_files.sha256 <> EXCLUDED.sha256`;
      })
    );
  }

  listFiles(episodeId: string): Promise<StoredFile[]> {
    return this.#guard(async () => {
      const rows = await this.sql`SELECT name, size, sha256 FROM noema_files WHERE episode_id = ${episodeId}
        ORDER BY name`;
      return rows.map((r) => ({ name: String(r.name), size: Number(r.size), sha256: String(r.sha256) }));
    });
  }

  readFile(episodeId: string, name: string, maxBytes?: number): Promise<Uint8Array | null> {
    return this.#guard(async () => {
      if (maxBytes === undefined) {
        const [r] = await this.sql`SELECT bytes FROM noema_files WHERE episode_id = ${episodeId} AND name = ${name}`;
        return r ? new Uint8Array(r.bytes as Buffer) : null;
      }
      // The size first, in the database: a larger value never crosses the wire.
      const [r] = await this.sql`SELECT octet_length(bytes) AS size,
          CASE WHEN octet_length(bytes) <= ${maxBytes} THEN bytes END AS bytes
        FROM noema_files WHERE episode_id = ${episodeId} AND name = ${name}`;
      if (!r) return null;
      if (r.bytes === null) throw new StoredFileTooLargeError(episodeId, name, Number(r.size), maxBytes);
      return new Uint8Array(r.bytes as Buffer);
    });
  }

  upsertCatalog(row: CatalogRow, token?: FencingToken): Promise<void> {
    return this.#guard(() =>
      this.sql.begin(async (tx) => {
        await this.#fence(tx, row.episode_id, token);
        const { stored_at: _, ...fields } = row; // the database's now(), on the first insert only
        // A run of no project writes no project column (a store not yet at schema 6 takes it as before).
        const { project: _p, ...unprojected } = fields;
        const r = {
          ...(row.project ? { ...unprojected, project: row.project } : unprojected),
          tags: this.sql.json(row.tags),
          policy_ids: this.sql.array(row.policy_ids),
          pending: row.pending ? this.sql.json(row.pending as never) : null,
        };
        await tx`INSERT INTO noema_episodes ${tx(r as never)}
        ON CONFLICT (episode_id) DO UPDATE SET task = EXCLUDED.task, run_state = EXCLUDED.run_state,
          status = EXCLUDED.status, outcome = EXCLUDED.outcome, started_at = EXCLUDED.started_at,
          ended_at = EXCLUDED.ended_at, host = EXCLUDED.host, adapter = EXCLUDED.adapter,
          policy_ids = EXCLUDED.policy_ids, tags = EXCLUDED.tags, step_count = EXCLUDED.step_count,
          veto_count = EXCLUDED.veto_count, pending = EXCLUDED.pending, updated_at = now()
          ${row.project ? tx`, project = coalesce(noema_episodes.project, EXCLUDED.project)` : tx``}`;
        await tx`SELECT pg_notify(${NOTIFY_CHANNEL}, ${row.episode_id})`;
      })
    );
  }

  subscribe(episodeId: string, wake: () => void): Promise<() => Promise<void>> {
    // When its connection closes, the client LISTENs again with a copy of the callback that `unlisten` no longer
    // reaches; `active` silences that copy once this subscription is stopped (a waiter subscribes anew after an
    // outage, since the client's own try fails while the server is down).
    let active = true;
    return this.#guard(async () => {
      const { unlisten } = await this.sql.listen(NOTIFY_CHANNEL, (payload) => {
        if (active && payload === episodeId) wake();
      });
      return async () => {
        active = false;
        await unlisten().catch(() => {});
      };
    });
  }

  list(filter: CatalogFilter = {}): Promise<CatalogEntry[]> {
    const sql = this.sql;
    const conds: postgres.PendingQuery<postgres.Row[]>[] = [sql`TRUE`];
    if (filter.status?.length) {
      conds.push(sql`((run_state = 'terminal' AND status = ANY(${filter.status}::text[]))
        OR run_state = ANY(${filter.status}::text[]))`);
    }
    if (filter.run_state?.length) conds.push(sql`run_state = ANY(${filter.run_state}::text[])`);
    if (filter.tags && Object.keys(filter.tags).length) conds.push(sql`tags @> ${sql.json(filter.tags)}`);
    if (filter.task) conds.push(sql`lower(task) LIKE ${"%" + likeEscape(filter.task.toLowerCase()) + "%"}`);
    if (filter.since) conds.push(sql`stored_at >= ${filter.since}`);
    if (filter.within_ms !== undefined) {
      conds.push(sql`stored_at >= now() - make_interval(secs => ${filter.within_ms / 1000})`);
    }
    if (filter.host) conds.push(sql`host = ${filter.host}`);
    if (filter.adapter) conds.push(sql`adapter = ${filter.adapter}`);
    if (filter.policy) conds.push(sql`policy_ids @> ${[filter.policy]}::text[]`);
    if (filter.project !== undefined) conds.push(sql`project = ${filter.project}`);
    const where = conds.reduce((a, c) => sql`${a} AND ${c}`);
    return this.#guard(async () => {
      const rows = await sql`SELECT * FROM noema_episodes WHERE ${where}
        ORDER BY stored_at DESC, episode_id DESC LIMIT ${filter.limit ?? 50}`;
      return rows.map(rowOf);
    });
  }

  /** The stored events lines holding the text, by the trigram index of schema version 7 (`event_search.ts`). */
  searchEvents(query: string, options: EventSearchOptions = {}): Promise<EventSearchResult> {
    return this.#guard(() => searchStoredEvents(this.sql, query, options));
  }

  get(episodeId: string): Promise<CatalogEntry | null> {
    return this.#guard(async () => {
      const [r] = await this.sql`SELECT * FROM noema_episodes WHERE episode_id = ${episodeId}`;
      return r ? rowOf(r) : null;
    });
  }

  /**
   * Records a decision through `noema_decide`, which stamps the decider (`session_user`, or the serve token's label
   * given as `d.by` when `d.authenticated_as` is `serve_token`) and the time, and chains the row; returns it as
   * recorded. What the client says of who decided is kept as `claimed_by` only.
   */
  decide(d: StoredDecision): Promise<StoredDecision> {
    const serveLabel = d.authenticated_as === "serve_token" ? d.by : null;
    return this.#guard(async () => {
      let r: { inserted: boolean; row: Record<string, unknown> };
      try {
        const rows = await this.sql`SELECT noema_decide(${d.episode_id}, ${d.checkpoint_id}, ${d.state_hash},
          ${d.decision}, ${d.note}, ${d.host}, ${d.claimed_by ?? null}, ${d.checkpoint_digest ?? null},
          ${serveLabel}) AS r`;
        r = rows[0].r;
      } catch (e) {
        throw refusedDecision(e, this.location);
      }
      if (!r.inserted) throw new AlreadyDecidedError(decisionOf(r.row));
      return decisionOf(r.row);
    });
  }

  decision(episodeId: string, checkpointId: string): Promise<StoredDecision | null> {
    return this.#guard(async () => {
      const [r] = await this.sql`SELECT * FROM noema_decisions
        WHERE episode_id = ${episodeId} AND checkpoint_id = ${checkpointId}`;
      return r ? decisionOf(r) : null;
    });
  }

  waiting(limit = 50, filter: { project?: string } = {}): Promise<WaitingRow[]> {
    const project = filter.project === undefined ? this.sql`TRUE` : this.sql`e.project = ${filter.project}`;
    return this.#guard(async () => {
      const rows = await this.sql`SELECT e.*, CASE WHEN d.episode_id IS NULL THEN NULL ELSE to_jsonb(d) END AS decision
        FROM noema_episodes e LEFT JOIN noema_decisions d
          ON d.episode_id = e.episode_id AND d.checkpoint_id = e.pending->>'checkpoint_id'
        WHERE e.run_state = 'waiting_for_approval' AND ${project}
        ORDER BY e.stored_at DESC, e.episode_id DESC LIMIT ${limit}`;
      return rows.map((r) => ({ row: rowOf(r), decision: r.decision ? decisionOf(r.decision) : null }));
    });
  }

  async prune(options: PruneOptions, onBatch: (batch: PruneBatch) => void): Promise<void> {
    // The cutoff is fixed once, by the database's clock: every batch (and a dry run's listing) uses the same one.
    const [c] = await this.#guard(async () => {
      if (!(await this.sql`SELECT 1 FROM noema_schema_version WHERE version = 6`).length) {
        throw new StoreSchemaError(
          `the shared store at ${this.location} is older than schema version 6 (retention): run noema store migrate`,
        );
      }
      return await this.sql`SELECT now() - make_interval(secs => ${options.older_than_ms / 1000}) AS cutoff`;
    });
    const timeoutMs = this.#timeoutMs * MIGRATION_TIMEOUT_FACTOR;
    let after: PruneCursor | null = null;
    for (;;) {
      const got: { batch: PruneBatch; last: PruneCursor | null } = await this.#guard(
        () => pruneBatch(this.sql, c.cutoff as Date, options, after, timeoutMs),
        timeoutMs,
      );
      if (got.last === null) return;
      // Defensive: a cursor that does not move on would loop for ever.
      if (after !== null && got.last.stored_at === after.stored_at && got.last.episode_id === after.episode_id) return;
      after = got.last;
      if (got.batch.episode_ids.length > 0) onBatch(got.batch);
    }
  }

  /**
   * Limits a database role to a project (`grant`), or takes a project from it: its rows in `noema_role_projects`
   * (schema 6), which row-level security reads. A role whose last project is taken stays limited, to none (a row with
   * the empty project, which no run has). Returns the role's projects after.
   */
  roleProject(role: string, project: string, grant: boolean): Promise<string[]> {
    return this.#guard(() =>
      this.sql.begin(async (tx) => {
        const [r] = await tx`SELECT 1 FROM pg_roles WHERE rolname = ${role}`;
        if (!r) {
          throw new NoemaError("not_found", `there is no database role ${JSON.stringify(role)} in ${this.location}`);
        }
        if (grant) {
          await tx`INSERT INTO noema_role_projects (role, project) VALUES (${role}, ${project}) ON CONFLICT DO NOTHING`;
          await tx`DELETE FROM noema_role_projects WHERE role = ${role} AND project = ''`;
        } else {
          const [limited] = await tx`SELECT 1 FROM noema_role_projects WHERE role = ${role}`;
          if (!limited) {
            throw new NoemaError(
              "not_limited",
              `${role} is not limited to projects in ${this.location}: it sees every project (noema store ` +
                `grant-project limits it)`,
            );
          }
          await tx`DELETE FROM noema_role_projects WHERE role = ${role} AND project = ${project}`;
          await tx`INSERT INTO noema_role_projects (role, project) SELECT ${role}, ''
            WHERE NOT EXISTS (SELECT 1 FROM noema_role_projects WHERE role = ${role})`;
        }
        const rows = await tx`SELECT project FROM noema_role_projects WHERE role = ${role} AND project <> ''
          ORDER BY project`;
        return rows.map((x) => String(x.project));
      })
    );
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 2 });
  }
}

/** The refusal of `noema_lease_holder()` (decision_chain_sql.ts): a live lease of another login role. */
const LEASE_HELD_BY_ROLE = /the lease of \S+ is held by role /;

/** A decision the database refused for want of the right (a runner's role deciding), said as such. */
function refusedDecision(e: unknown, location: string): unknown {
  const err = e as { code?: string; message?: string };
  if (err?.code !== "42501") return e;
  return new NoemaError(
    "store_privilege",
    `the shared store at ${location} refused the decision: ${err.message}. Deciding takes a role that is a ` +
      `member of noema_approver (noema serve: of noema_server; see docs/store.md, Roles and audit)`,
  );
}

function likeEscape(s: string): string {
  return s.replace(/[\\%_]/g, (c) => "\\" + c);
}
