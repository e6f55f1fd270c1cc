/**
 * `noema run --wait` outlives outages of the shared store: PostgreSQL
 * restarted twice while a run waits for approval, then a decision made by
 * another noema (another root and HOME, as another host would), and the run
 * applies it and runs the approved call exactly once. A wait that runs out
 * while the store is down decides nothing and leaves the run paused. And
 * `noema approvals` no longer lists a call the store holds a decision for, in
 * both backends. Against a real PostgreSQL 15 (tests/helpers/postgres.ts) and
 * real noema processes.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import { runChild } from "./helpers/child.ts";
import { cli, cliCommand, REPO, runtimeCommand } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";
import { row } from "./helpers/store_rows.ts";
import { deployTask, until } from "./helpers/episode_trees.ts";
import { Resubscription } from "../src/shared_store/outage.ts";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import { StoreUnreachableError } from "../src/shared_store/shared_store.ts";

const skip = pgUnavailable() ?? false;

/** The environment of a noema child: this one's, without a root of its own, colours off. */
function childEnv(extra: Record<string, string>): Record<string, string | undefined> {
  return { ...process.env, NO_COLOR: "1", NOEMA_ROOT: undefined, ...extra };
}

/** How many times `re` matches `text`. */
function count(text: string, re: RegExp): number {
  return (text.match(new RegExp(re.source, "g")) ?? []).length;
}

/**
 * A loopback TCP proxy to `target` whose traffic can be cut: both ways held (connections stay open, new ones are
 * accepted but not relayed), then healed (what was held is delivered, in order), as a network partition does.
 */
async function partitionProxy(
  target: URL,
): Promise<{ url: string; cut(): void; heal(): void; close(): Promise<void> }> {
  let cut = false;
  const held: (() => void)[] = [];
  const sockets = new Set<Socket>();
  const relay = (from: Socket, to: Socket) => {
    from.on("data", (d) => cut ? held.push(() => to.write(d)) : to.write(d));
    from.on("close", () => cut ? held.push(() => to.destroy()) : to.destroy());
    from.on("error", () => {});
  };
  const server = createServer((client) => {
    sockets.add(client);
    const open = () => {
      const up = connect(Number(target.port), target.hostname);
      sockets.add(up);
      relay(client, up);
      relay(up, client);
    };
    if (cut) held.push(open);
    else open();
  });
  await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
  const u = new URL(target.href);
  u.port = String((server.address() as AddressInfo).port);
  return {
    url: u.href,
    cut: () => void (cut = true),
    heal() {
      cut = false;
      for (const go of held.splice(0)) go();
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((ok) => server.close(() => ok()));
    },
  };
}

const DOWN =
  /(cannot be reached|did not answer within [\d.]+ s).*; ep_\w+ waits for approval and keeps waiting for it to come back/;
const BACK = /can be reached again; ep_\w+ waits for approval/;

describe("run --wait rides out outages of the shared store", { skip }, () => {
  let pg: PgServer;
  let url: string;
  before(async () => {
    pg = await startPostgres();
    url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
  });
  after(() => pg?.restart()); // a failed test may leave it stopped

  test(
    "a subscription dropped in an outage is made again once the store answers: a NOTIFY wakes it, none once closed",
    {
      timeout: 120_000,
    },
    async () => {
      const a = new PostgresStore(url), b = new PostgresStore(url);
      let wakes = 0;
      const sub = new Resubscription(a, "ep_resub", () => wakes++);
      try {
        await sub.start();
        pg.kill();
        await assert.rejects(a.get("ep_resub"), StoreUnreachableError);
        sub.drop(); // its callback is silenced: only a renewed subscription wakes
        pg.restart();
        const end = Date.now() + 60_000;
        while (wakes === 0 && Date.now() < end) {
          await a.get("ep_resub"); // the store answers
          sub.renew();
          await b.upsertCatalog(row("ep_resub"));
          await new Promise((r) => setTimeout(r, 250));
        }
        assert.ok(wakes > 0, "woken by a notification after the outage");
        await sub.close();
        const seen = wakes;
        await b.upsertCatalog(row("ep_resub", { status: "vetoed" }));
        await new Promise((r) => setTimeout(r, 600));
        assert.equal(wakes, seen, "no wake-up once closed");
      } finally {
        pg.restart();
        await a.close();
        await b.close();
      }
    },
  );

  test("PostgreSQL restarted twice during one wait, then approved elsewhere: the approved call runs exactly once", {
    timeout: 300_000,
  }, async () => {
    const a = tempDir(), b = tempDir();
    try {
      const id = "ep_waits_through_restarts";
      const deploys = join(a.path, "deploys.txt");
      const [cmd, ...args] = cliCommand();
      let stderr = "";
      const runA = runChild(
        cmd,
        [...args, "--root", a.path, "run", deployTask(a.path, deploys), "--episode-id", id, "--wait", "240s", "--json"],
        {
          cwd: a.path,
          env: childEnv({ NOEMA_STORE: url, NOEMA_HOST: "host-a" }),
          timeoutMs: 280_000,
          onStderr: (chunk) => void (stderr += chunk),
        },
      );
      let exited = false;
      void runA.then(() => exited = true);
      assert.ok(await until(() => exited || stderr.includes("waits for approval of")), "A waits for approval");
      for (const outage of [1, 2]) {
        pg.kill();
        assert.ok(await until(() => exited || count(stderr, DOWN) === outage), `A says the store is down (${outage})`);
        assert.equal(exited, false, `A keeps waiting while the store is down (${outage}): ${stderr}`);
        pg.restart();
        assert.ok(await until(() => exited || count(stderr, BACK) === outage), `A says the store is back (${outage})`);
        assert.equal(exited, false, `A keeps waiting once the store is back (${outage}): ${stderr}`);
      }
      const homeB = join(b.path, "home");
      mkdirSync(homeB);
      const approve = cli(["--root", join(b.path, ".noema"), "approve", id, "--by", "bea", "--note", "ok", "--json"], {
        env: { NOEMA_STORE: url, NOEMA_HOST: "host-b", HOME: homeB },
        cwd: b.path,
      });
      assert.equal(approve.code, 0, approve.stderr);
      const ra = await runA;
      assert.equal(ra.code, 0, ra.stderr);
      assert.equal(JSON.parse(ra.stdout).status, "ok");
      assert.equal(count(ra.stderr, DOWN), 2, "said once per outage");
      assert.equal(count(ra.stderr, BACK), 2, "said once per outage");
      assert.equal(readFileSync(deploys, "utf8"), "deployed\n", "the approved command ran once");
      const events = readFileSync(join(a.path, "episodes", id, "events.jsonl"), "utf8").trim().split("\n")
        .map((l) => JSON.parse(l));
      const deployActs = events.filter((e) => e.phase === "act" && e.payload.step_id === "step-2");
      assert.equal(deployActs.length, 1, "one act event for the approved call");
      const dir = join(a.path, "episodes", id, "approvals");
      const rec = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8"));
      assert.deepEqual([rec.by, rec.claimed_by, rec.authenticated_as], ["noema@host-b", "bea", "database_role"]);
    } finally {
      pg.restart();
      a.cleanup();
      b.cleanup();
    }
  });

  test("a wait that runs out while the store is down decides nothing: it says why, the run stays paused (exit 4)", {
    timeout: 300_000,
  }, async () => {
    const a = tempDir();
    try {
      const id = "ep_runs_out_while_down";
      const deploys = join(a.path, "deploys.txt");
      const [cmd, ...args] = cliCommand();
      let stderr = "";
      const runA = runChild(
        cmd,
        [...args, "--root", a.path, "run", deployTask(a.path, deploys), "--episode-id", id, "--wait", "8s", "--json"],
        {
          cwd: a.path,
          env: childEnv({ NOEMA_STORE: url, NOEMA_HOST: "host-a" }),
          timeoutMs: 120_000,
          onStderr: (chunk) => void (stderr += chunk),
        },
      );
      let exited = false;
      void runA.then(() => exited = true);
      assert.ok(await until(() => exited || stderr.includes("waits for approval of")), "A waits for approval");
      pg.kill();
      const ra = await runA;
      pg.restart();
      assert.equal(ra.code, 4, ra.stderr);
      assert.equal(count(ra.stderr, DOWN), 1, ra.stderr);
      assert.match(
        ra.stderr,
        /the wait for approval of ep_runs_out_while_down ran out while the shared store at .* cannot be reached/,
      );
      assert.match(ra.stderr, /the --approval-timeout default \(deny\) was not applied/);
      assert.equal(JSON.parse(ra.stdout).status, "pending");
      assert.equal(existsSync(join(a.path, "episodes", id, "approvals")), false, "no local decision");
      assert.equal(existsSync(deploys), false);
      // Resumable: once the store is back, a decision anywhere and a resume here finish it.
      const env = { NOEMA_STORE: url, NOEMA_HOST: "host-a" };
      const decided = cli(["--root", a.path, "approve", id, "--by", "ana"], { env, cwd: a.path });
      assert.equal(decided.code, 0, decided.stderr);
      const resumed = cli(["--root", a.path, "resume", id, "--json"], { env, cwd: a.path });
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.equal(readFileSync(deploys, "utf8"), "deployed\n");
    } finally {
      pg.restart();
      a.cleanup();
    }
  });
});

describe("run --wait rides out a network cut (a store that does not answer)", { skip }, () => {
  let url: string;
  before(async () => {
    url = (await startPostgres()).createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
  });

  /** A --wait run of host-a through `proxy`, and what it said on stderr so far. */
  function waitingRun(root: string, proxy: string, id: string, deploys: string, wait: string) {
    const [cmd, ...args] = cliCommand();
    const seen = { stderr: "", exited: false };
    const run = runChild(
      cmd,
      [...args, "--root", root, "run", deployTask(root, deploys), "--episode-id", id, "--wait", wait, "--json"],
      {
        cwd: root,
        env: childEnv({ NOEMA_STORE: proxy, NOEMA_HOST: "host-a" }),
        timeoutMs: 240_000,
        onStderr: (chunk) => void (seen.stderr += chunk),
      },
    );
    void run.then(() => seen.exited = true);
    return { run, seen };
  }

  test("cut while waiting, then healed and approved elsewhere: said once each way, the approved call runs once", {
    timeout: 300_000,
  }, async () => {
    const a = tempDir(), b = tempDir();
    const proxy = await partitionProxy(new URL(url));
    try {
      const id = "ep_waits_through_a_cut";
      const deploys = join(a.path, "deploys.txt");
      const { run, seen } = waitingRun(a.path, proxy.url, id, deploys, "240s");
      assert.ok(await until(() => seen.exited || seen.stderr.includes("waits for approval of")), "A waits");
      proxy.cut();
      assert.ok(await until(() => seen.exited || count(seen.stderr, DOWN) === 1), `A says so: ${seen.stderr}`);
      assert.equal(seen.exited, false, seen.stderr);
      proxy.heal();
      assert.ok(await until(() => seen.exited || count(seen.stderr, BACK) === 1), `A says it is back: ${seen.stderr}`);
      const approve = cli(["--root", join(b.path, ".noema"), "approve", id, "--by", "bea"], {
        env: { NOEMA_STORE: url, NOEMA_HOST: "host-b", HOME: b.path },
        cwd: b.path,
      });
      assert.equal(approve.code, 0, approve.stderr);
      const ra = await run;
      assert.equal(ra.code, 0, ra.stderr);
      assert.equal(JSON.parse(ra.stdout).status, "ok");
      assert.equal(count(ra.stderr, DOWN), 1, ra.stderr);
      assert.equal(readFileSync(deploys, "utf8"), "deployed\n");
    } finally {
      proxy.heal();
      await proxy.close();
      a.cleanup();
      b.cleanup();
    }
  });

  test("a cut that outlasts the wait: it ends at its deadline all the same, the run paused (exit 4)", {
    timeout: 300_000,
  }, async () => {
    const a = tempDir();
    const proxy = await partitionProxy(new URL(url));
    try {
      const id = "ep_cut_past_the_deadline";
      const { run, seen } = waitingRun(a.path, proxy.url, id, join(a.path, "deploys.txt"), "8s");
      assert.ok(await until(() => seen.exited || seen.stderr.includes("waits for approval of")), "A waits");
      proxy.cut();
      const ra = await run;
      assert.equal(ra.code, 4, ra.stderr);
      assert.match(
        ra.stderr,
        /the wait for approval of ep_cut_past_the_deadline ran out while .* (no answer|did not answer) within/,
      );
      assert.equal(JSON.parse(ra.stdout).status, "pending");
      assert.equal(existsSync(join(a.path, "episodes", id, "approvals")), false, "no local decision");
    } finally {
      proxy.heal();
      await proxy.close();
      a.cleanup();
    }
  });
});

/** `noema approvals` over a store: what waits for a decision, not what was decided and waits for its host. */
function approvalsListing(name: string, store: () => Promise<string>, options: { skip?: string | false } = {}) {
  test(`${name}: noema approvals no longer lists a call once the store holds a decision for it`, {
    skip: options.skip ?? false,
    timeout: 120_000,
  }, async () => {
    const a = tempDir(), b = tempDir();
    try {
      const url = await store();
      const envA = { NOEMA_STORE: url, NOEMA_HOST: "host-a" };
      const envB = { NOEMA_STORE: url, NOEMA_HOST: "host-b", HOME: b.path };
      assert.equal(cli(["store", "init"], { env: envA }).code, 0);
      const ids: string[] = [];
      for (const n of [1, 2]) {
        const paused = cli(["--root", a.path, "run", deployTask(a.path, join(a.path, `d${n}`)), "--json"], {
          env: envA,
          cwd: a.path,
        });
        assert.equal(paused.code, 4, paused.stderr);
        ids.push(JSON.parse(paused.stdout).episode_id);
      }
      const listed = () => {
        const r = cli(["--root", join(b.path, ".noema"), "approvals", "--json"], { env: envB, cwd: b.path });
        assert.equal(r.code, 0, r.stderr);
        return { ids: (JSON.parse(r.stdout) as { episode_id: string }[]).map((w) => w.episode_id), stderr: r.stderr };
      };
      assert.ok(await until(() => listed().ids.length === 2), "both calls listed while they wait");
      const approve = cli(["--root", join(b.path, ".noema"), "approve", ids[0], "--by", "bea"], { env: envB });
      assert.equal(approve.code, 0, approve.stderr);
      const now = listed();
      assert.deepEqual(now.ids, [ids[1]], "the decided call is not listed as waiting");
      assert.match(
        now.stderr,
        new RegExp(`${ids[0]}.*approved by \\S+ \\(claimed: bea\\) on host-b.*noema resume ${ids[0]}`),
      );
      const table = cli(["--root", join(b.path, ".noema"), "approvals"], { env: envB, cwd: b.path });
      assert.equal(table.code, 0, table.stderr);
      assert.doesNotMatch(table.stdout, new RegExp(ids[0]));
      assert.match(table.stdout, new RegExp(ids[1]));
      // Applied and resumed on its host: the run is no longer waiting at all.
      const resumed = cli(["--root", a.path, "resume", ids[0], "--json"], { env: envA, cwd: a.path });
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.ok(await until(() => !listed().stderr.includes(ids[0])), "nothing said of a run that ended");
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });
}

describe("noema approvals and the decisions the store holds", () => {
  const dirs: { cleanup(): void }[] = [];
  after(() => dirs.forEach((d) => d.cleanup()));
  approvalsListing("files", () => {
    const d = tempDir("noema-filestore-");
    dirs.push(d);
    return Promise.resolve(pathToFileURL(d.path).href);
  });
  approvalsListing("PostgreSQL", async () => (await startPostgres()).createDatabase(), { skip });
});

describe("a wait survives the database client's stray errors, and only those", () => {
  // What the client does when a connection closes with bytes still queued (under Deno, the cleared immediate fires):
  // its `nextWrite` writes to the socket it set to null. The wait must go on; any other uncaught error still ends it.
  const script = (thrown: string) => `
    import { ridingOutStrayErrors } from ${
    JSON.stringify(pathToFileURL(join(REPO, "src", "shared_store", "outage.ts")).href)
  };
    const got = await ridingOutStrayErrors(() => new Promise((resolve) => {
      setImmediate(function nextWrite() { ${thrown} });
      setTimeout(() => resolve("waited on"), 200);
    }));
    console.log(got);
  `;
  const runScript = (thrown: string) => {
    const d = tempDir("noema-stray-");
    try {
      const file = join(d.path, "stray.ts");
      writeFileSync(file, script(thrown));
      const [exe, ...args] = [...runtimeCommand(), file];
      return spawnSync(exe, args, { encoding: "utf8", timeout: 60_000 });
    } finally {
      d.cleanup();
    }
  };

  test("a write to a closed connection from the client's nextWrite: the wait goes on", () => {
    const r = runScript("const socket = null; socket.write(Buffer.from('x'));");
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), "waited on");
  });

  test("any other uncaught error still ends the process, as without the guard", () => {
    const r = runScript("throw new RangeError('a bug of ours: cannot write')");
    // Deno ends at once; Bun, as it does with any uncaught error, finishes the event loop and exits 1.
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /a bug of ours/);
  });
});
