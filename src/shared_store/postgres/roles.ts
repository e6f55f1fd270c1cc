/**
 * The roles a PostgreSQL store's database enforces: `noema store init --roles`
 * creates (or updates) four NOLOGIN group roles and their grants, and `noema
 * store status` says what the connected login role may do.
 *
 * - `noema_runner`: publishes (SELECT, INSERT on lines; SELECT, INSERT, UPDATE
 *   on files, catalog rows and leases), reads decisions; may call
 *   `noema_decide` only to reject its own held run's call when a wait runs out.
 * - `noema_approver`: reads everything, decides (EXECUTE `noema_decide`).
 * - `noema_reader`: SELECT.
 * - `noema_server`: a `noema serve` server's login: reads, and decides for its
 *   token holders (the token's label recorded as the decider, beside the
 *   server's role); no other role may name a token.
 *
 * No role gets UPDATE or DELETE on lines or decisions, nor INSERT on
 * decisions: decisions are written through `noema_decide` only.
 *
 * @module
 */
import type postgres from "postgres";
import type { RolePowers } from "../shared_store.ts";

const TABLES = "noema_episodes, noema_lines, noema_files, noema_decisions, noema_leases, noema_schema_version";
const DECIDE_FN = "noema_decide(text, text, text, text, text, text, text, text, text)";

/**
 * The SQL `noema store init --roles` runs, in order (docs/store.md prints it, to run by hand instead).
 *
 * @example
 * ```ts
 * import { ROLES_SQL } from "./roles.ts";
 * ROLES_SQL.join(";\n");
 * ```
 */
export const ROLES_SQL: readonly string[] = [
  `DO $d$
DECLARE r text;
BEGIN
  FOREACH r IN ARRAY ARRAY['noema_runner', 'noema_approver', 'noema_reader', 'noema_server'] LOOP
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = r) THEN EXECUTE format('CREATE ROLE %I NOLOGIN', r); END IF;
  END LOOP;
END $d$`,
  `REVOKE ALL ON ${TABLES} FROM PUBLIC, noema_runner, noema_approver, noema_reader, noema_server`,
  `REVOKE ALL ON FUNCTION ${DECIDE_FN} FROM PUBLIC`,
  `GRANT SELECT ON ${TABLES} TO noema_runner, noema_approver, noema_reader, noema_server`,
  `GRANT INSERT ON noema_lines TO noema_runner`,
  `GRANT INSERT, UPDATE ON noema_files, noema_episodes, noema_leases TO noema_runner`,
  `GRANT EXECUTE ON FUNCTION ${DECIDE_FN} TO noema_approver, noema_runner, noema_server`,
];

/**
 * Creates or updates the roles and their grants, in one transaction (the owner's; creating roles also takes
 * CREATEROLE).
 *
 * @example
 * ```ts
 * import { createRoles } from "./roles.ts";
 * // await sql.begin((tx) => createRoles(tx));
 * ```
 */
export async function createRoles(tx: postgres.TransactionSql): Promise<void> {
  for (const s of ROLES_SQL) await tx.unsafe(s);
}

/**
 * The connected login role and what the database lets it do, from `has_table_privilege`,
 * `has_function_privilege` and `pg_has_role` (the same rules `noema_decide` applies).
 *
 * @example
 * ```ts
 * import { rolePowers } from "./roles.ts";
 * // (await rolePowers(sql)).powers.decide
 * ```
 */
export async function rolePowers(sql: postgres.Sql): Promise<{ name: string; powers: RolePowers }> {
  const [r] = await sql`SELECT session_user AS name,
      has_table_privilege('noema_lines', 'INSERT') AND has_table_privilege('noema_files', 'INSERT, UPDATE')
        AND has_table_privilege('noema_episodes', 'INSERT, UPDATE')
        AND has_table_privilege('noema_leases', 'INSERT, UPDATE') AS publish,
      has_table_privilege('noema_episodes', 'SELECT') AND has_table_privilege('noema_lines', 'SELECT')
        AND has_table_privilege('noema_files', 'SELECT') AND has_table_privilege('noema_decisions', 'SELECT') AS read,
      pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = 'noema_decisions'::regclass), 'USAGE')
        AS own,
      has_function_privilege(${DECIDE_FN}, 'EXECUTE') AND (
        pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = 'noema_decisions'::regclass), 'USAGE')
        OR CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = 'noema_approver')
          THEN pg_has_role(session_user, 'noema_approver', 'MEMBER')
          ELSE has_table_privilege('noema_decisions', 'INSERT') END) AS decide,
      has_function_privilege(${DECIDE_FN}, 'EXECUTE') AND (
        pg_has_role(session_user, (SELECT relowner FROM pg_class WHERE oid = 'noema_decisions'::regclass), 'USAGE')
        OR CASE WHEN EXISTS (SELECT FROM pg_roles WHERE rolname = 'noema_server')
          THEN pg_has_role(session_user, 'noema_server', 'MEMBER')
          ELSE has_table_privilege('noema_decisions', 'INSERT') END) AS serve`;
  return {
    name: String(r.name),
    powers: { publish: !!r.publish, decide: !!r.decide, serve: !!r.serve, read: !!r.read, own: !!r.own },
  };
}
