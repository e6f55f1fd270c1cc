/**
 * The walk-through of docs/store.md, done as a new team would, with two hosts: two roots AND two HOMEs, each host's
 * `~/.pgpass` (mode 0600) holding the password of a SCRAM role of the test server, its own `NOEMA_HOST`, and no
 * password in any URL. Host A creates the schema as its owner, the roles of the manual's "Roles" section are created
 * from its SQL, and both hosts then work as `noema_writer`: A publishes live, B lists, follows, reads and approves;
 * then the faults: PostgreSQL restarted while A runs, A's run SIGKILLed and resumed, a symlink planted in an episode.
 * Every fault step ends by pulling the shared copy into a fresh root, comparing it byte for byte with A's, and
 * verifying it (issue 35).
 */
import assert from "node:assert/strict";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import { LATEST_SCHEMA_VERSION } from "../src/shared_store/postgres/migrations.ts";
import { runChild } from "./helpers/child.ts";
import { cli, cliCommand, type CliResult, REPO } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { pidsWithEnv } from "./helpers/processes.ts";
import { tempDir } from "./helpers/tmp.ts";
import { deployTask, tree, until } from "./helpers/episode_trees.ts";

const skip = pgUnavailable() ?? false;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * The hang bound of a wait for what a run's publishing process sends: it runs in the idle class, last on a busy
 * machine (a fresh clone's suite beside two busy loops and more once took over the default 60 s).
 */
const PUBLISHER = 240_000;

/** A shell wait (≤ 100 s) until `go` exists. */
const waitFor = (go: string) => `i=0; while [ ! -e '${go}' ] && [ $i -lt 500 ]; do sleep 0.2; i=$((i+1)); done`;

/** A shell task whose second step waits until `go` exists, and its fourth until `go2` does (when given). */
function gatedTask(dir: string, go: string, go2?: string): string {
  mkdirSync(dir, { recursive: true });
  const steps = [
    "echo step 1",
    `${waitFor(go)}; echo step 2`,
    "echo step 3",
    go2 ? `${waitFor(go2)}; echo step 4` : "echo step 4",
    "echo step 5",
  ];
  const path = join(dir, "gated.json");
  writeFileSync(
    path,
    JSON.stringify({
      task: "a run held at its second step",
      using: "shell",
      steps: steps.map((command, i) => ({ kind: "act", description: `step ${i + 1}`, inputs: { command } })),
    }),
  );
  return path;
}

/** The manual's "Roles" SQL, as written in docs/store.md. */
function rolesSql(): string {
  const doc = readFileSync(join(REPO, "docs", "store.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Roles"));
  const m = section.match(/```sql\n([\s\S]*?)```/);
  assert.ok(m, "docs/store.md has the roles' SQL");
  return m[1];
}

/** One host: its root, its HOME (with its ~/.pgpass), its name. */
interface Host {
  name: string;
  root: string;
  home: string;
}

describe("docs/store.md, walked through by two hosts (two roots, two HOMEs, ~/.pgpass)", { skip }, () => {
  let pg: PgServer;
  /** The schema owner's URL and the writer's: no password in either. */
  let ownerUrl: string, url: string;
  /** A superuser connection to the same database, for the test's own waits. */
  let admin: string;
  let a: Host, b: Host;
  const dirs: { cleanup(): void }[] = [];
  const key = "walkthrough-signing-key-".padEnd(32, "k");
  const secrets = ["owner-pw-4d1c", "writer-pw-93be", "reader-pw-7a20"];

  const newDir = () => {
    const d = tempDir("noema-walk-");
    dirs.push(d);
    return d.path;
  };

  /** The environment of a noema on `h` (for {@link cli}: entries set to undefined are removed). */
  const envOf = (h: Host, extra: Record<string, string | undefined> = {}) => ({
    HOME: h.home,
    // Deno keeps its caches under HOME: the hosts share the machine's.
    DENO_DIR: process.env.DENO_DIR ?? join(homedir(), ".cache", "deno"),
    NOEMA_HOST: h.name,
    NOEMA_STORE: url,
    NOEMA_SIGNING_KEY: key,
    PGPASSWORD: undefined,
    PGPASSFILE: undefined,
    PGUSER: undefined,
    PGHOST: undefined,
    PGPORT: undefined,
    PGDATABASE: undefined,
    ...extra,
  });
  /** The whole environment of a noema child on `h` (for {@link runChild}). */
  const childEnv = (h: Host, extra: Record<string, string | undefined> = {}) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...process.env, NO_COLOR: "1", NOEMA_ROOT: undefined, ...envOf(h, extra) })) {
      if (v !== undefined) env[k] = v;
    }
    return env;
  };
  const on = (h: Host, args: string[], extra: Record<string, string | undefined> = {}): CliResult =>
    cli(["--root", h.root, ...args], { env: envOf(h, extra), cwd: h.root, timeoutMs: 120_000 });
  const [cmd, ...cmdArgs] = cliCommand();
  const startOn = (h: Host, args: string[], options: Parameters<typeof runChild>[2] = {}) =>
    runChild(cmd, [...cmdArgs, "--root", h.root, ...args], {
      cwd: h.root,
      env: childEnv(h),
      timeoutMs: 150_000,
      ...options,
    });

  /** Whether A's episode `id` is no longer marked pending (all of it published). */
  // What the publishing process (in the idle class: on a busy machine it runs last) has sent: a bound for hangs only.
  const publishedFrom = (h: Host, id: string) =>
    until(() => !existsSync(join(h.root, "state", "publish-pending", id)), PUBLISHER);

  /**
   * The end of every step: the shared copy pulled into a fresh root (a third machine) equals `h`'s local one byte
   * for byte, and verifies (its signature too).
   */
  const sharedEqualsLocal = (h: Host, id: string) => {
    const c: Host = { name: "host-c", root: newDir(), home: b.home };
    const pulled = on(c, ["pull", id, "--json"]);
    assert.equal(pulled.code, 0, pulled.stderr);
    assert.deepEqual(tree(join(c.root, "episodes", id)), tree(join(h.root, "episodes", id)), `${id}: shared = local`);
    const v = on(c, ["verify", id, "--strict"]);
    assert.equal(v.code, 0, v.stdout + v.stderr);
  };

  /** The catalog row of `id` (the test's own superuser connection), or null. */
  const row = async (id: string) => {
    const db = new PostgresStore(admin);
    try {
      return await db.get(id);
    } finally {
      await db.close();
    }
  };

  before(async () => {
    pg = await startPostgres();
    ownerUrl = pg.createPasswordRole("walk_owner", secrets[0]);
    const u = new URL(ownerUrl);
    const db = u.pathname.slice(1);
    url = ownerUrl.replace("walk_owner@", "noema_writer@");
    admin = `postgres://noema@127.0.0.1:${u.port}/${db}`;
    a = { name: "host-a", root: newDir(), home: newDir() };
    b = { name: "host-b", root: newDir(), home: newDir() };
    // Each HOME its own password file, 0600: A holds the owner's and the writer's passwords, B the writer's only.
    const line = (user: string, pw: string) => `127.0.0.1:${u.port}:${db}:${user}:${pw}\n`;
    writeFileSync(join(a.home, ".pgpass"), line("walk_owner", secrets[0]) + line("noema_writer", secrets[1]));
    writeFileSync(join(b.home, ".pgpass"), "# the team's store\n" + line("noema_writer", secrets[1]));
    chmodSync(join(a.home, ".pgpass"), 0o600);
    chmodSync(join(b.home, ".pgpass"), 0o600);
  });

  after(() => {
    pg?.restart();
    for (const d of dirs) d.cleanup();
  });

  test("A creates the schema as its owner; the manual's roles; store status", { timeout: 300_000 }, async () => {
    const before = on(a, ["store", "status", "--json"], { NOEMA_STORE: ownerUrl });
    assert.equal(before.code, 1, "no schema yet: exit 1");
    assert.equal(JSON.parse(before.stdout).schema_version, 0);
    const init = on(a, ["store", "init", "--json"], { NOEMA_STORE: ownerUrl });
    assert.equal(init.code, 0, init.stderr);
    assert.equal(JSON.parse(init.stdout).to, LATEST_SCHEMA_VERSION);
    // The roles, created with the manual's SQL (the test server asks members of password_login for a password).
    const sql = rolesSql().replace("'…'", `'${secrets[1]}'`).replace("'…'", `'${secrets[2]}'`);
    const db = new PostgresStore(admin);
    try {
      await db.sql.unsafe(sql);
      await db.sql.unsafe("GRANT password_login TO noema_writer, noema_reader");
    } finally {
      await db.close();
    }
    const status = on(a, ["store", "status", "--json"], { NOEMA_STORE: ownerUrl });
    assert.equal(status.code, 0, status.stderr);
    const s = JSON.parse(status.stdout);
    assert.equal(s.schema_version, LATEST_SCHEMA_VERSION);
    assert.equal(s.episodes, 0);
    assert.equal(s.tls, null, "no sslmode: not encrypted");
    assert.ok(!status.stdout.includes(secrets[0]));
    // A runner (the writer role, B's ~/.pgpass) sees the schema too; only its owner creates it.
    const statusB = on(b, ["store", "status", "--json"]);
    assert.equal(statusB.code, 0, statusB.stderr);
    assert.equal(JSON.parse(statusB.stdout).schema_version, LATEST_SCHEMA_VERSION);
    const initB = on(b, ["store", "init"]);
    assert.equal(initB.code, 1, initB.stderr);
    assert.match(
      initB.stderr,
      /refused to create noema's schema: this role may not create tables, it lacks CREATE on the schema \(permission denied for schema public\)/,
    );
    assert.match(initB.stderr, /as the schema's owner/);
  });

  test(
    "A runs, publishing live; B follows it, lists it with host A, reads it by id (pulled): validate and verify pass",
    { timeout: 300_000 },
    async () => {
      const id = "ep_walk_live";
      const go = join(a.root, "go-live");
      const runA = startOn(a, ["run", gatedTask(join(a.root, "live"), go), "--episode-id", id, "--json"]);
      assert.ok(
        await until(async () => (await row(id))?.run_state === "running", PUBLISHER),
        "A's run in the catalog, running",
      );
      // B lists the fleet's runs while A's is held at its second step: published live.
      const list = on(b, ["list", "--json", "--host", "host-a"]);
      assert.equal(list.code, 0, list.stderr);
      const live = (JSON.parse(list.stdout) as { episode_id: string; host: string; run_state: string }[])
        .find((r) => r.episode_id === id);
      assert.equal(live?.host, "host-a");
      assert.equal(live?.run_state, "running");
      // B follows it: A goes on once B has printed its first line.
      let printed = 0;
      const follow = startOn(b, ["events", id, "--follow", "--json"], {
        onStdout: (chunk) => {
          printed += chunk.split("\n").length - 1;
          if (printed > 0 && !existsSync(go)) writeFileSync(go, "");
        },
      });
      const [ra, fb] = await Promise.all([runA, follow]);
      assert.equal(ra.code, 0, ra.stderr);
      assert.equal(ra.stderr, "");
      if (fb.code !== 0) {
        // Said in full: how far the follower got, what the store holds, and whether A still has some to publish.
        const stored = await row(id);
        const local = readFileSync(join(a.root, "episodes", id, "events.jsonl"), "utf8").split("\n").length - 1;
        const pending = existsSync(join(a.root, "state", "publish-pending", id));
        assert.fail(
          `the follower exited ${fb.code} after ${printed} lines (A wrote ${local}); the store's row: ` +
            `${JSON.stringify(stored)}; A ${pending ? "still has" : "has no"} publish pending; ${fb.stderr}`,
        );
      }
      assert.equal(fb.stdout, readFileSync(join(a.root, "episodes", id, "events.jsonl"), "utf8"), "every line A wrote");
      assert.equal(existsSync(join(b.root, "episodes", id)), false, "followed, not copied");
      assert.ok(await publishedFrom(a, id), "A published all of it");

      const ended = JSON.parse(on(b, ["list", "--json", "--status", "ok"]).stdout) as { episode_id: string }[];
      assert.deepEqual(ended.map((r) => r.episode_id), [id]);
      const summary = on(b, ["summary", id]);
      assert.equal(summary.code, 0, summary.stderr);
      assert.equal(JSON.parse(summary.stdout).episode_id, id);
      assert.ok(existsSync(join(b.root, "state", "pulled", id)), "read by id: pulled");
      for (const check of [["validate", id], ["verify", id, "--strict"]]) {
        const r = on(b, check);
        assert.equal(r.code, 0, `${check[0]}: ${r.stdout}${r.stderr}`);
      }
      assert.deepEqual(tree(join(b.root, "episodes", id)), tree(join(a.root, "episodes", id)));
      sharedEqualsLocal(a, id);
    },
  );

  test("an approval across hosts: A waits, B lists and approves, A applies it and finishes; the call ran once", {
    timeout: 300_000,
  }, async () => {
    const id = "ep_walk_deploy";
    const ran = join(a.root, "deploys.txt");
    const seen = { stderr: "", exited: false };
    const runA = startOn(a, ["run", deployTask(a.root, ran), "--episode-id", id, "--wait", "120s", "--json"], {
      onStderr: (chunk) => void (seen.stderr += chunk),
    });
    void runA.then(() => seen.exited = true);
    // B asks the store once A says it waits (each look is a noema process: none spent while A is still starting).
    assert.ok(await until(() => seen.exited || seen.stderr.includes("waits for approval of")), "A says it waits");
    let waiting: { episode_id: string; host: string } | undefined;
    assert.ok(
      await until(() => {
        const r = on(b, ["approvals", "--json"]);
        assert.equal(r.code, 0, r.stderr);
        waiting = (JSON.parse(r.stdout) as { episode_id: string; host: string }[]).find((w) => w.episode_id === id);
        return waiting !== undefined;
      }),
      "B sees the waiting call",
    );
    assert.equal(waiting?.host, "host-a");
    const approve = on(b, ["approve", id, "--by", "bea", "--note", "ok"]);
    assert.equal(approve.code, 0, approve.stderr);
    // A second decision is refused: the checkpoint took one (exit 8), or A already applied it and went on (exit 6).
    const again = on(b, ["reject", id, "--by", "bob"]);
    assert.ok(again.code === 8 || again.code === 6, again.stderr);
    assert.match(
      again.stderr,
      again.code === 8 ? /already approved by noema_writer \(claimed: bea\) on host-b/ : /not waiting for approval/,
    );
    const r = await runA;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).status, "ok");
    assert.equal(readFileSync(ran, "utf8"), "deployed\n", "the approved call ran exactly once");
    const dir = join(a.root, "episodes", id, "approvals");
    const rec = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8"));
    assert.deepEqual([rec.by, rec.claimed_by, rec.authenticated_as], ["noema_writer@host-b", "bea", "database_role"]);
    assert.ok(await publishedFrom(a, id), "A published all of it");
    sharedEqualsLocal(a, id);
  });

  test(
    "fault: PostgreSQL restarted while A runs: the run finishes locally, says so once; noema sync publishes the rest",
    { timeout: 300_000 },
    async () => {
      const id = "ep_walk_restart";
      const go = join(a.root, "go-restart"), go2 = join(a.root, "go-restart-2");
      let said = false;
      const runA = startOn(a, ["run", gatedTask(join(a.root, "restart"), go, go2), "--episode-id", id, "--json"], {
        onStderr: (chunk) => (said ||= /cannot be reached/.test(chunk)),
      });
      try {
        assert.ok(
          await until(async () => (await row(id))?.run_state === "running", PUBLISHER),
          "A's run published live",
        );
        // Down while A runs: A's next steps find it so. Up again before A's run ends.
        pg.kill();
        writeFileSync(go, "");
        assert.ok(await until(() => said), "A says the store cannot be reached");
      } finally {
        pg.restart();
      }
      writeFileSync(go2, "");
      const r = await runA;
      assert.equal(r.code, 0, r.stdout + r.stderr);
      assert.equal(JSON.parse(r.stdout).status, "ok");
      assert.equal(r.stderr.match(/cannot be reached/g)?.length, 1, r.stderr);
      assert.match(r.stderr, /noema sync/);
      assert.ok(!r.stderr.includes(secrets[1]), "no password in the message");
      assert.ok(existsSync(join(a.root, "state", "publish-pending", id)), "marked pending");
      const sync = on(a, ["sync", "--json"]);
      assert.equal(sync.code, 0, sync.stdout + sync.stderr);
      assert.equal(existsSync(join(a.root, "state", "publish-pending", id)), false, "published, unmarked");
      assert.equal((await row(id))?.run_state, "terminal");
      sharedEqualsLocal(a, id);
    },
  );

  test("fault: A's run SIGKILLed mid-run, then noema resume: the shared copy equals the local one", {
    timeout: 300_000,
  }, async () => {
    const id = "ep_walk_killed";
    const go = join(a.root, "go-killed");
    let pid = 0;
    const runA = startOn(a, ["run", gatedTask(join(a.root, "killed"), go), "--episode-id", id], {
      onSpawn: (p) => (pid = p),
    });
    assert.ok(await until(async () => (await row(id))?.run_state === "running", PUBLISHER), "A's run published live");
    process.kill(pid, "SIGKILL");
    assert.equal((await runA).code, null, "killed");
    writeFileSync(go, "");
    const resumed = on(a, ["resume", id, "--json"]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(JSON.parse(resumed.stdout).status, "ok");
    assert.ok(await publishedFrom(a, id), "published, unmarked");
    assert.equal((await row(id))?.run_state, "terminal");
    sharedEqualsLocal(a, id);
  });

  test("fault: A's run SIGKILLed while its publishing process is slow to exit: noema resume waits for it, then runs", {
    timeout: 300_000,
  }, async () => {
    const id = "ep_walk_slow_exit";
    const go = join(a.root, "go-slow-exit");
    let pid = 0;
    const runA = startOn(a, ["run", gatedTask(join(a.root, "slow-exit"), go), "--episode-id", id], {
      onSpawn: (p) => (pid = p),
    });
    assert.ok(await until(async () => (await row(id))?.run_state === "running", PUBLISHER), "A's run published live");
    // Its publishing process (found by the episode its start names) holds the lease; stopped, it is one that idle
    // priority on a busy machine keeps from exiting for a while after its run died.
    // (and by this test's root: the same file may run under the other runtime at the same time, with the same id)
    const publishers = pidsWithEnv((e) =>
      e.startsWith("NOEMA_STORE_LIVE_START=") && e.includes(id) && e.includes(a.root)
    );
    assert.equal(publishers.length, 1, "the run publishes from a process of its own");
    process.kill(publishers[0], "SIGSTOP");
    let resumed;
    try {
      process.kill(pid, "SIGKILL");
      assert.equal((await runA).code, null, "killed");
      writeFileSync(go, "");
      const resume = startOn(a, ["resume", id, "--json"]);
      await sleep(2000); // the resume claims the run meanwhile (not asserted: a slower start only tests less)
      process.kill(publishers[0], "SIGCONT"); // it sees its run gone and exits
      resumed = await resume;
    } finally {
      try {
        process.kill(publishers[0], "SIGCONT");
      } catch { /* gone */ }
    }
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(JSON.parse(resumed.stdout).status, "ok");
    assert.ok(await publishedFrom(a, id), "published, unmarked");
    sharedEqualsLocal(a, id);
  });

  test("fault: a symlink planted in an episode is refused by sync, nothing of it sent; removed, it publishes", {
    timeout: 300_000,
  }, async () => {
    // A run made before A joined the store: only sync publishes it.
    const local = on(a, ["run", "Say hello", "--json"], { NOEMA_STORE: undefined });
    assert.equal(local.code, 0, local.stderr);
    const id = JSON.parse(local.stdout).episode_id as string;
    const outside = join(a.root, "elsewhere.txt");
    writeFileSync(outside, "TOP-SECRET-c0ffee\n");
    const planted = join(a.root, "episodes", id, "notes", "deep");
    mkdirSync(planted, { recursive: true });
    symlinkSync(outside, join(planted, "link.txt"));
    const sync = on(a, ["sync", id, "--json"]);
    assert.equal(sync.code, 1, sync.stdout + sync.stderr);
    const rowOut = JSON.parse(sync.stdout.trim().split("\n").at(-1)!);
    assert.equal(rowOut.episode_id, id);
    assert.match(rowOut.error, /notes\/deep\/link\.txt: is a symbolic link inside the episode; refusing to publish/);
    assert.equal(await row(id), null, "nothing of the episode reached the store");
    const pulled = on(b, ["pull", id]);
    assert.equal(pulled.code, 1, "B cannot pull it");
    rmSync(join(a.root, "episodes", id, "notes"), { recursive: true });
    const again = on(a, ["sync", id, "--json"]);
    assert.equal(again.code, 0, again.stdout + again.stderr);
    sharedEqualsLocal(a, id);
  });
});
