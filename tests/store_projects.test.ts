/**
 * Projects in the shared store, against a real PostgreSQL 15 (skipped, saying
 * why, when it is not installed) and a files store: a run published with
 * `--project` / `NOEMA_PROJECT` records it in its catalog row; `list`,
 * `approvals`, `pull` and reading by id see one project when one is set and
 * every project with `--all-projects` (or none set); names are checked. In
 * PostgreSQL, row-level security limits a real login role to its projects:
 * it neither lists nor decides another project's runs.
 */
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { openSharedStore } from "../src/shared_store/open.ts";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import type { CatalogRow, SharedStore } from "../src/shared_store/shared_store.ts";
import { cli } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { startServe } from "./helpers/serve.ts";
import { tempDir } from "./helpers/tmp.ts";
import { bytes, putWaiting, row, schemaAt } from "./helpers/store_rows.ts";
import { LATEST_SCHEMA_VERSION } from "../src/shared_store/postgres/migrations.ts";

const skipPg = pgUnavailable() ?? false;
let pg: PgServer | undefined;
const tmp = tempDir();
let n = 0;
after(() => tmp.cleanup()); // the server is shared by the test process (its watchdog removes it)

const ids = (stdout: string) => (JSON.parse(stdout) as { episode_id: string }[]).map((e) => e.episode_id).sort();

function waiting(id: string, project?: string): CatalogRow {
  return row(id, {
    run_state: "waiting_for_approval",
    status: "pending",
    outcome: null,
    project,
    pending: {
      checkpoint_id: `chk_${id}`,
      state_hash: "sha256:" + "a".repeat(64),
      kind: "approval",
      step_id: "s1",
      reason: "deploys need a human",
      policy_id: "ApprovalGate@1.0",
      action: { tool: "shell", input_excerpt: `echo deploy ${id}` },
      created_at: "2026-11-04T00:00:01.000Z",
    },
  });
}

const backends = [
  { name: "PostgreSQL", skip: skipPg, fresh: () => pg!.createDatabase() },
  { name: "files", skip: false, fresh: () => pathToFileURL(join(tmp.path, `store-${n++}`)).href },
];

for (const b of backends) {
  describe(`projects over ${b.name}`, { skip: b.skip }, () => {
    before(async () => {
      if (b.name === "PostgreSQL" && !pg) pg = await startPostgres();
    });

    test("a run records its project; list, pull and reads by id see one project, or all", () => {
      const url = b.fresh();
      const a = tempDir(), other = tempDir();
      try {
        assert.equal(cli(["store", "init", "--store", url]).code, 0);
        const env = { NOEMA_STORE: url, NOEMA_HOST: "host-a", NOEMA_PROJECT: undefined };
        const run = (more: Record<string, string | undefined>, ...args: string[]) => {
          const r = cli(["--root", a.path, "run", "Say hello", "--json", ...args], {
            env: { ...env, ...more },
            cwd: a.path,
          });
          assert.equal(r.code, 0, r.stderr);
          return JSON.parse(r.stdout).episode_id as string;
        };
        const alpha = run({}, "--project", "alpha");
        const beta = run({ NOEMA_PROJECT: "beta" });
        const none = run({});
        // A sync without a project (or with another) keeps the project the row was first stored with.
        assert.equal(cli(["--root", a.path, "sync"], { env }).code, 0);
        assert.equal(cli(["--root", a.path, "sync"], { env: { ...env, NOEMA_PROJECT: "gamma" } }).code, 0);

        const envB = { ...env, NOEMA_HOST: "host-b" };
        const list = (more: Record<string, string | undefined>, ...args: string[]) => {
          const r = cli(["--root", other.path, "list", "--json", ...args], {
            env: { ...envB, ...more },
            cwd: other.path,
          });
          assert.equal(r.code, 0, r.stderr);
          return r;
        };
        assert.deepEqual(ids(list({}).stdout), [alpha, beta, none].sort(), "no project set: every project");
        const onlyAlpha = JSON.parse(list({}, "--project", "alpha").stdout);
        assert.deepEqual(onlyAlpha.map((e: { episode_id: string }) => e.episode_id), [alpha]);
        assert.equal(onlyAlpha[0].project, "alpha");
        assert.deepEqual(ids(list({ NOEMA_PROJECT: "beta" }).stdout), [beta]);
        assert.deepEqual(ids(list({ NOEMA_PROJECT: "beta" }, "--all-projects").stdout), [alpha, beta, none].sort());
        writeFileSync(join(other.path, "noema.jsonc"), '{ "project": "alpha" }\n');
        assert.deepEqual(ids(list({}).stdout), [alpha], "noema.jsonc's project");
        assert.deepEqual(ids(list({ NOEMA_PROJECT: "beta" }).stdout), [beta], "NOEMA_PROJECT wins over noema.jsonc");

        // Reading or pulling another project's run: not there. Its own project's: pulled.
        const read = cli(["--root", other.path, "summary", beta], { env: envB, cwd: other.path });
        assert.notEqual(read.code, 0, "a run of another project is not read by id");
        const pullBeta = cli(["--root", other.path, "pull", beta, "--json"], { env: envB, cwd: other.path });
        assert.equal(pullBeta.code, 1);
        assert.match(pullBeta.stderr, new RegExp(`${beta} is not in the shared store`));
        const pullAlpha = cli(["--root", other.path, "pull", alpha, "--json"], { env: envB, cwd: other.path });
        assert.equal(pullAlpha.code, 0, pullAlpha.stderr);
        const pullAll = cli(["--root", other.path, "pull", beta, "--all-projects"], { env: envB, cwd: other.path });
        assert.equal(pullAll.code, 0, pullAll.stderr);
      } finally {
        a.cleanup();
        other.cleanup();
      }
    });

    test("an empty list over the store names the store and the project, not the local root", () => {
      const url = b.fresh();
      const a = tempDir();
      try {
        assert.equal(cli(["store", "init", "--store", url]).code, 0);
        const env = { NOEMA_STORE: url, NOEMA_PROJECT: undefined };
        // Local episodes that the store does not hold: what the local root has is not what the store lists.
        const local = cli(["--root", a.path, "run", "Say hello", "--json"], {
          env: { NOEMA_STORE: undefined },
          cwd: a.path,
        });
        assert.equal(local.code, 0, local.stderr);
        for (const json of [[], ["--json"]]) {
          const none = cli(["--root", a.path, "list", "--project", "nobody", ...json], { env, cwd: a.path });
          assert.equal(none.code, 0, none.stderr);
          assert.match(none.stderr, /^noema: no episodes in the shared store \S+ \(project nobody\)$/m);
          assert.doesNotMatch(none.stderr, new RegExp(a.path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
        }
        const filtered = cli(["--root", a.path, "list", "--status", "vetoed", "--all-projects"], { env, cwd: a.path });
        assert.equal(filtered.code, 0, filtered.stderr);
        assert.match(
          filtered.stderr,
          /^noema: no episode in the shared store \S+ matches the filters: --status vetoed$/m,
        );
        if (b.name === "files") assert.ok(filtered.stderr.includes(url), "the store's own location");
      } finally {
        a.cleanup();
      }
    });

    test("names are checked where they come from; --project and --all-projects exclude each other", () => {
      const url = b.fresh();
      const w = tempDir();
      try {
        const flag = cli(["list", "--store", url, "--project", "Bad Name"], { cwd: w.path });
        assert.equal(flag.code, 2);
        assert.match(flag.stderr, /--project: "Bad Name" is not a project name: it must be 1-63 characters/);
        const env = cli(["list", "--store", url], { cwd: w.path, env: { NOEMA_PROJECT: "x/../y" } });
        assert.equal(env.code, 2);
        assert.match(env.stderr, /NOEMA_PROJECT: "x\/\.\.\/y" is not a project name/);
        assert.equal(cli(["list", "--store", url, "--project", "a".repeat(64)], { cwd: w.path }).code, 2);
        const both = cli(["list", "--store", url, "--project", "a", "--all-projects"], { cwd: w.path });
        assert.equal(both.code, 2);
        assert.match(both.stderr, /--project and --all-projects/);
        writeFileSync(join(w.path, "noema.jsonc"), '{ "project": "Has Space" }\n');
        const file = cli(["list", "--store", url], { cwd: w.path, env: { NOEMA_PROJECT: undefined } });
        assert.equal(file.code, 2);
        assert.match(file.stderr, /noema\.jsonc.*project/);
      } finally {
        w.cleanup();
      }
    });

    test("approvals lists one project's waiting calls; a decision on another project's run is refused", async () => {
      const url = b.fresh();
      const w = tempDir();
      let store: SharedStore | undefined;
      try {
        assert.equal(cli(["store", "init", "--store", url]).code, 0);
        store = await openSharedStore(url);
        await putWaiting(store, waiting("ep_wa", "alpha"));
        await putWaiting(store, waiting("ep_wb", "beta"));
        const env = { NOEMA_STORE: url, NOEMA_PROJECT: undefined };
        const approvals = (...args: string[]) => {
          const r = cli(["--root", w.path, "approvals", "--json", ...args], { env, cwd: w.path });
          assert.equal(r.code, 0, r.stderr);
          return ids(r.stdout);
        };
        assert.deepEqual(approvals(), ["ep_wa", "ep_wb"]);
        assert.deepEqual(approvals("--project", "alpha"), ["ep_wa"]);
        assert.deepEqual(approvals("--project", "beta"), ["ep_wb"]);
        const refused = cli(["--root", w.path, "approve", "ep_wb", "--project", "alpha", "--note", "x"], {
          env,
          cwd: w.path,
        });
        assert.notEqual(refused.code, 0);
        assert.match(refused.stderr, /ep_wb is neither here nor in/);
        assert.equal(await store.decision("ep_wb", "chk_ep_wb"), null, "nothing recorded");
        // noema serve over the store, with a project: its runs and approvals only.
        for (const [args, want] of [[["--project", "alpha"], ["ep_wa"]], [[], ["ep_wa", "ep_wb"]]] as const) {
          const st = await startServe(join(w.path, "serve"), { args: ["--store", url, ...args], env });
          try {
            const shown = await (await fetch(new URL("/api/approvals", st.url))).json() as { episode_id: string }[];
            assert.deepEqual(shown.map((x) => x.episode_id).sort(), want, `serve ${args.join(" ")}`);
            const runs = await (await fetch(st.url)).text();
            assert.equal(runs.includes("ep_wb"), want.length === 2, "the runs page too");
          } finally {
            await st.stop();
          }
        }
        const ok = cli(["--root", w.path, "approve", "ep_wa", "--project", "alpha", "--json"], { env, cwd: w.path });
        assert.equal(ok.code, 0, ok.stderr);
        assert.equal((await store.decision("ep_wa", "chk_ep_wa"))?.decision, "approved");
      } finally {
        await store?.close();
        w.cleanup();
      }
    });
  });
}

describe("row-level security: a role limited to projects (PostgreSQL)", { skip: skipPg }, () => {
  before(async () => {
    if (!pg) pg = await startPostgres();
  });

  test("a role limited to alpha lists and decides alpha's runs only; unlimited roles see all", async () => {
    const url = pg!.createDatabase();
    const w = tempDir();
    const owner = new PostgresStore(url);
    const as = (role: string) => url.replace("postgres://noema@", `postgres://${role}@`);
    const grants = "GRANT SELECT, INSERT, UPDATE ON noema_episodes, noema_lines, noema_files, noema_decisions, " +
      "noema_leases TO";
    try {
      await owner.migrate();
      // The roles the database enforces (cluster-wide: another test's store may have made them already).
      const roles = cli(["store", "init", "--roles", "--store", url]);
      assert.equal(roles.code, 0, roles.stderr);
      for (const role of ["appr_alpha", "runner_all"]) {
        pg!.psql(url, `DO $$ BEGIN CREATE ROLE ${role} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
        pg!.psql(url, `${grants} ${role}`);
      }
      pg!.psql(url, "GRANT noema_approver TO appr_alpha");
      await putWaiting(owner, waiting("ep_ra", "alpha"));
      await putWaiting(owner, waiting("ep_rb", "beta"));
      await owner.upsertCatalog(row("ep_rn"));
      await owner.appendLines("ep_rb", "events.jsonl", 1, [bytes('{"secret":1}')]);

      const grant = cli(["store", "grant-project", "appr_alpha", "alpha", "--store", url, "--json"]);
      assert.equal(grant.code, 0, grant.stderr);
      assert.deepEqual(JSON.parse(grant.stdout), { role: "appr_alpha", projects: ["alpha"] });

      const env = { NOEMA_PROJECT: undefined };
      const list = (role: string) => {
        const r = cli(["--root", w.path, "list", "--json", "--all-projects", "--store", as(role)], {
          env,
          cwd: w.path,
        });
        assert.equal(r.code, 0, r.stderr);
        return ids(r.stdout);
      };
      assert.deepEqual(list("appr_alpha"), ["ep_ra"], "the database shows a limited role its projects only");
      assert.deepEqual(list("runner_all"), ["ep_ra", "ep_rb", "ep_rn"], "a role with no mapping is not limited");
      assert.deepEqual(list("noema"), ["ep_ra", "ep_rb", "ep_rn"], "the owner bypasses row-level security");

      const approvals = cli(["--root", w.path, "approvals", "--json", "--store", as("appr_alpha")], {
        env,
        cwd: w.path,
      });
      assert.deepEqual(ids(approvals.stdout), ["ep_ra"]);
      const refused = cli(["--root", w.path, "approve", "ep_rb", "--store", as("appr_alpha")], { env, cwd: w.path });
      assert.notEqual(refused.code, 0, "it cannot decide another project's run");

      // Not the command's view only: the database itself refuses, whatever the client sends.
      const limited = new PostgresStore(as("appr_alpha"));
      try {
        assert.equal(await limited.get("ep_rb"), null);
        assert.deepEqual(await limited.readLines("ep_rb", "events.jsonl", 1, 10), []);
        await assert.rejects(
          limited.decide({
            episode_id: "ep_rb",
            checkpoint_id: "chk_ep_rb",
            state_hash: "sha256:" + "a".repeat(64),
            decision: "approved",
            by: "appr_alpha",
            note: null,
            host: "h",
            at: new Date().toISOString(),
          }),
          /role appr_alpha is limited to the projects alpha/,
        );
        assert.equal(await owner.decision("ep_rb", "chk_ep_rb"), null);
        const ok = cli(["--root", w.path, "approve", "ep_ra", "--store", as("appr_alpha"), "--json"], {
          env,
          cwd: w.path,
        });
        assert.equal(ok.code, 0, ok.stderr);
      } finally {
        await limited.close();
      }

      // Its last project taken, it sees none (not all).
      const revoke = cli(["store", "revoke-project", "appr_alpha", "alpha", "--store", url, "--json"]);
      assert.equal(revoke.code, 0, revoke.stderr);
      assert.deepEqual(JSON.parse(revoke.stdout).projects, []);
      assert.deepEqual(list("appr_alpha"), []);

      const unlimited = cli(["store", "revoke-project", "runner_all", "alpha", "--store", url]);
      assert.equal(unlimited.code, 1, "revoking from a role never limited does not lock it out");
      assert.match(unlimited.stderr, /runner_all is not limited to projects/);
      assert.deepEqual(list("runner_all"), ["ep_ra", "ep_rb", "ep_rn"]);
      const noRole = cli(["store", "grant-project", "nobody_here", "alpha", "--store", url]);
      assert.equal(noRole.code, 1);
      assert.match(noRole.stderr, /no database role "nobody_here"/);
      const files = cli(["store", "grant-project", "x", "alpha", "--store", pathToFileURL(join(w.path, "s")).href]);
      assert.equal(files.code, 2);
      assert.match(files.stderr, /PostgreSQL only/);
    } finally {
      await owner.close();
      w.cleanup();
    }
  });
});

describe("row-level security holds against a session's temporary tables (PostgreSQL)", { skip: skipPg }, () => {
  before(async () => {
    if (!pg) pg = await startPostgres();
  });

  test("a limited role's temp noema_role_projects or noema_episodes neither lifts its limit nor lets it decide", async () => {
    const url = pg!.createDatabase();
    const owner = new PostgresStore(url);
    const limited = new PostgresStore(url.replace("postgres://noema@", "postgres://appr_tmp@"));
    try {
      // A store left at schema 7 (before the functions were pinned), then upgraded: the upgrade repairs it.
      await schemaAt(owner, 7);
      assert.deepEqual(await owner.migrate(), { from: 7, to: LATEST_SCHEMA_VERSION });
      assert.equal(cli(["store", "init", "--roles", "--store", url]).code, 0);
      pg!.psql(url, `DO $$ BEGIN CREATE ROLE appr_tmp LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
      pg!.psql(url, "GRANT noema_approver TO appr_tmp");
      await putWaiting(owner, waiting("ep_ta", "alpha"));
      await putWaiting(owner, waiting("ep_tb", "beta"));
      await owner.roleProject("appr_tmp", "alpha", true);

      // Every SECURITY DEFINER function of the schema searches the schema, then pg_temp, and nothing else.
      const unpinned = await owner.sql`SELECT proname, proconfig FROM pg_proc
        WHERE prosecdef AND pronamespace = current_schema()::regnamespace
          AND NOT coalesce('search_path=public, pg_temp' = ANY (proconfig), false)`;
      assert.deepEqual(unpinned.map((r) => r.proname), [], "each pinned to the schema, then pg_temp");

      const s = await limited.sql.reserve(); // one session: a temporary table is its own
      try {
        await s`CREATE TEMP TABLE noema_role_projects (role name, project text)`;
        await s`CREATE TEMP TABLE noema_episodes (episode_id text, project text)`;
        await s`INSERT INTO pg_temp.noema_episodes VALUES ('ep_tb', 'alpha')`;
        assert.equal((await s`SELECT noema_role_limited(current_user) AS l`)[0].l, true, "still limited");
        assert.deepEqual(
          (await s`SELECT episode_id FROM public.noema_episodes ORDER BY 1`).map((r) => r.episode_id),
          ["ep_ta"],
          "alpha's run only",
        );
        await assert.rejects(
          s`SELECT noema_decide('ep_tb', 'chk_ep_tb', ${"sha256:" + "a".repeat(64)}, 'approved', NULL, 'h', NULL,
            NULL, NULL)`,
          /role appr_tmp is limited to the projects alpha/,
        );
      } finally {
        s.release();
      }
      assert.equal(await owner.decision("ep_tb", "chk_ep_tb"), null, "nothing recorded");
    } finally {
      await limited.close();
      await owner.close();
    }
  });
});
