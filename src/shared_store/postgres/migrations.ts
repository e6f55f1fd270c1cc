/**
 * The PostgreSQL schema of the shared store, as numbered migrations. Each
 * migration runs once, in order, inside one transaction that holds an
 * advisory lock, and is recorded in `noema_schema_version`. Never edit a
 * migration that has shipped: add the next one.
 *
 * @module
 */
import { DECISION_CHAIN_STATEMENTS } from "./decision_chain_sql.ts";

/** One migration: its version and its statements. */
export interface Migration {
  /** 1, 2, 3… */
  version: number;
  /** What it does, recorded with it. */
  description: string;
  /** The SQL statements, run in order. */
  statements: string[];
}

/** The advisory lock key every migration takes (`pg_advisory_xact_lock`). */
export const MIGRATION_LOCK_KEY = 0x6e6f656d61; // "noema"

/**
 * Every migration, oldest first.
 *
 * @example
 * ```ts
 * import { MIGRATIONS } from "./migrations.ts";
 * MIGRATIONS.at(-1)!.version; // the latest schema version
 * ```
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "catalog, stream lines and artifact files",
    statements: [
      `CREATE EXTENSION IF NOT EXISTS pg_trgm`,
      `CREATE TABLE noema_episodes (
        episode_id text PRIMARY KEY,
        task text,
        run_state text NOT NULL,
        status text NOT NULL,
        outcome text,
        started_at timestamptz,
        ended_at timestamptz,
        host text NOT NULL,
        adapter text,
        policy_ids text[] NOT NULL DEFAULT '{}',
        tags jsonb NOT NULL DEFAULT '{}',
        step_count integer NOT NULL DEFAULT 0,
        veto_count integer NOT NULL DEFAULT 0,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`,
      `CREATE INDEX noema_episodes_newest ON noema_episodes (started_at DESC NULLS LAST, episode_id DESC)`,
      `CREATE INDEX noema_episodes_status ON noema_episodes (status, started_at DESC NULLS LAST)`,
      `CREATE INDEX noema_episodes_run_state ON noema_episodes (run_state, started_at DESC NULLS LAST)`,
      `CREATE INDEX noema_episodes_host ON noema_episodes (host, started_at DESC NULLS LAST)`,
      `CREATE INDEX noema_episodes_adapter ON noema_episodes (adapter, started_at DESC NULLS LAST)`,
      `CREATE INDEX noema_episodes_tags ON noema_episodes USING gin (tags jsonb_path_ops)`,
      `CREATE INDEX noema_episodes_policies ON noema_episodes USING gin (policy_ids)`,
      `CREATE INDEX noema_episodes_task ON noema_episodes USING gin (lower(task) gin_trgm_ops)`,
      `CREATE TABLE noema_lines (
        episode_id text NOT NULL,
        stream text NOT NULL,
        seq bigint NOT NULL CHECK (seq >= 1),
        bytes bytea NOT NULL,
        PRIMARY KEY (episode_id, stream, seq)
      )`,
      `CREATE TABLE noema_files (
        episode_id text NOT NULL,
        name text NOT NULL,
        bytes bytea NOT NULL,
        size bigint NOT NULL,
        sha256 text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (episode_id, name)
      )`,
    ],
  },
  {
    version: 2,
    description: "approvals across machines: the pending call in the catalog, decisions bound to a checkpoint",
    statements: [
      `ALTER TABLE noema_episodes ADD COLUMN pending jsonb`,
      `CREATE INDEX noema_episodes_waiting ON noema_episodes (started_at) WHERE run_state = 'waiting_for_approval'`,
      `CREATE TABLE noema_decisions (
        episode_id text NOT NULL,
        checkpoint_id text NOT NULL,
        state_hash text NOT NULL,
        decision text NOT NULL CHECK (decision IN ('approved', 'rejected')),
        decided_by text NOT NULL,
        note text,
        host text NOT NULL,
        decided_at timestamptz NOT NULL DEFAULT now(),
        applied_at timestamptz,
        PRIMARY KEY (episode_id, checkpoint_id)
      )`,
    ],
  },
  {
    version: 3,
    description: "one writer per episode across machines: leases with a fencing token",
    statements: [
      `CREATE TABLE noema_leases (
        episode_id text PRIMARY KEY,
        host text NOT NULL,
        pid integer NOT NULL,
        token bigint NOT NULL,
        renewed_at timestamptz NOT NULL DEFAULT now(),
        released boolean NOT NULL DEFAULT false
      )`,
    ],
  },
  {
    version: 4,
    description:
      "the fleet ordered by the database's clock: stored_at, set by now() when a catalog row is first stored",
    statements: [
      // Hosts' clocks disagree: started_at is kept as recorded, but the catalog is ordered, filtered and paged by the
      // time the database first stored the row. Rows stored before this version get their last write's time.
      `ALTER TABLE noema_episodes ADD COLUMN stored_at timestamptz`,
      `UPDATE noema_episodes SET stored_at = updated_at`,
      `ALTER TABLE noema_episodes ALTER COLUMN stored_at SET DEFAULT now(), ALTER COLUMN stored_at SET NOT NULL`,
      `DROP INDEX noema_episodes_newest, noema_episodes_status, noema_episodes_run_state, noema_episodes_host,
        noema_episodes_adapter`,
      `CREATE INDEX noema_episodes_newest ON noema_episodes (stored_at DESC, episode_id DESC)`,
      `CREATE INDEX noema_episodes_status ON noema_episodes (status, stored_at DESC)`,
      `CREATE INDEX noema_episodes_run_state ON noema_episodes (run_state, stored_at DESC)`,
      `CREATE INDEX noema_episodes_host ON noema_episodes (host, stored_at DESC)`,
      `CREATE INDEX noema_episodes_adapter ON noema_episodes (adapter, stored_at DESC)`,
    ],
  },
  {
    version: 5,
    description:
      "who decided, provably: decisions stamped by the database through noema_decide, hash-chained; fencing checked " +
      "by the database",
    statements: [...DECISION_CHAIN_STATEMENTS],
  },
];

/** The schema version this noema writes. */
export const LATEST_SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1].version;
