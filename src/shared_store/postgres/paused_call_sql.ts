/**
 * Migration 9's SQL: a paused call belongs to the role that paused it.
 *
 * A run paused without `--wait` neither renews nor releases its lease, so
 * after 60 s any runner may take the lease over (`noema_lease_holder`), and
 * migration 5 let the lease's holder reject the call "by timeout". Now:
 *
 * - `noema_pauses` records, for each checkpoint a catalog row names as its
 *   pending call, the login role that first published it (the run's own
 *   runner, which held the lease: the fencing triggers see to that), by a
 *   trigger on `noema_episodes`. A later writer of the row, clearing and
 *   setting `pending` again, changes nothing.
 * - `noema_may_decide` takes the checkpoint: a runner may reject "by timeout"
 *   only a checkpoint its own role paused, and only while it holds the lease.
 * - A published checkpoint file (`checkpoints/<id>.json`) is immutable: what
 *   approvers are shown is what the run paused on. Only the owner may change
 *   one.
 *
 * @module
 */
import { APPROVER_ROLE, decideFunctionSql, SERVER_ROLE } from "./decision_chain_sql.ts";
import { pinSearchPath } from "./search_path_sql.ts";

/**
 * Who paused which checkpoint; read by `noema_may_decide` only (no role is granted anything on it). Its rows go with
 * their catalog row (`store prune`).
 */
const PAUSES = [
  `CREATE TABLE noema_pauses (
    episode_id text NOT NULL REFERENCES noema_episodes (episode_id) ON DELETE CASCADE,
    checkpoint_id text NOT NULL,
    paused_by_role name NOT NULL,
    paused_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (episode_id, checkpoint_id)
  )`,
  // Calls paused before this version: the role holding their lease now is the best record there is.
  `INSERT INTO noema_pauses (episode_id, checkpoint_id, paused_by_role)
    SELECT e.episode_id, e.pending->>'checkpoint_id', l.holder_role FROM noema_episodes e
      JOIN noema_leases l ON l.episode_id = e.episode_id
    WHERE e.pending->>'checkpoint_id' IS NOT NULL AND l.holder_role IS NOT NULL
    ON CONFLICT DO NOTHING`,
  `CREATE FUNCTION noema_record_pause() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $f$
  BEGIN
    IF jsonb_typeof(NEW.pending) = 'object' AND NEW.pending->>'checkpoint_id' IS NOT NULL THEN
      INSERT INTO noema_pauses (episode_id, checkpoint_id, paused_by_role)
        VALUES (NEW.episode_id, NEW.pending->>'checkpoint_id', session_user) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
  END $f$`,
  `CREATE TRIGGER noema_episodes_pause AFTER INSERT OR UPDATE OF pending ON noema_episodes
    FOR EACH ROW EXECUTE FUNCTION noema_record_pause()`,
];

/** A published checkpoint is never replaced (nor renamed, nor moved to another episode), but by the owner. */
const IMMUTABLE_CHECKPOINTS = [
  `CREATE FUNCTION noema_checkpoint_immutable() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $f$
  BEGIN
    IF (NEW.episode_id, NEW.name, NEW.sha256, NEW.bytes) IS DISTINCT FROM (OLD.episode_id, OLD.name, OLD.sha256,
        OLD.bytes) AND NOT noema_owns() THEN
      RAISE EXCEPTION 'noema: % of % is published and may not be replaced (a checkpoint is what approvers are shown)',
        OLD.name, OLD.episode_id USING ERRCODE = '42501';
    END IF;
    RETURN NEW;
  END $f$`,
  `CREATE TRIGGER noema_files_checkpoint BEFORE UPDATE ON noema_files
    FOR EACH ROW WHEN (OLD.name LIKE 'checkpoints/%' OR NEW.name LIKE 'checkpoints/%')
    EXECUTE FUNCTION noema_checkpoint_immutable()`,
];

/** Migration 5's rules, but a runner's timeout rejection only of a checkpoint its role paused and whose lease it holds. */
const MAY_DECIDE = `CREATE FUNCTION noema_may_decide(p_episode_id text, p_checkpoint_id text, p_decision text,
  p_claimed_by text, p_serve_label text)
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
  -- A runner's wait that ran out rejects its own call (fail closed): only a rejection, only of a checkpoint its role
  -- paused, only while its role holds the lease (a role that took a stale lease over paused nothing).
  RETURN p_decision = 'rejected' AND p_claimed_by = 'timeout'
    AND EXISTS (SELECT FROM noema_pauses WHERE episode_id = p_episode_id AND checkpoint_id = p_checkpoint_id
      AND paused_by_role = session_user)
    AND EXISTS (SELECT FROM noema_leases WHERE episode_id = p_episode_id AND holder_role = session_user
      AND NOT released);
END $f$`;

/** Migration 5's noema_decide again, asking the checkpoint-aware noema_may_decide (its grants are kept by the replace). */
const DECIDE = decideFunctionSql("p_episode_id, p_checkpoint_id, p_decision, p_claimed_by, p_serve_label", true);

/**
 * Migration 9's statements, in order.
 *
 * @example
 * ```ts
 * import { PAUSED_CALL_STATEMENTS } from "./paused_call_sql.ts";
 * PAUSED_CALL_STATEMENTS.length > 0; // true
 * ```
 */
export const PAUSED_CALL_STATEMENTS: readonly string[] = [
  ...PAUSES,
  ...IMMUTABLE_CHECKPOINTS,
  MAY_DECIDE,
  DECIDE,
  `DROP FUNCTION noema_may_decide(text, text, text, text)`,
  // The table's rows are the owner's to read: row-level security as on the others (a limited role reads nothing it
  // does not see), and no grant to any role.
  `ALTER TABLE noema_pauses ENABLE ROW LEVEL SECURITY`,
  pinSearchPath(["noema_record_pause", "noema_checkpoint_immutable", "noema_may_decide", "noema_decide"]),
];
