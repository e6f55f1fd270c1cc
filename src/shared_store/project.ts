/**
 * Projects: a name that namespaces runs in the shared store. A run published
 * with a project records it in its catalog row; `list`, `approvals`, `serve`,
 * `pull` and `store prune` then see that project only (unless asked for all).
 *
 * A project name is 1 to 63 characters of lower-case letters, digits, `.`,
 * `_` and `-`, starting with a letter or digit: safe in a URL, a file name and
 * SQL, and never mistaken for an option.
 *
 * @module
 */

/** What a project name may be. */
export const PROJECT_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/**
 * What is wrong with a project name, or null when it is one.
 *
 * @example
 * ```ts
 * import { projectNameProblem } from "./project.ts";
 * projectNameProblem("payments"); // null
 * projectNameProblem("Pay Ments"); // "must be 1-63 characters: …"
 * ```
 */
export function projectNameProblem(name: string): string | null {
  if (PROJECT_NAME.test(name)) return null;
  const shown = JSON.stringify(name.length > 80 ? name.slice(0, 80) + "…" : name);
  return `${shown} is not a project name: it must be 1-63 characters of a-z, 0-9, '.', '_' and '-', ` +
    `starting with a letter or digit`;
}

/**
 * The project a publisher records in the rows it writes: `NOEMA_PROJECT` as the command set it (the CLI puts a valid
 * `--project` or `noema.jsonc` project there, so that the processes a run starts publish under it too); null when
 * none is set or it is not a valid name.
 *
 * @example
 * ```ts
 * import { publishingProject } from "./project.ts";
 * publishingProject({ NOEMA_PROJECT: "payments" }); // "payments"
 * ```
 */
export function publishingProject(env: Record<string, string | undefined>): string | null {
  const p = env.NOEMA_PROJECT;
  return p && projectNameProblem(p) === null ? p : null;
}
