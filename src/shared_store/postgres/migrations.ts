/**
 * The PostgreSQL schema of the shared store, as numbered migrations. Each
 * migration runs once, in order, inside one transaction that holds an
 * advisory lock, and is recorded in `noema_schema_version`. Never edit a
 * migration that has shipped: add the next one.
 *
 * @module
 */
import { DECISION_CHAIN_STATEMENTS } from "./decision_chain_sql.ts";
import { pinSearchPath, PROJECT_FUNCTIONS } from "./search_path_sql.ts";
import { PAUSED_CALL_STATEMENTS } from "./paused_call_sql.ts";

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
  {
    version: 6,
    description: "projects and retention: the catalog's project, decisions kept as tombstones, approvers limited to " +
      "projects by row-level security",
    statements: [
      `ALTER TABLE noema_episodes ADD COLUMN IF NOT EXISTS project text`,
      `CREATE INDEX IF NOT EXISTS noema_episodes_project ON noema_episodes (project, stored_at DESC)`,
      // A decision of a pruned run is kept, its note cleared: a tombstone (migration 5's hash chain still links it).
      `ALTER TABLE noema_decisions ADD COLUMN IF NOT EXISTS pruned_at timestamptz`,
      `CREATE TABLE IF NOT EXISTS noema_role_projects (
        role name NOT NULL,
        project text NOT NULL,
        PRIMARY KEY (role, project)
      )`,
      // Whether a role is limited to projects (it has rows here), and to which: read with the owner's rights, so a
      // limited role needs no grant on the mapping. (SET search_path FROM CURRENT searched pg_temp first: migration
      // 8 pins them to the schema, then pg_temp.)
      `CREATE OR REPLACE FUNCTION noema_role_limited(r name) RETURNS boolean
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
        AS 'SELECT EXISTS (SELECT 1 FROM noema_role_projects WHERE role = r)'`,
      `CREATE OR REPLACE FUNCTION noema_role_project_list(r name) RETURNS text[]
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT
        AS 'SELECT coalesce(array_agg(project), ''{}'') FROM noema_role_projects WHERE role = r'`,
      `REVOKE ALL ON FUNCTION noema_role_limited(name), noema_role_project_list(name) FROM PUBLIC`,
      `GRANT EXECUTE ON FUNCTION noema_role_limited(name), noema_role_project_list(name) TO PUBLIC`,
      // Row-level security: the owner bypasses it (no FORCE); a role without rows in noema_role_projects sees every
      // row; a limited one only its projects' catalog rows, and the lines, files and decisions of those episodes.
      // Each check of a role's limits is an uncorrelated subquery: evaluated once per statement, not per row.
      `ALTER TABLE noema_episodes ENABLE ROW LEVEL SECURITY`,
      `CREATE POLICY noema_project_scope ON noema_episodes
        USING ((SELECT NOT noema_role_limited(current_user))
          OR project IN (SELECT p FROM unnest(noema_role_project_list(current_user)) AS p))
        WITH CHECK ((SELECT NOT noema_role_limited(current_user))
          OR project IN (SELECT p FROM unnest(noema_role_project_list(current_user)) AS p))`,
      ...["noema_lines", "noema_files", "noema_decisions", "noema_leases"].flatMap((t) => [
        `ALTER TABLE ${t} ENABLE ROW LEVEL SECURITY`,
        `CREATE POLICY noema_project_scope ON ${t}
          USING ((SELECT NOT noema_role_limited(current_user))
            OR EXISTS (SELECT 1 FROM noema_episodes e WHERE e.episode_id = ${t}.episode_id))
          WITH CHECK ((SELECT NOT noema_role_limited(current_user))
            OR EXISTS (SELECT 1 FROM noema_episodes e WHERE e.episode_id = ${t}.episode_id))`,
      ]),
      // Decisions are written by noema_decide (SECURITY DEFINER: the owner's rights, which bypass row-level security),
      // so a role limited to projects is checked here, by its session_user: it decides only its projects' runs.
      `CREATE OR REPLACE FUNCTION noema_decision_project_check() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $f$
      BEGIN
        IF noema_role_limited(session_user) AND NOT EXISTS (
          SELECT 1 FROM noema_episodes e
          WHERE e.episode_id = NEW.episode_id AND e.project = ANY (noema_role_project_list(session_user))
        ) THEN
          RAISE EXCEPTION 'permission denied to decide on %: role % is limited to the projects %',
            NEW.episode_id, session_user, array_to_string(noema_role_project_list(session_user), ', ')
            USING ERRCODE = '42501';
        END IF;
        RETURN NEW;
      END $f$`,
      `REVOKE ALL ON FUNCTION noema_decision_project_check() FROM PUBLIC`,
      `CREATE TRIGGER noema_decisions_project BEFORE INSERT ON noema_decisions
        FOR EACH ROW EXECUTE FUNCTION noema_decision_project_check()`,
    ],
  },
  {
    version: 7,
    description:
      "search: a trigram index over the stored events.jsonl lines that carry searched fields, as escaped text",
    statements: [
      // encode(bytes, 'escape') is immutable and never fails (convert_from is only stable, and fails on a line that is
      // not UTF-8): ASCII as it is, a backslash doubled, NUL and every byte >= 0x80 as \ooo. The search escapes its
      // needle the same way (event_search.ts). Trigrams are case-folded, so ILIKE is served too. Only the lines of the
      // phases whose fields are searched (src/read/event_search.ts) are indexed: about half of a run's bytes (its
      // action candidates, plan and state projections are not), so publishing costs the database half as much.
      `CREATE INDEX IF NOT EXISTS noema_lines_events_text ON noema_lines
        USING gin (encode(bytes, 'escape') gin_trgm_ops)
        WHERE stream = 'events.jsonl' AND (position('"phase":"act"'::bytea IN bytes) > 0
          OR position('"phase":"governance"'::bytea IN bytes) > 0 OR position('"phase":"direction"'::bytea IN bytes) > 0
          OR position('"phase":"start"'::bytea IN bytes) > 0)`,
    ],
  },
  {
    version: 8,
    description: "the project functions' search_path pinned to the schema, then pg_temp: a temporary table of the " +
      "caller's session no longer stands in for noema_role_projects or noema_episodes",
    statements: [
      // Migration 6 made them SECURITY DEFINER with SET search_path FROM CURRENT ("$user", public), where pg_temp is
      // searched first: a limited role's CREATE TEMP TABLE noema_role_projects lifted its limit.
      pinSearchPath(PROJECT_FUNCTIONS),
    ],
  },
  {
    version: 9,
    description: "a paused call belongs to the role that paused it: noema_pauses records it; a runner rejects by " +
      "timeout only its own role's paused call; a published checkpoint file is never replaced",
    statements: [...PAUSED_CALL_STATEMENTS],
  },
];

/** The schema version this noema writes. */
export const LATEST_SCHEMA_VERSION: number = MIGRATIONS[MIGRATIONS.length - 1].version;
