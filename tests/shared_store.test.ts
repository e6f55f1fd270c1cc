/**
 * The shared store end to end, against a real PostgreSQL 15 (started by the
 * test helper) and a files store: publish → pull of real episodes, byte for
 * byte, with `validate` and `verify` passing on the copy; the CLI; faults;
 * following; approvals across machines. The store interface itself is tested
 * against every backend in `shared_store_conformance.test.ts`.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fsModule from "node:fs";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import process from "node:process";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { runChild } from "./helpers/child.ts";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { after, before, describe, test } from "node:test";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import { LATEST_SCHEMA_VERSION } from "../src/shared_store/postgres/migrations.ts";
import { EpisodePublisher } from "../src/shared_store/publish.ts";
import { pullEpisode } from "../src/shared_store/pull.ts";
import { LeaseHeldError, StoreConflictError } from "../src/shared_store/shared_store.ts";
import { maskStoreUrl } from "../src/shared_store/store_url.ts";
import { connectionTarget, urlHasPassword } from "../src/shared_store/postgres/conninfo.ts";
import { pgpassLookup } from "../src/shared_store/postgres/pgpass.ts";
import { clientTls } from "../src/shared_store/postgres/tls.ts";
import { syncRoot } from "../src/shared_store/sync.ts";
import { handoffLogTail } from "../src/shared_store/handoff_log.ts";
import { cli, cliCommand, hookCommand, REPO } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { REFUSED_PORT } from "./helpers/local_http.ts";
import { tempDir } from "./helpers/tmp.ts";
import { pidsWithEnv, stopHookServers } from "./helpers/processes.ts";
import { bytes, row, schemaAt } from "./helpers/store_rows.ts";
import { tree } from "./helpers/episode_trees.ts";
import { processGone } from "../src/store/lock.ts";

const skip = pgUnavailable() ?? false;
const gate = join(REPO, "plugins/policies/approval-gate.ts");
/** The text of the file at `path`, or "" while there is none. */
function readIfThere(path: string): string {
  return fsModule.existsSync(path) ? readFileSync(path, "utf8") : "";
}

/** Waits (≤ 60 s) until the file at `path` holds `text`. */
async function untilFileHolds(path: string, text: string): Promise<void> {
  const until = Date.now() + 60_000;
  while (!readIfThere(path).includes(text) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
}

/** One `noema hook claude-code --root <root>` call with `payload` on stdin, as an agent's hook starts it. */
function hookCall(root: string, cwd: string, payload: unknown, env: Record<string, string | undefined>) {
  const [cmd, ...args] = [...hookCommand(), "hook", "claude-code", "--root", root];
  return runChild(cmd, args, {
    cwd,
    input: JSON.stringify(payload),
    env,
    timeoutMs: 60_000,
  });
}

/** A shell task whose second step deploys: the approval gate holds it. */
function deployTask(dir: string): string {
  const path = join(dir, "deploy.json");
  fsModule.writeFileSync(
    path,
    JSON.stringify({
      task: "build and deploy",
      using: "shell",
      policies: [gate],
      steps: [
        { kind: "act", description: "build", inputs: { command: "echo built" } },
        { kind: "act", description: "deploy", inputs: { command: "echo deploy done" } },
      ],
    }),
  );
  return path;
}

/**
 * Waits (bounded) until a run's episode is no longer marked pending: published by the run itself, or by the
 * background sync it handed its last publish to (NOEMA_STORE_FLUSH_MS). True when it got there. The bound only
 * catches hangs: that sync runs at nice 10 in a session of its own (its autogroup not lowered: lowered, it got a few
 * percent of the CPU beside `npm test`'s runners, each file's in its own session, and one took over 180 s).
 */
async function published(root: string, id: string, ms = 180_000): Promise<boolean> {
  const marker = join(root, "state", "publish-pending", id);
  const until = Date.now() + ms;
  while (fsModule.existsSync(marker) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  return !fsModule.existsSync(marker);
}

describe("shared store: publish, pull and sync over PostgreSQL", { skip }, () => {
  let pg: PgServer;
  let store: PostgresStore;
  before(async () => {
    pg = await startPostgres();
    store = new PostgresStore(pg.createDatabase());
    await store.migrate();
  });
  after(async () => {
    await store?.close();
  });

  test("two first writers of an episode race for its lease: one gets token 1, the other a LeaseHeldError, never a raw error", async () => {
    for (let i = 0; i < 20; i++) {
      const id = `ep_first_lease_${i}`;
      const results = await Promise.allSettled([
        store.acquireLease(id, { host: "host-a", pid: 1 }),
        store.acquireLease(id, { host: "host-b", pid: 2 }),
      ]);
      const won = results.filter((r) => r.status === "fulfilled").map((r) =>
        (r as PromiseFulfilledResult<bigint>).value
      );
      const lost = results.filter((r) => r.status === "rejected").map((r) => (r as PromiseRejectedResult).reason);
      assert.deepEqual(won, [1n], `round ${i}`);
      assert.equal(lost.length, 1);
      assert.ok(lost[0] instanceof LeaseHeldError, String(lost[0]));
    }
  });

  test("two writers race for one episode id from two roots: the store keeps one, the other is refused, never merged", async () => {
    const a = tempDir(), b = tempDir();
    try {
      const id = "ep_same_id_two_roots";
      for (const [root, task] of [[a.path, "Say hello"], [b.path, "Say goodbye"]]) {
        const r = cli(["--root", root, "run", task, "--episode-id", id], { cwd: root });
        assert.equal(r.code, 0, r.stderr);
      }
      const pa = new EpisodePublisher(store, join(a.path, "episodes", id), id, { host: "host-a" });
      const pb = new EpisodePublisher(store, join(b.path, "episodes", id), id, { host: "host-b" });
      const results = await Promise.allSettled([pa.publish(), pb.publish()]);
      const refused = results.filter((r) => r.status === "rejected");
      assert.equal(refused.length, 1, JSON.stringify(results));
      const why = (refused[0] as PromiseRejectedResult).reason;
      assert.ok(why instanceof LeaseHeldError || why instanceof StoreConflictError, String(why));
      const winner = results[0].status === "fulfilled" ? a.path : b.path;
      const c = tempDir();
      try {
        await pullEpisode(store, id, c.path);
        assert.deepEqual(tree(join(c.path, "episodes", id)), tree(join(winner, "episodes", id)));
      } finally {
        c.cleanup();
      }
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("a store URL's password is masked wherever it is shown", () => {
    assert.equal(
      maskStoreUrl("postgres://ana:s3cr%40t@db:5432/noema?sslmode=require"),
      "postgres://ana:***@db:5432/noema?sslmode=require",
    );
    assert.equal(
      maskStoreUrl("postgres://ana:s3@cr:t@db1:5432,db2/noema?sslpassword=k3y&application_name=x"),
      "postgres://ana:***@db1:5432,db2/noema?sslpassword=***&application_name=x",
      "several hosts, which the URL class cannot parse: masked all the same",
    );
    const s = new PostgresStore("postgres://ana:hunter2@127.0.0.1:1/x");
    assert.ok(!s.location.includes("hunter2"));
    s.close();
  });

  test("publish then pull: the copy is byte-identical, validates and verifies (signed manifest)", async () => {
    const a = tempDir(), b = tempDir();
    try {
      const env = { NOEMA_SIGNING_KEY: "k".repeat(32), NOEMA_HOST: "host-a" };
      const run = cli([
        "--root",
        a.path,
        "run",
        "Say hello",
        "--policy",
        join(REPO, "plugins/policies/path-risk.ts"),
        "--tag",
        "team=infra",
        "--json",
      ], {
        env,
        cwd: a.path,
      });
      assert.ok(run.code === 0 || run.code === 3, run.stderr);
      const id = JSON.parse(run.stdout).episode_id as string;
      const dir = join(a.path, "episodes", id);
      const publisher = new EpisodePublisher(store, dir, id, { host: "host-a" });
      const first = await publisher.publish();
      assert.ok(first.lines > 0 && first.files >= 3, JSON.stringify(first));
      assert.deepEqual(await publisher.publish(), { lines: 0, files: 0 }); // nothing new, nothing sent
      // A fresh publisher (another process) sends nothing twice either.
      assert.deepEqual(await new EpisodePublisher(store, dir, id, { host: "host-a" }).publish(), {
        lines: 0,
        files: 0,
      });
      const cat = await store.get(id);
      assert.deepEqual(cat?.policy_ids, ["PathRisk@1.0"]);
      assert.equal(cat?.host, "host-a");
      assert.equal(cat?.run_state, "terminal");
      assert.deepEqual(cat?.tags, { team: "infra" });
      assert.equal(cat?.adapter, "minimal");

      const pulled = await pullEpisode(store, id, b.path);
      assert.deepEqual(tree(pulled.episode_dir), tree(dir));
      assert.equal(statSync(join(pulled.episode_dir, "events.jsonl")).mode & 0o777, 0o600);
      const v = cli(["--root", b.path, "validate", id], { env });
      assert.equal(v.code, 0, v.stdout + v.stderr);
      const ver = cli(["--root", b.path, "verify", id, "--strict"], { env });
      assert.equal(ver.code, 0, ver.stdout + ver.stderr);
      await assert.rejects(pullEpisode(store, id, b.path), /already exists/);
      await assert.rejects(pullEpisode(store, "ep_missing", b.path), /not in the shared store/);
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("sync publishes what the store misses, and reports a local line that differs from the stored one", async () => {
    const a = tempDir();
    try {
      for (const task of ["echo one", "echo two"]) {
        const r = cli(["--root", a.path, "run", task], { cwd: a.path });
        assert.equal(r.code, 0, r.stderr);
      }
      const rows = await syncRoot(store, a.path);
      assert.equal(rows.length, 2);
      assert.ok(rows.every((r) => r.error === null && r.lines > 0));
      assert.ok((await syncRoot(store, a.path)).every((r) => r.lines === 0 && r.files === 0));
      // Tamper with the last stored line locally: the resend is a conflict, reported, the store keeps its line.
      const id = rows[0].episode_id;
      const events = join(a.path, "episodes", id, "events.jsonl");
      const text = readFileSync(events, "utf8").split("\n");
      const stored = await store.readLines(id, "events.jsonl", text.length - 1, 1);
      text[text.length - 2] = text[text.length - 2].replace('"phase"', '"phase" ');
      (await import("node:fs")).writeFileSync(events, text.join("\n"));
      const again = await syncRoot(store, a.path);
      assert.match(again.find((r) => r.episode_id === id)!.error ?? "", /conflict/);
      assert.deepEqual(await store.readLines(id, "events.jsonl", text.length - 1, 1), stored);
    } finally {
      a.cleanup();
    }
  });
});

describe("shared store: the CLI (store init/status, sync, list --store, pull, reads by id)", { skip }, () => {
  let pg: PgServer;
  let url: string;
  before(async () => {
    pg = await startPostgres();
    url = pg.createDatabase();
  });

  test("two roots as two hosts: A runs and syncs, B lists, reads by id (pulled), and verifies the copy", () => {
    const a = tempDir(), b = tempDir();
    try {
      const st0 = cli(["store", "status", "--store", url, "--json"]);
      assert.equal(st0.code, 1, "a store without the schema is not ready: exit 1");
      assert.equal(JSON.parse(st0.stdout).schema_version, 0);
      const init = cli(["store", "init", "--store", url, "--json"]);
      assert.equal(init.code, 0, init.stderr);
      assert.equal(JSON.parse(init.stdout).to, LATEST_SCHEMA_VERSION);
      assert.equal(cli(["store", "init", "--store", url]).code, 0, "init twice is a no-op");

      const envA = { NOEMA_STORE: url, NOEMA_HOST: "host-a", NOEMA_SIGNING_KEY: "s".repeat(32) };
      const run = cli(["--root", a.path, "run", "Say hello", "--tag", "team=infra", "--json"], {
        env: envA,
        cwd: a.path,
      });
      assert.equal(run.code, 0, run.stderr);
      const id = JSON.parse(run.stdout).episode_id as string;
      const sync = cli(["--root", a.path, "sync", "--json"], { env: envA });
      assert.equal(sync.code, 0, sync.stderr);
      assert.equal(JSON.parse(sync.stdout.trim().split("\n")[0]).episode_id, id);

      const envB = { NOEMA_STORE: url, NOEMA_HOST: "host-b", NOEMA_SIGNING_KEY: "s".repeat(32) };
      const list = cli(["--root", b.path, "list", "--json", "--host", "host-a", "--tag", "team=infra"], { env: envB });
      assert.equal(list.code, 0, list.stderr);
      const rows = JSON.parse(list.stdout);
      assert.deepEqual(rows.map((r: { episode_id: string; host: string }) => [r.episode_id, r.host]), [[id, "host-a"]]);
      assert.equal(rows[0].episode_dir, null, "no local copy on B yet");
      assert.equal(
        JSON.parse(cli(["--root", b.path, "list", "--json", "--status", "vetoed"], { env: envB }).stdout).length,
        0,
      );

      const view = cli(["--root", b.path, "summary", id], { env: envB });
      assert.equal(view.code, 0, view.stderr);
      assert.equal(JSON.parse(view.stdout).episode_id, id);
      const verify = cli(["--root", b.path, "verify", id, "--strict"], { env: envB });
      assert.equal(verify.code, 0, verify.stdout + verify.stderr);
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));

      // B syncing its pulled copy sends nothing new and leaves the catalog row (and its host) as A published it.
      const syncB = cli(["--root", b.path, "sync", "--json"], { env: envB });
      assert.equal(syncB.code, 0, syncB.stderr);
      const again = JSON.parse(cli(["--root", b.path, "list", "--json"], { env: envB }).stdout);
      assert.equal(again.find((r: { episode_id: string }) => r.episode_id === id).host, "host-a");
      const pullAgain = cli(["--root", b.path, "pull", id], { env: envB });
      assert.equal(pullAgain.code, 1);
      assert.match(pullAgain.stderr, /already exists/);
      const noStore = cli(["--root", b.path, "list", "--host", "x"], { env: { NOEMA_STORE: undefined } });
      assert.equal(noStore.code, 2);
      const bad = cli(["list", "--store", "mysql://x"]);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /unsupported store/);
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("store in noema.jsonc selects the store; NOEMA_STORE and --store win over it; a bad one is located", async () => {
    const d = tempDir();
    const db = new PostgresStore(url);
    try {
      await db.migrate();
      await db.upsertCatalog(row("ep_from_jsonc_host", { host: "host-jsonc" }));
      d.file("noema.jsonc", `{ // the team's store\n  "store": "${url}" }`);
      const r = cli(["list", "--json", "--host", "host-jsonc"], { cwd: d.path, env: { NOEMA_STORE: undefined } });
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout).map((e: { episode_id: string }) => e.episode_id), ["ep_from_jsonc_host"]);
      const over = cli(["store", "status"], { cwd: d.path, env: { NOEMA_STORE: "postgres://x:pw@127.0.0.1:1/none" } });
      assert.equal(over.code, 1, "NOEMA_STORE wins: an unreachable store");
      d.file("noema.jsonc", `{ "store": "mysql://db" }`);
      const bad = cli(["list", "--host", "x"], { cwd: d.path, env: { NOEMA_STORE: undefined } });
      assert.equal(bad.code, 2, bad.stderr);
      assert.match(bad.stderr, /noema\.jsonc.*store/);
    } finally {
      await db.close();
      d.cleanup();
    }
  });

  test("a URL naming two hosts (libpq's h1:p1,h2:p2), the first down: store status, a run publishing and list use the second", async () => {
    const down = REFUSED_PORT; // nothing listens there, nor can (see REFUSED_PORT)
    const { port, pathname } = new URL(url);
    const two = `postgres://noema@127.0.0.1:${down},127.0.0.1:${port}${pathname}`;
    const a = tempDir();
    try {
      const init = cli(["store", "init", "--store", two, "--json"]);
      assert.equal(init.code, 0, init.stderr);
      const st = cli(["store", "status", "--store", two, "--json"]);
      assert.equal(st.code, 0, st.stderr);
      assert.equal(JSON.parse(st.stdout).schema_version, LATEST_SCHEMA_VERSION);
      const tls = cli(["store", "status", "--json", "--store", `${two}?sslmode=verify-full&sslrootcert=${pg.tls.ca}`]);
      assert.equal(tls.code, 0, tls.stderr);
      assert.match(JSON.parse(tls.stdout).tls, /^TLSv1\.[23] /, "TLS, verified, over the second host");
      const env = { NOEMA_STORE: two, NOEMA_HOST: "host-two-urls" };
      const run = cli(["--root", a.path, "run", "Say hello", "--json"], { env, cwd: a.path });
      assert.equal(run.code, 0, run.stderr);
      assert.doesNotMatch(run.stderr, /store/i, "the run reached the store");
      const id = JSON.parse(run.stdout).episode_id as string;
      assert.ok(await published(a.path, id), "the run published its episode");
      const list = cli(["list", "--json", "--host", "host-two-urls"], { env });
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual(JSON.parse(list.stdout).map((r: { episode_id: string }) => r.episode_id), [id]);
      // Every host down: unreachable, said at once (the client alone retried them forever).
      // Port 2, like port 1, is below 1024: nothing listens there, nor can.
      const none = `postgres://noema:hunter2@127.0.0.1:${down},127.0.0.1:${REFUSED_PORT + 1}${pathname}`;
      const r = cli(["store", "status", "--store", none], { timeoutMs: 60_000 });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /cannot be reached: connect ECONNREFUSED/);
      assert.doesNotMatch(r.stderr, /hunter2/);
    } finally {
      a.cleanup();
    }
  });

  test("an unreachable store is a clear error naming it, without its password", () => {
    const r = cli(["store", "status", "--store", "postgres://ana:hunter2@127.0.0.1:1/noema"], { timeoutMs: 30_000 });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /127\.0\.0\.1/);
    assert.ok(!r.stderr.includes("hunter2"), r.stderr);
  });
});

/** A shell task whose second step waits (≤ 100 s) until `gate` exists, then three more steps run. */
function gatedTask(dir: string, gate: string): string {
  const steps = [
    "echo step 1",
    `i=0; while [ ! -e '${gate}' ] && [ $i -lt 500 ]; do sleep 0.2; i=$((i+1)); done; echo step 2`,
    "echo step 3",
    "sleep 0.2; echo step 4",
    "echo step 5",
  ];
  const t = {
    task: "a run held at its second step",
    using: "shell",
    steps: steps.map((command, i) => ({ kind: "act", description: `step ${i + 1}`, inputs: { command } })),
  };
  const path = join(dir, "gated.json");
  fsModule.writeFileSync(path, JSON.stringify(t));
  return path;
}

/**
 * Host A's run of {@link gatedTask} as episode `id`, publishing to the store at `url`: held at its second step until
 * the test creates `go`.
 */
function gatedRunOnA(root: string, url: string, id: string, extra: string[] = []) {
  const go = join(root, "go");
  const [cmd, ...args] = cliCommand();
  const run = runChild(cmd, [...args, "--root", root, "run", gatedTask(root, go), "--episode-id", id, ...extra], {
    cwd: root,
    env: { ...process.env, NOEMA_STORE: url, NOEMA_HOST: "host-a" },
    timeoutMs: 120_000,
  });
  return { go, run };
}

/** A shell task file whose steps each sleep a while (a run long enough to act on mid-way). */
function slowTask(dir: string, steps: number, seconds: number): string {
  const t = {
    task: "a slow run",
    using: "shell",
    steps: Array.from({ length: steps }, (_, i) => ({
      kind: "act",
      description: `step ${i + 1}`,
      inputs: { command: `sleep ${seconds}; echo step ${i + 1}` },
    })),
  };
  const path = join(dir, "slow.json");
  fsModule.writeFileSync(path, JSON.stringify(t));
  return path;
}

/**
 * A loopback TCP proxy to `target` that holds every connection (reads nothing, answers nothing) until
 * `release()`: a store that does not answer for a while.
 */
async function holdingProxy(target: URL): Promise<{ url: string; release(): void; close(): Promise<void> }> {
  let held = true;
  const waiting: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.on("error", () => {});
    const relay = () => {
      const up = connect(Number(target.port), target.hostname);
      sockets.add(up);
      up.on("error", () => client.destroy());
      client.on("close", () => up.destroy());
      up.on("close", () => client.destroy());
      client.pipe(up);
      up.pipe(client);
    };
    if (held) waiting.push(relay);
    else relay();
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const u = new URL(target.href);
  u.port = String((server.address() as AddressInfo).port);
  return {
    url: u.href,
    release() {
      held = false;
      for (const go of waiting.splice(0)) go();
    },
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((ok) => server.close(() => ok()));
    },
  };
}

describe("shared store: a run publishes as it writes; faults lose nothing", { skip }, () => {
  let pg: PgServer;
  let url: string;
  before(async () => {
    pg = await startPostgres();
    url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
  });

  test("a run with NOEMA_STORE is in the store when it ends, byte-identical, with no pending marker", async () => {
    const a = tempDir(), b = tempDir();
    try {
      const r = cli(["--root", a.path, "run", "Say hello", "--json"], { env: { NOEMA_STORE: url }, cwd: a.path });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, "");
      const id = JSON.parse(r.stdout).episode_id;
      assert.ok(await published(a.path, id), "published, nothing left pending");
      const db = new PostgresStore(url);
      try {
        await pullEpisode(db, id, b.path);
      } finally {
        await db.close();
      }
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("a run that cannot finish publishing in time hands the rest to a background sync and exits", async () => {
    const a = tempDir(), b = tempDir();
    try {
      const r = cli(["--root", a.path, "run", slowTask(a.path, 3, 0), "--json"], {
        env: { NOEMA_STORE: url, NOEMA_STORE_FLUSH_MS: "0" },
        cwd: a.path,
      });
      assert.equal(r.code, 0, r.stderr);
      const id = JSON.parse(r.stdout).episode_id;
      const marker = join(a.path, "state", "publish-pending", id);
      const until = Date.now() + 60_000;
      while (fsModule.existsSync(marker) && Date.now() < until) await new Promise((res) => setTimeout(res, 100));
      assert.equal(fsModule.existsSync(marker), false, "the background sync published it and removed the marker");
      const db = new PostgresStore(url);
      try {
        assert.equal((await db.get(id))?.run_state, "terminal");
        await pullEpisode(db, id, b.path);
      } finally {
        await db.close();
      }
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("a run whose store does not answer exits at once, handing over; the background sync publishes all once it answers", async () => {
    const a = tempDir(), b = tempDir();
    const proxy = await holdingProxy(new URL(url));
    try {
      const [cmd, ...args] = cliCommand();
      const r = await runChild(cmd, [...args, "--root", a.path, "run", slowTask(a.path, 3, 0), "--json"], {
        cwd: a.path,
        env: { ...process.env, NOEMA_STORE: proxy.url, NOEMA_STORE_FLUSH_MS: "0" },
        timeoutMs: 120_000,
      });
      assert.equal(r.code, 0, r.stderr);
      // The run leaves its episode to the background sync: it does not publish it again itself after the command
      // (it would wait for the store, then say it is unreachable).
      assert.equal(r.stderr, "");
      const id = JSON.parse(r.stdout).episode_id;
      // The next command leaves the episode to the background sync while it runs (it would race it for the lease).
      const view = await runChild(cmd, [...args, "--root", a.path, "view", id], {
        cwd: a.path,
        env: { ...process.env, NOEMA_STORE: proxy.url },
        timeoutMs: 120_000,
      });
      assert.equal(view.code, 0, view.stderr);
      // Silent while the run's publishing process still waits for the store; once that gave up (connecting is bounded
      // at 5 s: a busy machine can start the view later than that), the view tries once itself and says so, bounded.
      assert.ok(
        view.stderr === "" || /did not answer within 5 s .*; noema sync publishes later\n$/.test(view.stderr),
        view.stderr,
      );
      proxy.release();
      // Published once the store answers: by the publishing process still waiting, else by noema sync, as said.
      if (!(await published(a.path, id, 20_000))) {
        const sync = await runChild(cmd, [...args, "--root", a.path, "sync"], {
          cwd: a.path,
          env: { ...process.env, NOEMA_STORE: proxy.url },
          timeoutMs: 120_000,
        });
        assert.equal(sync.code, 0, sync.stderr);
      }
      assert.ok(await published(a.path, id, 180_000), "published once the store answers");
      const db = new PostgresStore(url);
      try {
        assert.equal((await db.get(id))?.run_state, "terminal");
        await pullEpisode(db, id, b.path);
      } finally {
        await db.close();
      }
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
    } finally {
      proxy.release();
      await proxy.close();
      a.cleanup();
      b.cleanup();
    }
  });

  test("noema SIGKILLed while it publishes: resume finishes the run and publishes the rest; the copies are equal", async () => {
    const a = tempDir(), b = tempDir();
    try {
      const id = "ep_killed_while_publishing";
      const [cmd, ...args] = cliCommand();
      let pid = 0;
      const go = join(a.path, "go"); // held at its second step until the kill
      const child = runChild(cmd, [...args, "--root", a.path, "run", gatedTask(a.path, go), "--episode-id", id], {
        cwd: a.path,
        env: { ...process.env, NOEMA_STORE: url },
        timeoutMs: 60_000,
        onSpawn: (p) => (pid = p),
      });
      const probe = new PostgresStore(url);
      const until = Date.now() + 30_000;
      while ((await probe.lineCount(id, "events.jsonl")) < 8 && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 20));
      }
      // The run's publishing process, found by the episode its start names (its root: the other runtime's run of this
      // test may be going at the same time).
      const publishers = () => pidsWithEnv((e) => e.startsWith("NOEMA_STORE_LIVE_START=") && e.includes(a.path));
      assert.equal(publishers().length, 1, "the run publishes from a process of its own");
      process.kill(pid, "SIGKILL"); // noema only: its publisher is left mid-stream, and sees its stdin close
      const killed = await child;
      fsModule.writeFileSync(go, "");
      assert.equal(killed.code, null, "killed");
      const gone = Date.now() + 30_000;
      while (publishers().length > 0 && Date.now() < gone) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(publishers(), [], "the publishing process exits with its run");
      assert.ok(fsModule.existsSync(join(a.path, "state", "publish-pending", id)), "left marked pending");
      const resumed = cli(["--root", a.path, "resume", id, "--json"], { env: { NOEMA_STORE: url } });
      assert.equal(resumed.code, 0, resumed.stderr);
      const until2 = Date.now() + 30_000;
      while (fsModule.existsSync(join(a.path, "state", "publish-pending", id)) && Date.now() < until2) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(fsModule.existsSync(join(a.path, "state", "publish-pending", id)), false, "published, unmarked");
      assert.equal((await probe.get(id))?.run_state, "terminal");
      await pullEpisode(probe, id, b.path);
      await probe.close();
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
      const v = cli(["--root", b.path, "validate", id]);
      assert.equal(v.code, 0, v.stdout + v.stderr);
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  /**
   * A run on `root` publishing to the store, held at its second step until the file it returns as `go` exists,
   * once its publishing process has sent 8 lines; with that process's pid (found by the root its start names: the
   * other runtime's run of this file may be going at the same time).
   */
  async function heldPublishingRun(root: string, id: string, probe: PostgresStore) {
    const [cmd, ...args] = cliCommand();
    const go = join(root, "go");
    const child = runChild(cmd, [...args, "--root", root, "run", gatedTask(root, go), "--episode-id", id], {
      cwd: root,
      env: { ...process.env, NOEMA_STORE: url },
      timeoutMs: 60_000,
    });
    const until = Date.now() + 30_000;
    while ((await probe.lineCount(id, "events.jsonl")) < 8 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const publishers = pidsWithEnv((e) => e.startsWith("NOEMA_STORE_LIVE_START=") && e.includes(root));
    assert.equal(publishers.length, 1, "the run publishes from a process of its own");
    return { child, go, publisher: publishers[0] };
  }

  test("the run's publishing process SIGKILLed mid-run: the run finishes, a background sync publishes the rest; the copies are equal", async () => {
    const a = tempDir(), b = tempDir();
    const probe = new PostgresStore(url);
    try {
      const id = "ep_publisher_killed";
      const { child, go, publisher } = await heldPublishingRun(a.path, id, probe);
      process.kill(publisher, "SIGKILL"); // the publisher only: it holds the lease, mid-stream
      fsModule.writeFileSync(go, "");
      const r = await child;
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr, "", "nothing was lost: nothing to say");
      if (!await published(a.path, id, 180_000)) {
        // Said in full: what the marker names, whether that process lives, and what the store holds.
        const named = fsModule.readFileSync(join(a.path, "state", "publish-pending", id), "utf8").trim();
        const alive = named !== "" && !processGone(Number(named));
        const row = await probe.get(id);
        assert.fail(
          `still marked pending: the marker names ${named || "no process"} (${alive ? "alive" : "gone"}); the store ` +
            `says ${row?.run_state} with ${await probe.lineCount(
              id,
              "events.jsonl",
            )} event lines; the run said ${r.stderr}; the hand-over log:\n${handoffLogTail(a.path)}`,
        );
      }
      assert.equal((await probe.get(id))?.run_state, "terminal");
      await pullEpisode(probe, id, b.path);
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
    } finally {
      await probe.close();
      a.cleanup();
      b.cleanup();
    }
  });

  test("the run's publishing process stopped (SIGSTOP) mid-run: never heard from, it is not left the tail; a background sync is, and publishes it once the process goes on", async () => {
    const a = tempDir(), b = tempDir();
    const probe = new PostgresStore(url);
    let stopped: number | null = null;
    try {
      const id = "ep_publisher_stopped";
      const { child, go, publisher } = await heldPublishingRun(a.path, id, probe);
      stopped = publisher;
      // Alive to the system, silent to the run: as a process killed but not yet torn down looks at the run's end.
      process.kill(stopped, "SIGSTOP");
      fsModule.writeFileSync(go, "");
      const r = await child;
      assert.equal(r.code, 0, r.stderr);
      const marker = join(a.path, "state", "publish-pending", id);
      const named = Number(fsModule.readFileSync(marker, "utf8").trim());
      assert.ok(
        named > 0 && named !== stopped,
        `handed to a background sync, not left to the stopped process (${named})`,
      );
      process.kill(stopped, "SIGCONT");
      stopped = null;
      assert.ok(await published(a.path, id, 180_000), `published; the hand-over log:\n${handoffLogTail(a.path)}`);
      assert.equal((await probe.get(id))?.run_state, "terminal");
      await pullEpisode(probe, id, b.path);
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
    } finally {
      if (stopped !== null) process.kill(stopped, "SIGCONT");
      await probe.close();
      a.cleanup();
      b.cleanup();
    }
  });

  test("PostgreSQL killed and restarted mid-run: the run finishes locally, says so once, the next command publishes the rest", async () => {
    const a = tempDir(), b = tempDir();
    try {
      // Held at its second step until the run has said the database is down (so a step after records it).
      const go = join(a.path, "go");
      const task = gatedTask(a.path, go);
      const [cmd, ...args] = cliCommand();
      let killed = false, said = false;
      const child = runChild(cmd, [...args, "--root", a.path, "run", task, "--json"], {
        cwd: a.path,
        env: { ...process.env, NOEMA_STORE: url },
        timeoutMs: 60_000,
        onStderr: (chunk) => (said ||= /cannot be reached/.test(chunk)),
      });
      // Once the run has published its first lines, take the database down.
      const deadline = Date.now() + 30_000;
      const probe = new PostgresStore(url);
      while (!killed && Date.now() < deadline) {
        const rows = await probe.list({}).catch(() => []);
        if (rows.length > 0) {
          pg.kill();
          killed = true;
        } else await new Promise((r) => setTimeout(r, 50));
      }
      await probe.close().catch(() => {});
      while (killed && !said && Date.now() < deadline + 30_000) await new Promise((r) => setTimeout(r, 50));
      fsModule.writeFileSync(go, "");
      assert.ok(killed, "the run published live before it ended");
      const r = await child;
      assert.equal(r.code, 0, r.stderr);
      const id = JSON.parse(r.stdout).episode_id;
      assert.equal(r.stderr.match(/cannot be reached/g)?.length, 1, r.stderr); // said once
      assert.match(r.stderr, /noema sync/);
      assert.ok(fsModule.existsSync(join(a.path, "state", "publish-pending", id)), "marked pending");
      // The record says so too: a runtime event naming the store (its password never written).
      const events = readFileSync(join(a.path, "episodes", id, "events.jsonl"), "utf8").split("\n").filter(Boolean)
        .map((l) => JSON.parse(l));
      const notice = events.find((e) => e.event_type === "store.unavailable");
      assert.ok(notice, "a store.unavailable runtime event");
      assert.equal(notice.phase, "runtime");
      assert.match(notice.payload.error, /cannot be reached/);
      pg.restart();
      // The next noema command with the store publishes it.
      const list = cli(["--root", a.path, "list", "--json"], { env: { NOEMA_STORE: url } });
      assert.equal(list.code, 0, list.stderr);
      assert.equal(fsModule.existsSync(join(a.path, "state", "publish-pending", id)), false);
      const db = new PostgresStore(url);
      try {
        await pullEpisode(db, id, b.path);
        assert.equal((await db.get(id))?.run_state, "terminal");
      } finally {
        await db.close();
      }
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
    } finally {
      pg.restart();
      a.cleanup();
      b.cleanup();
    }
  });
});

describe("shared store: following a run from another machine", { skip }, () => {
  test("a copy B read while A's run was going is pulled again once the store has more; a finished copy stays", {
    timeout: 300_000,
  }, async () => {
    const pg = await startPostgres();
    const url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
    const a = tempDir(), b = tempDir();
    try {
      const id = "ep_read_while_running";
      const { go, run: runA } = gatedRunOnA(a.path, url, id);
      const envB = { NOEMA_STORE: url, NOEMA_HOST: "host-b" };
      const db = new PostgresStore(url);
      try {
        const until = Date.now() + 60_000;
        while ((await db.lineCount(id, "events.jsonl")) === 0 && Date.now() < until) {
          await new Promise((r) => setTimeout(r, 30));
        }
      } finally {
        await db.close();
      }
      const early = cli(["--root", b.path, "events", id, "--json"], { env: envB });
      assert.equal(early.code, 0, early.stderr);
      const marker = join(b.path, "state", "pulled", id);
      assert.notEqual(JSON.parse(readFileSync(marker, "utf8")).run_state, "terminal", "pulled while A ran");
      fsModule.writeFileSync(go, "");
      assert.equal((await runA).code, 0);
      assert.ok(await published(a.path, id, 150_000), "A published all of its run");
      const late = cli(["--root", b.path, "events", id, "--json"], { env: envB });
      assert.equal(late.code, 0, late.stderr);
      const full = readFileSync(join(a.path, "episodes", id, "events.jsonl"), "utf8");
      assert.ok(early.stdout.length < full.length, "the first read saw part of the run");
      assert.equal(late.stdout, full, "the second read pulled the rest");
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
      assert.equal(JSON.parse(readFileSync(marker, "utf8")).run_state, "terminal");
      // A finished copy is never pulled again.
      const again = cli(["--root", b.path, "pull", id], { env: envB });
      assert.equal(again.code, 1, again.stderr);
      assert.match(again.stderr, /already exists/);
      // Nor is a copy written to here since it was pulled (its events.jsonl is not the size pulled): it is B's now.
      fsModule.writeFileSync(marker, JSON.stringify({ run_state: "running", events_lines: 1, events_bytes: 5 }));
      const before = tree(join(b.path, "episodes", id));
      const pull = cli(["--root", b.path, "pull", id], { env: envB });
      assert.equal(pull.code, 1, pull.stderr);
      assert.equal(cli(["--root", b.path, "view", id], { env: envB }).code, 0);
      assert.deepEqual(tree(join(b.path, "episodes", id)), before);
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("B follows A's live run through the store, woken by NOTIFY, and sees every line A wrote", {
    timeout: 300_000,
  }, async () => {
    const pg = await startPostgres();
    const url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
    const a = tempDir(), b = tempDir();
    try {
      // A's second step waits for a file the test creates once B is following: B starts while A runs,
      // however loaded the machine is.
      const id = "ep_follow_from_b";
      const { go, run: runA } = gatedRunOnA(a.path, url, id, ["--json"]);
      const [cmd, ...args] = cliCommand();
      const db = new PostgresStore(url);
      const until = Date.now() + 60_000;
      while ((await db.get(id)) === null && Date.now() < until) await new Promise((r) => setTimeout(r, 30));
      const running = (await db.get(id))?.run_state;
      await db.close();
      assert.equal(running, "running", "A's run is in the catalog, running");
      let linesBeforeGo = 0;
      const followB = runChild(cmd, [...args, "--root", b.path, "events", id, "--follow", "--json"], {
        env: { ...process.env, NOEMA_STORE: url, NOEMA_HOST: "host-b" },
        timeoutMs: 120_000,
        onStdout: (chunk) => {
          if (fsModule.existsSync(go)) return;
          linesBeforeGo += chunk.split("\n").length - 1;
          if (linesBeforeGo > 0) fsModule.writeFileSync(go, "");
        },
      });
      const [ra, rb] = await Promise.all([runA, followB]);
      assert.equal(ra.code, 0, ra.stderr);
      if (rb.code !== 0) {
        // Said in full: how far B got, what the store's row says, and whether A still has some to publish.
        const probe = new PostgresStore(url);
        const row = await probe.get(id).finally(() => probe.close());
        const local = readFileSync(join(a.path, "episodes", id, "events.jsonl"), "utf8").split("\n").length - 1;
        const marker = join(a.path, "state", "publish-pending", id);
        const named = fsModule.existsSync(marker) ? fsModule.readFileSync(marker, "utf8").trim() || "no process" : null;
        assert.fail(
          `B's follower exited ${rb.code} after ${rb.stdout.split("\n").length - 1} lines (A wrote ${local}); the ` +
            `store's row: ${row?.run_state} ${row?.ended_at}; A's marker: ${named ?? "none"}; ${rb.stderr}; the ` +
            `hand-over log:\n${handoffLogTail(a.path)}`,
        );
      }
      assert.ok(linesBeforeGo > 0, "B printed lines while A was held at its second step");
      assert.equal(rb.stdout, readFileSync(join(a.path, "episodes", id, "events.jsonl"), "utf8"));
      assert.equal(fsModule.existsSync(join(b.path, "episodes", id)), false, "followed, not copied");
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("B follows a run of A before its first line is published: it waits, saying so once, then prints every line", {
    timeout: 300_000,
  }, async () => {
    const pg = await startPostgres();
    const url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
    const a = tempDir(), b = tempDir();
    try {
      const id = "ep_follow_before_publish";
      const [cmd, ...args] = cliCommand();
      const started: { a: ReturnType<typeof runChild> | null } = { a: null };
      const startA = () =>
        started.a ??= runChild(cmd, [...args, "--root", a.path, "run", "Say hello", "--episode-id", id, "--json"], {
          cwd: a.path,
          env: { ...process.env, NOEMA_STORE: url, NOEMA_HOST: "host-a" },
          timeoutMs: 120_000,
        });
      // A starts only once B says it waits: B asked the store before anything of the run was there.
      const followB = runChild(cmd, [...args, "--root", b.path, "events", id, "--follow", "--json"], {
        env: { ...process.env, NOEMA_STORE: url, NOEMA_HOST: "host-b" },
        timeoutMs: 120_000,
        onStderr: (chunk) => {
          if (chunk.includes("waiting up to")) startA();
        },
      });
      const rb = await followB;
      const ra = await (started.a ?? Promise.reject(new Error(`B never said it waits: ${rb.stderr}`)));
      assert.equal(ra.code, 0, ra.stderr);
      assert.equal(rb.code, 0, rb.stderr);
      assert.equal(rb.stderr.match(/waiting up to 10 s/g)?.length, 1, rb.stderr);
      assert.doesNotMatch(rb.stderr, /neither under the local root/);
      assert.equal(rb.stdout, readFileSync(join(a.path, "episodes", id, "events.jsonl"), "utf8"));
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });
});

describe("shared store: approvals across machines", { skip }, () => {
  let url: string;
  before(async () => {
    const pg = await startPostgres();
    url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
  });

  async function waitUntil<T>(f: () => T | null | undefined, what: string): Promise<T> {
    const end = Date.now() + 30_000;
    for (;;) {
      const v = f();
      if (v) return v;
      if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  test("A waits (--wait); B lists the waiting call and approves it; A resumes and finishes; B's pulled copy verifies", {
    timeout: 300_000,
  }, async () => {
    const a = tempDir(), b = tempDir();
    try {
      const id = "ep_approved_from_b";
      const [cmd, ...args] = cliCommand();
      const seen = { stderr: "", exited: false };
      const runA = runChild(
        cmd,
        [...args, "--root", a.path, "run", deployTask(a.path), "--episode-id", id, "--wait", "60s", "--json"],
        {
          cwd: a.path,
          env: { ...process.env, NOEMA_STORE: url, NOEMA_HOST: "host-a" },
          timeoutMs: 90_000,
          onStderr: (chunk) => void (seen.stderr += chunk),
        },
      );
      void runA.then(() => seen.exited = true);
      const envB = { NOEMA_STORE: url, NOEMA_HOST: "host-b" };
      // B asks the store once A says it waits (each look is a noema process: none spent while A is still starting).
      await waitUntil(() => seen.exited || seen.stderr.includes("waits for approval of"), "A to say it waits");
      const waiting = await waitUntil(() => {
        const r = cli(["--root", b.path, "approvals", "--json"], { env: envB });
        assert.equal(r.code, 0, r.stderr);
        return (JSON.parse(r.stdout) as { episode_id: string; host: string; pending: { reason: string } }[])
          .find((w) => w.episode_id === id);
      }, "the waiting call in the store");
      assert.equal(waiting.host, "host-a");
      assert.ok(waiting.pending.reason.length > 0);
      const approve = cli(["--root", b.path, "approve", id, "--by", "bea", "--note", "looks fine", "--json"], {
        env: envB,
      });
      assert.equal(approve.code, 0, approve.stderr);
      assert.equal(JSON.parse(approve.stdout).host, "host-b");
      const ra = await runA;
      assert.equal(ra.code, 0, ra.stderr);
      assert.equal(JSON.parse(ra.stdout).status, "ok");
      const approval = readdirSync(join(a.path, "episodes", id, "approvals"));
      const rec = JSON.parse(readFileSync(join(a.path, "episodes", id, "approvals", approval[0]), "utf8"));
      assert.deepEqual([rec.by, rec.claimed_by, rec.authenticated_as], ["noema@host-b", "bea", "database_role"]);
      assert.equal(rec.note, "looks fine");
      assert.ok(rec.consumed_at, "the resume used it");
      // B reads the finished run by id (pulled), byte-identical, and it validates: once A published all of it (what
      // A's run could not send before it exited went to a background sync, which waits up to 120 s for the lease).
      assert.ok(await published(a.path, id, 150_000), "A's run, or its background sync, published it all");
      const v = cli(["--root", b.path, "validate", id], { env: envB });
      assert.equal(v.code, 0, v.stdout + v.stderr);
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("without --wait: two machines race to decide, one wins (the other exits 8); the holder's resume applies it", async () => {
    const a = tempDir(), b = tempDir(), c = tempDir();
    try {
      const envA = { NOEMA_STORE: url, NOEMA_HOST: "host-a" };
      const paused = cli(["--root", a.path, "run", deployTask(a.path), "--json"], { env: envA, cwd: a.path });
      assert.equal(paused.code, 4, paused.stderr);
      const id = JSON.parse(paused.stdout).episode_id;
      const [cmd, ...args] = cliCommand();
      const decide = (root: string, verb: string, by: string, host: string) =>
        runChild(cmd, [...args, "--root", root, verb, id, "--by", by], {
          env: { ...process.env, NOEMA_STORE: url, NOEMA_HOST: host },
          timeoutMs: 30_000,
        });
      const [rb, rc] = await Promise.all([
        decide(b.path, "approve", "bea", "host-b"),
        decide(c.path, "reject", "cid", "host-c"),
      ]);
      assert.deepEqual([rb.code, rc.code].sort(), [0, 8], rb.stderr + rc.stderr);
      const loser = rb.code === 8 ? rb : rc;
      assert.match(loser.stderr, /already (approved|rejected) by noema \(claimed: (bea|cid)\) on host-[bc]/);
      const resumed = cli(["--root", a.path, "resume", id, "--json"], { env: envA });
      assert.equal(resumed.code, rb.code === 0 ? 0 : 3, resumed.stderr);
      const local = cli(["--root", a.path, "approve", id], { env: envA });
      assert.equal(local.code, 5, "sealed: nothing left to decide");
    } finally {
      a.cleanup();
      b.cleanup();
      c.cleanup();
    }
  });

  test("a wait that runs out denies the call, decided by timeout (--approval-timeout deny)", () => {
    const a = tempDir();
    try {
      // 5 s: the run must reach the store within its wait, or the wait decides nothing (exit 4, the run stays paused).
      const r = cli(["--root", a.path, "run", deployTask(a.path), "--wait", "5s", "--json"], {
        env: { NOEMA_STORE: url },
        cwd: a.path,
      });
      assert.equal(r.code, 3, r.stderr);
      const id = JSON.parse(r.stdout).episode_id;
      const dir = join(a.path, "episodes", id, "approvals");
      const rec = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8"));
      assert.equal(rec.decision, "rejected");
      assert.deepEqual([rec.by, rec.claimed_by], ["noema", "timeout"]);
      const abort = cli([
        "--root",
        a.path,
        "run",
        deployTask(a.path),
        "--wait",
        "5s",
        "--approval-timeout",
        "abort",
        "--json",
      ], {
        env: { NOEMA_STORE: url },
        cwd: a.path,
      });
      assert.equal(JSON.parse(abort.stdout).status, "aborted", abort.stderr);
      assert.equal(cli(["run", "deploy", "--wait"], { env: { NOEMA_STORE: undefined } }).code, 2);
    } finally {
      a.cleanup();
    }
  });
});

describe("shared store: roles", { skip }, () => {
  test("a read-only role lists and reads; any write gets a clear error, and a run with it goes on locally", async () => {
    const pg = await startPostgres();
    const url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
    const a = tempDir();
    try {
      const r = cli(["--root", a.path, "run", "Say hello", "--json"], { env: { NOEMA_STORE: url }, cwd: a.path });
      assert.equal(r.code, 0, r.stderr);
      // In the store once published: by the run, or by the background sync a slow last publish is handed to.
      assert.ok(await published(a.path, JSON.parse(r.stdout).episode_id, 120_000), "the run was published");
      const admin = new PostgresStore(url);
      const role = `reader_${process.pid}`;
      await admin.sql.unsafe(`CREATE ROLE ${role} LOGIN`);
      await admin.sql.unsafe(
        `GRANT SELECT ON noema_episodes, noema_lines, noema_files, noema_decisions, noema_leases, noema_schema_version TO ${role}`,
      );
      await admin.close();
      const ro = url.replace("postgres://noema@", `postgres://${role}@`);
      const list = cli(["--root", a.path, "list", "--json"], { env: { NOEMA_STORE: ro } });
      assert.equal(list.code, 0, list.stderr);
      assert.equal(JSON.parse(list.stdout).length, 1);
      const run = cli(["--root", a.path, "run", "Say hello again", "--json"], {
        env: { NOEMA_STORE: ro },
        cwd: a.path,
      });
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stderr, /refused a write: this role may only read/);
      assert.match(run.stderr, /the run goes on locally/);
      const sync = cli(["--root", a.path, "sync"], { env: { NOEMA_STORE: ro } });
      assert.equal(sync.code, 1);
      assert.match(sync.stderr, /may only read/);
    } finally {
      a.cleanup();
    }
  });
});

describe("shared store: the catalog's stored_at (schema version 4)", { skip }, () => {
  test("a store at version 3 migrates: its rows get their last write's time, and a new row is listed first", async () => {
    const url = (await startPostgres()).createDatabase();
    const db = new PostgresStore(url);
    try {
      // The schema as a noema of version 3 left it, with one row.
      await schemaAt(db, 3);
      await db.sql`INSERT INTO noema_episodes (episode_id, run_state, status, host, started_at, updated_at)
        VALUES ('ep_old', 'terminal', 'ok', 'fast', '2099-01-01T00:00:00Z', '2026-02-01T00:00:00Z')`;
      assert.deepEqual(await db.migrate(), { from: 3, to: LATEST_SCHEMA_VERSION });
      assert.equal((await db.get("ep_old"))?.stored_at, "2026-02-01T00:00:00.000Z");
      await db.upsertCatalog(row("ep_new", { host: "slow", started_at: "2000-01-01T00:00:00.000Z" }));
      assert.deepEqual((await db.list()).map((r) => r.episode_id), ["ep_new", "ep_old"]);
      const st = cli(["list", "--store", url]);
      assert.equal(st.code, 0, st.stderr);
      assert.match(st.stdout.split("\n")[0], /^STARTED_AT \(HOST CLOCK\)\s+EPISODE_ID\s+HOST\s+STATUS/);
      assert.match(st.stdout.split("\n")[1], /^2000-01-01T00:00:00\.000Z\s+ep_new\s+slow\s/);
    } finally {
      await db.close();
    }
  });
});

describe("shared store: a writer role", { skip }, () => {
  test("granted as docs/store.md says, it publishes; store init with it says to run it as the schema owner, not that it may only read", async () => {
    const pg = await startPostgres();
    const url = pg.createDatabase();
    const role = `writer_${process.pid}`;
    const admin = new PostgresStore(url);
    const a = tempDir();
    try {
      await admin.sql.unsafe(`CREATE ROLE ${role} LOGIN`);
      const w = url.replace("postgres://noema@", `postgres://${role}@`);
      const expectRefused = (what: string) => {
        const init = cli(["store", "init", "--store", w]);
        assert.equal(init.code, 1, `${what}: ${init.stderr}`);
        assert.match(init.stderr, /refused to create noema's schema: .*it lacks CREATE on the schema/, what);
        assert.match(init.stderr, /Run noema store init as the schema's owner/, what);
        assert.doesNotMatch(init.stderr, /may only read/, what);
      };
      expectRefused("before the schema exists");
      assert.equal(cli(["store", "init", "--store", url]).code, 0);
      await admin.sql.unsafe(
        `GRANT SELECT, INSERT, UPDATE ON noema_episodes, noema_lines, noema_files, noema_decisions, noema_leases TO ${role}`,
      );
      expectRefused("once the owner made it");
      const run = cli(["--root", a.path, "run", "Say hello", "--json"], { env: { NOEMA_STORE: w }, cwd: a.path });
      assert.equal(run.code, 0, run.stderr);
      const id = JSON.parse(run.stdout).episode_id as string;
      assert.ok(await published(a.path, id), "the writer published the run");
      assert.equal((await admin.get(id))?.episode_id, id);
    } finally {
      await admin.close();
      a.cleanup();
    }
  });
});

describe("shared store: the password in ~/.pgpass, as libpq reads it", { skip }, () => {
  test("a refused login says what to do; a file open to others is not used, and says so; at 0600 runs publish", async () => {
    const pg = await startPostgres();
    const url = pg.createPasswordRole("pgpass_runner", "pgpass-s3cret");
    const home = tempDir(), a = tempDir();
    const env = { HOME: home.path, PGPASSWORD: undefined, PGPASSFILE: undefined, NOEMA_STORE: undefined };
    try {
      const none = cli(["store", "init", "--store", url], { env });
      assert.equal(none.code, 1, none.stderr);
      assert.match(none.stderr, /refused the login: password authentication failed for user "pgpass_runner"/);
      assert.match(none.stderr, /~\/\.pgpass \(chmod 0600\), in PGPASSWORD, or in the URL/);

      const port = new URL(url).port;
      const file = home.file(
        ".pgpass",
        `# the team's store\nother:${port}:*:*:wrong\n127.0.0.1:${port}:*:pgpass_runner:pgpass-s3cret\n`,
      );
      fsModule.chmodSync(file, 0o644);
      const open = cli(["store", "init", "--store", url], { env });
      assert.equal(open.code, 1, open.stderr);
      assert.match(open.stderr, /\.pgpass was not used: group or others have access to it \(chmod 0600 /);

      fsModule.chmodSync(file, 0o600);
      const init = cli(["store", "init", "--store", url, "--json"], { env });
      assert.equal(init.code, 0, init.stderr);
      // A run publishes from its own process, which finds the file the same way.
      const run = cli(["--root", a.path, "run", "Say hello", "--json"], {
        env: { ...env, NOEMA_STORE: url },
        cwd: a.path,
      });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr, "");
      const id = JSON.parse(run.stdout).episode_id as string;
      assert.ok(await published(a.path, id), "published");
      const list = cli(["list", "--store", url, "--json"], { env });
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual(JSON.parse(list.stdout).map((r: { episode_id: string }) => r.episode_id), [id]);
      const written = [...tree(a.path).values()].some((bytes) => bytes.includes("pgpass-s3cret"));
      assert.equal(written, false, "the password reaches no file of the root");
    } finally {
      home.cleanup();
      a.cleanup();
    }
  });
});

describe("shared store: TLS parameters in the URL, as libpq reads them", { skip }, () => {
  /** Whether the store's own connection runs over TLS (pg_stat_ssl), or the error opening it. */
  async function overTls(url: string): Promise<boolean | Error> {
    try {
      const db = new PostgresStore(url);
      try {
        await db.status(); // as every command connects: its errors explained
        const [r] = await (db as unknown as { sql: (s: TemplateStringsArray) => Promise<{ ssl: boolean }[]> })
          .sql`SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`;
        return r.ssl;
      } finally {
        await db.close();
      }
    } catch (e) {
      return e as Error;
    }
  }

  test("verify-full checks the chain and the URL's host; verify-ca the chain; require neither; disable no TLS", async () => {
    const pg = await startPostgres();
    const url = pg.createDatabase();
    const q = (s: string) => `${url}?${s}`;
    assert.equal(await overTls(q(`sslmode=verify-full&sslrootcert=${pg.tls.ca}`)), true);
    assert.equal(await overTls(q(`sslmode=verify-ca&sslrootcert=${pg.tls.ca}`)), true);
    assert.equal(await overTls(q("sslmode=require")), true);
    assert.equal(await overTls(q("sslmode=disable")), false);
    assert.equal(await overTls(url), false, "no sslmode: as before, no TLS");
    // Another CA: refused as a TLS failure, saying which parameters were in force.
    const other = await overTls(q(`sslmode=verify-full&sslrootcert=${pg.tls.otherCa}`));
    assert.ok(other instanceof Error, String(other));
    assert.equal((other as { code?: string }).code, "store_tls");
    assert.match(other.message, /failed TLS: .*sslmode=verify-full, sslrootcert=.*other-ca\.crt/);
    // require with a root certificate verifies the chain (verify-ca), as libpq does.
    assert.ok(await overTls(q(`sslmode=require&sslrootcert=${pg.tls.otherCa}`)) instanceof Error);
  });

  test("the host is checked against the certificate's names (any of several hosts)", () => {
    const { ssl } = clientTls(
      `postgres://u@db.example:5432,10.0.0.7:5432/x?sslmode=verify-full&sslrootcert=${REPO}/README.md`,
    );
    const check = (ssl as { checkServerIdentity(n: string, c: unknown): Error | undefined }).checkServerIdentity;
    const cert = (san: string) => ({ subject: { CN: "x" }, subjectaltname: san });
    assert.equal(check("", cert("DNS:db.example")), undefined);
    assert.equal(check("", cert("IP Address:10.0.0.7")), undefined);
    assert.ok(check("", cert("DNS:other.example")) instanceof Error);
  });

  test("a client certificate logs in (cert auth); without it the login is refused; a bad parameter is a usage error", async () => {
    const pg = await startPostgres();
    const role = pg.createCertRole("cert_runner");
    const env = { NOEMA_STORE: undefined };
    const withCert = `${role.url}?sslmode=verify-ca&sslrootcert=${pg.tls.ca}&sslcert=${role.cert}&sslkey=${role.key}`;
    const init = cli(["store", "init", "--store", withCert, "--json"], { env });
    assert.equal(init.code, 0, init.stderr);
    const st = cli(["store", "status", "--store", withCert, "--json"], { env });
    assert.equal(st.code, 0, st.stderr);
    assert.equal(JSON.parse(st.stdout).schema_version, LATEST_SCHEMA_VERSION);
    assert.match(JSON.parse(st.stdout).tls, /^TLSv1\.[23] \S+$/, "status says which TLS the connection uses");
    const human = cli(["store", "status", "--store", withCert], { env });
    assert.match(human.stdout, /^tls {7}TLSv1\.[23] /m);
    const plain = cli(["store", "status", "--store", pg.createDatabase(), "--json"], { env });
    assert.equal(JSON.parse(plain.stdout).tls, null);
    const without = cli(["store", "status", "--store", `${role.url}?sslmode=verify-ca&sslrootcert=${pg.tls.ca}`], {
      env,
    });
    assert.equal(without.code, 1, without.stderr);
    assert.match(without.stderr, /refused the login/);
    const missing = cli([
      "store",
      "status",
      "--store",
      `${role.url}?sslmode=verify-full&sslrootcert=/nonexistent/ca.pem`,
    ], {
      env,
    });
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /--store: sslrootcert=\/nonexistent\/ca\.pem cannot be read/);
    const fifo = join(dirname(role.cert), "ca.fifo");
    spawnSync("mkfifo", [fifo]);
    const blocked = cli(["store", "status", "--store", `${role.url}?sslmode=verify-ca&sslrootcert=${fifo}`], { env });
    assert.equal(blocked.code, 2, "a FIFO is refused, not waited on");
    assert.match(blocked.stderr, /not a regular file \(a FIFO\)/);
    const crl = cli(["store", "status", "--store", `${role.url}?sslmode=require&sslcrl=/x.crl`], { env });
    assert.equal(crl.code, 2, crl.stderr);
    assert.match(crl.stderr, /sslcrl is not supported/);
  });
});

describe("shared store: a symlink planted in an episode is never published", () => {
  test("sync refuses the episode, naming the link (exit 1); nothing it leads to reaches the store", () => {
    const a = tempDir(), share = tempDir();
    try {
      const url = pathToFileURL(join(share.path, "team")).href;
      assert.equal(cli(["store", "init", "--store", url]).code, 0);
      const run = cli(["--root", a.path, "run", "Say hello", "--json"], { cwd: a.path });
      assert.equal(run.code, 0, run.stderr);
      const id = JSON.parse(run.stdout).episode_id as string;
      const dir = join(a.path, "episodes", id);
      // The link leads to a copy of the real log with a secret after it: had it been followed, the secret would
      // have gone out as one more line.
      const outside = a.file("elsewhere.jsonl", readFileSync(join(dir, "events.jsonl"), "utf8") + "TOP-SECRET-7f3a\n");
      fsModule.rmSync(join(dir, "events.jsonl"));
      fsModule.symlinkSync(outside, join(dir, "events.jsonl"));
      const sync = cli(["--root", a.path, "sync", "--store", url, "--json"]);
      assert.equal(sync.code, 1, sync.stdout + sync.stderr);
      const row = JSON.parse(sync.stdout.trim().split("\n").at(-1)!);
      assert.equal(row.episode_id, id);
      assert.match(row.error, /events\.jsonl: is a symbolic link inside the episode; refusing to publish this episode/);
      const stored = (d: string): string[] =>
        readdirSync(d, { withFileTypes: true }).flatMap((e) =>
          e.isDirectory() ? stored(join(d, e.name)) : [readFileSync(join(d, e.name), "utf8")]
        );
      assert.ok(!stored(share.path).some((text) => text.includes("TOP-SECRET-7f3a")), "the secret stayed out");
      assert.ok(!existsSync(join(share.path, "team", "episodes", id)), "nothing of the episode was sent");
    } finally {
      a.cleanup();
      share.cleanup();
    }
  });
});

describe("shared store: pull writes nothing through a symlink", { skip }, () => {
  test("an episodes/ directory that is a symlink is refused, and nothing is written through it", async () => {
    const pg = await startPostgres();
    const db = new PostgresStore(pg.createDatabase());
    const b = tempDir(), elsewhere = tempDir();
    try {
      await db.migrate();
      await db.appendLines("ep_pulled", "events.jsonl", 1, [bytes("{}")]);
      fsModule.symlinkSync(elsewhere.path, join(b.path, "episodes"));
      await assert.rejects(pullEpisode(db, "ep_pulled", b.path), /symbolic link/);
      assert.deepEqual(readdirSync(elsewhere.path), []);
    } finally {
      await db.close();
      b.cleanup();
      elsewhere.cleanup();
    }
  });
});

describe("shared store: the cross-machine walk-through with the llm agent", { skip }, () => {
  test("A's llm run publishes live; B follows it, approves its paused call; A resumes and finishes; B's pulled copy validates and verifies", async () => {
    const pg = await startPostgres();
    const url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
    const { startOpenAiServer } = await import("./helpers/openai_server.ts");
    const server = await startOpenAiServer([
      { tool_calls: [{ id: "w1", name: "write_file", arguments: '{"path":"notes.txt","content":"hi\\n"}' }] },
      { text: "wrote notes.txt" },
    ]);
    const a = tempDir(), b = tempDir(), ws = tempDir();
    try {
      const gate = a.file(
        "gate.ts",
        `export default { name: "Gate", version: "1.0", advise(s) {
          if (s.action.tool === "write_file") return { kind: "veto", advice: "writes need a human", requires_approval: true };
        } };\n`,
      );
      const id = "ep_llm_walkthrough";
      const key = { NOEMA_SIGNING_KEY: "w".repeat(32) };
      const [cmd, ...args] = cliCommand();
      const runA = runChild(cmd, [
        ...args,
        ...["--root", a.path, "run", "write the notes", "--model", "openai-compatible:m", "--base-url", server.url],
        ...["--workspace", ws.path, "--policy", gate, "--episode-id", id, "--wait", "60s", "--json"],
      ], { cwd: a.path, env: { ...process.env, ...key, NOEMA_STORE: url, NOEMA_HOST: "host-a" }, timeoutMs: 90_000 });
      const envB = { ...process.env, NOEMA_STORE: url, NOEMA_HOST: "host-b" };
      const db = new PostgresStore(url);
      const until = Date.now() + 60_000;
      while ((await db.get(id))?.run_state !== "waiting_for_approval" && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const row = await db.get(id);
      await db.close();
      assert.equal(row?.run_state, "waiting_for_approval");
      assert.equal(row?.adapter, "llm");
      assert.match(row?.pending?.reason ?? "", /writes need a human/);
      const follow = runChild(cmd, [...args, "--root", b.path, "events", id, "--follow", "--json"], {
        env: envB,
        timeoutMs: 60_000,
      });
      const approve = await runChild(cmd, [...args, "--root", b.path, "approve", id, "--by", "bea"], {
        env: envB,
        timeoutMs: 30_000,
      });
      assert.equal(approve.code, 0, approve.stderr);
      const ra = await runA;
      assert.equal(ra.code, 0, ra.stderr);
      assert.equal(JSON.parse(ra.stdout).answer, "wrote notes.txt");
      assert.equal(readFileSync(join(ws.path, "notes.txt"), "utf8"), "hi\n");
      const fb = await follow;
      assert.equal(fb.code, 0, fb.stderr);
      assert.ok(
        fb.stdout.length > 0 && fb.stdout.split("\n").every((l) => l === "" || JSON.parse(l).episode_id === id),
      );
      // B reads the finished run: pulled, byte-identical, valid, and its signature verifies.
      const until2 = Date.now() + 30_000;
      let copy;
      do {
        copy = await runChild(cmd, [...args, "--root", b.path, "verify", id, "--strict"], {
          env: { ...envB, ...key },
          timeoutMs: 30_000,
        });
        if (copy.code === 0) break;
        fsModule.rmSync(join(b.path, "episodes", id), { recursive: true, force: true }); // pulled before the end
        await new Promise((r) => setTimeout(r, 200));
      } while (Date.now() < until2);
      assert.equal(copy.code, 0, copy.stdout + copy.stderr);
      const valid = await runChild(cmd, [...args, "--root", b.path, "validate", id], { env: envB, timeoutMs: 30_000 });
      assert.equal(valid.code, 0, valid.stdout + valid.stderr);
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
    } finally {
      await server.close();
      a.cleanup();
      b.cleanup();
      ws.cleanup();
    }
  });
});

describe("shared store: a hook call never opens the store around its answer", () => {
  test("a call answered in its own process only marks its episode pending, even with the store unreachable", async () => {
    const a = tempDir();
    try {
      // A port nothing listens on (see REFUSED_PORT): any attempt to publish would fail and say so on stderr.
      const port = REFUSED_PORT;
      const root = join(a.path, ".noema");
      const env = {
        ...process.env,
        NOEMA_STORE: `postgres://noema:pw@127.0.0.1:${port}/noema`,
        NOEMA_HOOK_SERVER: "0",
      };
      const payload = { session_id: "sess-quiet", cwd: a.path, hook_event_name: "UserPromptSubmit", prompt: "hi" };
      for (let i = 0; i < 2; i++) { // the second call finds the first one's episode pending
        const r = await hookCall(root, a.path, payload, env);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stderr, "", "no word of the store: it was not opened");
      }
      const [id] = readdirSync(join(root, "episodes"));
      assert.ok(existsSync(join(root, "state", "publish-pending", id)), "left pending for the server or noema sync");
    } finally {
      a.cleanup();
    }
  });
});

describe("shared store: the resident hook server says once that the store failed", () => {
  test("in its log, and in the episode as a store.unavailable runtime event at the next call", async () => {
    const a = tempDir();
    try {
      const port = REFUSED_PORT; // nothing listens there, nor can
      const root = join(a.path, ".noema"), servers = join(a.path, "servers"), log = join(a.path, "server.log");
      fsModule.mkdirSync(servers, { mode: 0o700 });
      const env = {
        ...process.env,
        NOEMA_STORE: `postgres://noema:s3cret-pw@127.0.0.1:${port}/noema`,
        NOEMA_HOOK_SERVER_DIR: servers,
        NOEMA_HOOK_SERVER_LOG: log,
      };
      const call = async (payload: Record<string, unknown>) => {
        const r = await hookCall(root, a.path, { session_id: "sess-down", cwd: a.path, ...payload }, env);
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stderr, "", "the agent hears nothing of the store");
      };
      const bash = (kind: string, id: string, extra: Record<string, unknown> = {}) =>
        call({ hook_event_name: kind, tool_name: "Bash", tool_input: { command: "ls" }, tool_use_id: id, ...extra });
      try {
        await call({ hook_event_name: "UserPromptSubmit", prompt: "list the files" });
        await untilFileHolds(log, "listening on");
        await bash("PreToolUse", "t1");
        await untilFileHolds(log, "store unreachable");
        await bash("PostToolUse", "t1", { tool_response: { stdout: "a.txt", stderr: "" } });
        await bash("PreToolUse", "t2");
        const [id] = readdirSync(join(root, "episodes"));
        const text = readFileSync(join(root, "episodes", id, "events.jsonl"), "utf8");
        const notices = text.trim().split("\n").map((l) => JSON.parse(l)).filter((e) =>
          e.event_type === "store.unavailable"
        );
        assert.equal(notices.length, 1, `said once; server log:\n${readIfThere(log)}`);
        assert.equal(notices[0].phase, "runtime");
        assert.match(notices[0].payload.store, /^postgres:\/\/noema:\[REDACTED\]@127\.0\.0\.1:/);
        assert.equal(text.includes("s3cret-pw"), false, "the password never reaches the record");
        assert.equal(readIfThere(log).includes("s3cret-pw"), false, "nor the server's log");
        assert.equal(readIfThere(log).match(/store unreachable/g)?.length, 1, "logged once");
        assert.ok(existsSync(join(root, "state", "publish-pending", id)), "left pending for noema sync");
      } finally {
        await stopHookServers(servers); // and waits: it writes its episode as it stops
      }
    } finally {
      a.cleanup();
    }
  });
});

describe("shared store: an interactive session's hooks publish (install-hooks path)", { skip }, () => {
  test("hook calls with NOEMA_STORE: the session's episode reaches the store, byte-identical, with nothing pending", async () => {
    const pg = await startPostgres();
    const url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
    const a = tempDir(), b = tempDir();
    const servers = join(a.path, "servers");
    fsModule.mkdirSync(servers, { mode: 0o700 });
    const root = join(a.path, ".noema");
    const env = {
      ...process.env,
      NOEMA_STORE: url,
      NOEMA_HOOK_SERVER_DIR: servers,
      NOEMA_HOOK_SERVER_EMPTY_IDLE_MS: "500",
      NOEMA_HOOK_SERVER_LOG: join(a.path, "server.log"),
    };
    const session = "sess-published";
    const tool = (kind: string, id: string, command: string, extra: Record<string, unknown> = {}) => ({
      session_id: session,
      cwd: a.path,
      hook_event_name: kind,
      tool_name: "Bash",
      tool_input: { command },
      tool_use_id: id,
      ...extra,
    });
    try {
      for (
        const payload of [
          { session_id: session, cwd: a.path, hook_event_name: "UserPromptSubmit", prompt: "list the files" },
          tool("PreToolUse", "t1", "ls"),
          tool("PostToolUse", "t1", "ls", { tool_response: { stdout: "a.txt", stderr: "" } }),
          tool("PreToolUse", "t2", "pwd"),
          tool("PostToolUse", "t2", "pwd", { tool_response: { stdout: "/w", stderr: "" } }),
          { session_id: session, cwd: a.path, hook_event_name: "Stop", last_assistant_message: "listed" },
        ]
      ) {
        const r = await hookCall(root, a.path, payload, env);
        assert.equal(r.code, 0, r.stderr);
        // The first call started the resident server: the next ones go to it once it listens.
        await untilFileHolds(env.NOEMA_HOOK_SERVER_LOG, "listening on");
      }
      const [id] = readdirSync(join(root, "episodes"));
      const db = new PostgresStore(url);
      try {
        const until = Date.now() + 60_000;
        while ((await db.get(id))?.run_state !== "terminal" && Date.now() < until) {
          await new Promise((r) => setTimeout(r, 100));
        }
        const log = readIfThere(env.NOEMA_HOOK_SERVER_LOG);
        assert.equal((await db.get(id))?.run_state, "terminal", `published by the hook server; its log:\n${log}`);
        await pullEpisode(db, id, b.path);
      } finally {
        await db.close();
      }
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(root, "episodes", id)));
      const until = Date.now() + 30_000;
      while (fsModule.existsSync(join(root, "state", "publish-pending", id)) && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(fsModule.existsSync(join(root, "state", "publish-pending", id)), false);
    } finally {
      fsModule.rmSync(servers, { recursive: true, force: true });
      a.cleanup();
      b.cleanup();
    }
  });
});

describe("shared store: the CLI over a files store (file:///…)", () => {
  test("store init; a run with NOEMA_STORE=file://… publishes; list --store shows it; pull gives a byte-identical copy that validates and verifies", async () => {
    const a = tempDir(), b = tempDir(), share = tempDir();
    try {
      const url = pathToFileURL(join(share.path, "team noema")).href;
      const before = cli(["store", "status", "--store", url]);
      assert.equal(before.code, 1, "a directory that is not there cannot be reached");
      assert.match(before.stderr, /cannot be reached/);
      const init = cli(["store", "init", "--store", url, "--json"]);
      assert.equal(init.code, 0, init.stderr);
      assert.deepEqual(JSON.parse(init.stdout), { location: url, from: 0, to: 1 });
      const st = cli(["--root", a.path, "store", "status", "--store", url, "--json"]);
      assert.equal(st.code, 0, st.stderr);
      assert.deepEqual(JSON.parse(st.stdout), {
        kind: "files",
        location: url,
        schema_version: 1,
        latest_version: 1,
        episodes: 0,
        local: { root: a.path, pending: [], last_handoff: null },
      });

      const key = { NOEMA_SIGNING_KEY: "f".repeat(32) };
      const run = cli(["--root", a.path, "run", "Say hello", "--tag", "team=infra", "--json"], {
        env: { ...key, NOEMA_STORE: url, NOEMA_HOST: "host-a" },
        cwd: a.path,
      });
      assert.equal(run.code, 0, run.stderr);
      assert.equal(run.stderr, "");
      const id = JSON.parse(run.stdout).episode_id as string;
      assert.ok(await published(a.path, id), "published when it ended (or by the sync it handed over to)");

      const list = cli(
        ["--root", b.path, "list", "--store", url, "--json", "--host", "host-a", "--tag", "team=infra"],
        {
          env: { NOEMA_STORE: undefined },
        },
      );
      assert.equal(list.code, 0, list.stderr);
      const rows = JSON.parse(list.stdout);
      assert.deepEqual(rows.map((r: { episode_id: string; host: string }) => [r.episode_id, r.host]), [[id, "host-a"]]);
      assert.equal(rows[0].episode_dir, null);

      b.file("noema.jsonc", `{ "store": "${url}" }`); // the project's store setting takes a file:/// URL too
      const fromJsonc = cli(["list", "--json", "--host", "host-a"], { cwd: b.path, env: { NOEMA_STORE: undefined } });
      assert.equal(fromJsonc.code, 0, fromJsonc.stderr);
      assert.equal(JSON.parse(fromJsonc.stdout).length, 1);
      const remote = cli(["list", "--store", "file://nas/share"], { env: { NOEMA_STORE: undefined } });
      assert.equal(remote.code, 2);
      assert.match(remote.stderr, /file:\/\/\/absolute\/path/);

      const pull = cli(["--root", b.path, "pull", id, "--store", url], { env: { NOEMA_STORE: undefined } });
      assert.equal(pull.code, 0, pull.stderr);
      assert.deepEqual(tree(join(b.path, "episodes", id)), tree(join(a.path, "episodes", id)));
      const v = cli(["--root", b.path, "validate", id], { env: key });
      assert.equal(v.code, 0, v.stdout + v.stderr);
      const ver = cli(["--root", b.path, "verify", id, "--strict"], { env: key });
      assert.equal(ver.code, 0, ver.stdout + ver.stderr);
    } finally {
      a.cleanup();
      b.cleanup();
      share.cleanup();
    }
  });

  test(
    "over a files store: B follows A's live run, then approves its paused call; A (--wait) resumes; B's pulled copy is identical",
    { timeout: 300_000 },
    async () => {
      const a = tempDir(), b = tempDir(), share = tempDir();
      try {
        const url = pathToFileURL(join(share.path, "noema")).href;
        assert.equal(cli(["store", "init", "--store", url]).code, 0);
        const [cmd, ...args] = cliCommand();
        const envA = { ...process.env, NOEMA_STORE: url, NOEMA_HOST: "host-a" };
        const envB = { ...process.env, NOEMA_STORE: url, NOEMA_HOST: "host-b" };
        // Following a live run, held at its second step until B has printed its first lines.
        const go = join(a.path, "go");
        const runA = runChild(
          cmd,
          [...args, "--root", a.path, "run", gatedTask(a.path, go), "--episode-id", "ep_f"],
          {
            cwd: a.path,
            env: envA,
            timeoutMs: 60_000,
          },
        );
        const until = Date.now() + 30_000;
        while (!existsSync(join(share.path, "noema", "episodes", "ep_f", "catalog.json")) && Date.now() < until) {
          await new Promise((r) => setTimeout(r, 30));
        }
        const catalog = join(share.path, "noema", "episodes", "ep_f", "catalog.json");
        assert.equal(JSON.parse(readFileSync(catalog, "utf8")).run_state, "running", "B follows while A runs");
        let linesBeforeGo = 0;
        const follow = runChild(cmd, [...args, "--root", b.path, "events", "ep_f", "--follow", "--json"], {
          env: envB,
          timeoutMs: 120_000,
          onStdout: (chunk) => {
            if (existsSync(go)) return;
            linesBeforeGo += chunk.split("\n").length - 1;
            if (linesBeforeGo > 0) fsModule.writeFileSync(go, "");
          },
        });
        const [ra, fb] = await Promise.all([runA, follow]);
        assert.ok(linesBeforeGo > 0, "B printed lines while A was held at its second step");
        assert.equal(ra.code, 0, ra.stderr);
        if (fb.code !== 0) {
          // Said in full: how far the follower got, what the store's catalog says, and whether A has some to publish.
          const local = readFileSync(join(a.path, "episodes", "ep_f", "events.jsonl"), "utf8").split("\n").length - 1;
          const printed = fb.stdout.split("\n").length - 1;
          const pending = existsSync(join(a.path, "state", "publish-pending", "ep_f"));
          assert.fail(
            `the follower exited ${fb.code} after ${printed} lines (A wrote ${local}); the store's catalog: ` +
              `${readFileSync(catalog, "utf8")}; A ${pending ? "still has" : "has no"} publish pending; ${fb.stderr}`,
          );
        }
        assert.equal(fb.stdout, readFileSync(join(a.path, "episodes", "ep_f", "events.jsonl"), "utf8"));
        // Approving from B a call A waits on.
        const task = deployTask(a.path);
        let stderrA = "";
        const waitA = runChild(cmd, [...args, "--root", a.path, "run", task, "--episode-id", "ep_w", "--wait", "60s"], {
          cwd: a.path,
          env: envA,
          timeoutMs: 90_000,
          onStderr: (chunk) => void (stderrA += chunk),
        });
        let aExited = false;
        void waitA.then(() => aExited = true);
        let waiting: { episode_id: string; host: string }[] = [];
        // B asks the store once A says it waits (each look is a noema process: none spent while A is still starting).
        const until2 = Date.now() + 30_000;
        while (!stderrA.includes("waits for approval of") && !aExited && Date.now() < until2) {
          await new Promise((res) => setTimeout(res, 50));
        }
        while (!waiting.some((w) => w.episode_id === "ep_w") && Date.now() < until2) {
          const r = cli(["--root", b.path, "approvals", "--json"], { env: { NOEMA_STORE: url } });
          assert.equal(r.code, 0, r.stderr);
          waiting = JSON.parse(r.stdout);
          await new Promise((res) => setTimeout(res, 100));
        }
        assert.deepEqual(waiting.map((w) => [w.episode_id, w.host]), [["ep_w", "host-a"]]);
        const approve = cli(["--root", b.path, "approve", "ep_w", "--by", "bea"], { env: { NOEMA_STORE: url } });
        assert.equal(approve.code, 0, approve.stderr);
        const wa = await waitA;
        assert.equal(wa.code, 0, wa.stderr);
        assert.ok(await published(a.path, "ep_w", 150_000), "A's run, or its background sync, published it all");
        const v = cli(["--root", b.path, "validate", "ep_w"], { env: { NOEMA_STORE: url } });
        assert.equal(v.code, 0, v.stdout + v.stderr);
        assert.deepEqual(tree(join(b.path, "episodes", "ep_w")), tree(join(a.path, "episodes", "ep_w")));
      } finally {
        a.cleanup();
        b.cleanup();
        share.cleanup();
      }
    },
  );
});

describe("shared store: the password file's lines, as libpq reads them", () => {
  const target = { host: "db.internal", port: "5432", database: "noema", user: "runner" };
  const lookup = (text: string, mode = 0o600, t = target) => {
    const dir = tempDir();
    try {
      const path = dir.file("pgpass", text);
      fsModule.chmodSync(path, mode);
      return pgpassLookup(t, { PGPASSFILE: path });
    } finally {
      dir.cleanup();
    }
  };

  test("the first matching line wins; * matches anything; \\: and \\\\ are unescaped; comments and short lines are skipped", () => {
    const text = [
      "# db.internal:5432:noema:runner:commented",
      "db.internal:5432:noema",
      "db.internal:5433:*:runner:other-port",
      "db\\:internal:*:*:*:escaped-host",
      "db.internal:*:noema:runner:pa\\:ss\\\\w:rd",
      "*:*:*:*:fallback",
    ].join("\r\n");
    assert.deepEqual(lookup(text), { password: "pa:ss\\w:rd", ignored: null });
    assert.equal(lookup(text, 0o600, { ...target, host: "db:internal" }).password, "escaped-host");
    assert.equal(lookup(text, 0o600, { ...target, user: "someone" }).password, "fallback");
    assert.equal(lookup("db.internal:5432:noema:runner:x\n", 0o600, { ...target, database: "other" }).password, null);
  });

  test("localhost matches a Unix socket too; a file others can read is not used, and says why", () => {
    assert.equal(lookup("localhost:5432:*:*:local\n", 0o600, { ...target, host: "/run/postgresql" }).password, "local");
    assert.equal(lookup("localhost:5432:*:*:local\n", 0o600, target).password, null);
    const open = lookup("*:*:*:*:pw\n", 0o640);
    assert.equal(open.password, null);
    assert.match(open.ignored!, /was not used: group or others have access to it \(chmod 0600 /);
    assert.deepEqual(pgpassLookup(target, { PGPASSFILE: "/nonexistent/pgpass" }), { password: null, ignored: null });
  });

  test("the host, port, database and user matched: the URL's, else the client's defaults", () => {
    assert.deepEqual(connectionTarget("postgres://runner@db.internal/noema", {}), target);
    assert.deepEqual(
      connectionTarget("postgres:///noema", { PGHOST: "/run/postgresql", PGPORT: "5433", PGUSER: "ci" }),
      { host: "/run/postgresql", port: "5433", database: "noema", user: "ci" },
    );
    assert.deepEqual(
      connectionTarget("postgres://us%40er:pw@h1:6000,h2:7000?sslmode=require", { PGDATABASE: "fleet" }),
      { host: "h1", port: "6000", database: "fleet", user: "us@er" },
    );
    assert.equal(connectionTarget("postgres://u@[::1]:5433/d%2Fb", {}).host, "::1");
    assert.equal(urlHasPassword("postgres://u:pw@h/db"), true);
    assert.equal(urlHasPassword("postgres://u@h/db"), false);
    assert.equal(urlHasPassword("postgres://u:@h/db"), false);
    assert.equal(urlHasPassword("postgres://h:5432/db"), false);
  });
});
