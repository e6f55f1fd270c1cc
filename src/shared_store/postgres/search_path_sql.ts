/**
 * Pinning a function's `search_path`: to the schema the migration runs in,
 * then `pg_temp`. A `SECURITY DEFINER` function runs with its owner's rights;
 * any table or function name in its body is looked up along its
 * `search_path`, and a session's temporary schema (`pg_temp`) is searched
 * *first* for tables unless the path names it elsewhere. So a function without
 * `pg_temp` last reads a `CREATE TEMP TABLE` of its caller's session in place
 * of noema's table of the same name (migration 6's `SET search_path FROM
 * CURRENT` did: `"$user", public`). Migration 5 pins its functions so
 * (`decision_chain_sql.ts`); migration 8 pins migration 6's.
 *
 * @module
 */

/**
 * The statement that pins the named functions of the migration's schema (every overload of each name) to
 * `<schema>, pg_temp`. Redefining a function (`CREATE OR REPLACE`) drops its `SET` clauses: pin it again after.
 *
 * @example
 * ```ts
 * import { pinSearchPath } from "./search_path_sql.ts";
 * pinSearchPath(["noema_role_limited"]); // a DO block of ALTER FUNCTION … SET search_path = <schema>, pg_temp
 * ```
 */
export function pinSearchPath(names: readonly string[]): string {
  for (const n of names) if (!/^noema_[a-z_]+$/.test(n)) throw new Error(`not a noema function name: ${n}`);
  const list = names.map((n) => `'${n}'`).join(", ");
  return `DO $d$
DECLARE f regprocedure;
BEGIN
  FOR f IN SELECT p.oid FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace
      AND p.proname IN (${list}) LOOP
    EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f, current_schema());
  END LOOP;
END $d$`;
}

/**
 * The functions of migration 6 that run with the owner's rights (`SECURITY DEFINER`) and read noema's tables by
 * unqualified names: row-level security's checks of a role's projects, and the trigger that limits a role's
 * decisions to its projects.
 */
export const PROJECT_FUNCTIONS: readonly string[] = [
  "noema_role_limited",
  "noema_role_project_list",
  "noema_decision_project_check",
];
