/**
 * `noema store prune`: retention for the shared store, against a real
 * PostgreSQL 15 (skipped, saying why, when it is not installed) and a files
 * store. Old finished runs are removed with their lines, files and lease;
 * runs that go on, wait, are paused or crashed, hold a live lease, or are
 * young are kept; `--dry-run` lists exactly what the prune then removes, with
 * the same counts; decisions of removed runs stay as tombstones.
 */
import assert from "node:assert/strict";
import { utimesSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { openSharedStore } from "../src/shared_store/open.ts";
import { LATEST_SCHEMA_VERSION } from "../src/shared_store/postgres/migrations.ts";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import type { CatalogRow, SharedStore } from "../src/shared_store/shared_store.ts";
import { cli } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";
import { bytes, row, schemaAt } from "./helpers/store_rows.ts";

const DAY_MS = 86_400_000;

/** What each planted episode holds: two lines (7 + 8 bytes) and two files (3 + 10 bytes). */
const LINES = ['{"a":1}', '{"b":22}'];
const FILES: [string, string][] = [["summary.json", "{}\n"], ["state.json", '{"s":123}\n']];
const EPISODE_BYTES = 7 + 8 + 3 + 10;

/** Stores an episode as a run publishes it: lines, files, its catalog row. */
async function plant(store: SharedStore, id: string, over: Partial<CatalogRow> = {}): Promise<void> {
  await store.appendLines(id, "events.jsonl", 1, LINES.map(bytes));
  for (const [name, text] of FILES) await store.putFile(id, name, bytes(text));
  await store.upsertCatalog(row(id, over));
}

/** A backend under test: a fresh store's URL, and how to make an episode's row old (its stored_at). */
interface Backend {
  name: string;
  skip: string | false;
  setup(): Promise<void>;
  fresh(): string;
  age(url: string, store: SharedStore, id: string, days: number): void;
  teardown(): void;
}

let pg: PgServer | undefined;
const tmp = tempDir();
let n = 0;
const backends: Backend[] = [
  {
    name: "PostgreSQL",
    skip: pgUnavailable() ?? false,
    async setup() {
      pg = await startPostgres();
    },
    fresh: () => pg!.createDatabase(),
    age(url, _store, id, days) {
      pg!.psql(url, `UPDATE noema_episodes SET stored_at = now() - interval '${days} days' WHERE episode_id = '${id}'`);
    },
    teardown: () => {}, // one server per test process, shared with other files (its watchdog removes it)
  },
  {
    name: "files",
    skip: false,
    setup: () => Promise.resolve(),
    fresh: () => pathToFileURL(join(tmp.path, `store-${n++}`)).href,
    age(url, _store, id, days) {
      const t = new Date(Date.now() - days * DAY_MS);
      utimesSync(join(new URL(url).pathname, "episodes", id, "stored_at"), t, t);
    },
    teardown: () => {},
  },
];
after(() => tmp.cleanup());

const sorted = (ids: string[]) => [...ids].sort();

for (const b of backends) {
  describe(`store prune over ${b.name}`, { skip: b.skip }, () => {
    before(() => b.setup());
    after(() => b.teardown());

    test("removes exactly what --dry-run listed, with the same counts; never an unfinished or held run", async () => {
      const url = b.fresh();
      assert.equal(cli(["store", "init", "--store", url]).code, 0);
      const store = await openSharedStore(url);
      try {
        const old = ["ep_old1", "ep_old2", "ep_old3"];
        for (const id of old) await plant(store, id);
        await store.decide({
          episode_id: "ep_old1",
          checkpoint_id: "chk_1",
          state_hash: "sha256:" + "1".repeat(64),
          decision: "approved",
          by: "ana",
          note: "looks fine",
          host: "host-a",
          at: "2026-11-05T10:00:00.000Z",
        });
        const decided = await store.decision("ep_old1", "chk_1");
        // A finished run whose writer released its lease is prunable; one a live writer holds is not.
        await store.releaseLease("ep_old2", await store.acquireLease("ep_old2", { host: "h", pid: 1 }));
        await plant(store, "ep_held");
        await store.acquireLease("ep_held", { host: "h", pid: 2 });
        const unfinished = ["running", "waiting_for_approval", "paused", "crashed"] as const;
        for (const s of unfinished) await plant(store, `ep_${s}`, { run_state: s, status: "pending" });
        await plant(store, "ep_young");
        for (const id of [...old, "ep_held", ...unfinished.map((s) => `ep_${s}`)]) b.age(url, store, id, 100);
        b.age(url, store, "ep_young", 10);

        const args = ["store", "prune", "--older-than", "90d", "--store", url, "--json"];
        const dry = cli([...args, "--dry-run"]);
        assert.equal(dry.code, 0, dry.stderr);
        const planned = JSON.parse(dry.stdout);
        const expected = {
          dry_run: true,
          episodes: 3,
          rows: 3 + 3 * LINES.length + 3 * FILES.length + 1, // catalog rows, lines, files, ep_old2's lease
          lines: 3 * LINES.length,
          files: 3 * FILES.length,
          bytes: 3 * EPISODE_BYTES,
          tombstones: 1,
        };
        for (const [k, v] of Object.entries(expected)) assert.equal(planned[k], v, `dry run ${k}`);
        assert.deepEqual(sorted(planned.episode_ids), old);
        assert.equal((await store.list({ limit: 100 })).length, 9, "a dry run removes nothing");
        const human = cli(["store", "prune", "--older-than", "90d", "--store", url, "--dry-run"]);
        assert.equal(human.code, 0, human.stderr);
        for (const id of old) assert.match(human.stdout, new RegExp(`would remove +${id}`));
        assert.match(human.stdout, /would remove 3 episodes .*: 16 rows \(6 lines, 6 files\), 84 bytes/);

        // Two per batch: the progress line on stderr, and the same ids and counts as the dry run.
        const real = cli([...args, "--batch", "2"]);
        assert.equal(real.code, 0, real.stderr);
        const done = JSON.parse(real.stdout);
        assert.deepEqual(sorted(done.episode_ids), sorted(planned.episode_ids));
        for (const k of ["episodes", "rows", "lines", "files", "bytes", "tombstones"]) {
          assert.equal(done[k], planned[k], k);
        }
        assert.equal(done.dry_run, false);
        assert.match(real.stderr, /store prune: removed 2 episodes so far/);

        const left = (await store.list({ limit: 100 })).map((r) => r.episode_id).sort();
        assert.deepEqual(left, [
          "ep_crashed",
          "ep_held",
          "ep_paused",
          "ep_running",
          "ep_waiting_for_approval",
          "ep_young",
        ]);
        for (const id of old) {
          assert.equal(await store.get(id), null);
          assert.deepEqual(await store.streams(id), []);
          assert.deepEqual(await store.listFiles(id), []);
          assert.equal(await store.lineCount(id, "events.jsonl"), 0);
        }
        // The decision stays, a tombstone: pruned_at set, its note cleared, the rest as it was.
        const tomb = await store.decision("ep_old1", "chk_1");
        assert.ok(tomb, "the decision of a pruned run is kept");
        assert.equal(tomb.note, null);
        assert.deepEqual({ ...tomb, pruned_at: null }, { ...decided, note: null, pruned_at: null });
        assert.ok(tomb.pruned_at && !Number.isNaN(Date.parse(tomb.pruned_at)), `pruned_at: ${tomb.pruned_at}`);
        // Kept runs are whole.
        assert.equal(await store.lineCount("ep_held", "events.jsonl"), LINES.length);
        assert.equal((await store.listFiles("ep_waiting_for_approval")).length, FILES.length);

        const again = JSON.parse(cli([...args]).stdout);
        assert.equal(again.episodes, 0, "nothing left to prune");
        assert.equal(again.tombstones, 0, "a tombstone is not made twice");
      } finally {
        await store.close();
      }
    });

    test("--project prunes that project's runs only; a bad duration or batch is a usage error", async () => {
      const url = b.fresh();
      assert.equal(cli(["store", "init", "--store", url]).code, 0);
      const store = await openSharedStore(url);
      try {
        await plant(store, "ep_a", { project: "alpha" });
        await plant(store, "ep_b", { project: "beta" });
        await plant(store, "ep_none");
        for (const id of ["ep_a", "ep_b", "ep_none"]) b.age(url, store, id, 100);
        const prune = (...more: string[]) =>
          cli(["store", "prune", "--older-than", "90d", "--store", url, "--json", ...more]);
        const a = prune("--project", "alpha", "--dry-run");
        assert.equal(a.code, 0, a.stderr);
        assert.deepEqual(JSON.parse(a.stdout).episode_ids, ["ep_a"]);
        assert.equal(JSON.parse(a.stdout).project, "alpha");
        const viaEnv = cli(["store", "prune", "--older-than", "90d", "--store", url, "--json"], {
          env: { NOEMA_PROJECT: "beta" },
        });
        assert.deepEqual(JSON.parse(viaEnv.stdout).episode_ids, ["ep_b"]);
        assert.deepEqual((await store.list()).map((r) => r.episode_id).sort(), ["ep_a", "ep_none"]);
        const all = cli(["store", "prune", "--older-than", "90d", "--store", url, "--json", "--all-projects"], {
          env: { NOEMA_PROJECT: "beta" },
        });
        assert.deepEqual(sorted(JSON.parse(all.stdout).episode_ids), ["ep_a", "ep_none"]);

        const bad = prune("--older-than", "soon");
        assert.equal(bad.code, 2);
        assert.match(bad.stderr, /--older-than/);
        const batch = prune("--batch", "0");
        assert.equal(batch.code, 2);
        assert.match(batch.stderr, /--batch must be a positive integer/);
      } finally {
        await store.close();
      }
    });
  });
}

describe("schema version 6 over a store at version 5", { skip: pgUnavailable() ?? false }, () => {
  test("migrate adds 6; prune leaves tombstones and the decision log still audits whole", async () => {
    pg ??= await startPostgres();
    const url = pg.createDatabase();
    const store = new PostgresStore(url);
    try {
      // Versions 1-5 as noema wrote them: decisions stamped and chained by noema_decide.
      await schemaAt(store, 5);
      const decide = (id: string, chk: string) =>
        store.decide({
          episode_id: id,
          checkpoint_id: chk,
          state_hash: "sha256:" + "1".repeat(64),
          decision: "rejected",
          by: "bea",
          note: "no",
          host: "h",
          at: "2026-11-05T10:00:00.000Z",
        });
      await decide("ep_keep", "chk_0");
      await decide("ep_v5", "chk_1");
      await decide("ep_v5", "chk_2");
      await decide("ep_keep", "chk_3");
      const r = cli(["store", "migrate", "--store", url, "--json"]);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { location: url, from: 5, to: LATEST_SCHEMA_VERSION });
      await plant(store, "ep_v5", {});
      await plant(store, "ep_keep", {});
      pg.psql(url, `UPDATE noema_episodes SET stored_at = now() - interval '100 days' WHERE episode_id = 'ep_v5'`);
      const p = cli(["store", "prune", "--older-than", "90d", "--store", url, "--json"]);
      assert.equal(p.code, 0, p.stderr);
      assert.deepEqual(JSON.parse(p.stdout).episode_ids, ["ep_v5"]);
      assert.ok((await store.decision("ep_v5", "chk_1"))?.pruned_at);
      assert.equal((await store.decision("ep_keep", "chk_3"))?.pruned_at ?? null, null);
      // The chain runs through the tombstones (rows 2 and 3) to the kept decision after them.
      const audit = cli(["store", "audit", "--store", url, "--json"]);
      assert.equal(audit.code, 0, audit.stdout + audit.stderr);
      const report = JSON.parse(audit.stdout);
      assert.equal(report.ok, true);
      assert.equal(report.rows, 4);
      assert.equal(report.tombstones, 2);
    } finally {
      await store.close();
    }
  });
});
