/**
 * Migration 5's SQL: decisions written only through `noema_decide` (a
 * `SECURITY DEFINER` function that stamps `session_user` and the database's
 * clock, checks the caller may decide, keeps one decision per checkpoint and
 * appends the row to a hash chain), and fencing checked by the database (a
 * statement trigger on lines, files and catalog rows compares the fencing
 * token the writer's transaction carries, `noema.fencing_token`, with the
 * episode's lease). The chain's encoding is {@link CHAIN_FORMAT}; `noema store
 * audit` (`decision_audit.ts`) recomputes it. docs/store.md, "Roles and
 * audit", is its manual.
 *
 * @module
 */

/** The advisory lock key `noema_decide` takes to append to the decision chain, one decision at a time. */
export const CHAIN_LOCK_KEY = 0x6e6f656d6163; // "noemac"

/** The `prev_hash` of the chain's first row: 64 zeros. */
export const CHAIN_GENESIS = "0".repeat(64);

/** The first field of every row's hashed encoding: its format's name and version. */
export const CHAIN_FORMAT = "noema-decision/1";

/** The role a caller must be a member of to decide, once `noema store init --roles` created it. */
export const APPROVER_ROLE = "noema_approver";

/**
 * The role a `noema serve` server's login must be a member of to decide for its token holders (to name a token's
 * label as the decider), once `noema store init --roles` created it: an approver deciding directly cannot.
 */
export const SERVER_ROLE = "noema_server";

/** A decision row's hash: sha256 over `CHAIN_FORMAT|prev_hash|field|field…`, each field `<bytes>:<text>` or `~`. */
const HASH_FUNCTIONS = [
  `CREATE FUNCTION noema_hf(v text) RETURNS text LANGUAGE sql IMMUTABLE AS $f$
    SELECT CASE WHEN v IS NULL THEN '~' ELSE octet_length(convert_to(v, 'UTF8'))::text || ':' || v END
  $f$`,
  `CREATE FUNCTION noema_decision_hash(r noema_decisions) RETURNS text LANGUAGE sql STABLE AS $f$
    SELECT encode(sha256(convert_to(concat_ws('|', '${CHAIN_FORMAT}', coalesce(r.prev_hash, ''),
      noema_hf(r.chain_seq::text), noema_hf(r.episode_id), noema_hf(r.checkpoint_id), noema_hf(r.state_hash),
      noema_hf(r.checkpoint_digest), noema_hf(r.decision), noema_hf(r.decided_by), noema_hf(r.decided_by_role),
      noema_hf(r.authenticated_as), noema_hf(r.claimed_by), noema_hf(r.note), noema_hf(r.host),
      noema_hf(to_char(r.decided_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))), 'UTF8')), 'hex')
  $f$`,
  // Whether the login role is (a member of) the role that owns noema's tables.
  `CREATE FUNCTION noema_owns() RETURNS boolean LANGUAGE sql STABLE AS $f$
    SELECT pg_has_role(session_user, c.relowner, 'USAGE') FROM pg_class c WHERE c.oid = 'noema_decisions'::regclass
  $f$`,
];

/** Rows decided before this migration, chained in the order they were decided. */
const CHAIN_EXISTING = `DO $d$
DECLARE
  r noema_decisions;
  prev text := '${CHAIN_GENESIS}';
  n bigint := 0;
BEGIN
  FOR r IN SELECT * FROM noema_decisions ORDER BY decided_at, episode_id, checkpoint_id LOOP
    n := n + 1;
    r.chain_seq := n;
    r.prev_hash := prev;
    prev := noema_decision_hash(r);
    UPDATE noema_decisions SET chain_seq = n, prev_hash = r.prev_hash, row_hash = prev
      WHERE episode_id = r.episode_id AND checkpoint_id = r.checkpoint_id;
  END LOOP;
END $d$`;

/**
 * Who may decide: the owner; a member of noema_approver (or, without it, a role with INSERT on noema_decisions); for
 * a serve token (`p_serve_label`), a member of noema_server only (without the roles, any role that may decide).
 */
const MAY_DECIDE = `CREATE FUNCTION noema_may_decide(p_episode_id text, p_decision text, p_claimed_by text,
  p_serve_label text)
RETURNS boolean LANGUAGE plpgsql STABLE AS $f$
BEGIN
  IF noema_owns() THEN RETURN true; END IF;
  IF p_serve_label IS NOT NULL AND EXISTS (SELECT FROM pg_roles WHERE rolname = '${SERVER_ROLE}') THEN
    RETURN pg_has_role(session_user, '${SERVER_ROLE}', 'MEMBER');
  END IF;
  IF EXISTS (SELECT FROM pg_roles WHERE rolname = '${APPROVER_ROLE}') THEN
    IF pg_has_role(session_user, '${APPROVER_ROLE}', 'MEMBER') THEN RETURN true; END IF;
  ELSIF has_table_privilege(session_user, 'noema_decisions', 'INSERT') THEN
    RETURN true;
  END IF;
  -- A runner's wait that ran out rejects its own call (fail closed): only a rejection, only by the lease's holder.
  RETURN p_decision = 'rejected' AND p_claimed_by = 'timeout' AND EXISTS (SELECT FROM noema_leases
    WHERE episode_id = p_episode_id AND holder_role = session_user AND NOT released);
END $f$`;

/**
 * The text of `noema_decide`, the only way decisions are written (the roles get no INSERT, UPDATE or DELETE on
 * noema_decisions): `mayDecideArgs` are the arguments it gives `noema_may_decide` (migration 9 added the
 * checkpoint); `replace` makes it `CREATE OR REPLACE`. Each migration's text is fixed once released: change a
 * migration by adding one, never by changing what this returns for an existing one.
 *
 * @example
 * ```ts
 * import { decideFunctionSql } from "./decision_chain_sql.ts";
 * decideFunctionSql("p_episode_id, p_decision, p_claimed_by, p_serve_label").startsWith("CREATE FUNCTION"); // true
 * ```
 */
export function decideFunctionSql(mayDecideArgs: string, replace = false): string {
  const create = replace ? "CREATE OR REPLACE" : "CREATE";
  return `${create} FUNCTION noema_decide(p_episode_id text, p_checkpoint_id text, p_state_hash text,
  p_decision text, p_note text, p_host text, p_claimed_by text, p_checkpoint_digest text, p_serve_label text)
RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER AS $f$
DECLARE
  r noema_decisions;
  head record;
BEGIN
  IF NOT noema_may_decide(${mayDecideArgs}) THEN
    IF p_serve_label IS NOT NULL THEN
      RAISE EXCEPTION 'permission denied to decide on % for the serve token %: role % is not a member of ${SERVER_ROLE}',
        p_episode_id, p_serve_label, session_user USING ERRCODE = '42501';
    END IF;
    RAISE EXCEPTION 'permission denied to decide on %: role % is not a member of ${APPROVER_ROLE}',
      p_episode_id, session_user USING ERRCODE = '42501';
  END IF;
  PERFORM pg_advisory_xact_lock(${CHAIN_LOCK_KEY});
  SELECT * INTO r FROM noema_decisions WHERE episode_id = p_episode_id AND checkpoint_id = p_checkpoint_id;
  IF FOUND THEN RETURN jsonb_build_object('inserted', false, 'row', to_jsonb(r)); END IF;
  SELECT chain_seq, row_hash INTO head FROM noema_decisions WHERE chain_seq IS NOT NULL
    ORDER BY chain_seq DESC LIMIT 1;
  r.episode_id := p_episode_id; r.checkpoint_id := p_checkpoint_id; r.state_hash := p_state_hash;
  r.decision := p_decision; r.note := p_note; r.host := p_host; r.claimed_by := p_claimed_by;
  r.checkpoint_digest := p_checkpoint_digest;
  r.decided_by := coalesce(p_serve_label, session_user);
  r.authenticated_as := CASE WHEN p_serve_label IS NULL THEN 'database_role' ELSE 'serve_token' END;
  r.decided_by_role := session_user;
  r.decided_at := clock_timestamp();
  r.chain_seq := coalesce(head.chain_seq, 0) + 1;
  r.prev_hash := coalesce(head.row_hash, '${CHAIN_GENESIS}');
  r.row_hash := noema_decision_hash(r);
  INSERT INTO noema_decisions SELECT (r).*;
  PERFORM pg_notify('noema_episode', p_episode_id);
  RETURN jsonb_build_object('inserted', true, 'row', to_jsonb(r));
END $f$`;
}

const DECIDE = decideFunctionSql("p_episode_id, p_decision, p_claimed_by, p_serve_label");

/** Writes of lines, files and catalog rows carry the lease's current token (`noema.fencing_token`), for every role. */
const FENCE = `CREATE FUNCTION noema_fence() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $f$
DECLARE
  tok text := nullif(current_setting('noema.fencing_token', true), '');
  owner boolean := noema_owns();
  bad record;
BEGIN
  IF tok IS NULL THEN
    IF owner THEN RETURN NULL; END IF;
    RAISE EXCEPTION 'permission denied: a write to % without a fencing token (only the schema''s owner writes so)',
      TG_TABLE_NAME USING ERRCODE = '42501';
  END IF;
  SELECT n.episode_id, l.token, l.holder_role INTO bad FROM (SELECT DISTINCT episode_id FROM noema_new) n
    LEFT JOIN noema_leases l ON l.episode_id = n.episode_id
    WHERE l.token IS DISTINCT FROM tok::bigint OR (NOT owner AND l.holder_role IS DISTINCT FROM session_user)
    LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'noema fencing: a write to % of % with token % refused: the lease is at % held by role %',
      TG_TABLE_NAME, bad.episode_id, tok, coalesce(bad.token::text, 'none'), coalesce(bad.holder_role, 'none')
      USING ERRCODE = 'P0001';
  END IF;
  RETURN NULL;
END $f$`;

/** A lease records the login role that holds it; another role takes it over only once it is released or stale. */
const LEASE_HOLDER = `CREATE FUNCTION noema_lease_holder() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $f$
BEGIN
  IF TG_OP = 'UPDATE' AND OLD.holder_role IS DISTINCT FROM session_user AND NOT noema_owns()
      AND NOT OLD.released AND OLD.renewed_at > now() - interval '60 seconds' THEN
    RAISE EXCEPTION 'permission denied: the lease of % is held by role % (renewed within 60 s)',
      OLD.episode_id, coalesce(OLD.holder_role, 'none') USING ERRCODE = '42501';
  END IF;
  NEW.holder_role := session_user;
  RETURN NEW;
END $f$`;

const TRIGGERS = [
  `CREATE TRIGGER noema_fence_lines AFTER INSERT ON noema_lines REFERENCING NEW TABLE AS noema_new
    FOR EACH STATEMENT EXECUTE FUNCTION noema_fence()`,
  `CREATE TRIGGER noema_fence_files_insert AFTER INSERT ON noema_files REFERENCING NEW TABLE AS noema_new
    FOR EACH STATEMENT EXECUTE FUNCTION noema_fence()`,
  `CREATE TRIGGER noema_fence_files_update AFTER UPDATE ON noema_files REFERENCING NEW TABLE AS noema_new
    FOR EACH STATEMENT EXECUTE FUNCTION noema_fence()`,
  `CREATE TRIGGER noema_fence_episodes_insert AFTER INSERT ON noema_episodes REFERENCING NEW TABLE AS noema_new
    FOR EACH STATEMENT EXECUTE FUNCTION noema_fence()`,
  `CREATE TRIGGER noema_fence_episodes_update AFTER UPDATE ON noema_episodes REFERENCING NEW TABLE AS noema_new
    FOR EACH STATEMENT EXECUTE FUNCTION noema_fence()`,
  `CREATE TRIGGER noema_lease_holder BEFORE INSERT OR UPDATE ON noema_leases
    FOR EACH ROW EXECUTE FUNCTION noema_lease_holder()`,
];

/** Every function's search_path pinned to the schema it was made in (then pg_temp: never shadowing it). */
const PIN_SEARCH_PATH = `DO $d$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
      AND p.proname IN ('noema_hf', 'noema_decision_hash', 'noema_owns', 'noema_may_decide', 'noema_decide',
        'noema_fence', 'noema_lease_holder') LOOP
    EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
  END LOOP;
END $d$`;

/**
 * Migration 5's statements, in order.
 *
 * @example
 * ```ts
 * import { DECISION_CHAIN_STATEMENTS } from "./decision_chain_sql.ts";
 * DECISION_CHAIN_STATEMENTS.length > 0; // true
 * ```
 */
export const DECISION_CHAIN_STATEMENTS: readonly string[] = [
  `ALTER TABLE noema_decisions ADD COLUMN chain_seq bigint UNIQUE, ADD COLUMN prev_hash text,
    ADD COLUMN row_hash text, ADD COLUMN checkpoint_digest text, ADD COLUMN decided_by_role text,
    ADD COLUMN claimed_by text, ADD COLUMN authenticated_as text, ADD COLUMN IF NOT EXISTS pruned_at timestamptz`,
  `ALTER TABLE noema_leases ADD COLUMN holder_role text`,
  ...HASH_FUNCTIONS,
  CHAIN_EXISTING,
  MAY_DECIDE,
  DECIDE,
  FENCE,
  LEASE_HOLDER,
  ...TRIGGERS,
  PIN_SEARCH_PATH,
];
