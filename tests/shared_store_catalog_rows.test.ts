/**
 * Catalog rows that cannot be read, through the real CLI, on both backends:
 * `noema list --store` shows such a row under its id as `unreadable` with
 * its problem (table and `--json`) next to the others, `noema approvals`
 * skips it with one line on stderr naming it; and a 1.5 GB sparse
 * `catalog.json` of the files backend is never read (the command succeeds in
 * bounded memory).
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, truncateSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { pathToFileURL } from "node:url";
import { after, describe, test } from "node:test";
import { openSharedStore } from "../src/shared_store/open.ts";
import type { SharedStore } from "../src/shared_store/shared_store.ts";
import type { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import { cli, cliCommand } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { startServe } from "./helpers/serve.ts";
import { tempDir } from "./helpers/tmp.ts";
import { putWaiting, row, spoilCatalog } from "./helpers/store_rows.ts";

const PENDING = {
  checkpoint_id: "chk_01",
  state_hash: "sha256:" + "a".repeat(64),
  kind: "approval",
  step_id: "s2",
  reason: "deploys need a human",
  policy_id: "ApprovalGate@1.0",
  action: { tool: "shell", input_excerpt: "echo deploy" },
  created_at: "2026-11-04T00:00:01.000Z",
};

/** A store with a finished run, a run waiting for approval, and a waiting run whose `pending` is a JSON string. */
async function seed(store: SharedStore): Promise<void> {
  await store.migrate();
  const waiting = { run_state: "waiting_for_approval" as const, status: "pending", outcome: null, pending: PENDING };
  await store.upsertCatalog(row("ep_good", { started_at: "2026-11-01T00:00:00.000Z" }));
  await putWaiting(store, row("ep_wait", { started_at: "2026-11-02T00:00:00.000Z", host: "b", ...waiting }));
  await store.upsertCatalog(row("ep_bad", { started_at: "2026-11-03T00:00:00.000Z", ...waiting }));
  await spoilCatalog(store, "ep_bad", "pending", "str");
}

const root = tempDir("noema-catalog-rows-");
after(() => root.cleanup());

const backends: { name: string; url: () => Promise<string>; skip: string | false }[] = [
  {
    name: "files",
    url: () => {
      const dir = join(root.path, `files-${Math.random().toString(36).slice(2)}`);
      mkdirSync(dir);
      return Promise.resolve(pathToFileURL(dir).href);
    },
    skip: false,
  },
  { name: "PostgreSQL", url: async () => (await startPostgres()).createDatabase(), skip: pgUnavailable() ?? false },
];

for (const b of backends) {
  describe(`catalog rows that cannot be read, through the CLI: ${b.name}`, { skip: b.skip }, () => {
    test("list --store shows the bad row as unreadable under its id; approvals skips it with one warning", async () => {
      const url = await b.url();
      const store = await openSharedStore(url);
      try {
        await seed(store);
      } finally {
        await store.close();
      }
      const env = { NOEMA_STORE: url };
      const list = cli(["--root", root.path, "list", "--json"], { env });
      assert.equal(list.code, 0, list.stderr);
      const entries = JSON.parse(list.stdout) as Record<string, unknown>[];
      // Each once (ordered by when the store first stored them: within the same millisecond, by id).
      assert.deepEqual(entries.map((e) => [e.episode_id, e.status, e.host]).sort(), [
        ["ep_bad", "unreadable", null],
        ["ep_good", "ok", "a"],
        ["ep_wait", "pending", "b"],
      ]);
      const { error, stored_at, ...bad } = entries.find((e) => e.episode_id === "ep_bad")!;
      assert.equal(typeof stored_at, "string", "when the store first stored it, by its clock");
      assert.match(String(error), /ep_bad.*pending: /);
      assert.deepEqual(bad, {
        episode_id: "ep_bad",
        episode_dir: null,
        lifecycle: "non-terminal",
        status: "unreadable",
        task: null,
        started_at: "2026-11-03T00:00:00.000Z",
        tags: {},
        run_state: "unreadable",
        host: null,
      });
      const good = entries.find((e) => e.episode_id === "ep_good")!;
      for (const key of Object.keys(good)) {
        if (key !== "outcome") {
          assert.ok(key in bad || key === "stored_at", `the unreadable entry has ${key}, as every entry`);
        }
      }

      const table = cli(["--root", root.path, "list"], { env });
      assert.equal(table.code, 0, table.stderr);
      const line = table.stdout.split("\n").find((l) => l.includes("ep_bad")) ?? "";
      assert.match(line, /ep_bad\s+-\s+unreadable\s+-\s+\(.*pending: .*\)/, "its host unknown");
      assert.match(table.stdout, /ep_good\s+a\s+ok/);

      const approvals = cli(["--root", root.path, "approvals", "--json"], { env });
      assert.equal(approvals.code, 0, approvals.stderr);
      assert.deepEqual(JSON.parse(approvals.stdout).map((w: { episode_id: string }) => w.episode_id), ["ep_wait"]);
      const warned = approvals.stderr.trim().split("\n");
      assert.equal(warned.length, 1, approvals.stderr);
      assert.match(warned[0], /^noema: skipped ep_bad: its catalog row cannot be read: .*pending: /);
      const shown = cli(["--root", root.path, "approvals"], { env });
      assert.equal(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /ep_wait\s+b\s+s2\s+chk_01\s+ApprovalGate@1\.0/);
      assert.doesNotMatch(shown.stdout, /ep_bad/);
      assert.match(shown.stderr, /skipped ep_bad/);
    });
  });
}

test(
  "files: a 1.5 GB sparse catalog.json is never read: list --store succeeds, shows it unreadable, lists the others",
  {
    timeout: 180_000, // only to catch a hang: reading it whole (as noema once did) takes seconds and gigabytes
  },
  async () => {
    const url = await backends[0].url();
    const store = await openSharedStore(url);
    try {
      await seed(store);
      await store.upsertCatalog(row("ep_huge"));
    } finally {
      await store.close();
    }
    const huge = join(new URL(url).pathname, "episodes", "ep_huge", "catalog.json");
    truncateSync(huge, 1.5 * 2 ** 30); // sparse: no disk
    const time = "/usr/bin/time";
    const measured = existsSync(time);
    const [cmd, ...args] = [...(measured ? [time, "-v"] : []), ...cliCommand(), "--root", root.path, "list", "--json"];
    const r = await runChild(cmd, args, {
      env: { ...process.env, NOEMA_STORE: url, NO_COLOR: "1" },
      timeoutMs: 120_000,
    });
    assert.equal(r.code, 0, r.stderr);
    const entries = JSON.parse(r.stdout) as { episode_id: string; status: string; error?: string }[];
    assert.deepEqual(entries.map((e) => [e.episode_id, e.status]).sort(), [
      ["ep_bad", "unreadable"],
      ["ep_good", "ok"],
      ["ep_huge", "unreadable"],
      ["ep_wait", "pending"],
    ]);
    assert.match(
      entries.find((e) => e.episode_id === "ep_huge")?.error ?? "",
      /catalog\.json: 1610612736 bytes, over noema's limit of 4194304 bytes/,
    );
    if (measured) {
      const kb = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(r.stderr)?.[1]);
      assert.ok(kb > 0 && kb < 300 * 1024, `peak RSS ${kb} kB, expected under 300 MB`);
      console.log(`list --store over a 1.5 GB sparse catalog.json: peak RSS ${Math.round(kb / 1024)} MB`);
    }
  },
);

describe("PostgreSQL: a catalog row whose time JavaScript cannot hold", { skip: pgUnavailable() ?? false }, () => {
  test("infinity or a year past 275760 makes that row unreadable, naming the field; list, approvals, serve go on", async () => {
    const url = await backends[1].url();
    const store = await openSharedStore(url);
    try {
      await seed(store);
      await store.upsertCatalog(row("ep_far"));
      // As text, cast by the database (the client would make a Date of it first).
      const sql = (store as PostgresStore).sql;
      const spoil = (id: string, field: string, value: string) =>
        sql`UPDATE noema_episodes SET ${sql(field)} = ${value}::text::timestamptz WHERE episode_id = ${id}`;
      await spoil("ep_good", "started_at", "infinity");
      await spoil("ep_far", "ended_at", "290000-01-01 00:00:00+00");
      await spoil("ep_wait", "stored_at", "-infinity");
    } finally {
      await store.close();
    }
    const env = { NOEMA_STORE: url };
    const list = cli(["--root", root.path, "list", "--json"], { env });
    assert.equal(list.code, 0, list.stderr);
    const entries = JSON.parse(list.stdout) as { episode_id: string; status: string; error?: string }[];
    const byId = Object.fromEntries(entries.map((e) => [e.episode_id, e]));
    assert.deepEqual(Object.keys(byId).sort(), ["ep_bad", "ep_far", "ep_good", "ep_wait"]);
    for (const [id, field] of [["ep_good", "started_at"], ["ep_far", "ended_at"], ["ep_wait", "stored_at"]]) {
      assert.equal(byId[id].status, "unreadable", id);
      assert.match(
        String(byId[id].error),
        new RegExp(`${id} \\(noema_episodes\\): ${field}: not a time noema can read`),
      );
    }
    const table = cli(["--root", root.path, "list"], { env });
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /ep_good\s+-\s+unreadable/);

    const approvals = cli(["--root", root.path, "approvals", "--json"], { env });
    assert.equal(approvals.code, 0, approvals.stderr);
    assert.deepEqual(JSON.parse(approvals.stdout), []);
    assert.match(approvals.stderr, /skipped ep_wait: its catalog row cannot be read: .*stored_at: not a time/);

    const st = await startServe(join(root.path, "serve"), { args: ["--store", url], env });
    try {
      const page = await fetch(st.url);
      const text = await page.text();
      assert.equal(page.status, 200, text);
      assert.ok(text.includes("ep_good") && text.includes("ep_bad"), "every row, the unreadable ones by id");
      const waiting = await fetch(new URL("/api/approvals", st.url));
      assert.equal(waiting.status, 200, await waiting.clone().text());
      const shown = await waiting.json() as { episode_id: string; unreadable?: string }[];
      assert.deepEqual(shown.map((w) => w.episode_id).sort(), ["ep_bad", "ep_wait"], "shown unreadable");
      const wait = shown.find((w) => w.episode_id === "ep_wait");
      assert.match(String(wait?.unreadable), /stored_at: not a time noema can read/, "with nothing to decide");
    } finally {
      await st.stop();
    }
  });
});
