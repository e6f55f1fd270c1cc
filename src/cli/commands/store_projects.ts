/**
 * `noema store grant-project ROLE PROJECT` and `noema store revoke-project
 * ROLE PROJECT`: limit a PostgreSQL role (an approver's) to projects, which
 * row-level security enforces (schema 6, `noema_role_projects`). Run as the
 * schema's owner. A role with no row sees every project; once granted one, it
 * sees only its projects, and revoking its last one leaves it seeing none.
 *
 * @module
 */
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { projectNameProblem } from "../../shared_store/project.ts";
import type { PostgresStore } from "../../shared_store/postgres/postgres_store.ts";
import { type CliContext, examples } from "../context.ts";
import { usageError } from "../errors.ts";
import { withStore } from "../store_option.ts";

/** Registers `noema store grant-project` and `revoke-project` under `noema store`. */
export function registerStoreProjects(store: CommandUnknownOpts, ctx: CliContext): void {
  for (const grant of [true, false]) {
    store.command(grant ? "grant-project" : "revoke-project")
      .summary(
        grant
          ? "limit a PostgreSQL role to projects, adding this one (row-level security)"
          : "take a project from a role limited to projects",
      )
      .description(
        grant
          ? "Limit a PostgreSQL role to projects, adding this one: row-level security then shows it (and lets it\n" +
            "decide) only the runs of its projects. A role never granted a project sees every project."
          : "Take a project from a role limited to projects. A role whose last project is taken sees none\n" +
            "(remove its rows from noema_role_projects to lift the limit).",
      )
      .argument("<role>", "the database role (e.g. an approver's login role)")
      .argument("<project>", "the project name")
      .option("-j, --json", 'print {"role","projects"}')
      .addHelpText(
        "after",
        examples(
          grant
            ? ["noema store grant-project ana payments --store postgres://owner@db/noema", "ana sees payments only"]
            : ["noema store revoke-project ana payments --store postgres://owner@db/noema", "and no longer that"],
        ) + "\nPostgreSQL only; run as the schema's owner. See docs/store.md, Retention and projects.\n",
      )
      .action(async (role, project, opts, cmd) => {
        const problem = projectNameProblem(project);
        if (problem) throw usageError(`<project>: ${problem}`);
        await withStore(cmd, async (s) => {
          if (s.kind !== "postgres") {
            throw usageError(`${s.location} is a ${s.kind} store: projects are limited per role in PostgreSQL only`);
          }
          const projects = await (s as PostgresStore).roleProject(role, project, grant);
          if (opts.json) ctx.out.json({ role, projects });
          else ctx.out.line(`${role} sees ${projects.length ? `project ${projects.join(", ")}` : "no project"}`);
        });
      });
  }
}
