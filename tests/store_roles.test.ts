/**
 * Who decided, provably, and roles the database enforces (issue 36, items 1 and 2), against a real PostgreSQL 15:
 * `noema store init --roles` by the owner; login roles made members of its groups (`ana` an approver, `ci7` a
 * runner, `rita` a reader). A runner publishes a paused run; `approve --by carol` as `ana` records `ana` as the
 * decider (stamped by the database), `carol` as the claimed name; the runner gets `permission denied` deciding and
 * changing lines or decisions, and a write without the lease's fencing token is refused by the database; `noema
 * serve` records its token's label as the decider, beside its own role.
 */
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import type postgres from "postgres";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import { checkpointDigest } from "../src/store/checkpoint_digest.ts";
import { cli } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";
import { deployTask } from "./helpers/episode_trees.ts";
import { startServe } from "./helpers/serve.ts";

const skip = pgUnavailable() ?? false;

describe("roles the database enforces; the authenticated decider", { skip }, () => {
  let pg: PgServer;
  let owner: string;
  const as = (role: string) => owner.replace("://noema@", `://${role}@`);
  const dirs: { path: string; cleanup(): void }[] = [];
  const newDir = () => {
    const d = tempDir();
    dirs.push(d);
    return d.path;
  };
  /** A run of the runner `ci7` on host-a, paused for approval and published; its id. */
  const pausedByRunner = (root: string) => {
    const r = cli(["--root", root, "run", deployTask(root, join(root, "ran")), "--json"], {
      env: { NOEMA_STORE: as("ci7"), NOEMA_HOST: "host-a" },
      cwd: root,
    });
    assert.equal(r.code, 4, r.stderr);
    assert.doesNotMatch(r.stderr, /cannot be reached|refused|permission/, "published as the runner");
    return JSON.parse(r.stdout).episode_id as string;
  };
  const sqlAs = async <T>(role: string, f: (s: PostgresStore) => Promise<T>) => {
    const s = new PostgresStore(as(role));
    try {
      return await f(s);
    } finally {
      await s.close();
    }
  };

  before(async () => {
    pg = await startPostgres();
    owner = pg.createDatabase();
    const init = cli(["store", "init", "--roles", "--json"], { env: { NOEMA_STORE: owner } });
    assert.equal(init.code, 0, init.stderr);
    assert.deepEqual(JSON.parse(init.stdout).roles, ["noema_runner", "noema_approver", "noema_reader", "noema_server"]);
    // Idempotent: run again, the roles are updated in place.
    assert.equal(cli(["store", "init", "--roles"], { env: { NOEMA_STORE: owner } }).code, 0);
    pg.psql(
      owner,
      "CREATE ROLE ana LOGIN IN ROLE noema_approver; CREATE ROLE ci7 LOGIN IN ROLE noema_runner; " +
        "CREATE ROLE rita LOGIN IN ROLE noema_reader; CREATE ROLE web LOGIN IN ROLE noema_server; " +
        "CREATE ROLE ci8 LOGIN IN ROLE noema_runner",
    );
  });

  after(() => {
    for (const d of dirs) d.cleanup();
  });

  test("approve --by carol as role ana records ana (database_role), carol as claimed; the run's host applies it", () => {
    const a = newDir(), b = newDir();
    const id = pausedByRunner(a);
    const byRunner = cli(["--root", b, "approve", id, "--by", "ana"], { env: { NOEMA_STORE: as("ci7") } });
    assert.equal(byRunner.code, 1, byRunner.stderr);
    assert.match(byRunner.stderr, /refused the decision: permission denied to decide on .*role ci7 is not a member/);
    const approve = cli(["--root", b, "approve", id, "--by", "carol", "--note", "ok", "--json"], {
      env: { NOEMA_STORE: as("ana"), NOEMA_HOST: "host-b" },
    });
    assert.equal(approve.code, 0, approve.stderr);
    const d = JSON.parse(approve.stdout);
    assert.deepEqual([d.by, d.authenticated_as, d.database_role, d.claimed_by], [
      "ana",
      "database_role",
      "ana",
      "carol",
    ]);
    // The digest of the checkpoint the run published: its action, state and the policies' files in force.
    const chkDir = join(a, "episodes", id, "checkpoints");
    const checkpoint = JSON.parse(readFileSync(join(chkDir, readdirSync(chkDir)[0]), "utf8"));
    assert.ok(checkpoint.policy_versions.length > 0, "the checkpoint records the policies in force");
    for (const p of checkpoint.policy_versions) assert.match(p.sha256, /^sha256:[0-9a-f]{64}$/, p.id);
    assert.equal(d.checkpoint_digest, checkpointDigest(checkpoint));
    assert.notEqual(d.checkpoint_digest, checkpointDigest({ ...checkpoint, policy_versions: null }));
    const text = cli(["--root", b, "reject", id, "--by", "dan"], { env: { NOEMA_STORE: as("ana") } });
    assert.equal(text.code, 8);
    assert.match(text.stderr, /already approved by ana \(claimed: carol\) on host-b/);
    // host-a (the runner's role) applies it and finishes; the episode's record keeps who decided.
    const resumed = cli(["--root", a, "resume", id, "--json"], {
      env: { NOEMA_STORE: as("ci7"), NOEMA_HOST: "host-a" },
    });
    assert.equal(resumed.code, 0, resumed.stderr);
    const dir = join(a, "episodes", id, "approvals");
    const rec = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8"));
    assert.deepEqual(
      [rec.by, rec.authenticated_as, rec.database_role, rec.claimed_by, rec.schema_version],
      ["ana@host-b", "database_role", "ana", "carol", "approval/1.0"],
    );
  });

  test("a runner: permission denied on UPDATE/DELETE of lines and decisions, on deciding, on unfenced writes", async () => {
    const id = pausedByRunner(newDir());
    const [lease] = await sqlAs("noema", (s) => s.sql`SELECT token::text FROM noema_leases WHERE episode_id = ${id}`);
    await sqlAs("ci7", async (s) => {
      const denied = async (q: string, what: RegExp = /permission denied/) => {
        await assert.rejects(s.sql.unsafe(q), (e: Error) => {
          assert.match(e.message, what, q);
          return true;
        });
      };
      await denied(`UPDATE noema_lines SET bytes = bytes WHERE episode_id = '${id}'`);
      await denied(`DELETE FROM noema_lines WHERE episode_id = '${id}'`);
      await denied(`UPDATE noema_decisions SET decided_by = 'cto'`);
      await denied(`DELETE FROM noema_decisions`);
      await denied(`INSERT INTO noema_decisions (episode_id, checkpoint_id, state_hash, decision, decided_by, host)
        VALUES ('${id}', 'chk_x', 'sha256:x', 'approved', 'cto', 'h')`);
      await denied(`SELECT noema_decide('${id}', 'chk_x', 'sha256:x', 'approved', NULL, 'h', 'cto', NULL, NULL)`);
      // Fencing, by the database: a line written without the lease's token, or with another one, is refused.
      await denied(
        `INSERT INTO noema_lines (episode_id, stream, seq, bytes) VALUES ('${id}', 'x.jsonl', 1, '\\x7b7d')`,
      );
      await assert.rejects(
        s.sql.begin(async (tx) => {
          await tx`SELECT set_config('noema.fencing_token', ${String(BigInt(lease.token) + 5n)}, true)`;
          await tx`INSERT INTO noema_lines (episode_id, stream, seq, bytes) VALUES (${id}, 'x.jsonl', 1, '\\x7b7d')`;
        }),
        /noema fencing: a write to noema_lines of .* refused: the lease is at/,
      );
      // With the lease's own token, the runner that holds it appends.
      await s.sql.begin(async (tx) => {
        await tx`SELECT set_config('noema.fencing_token', ${lease.token}, true)`;
        await tx`INSERT INTO noema_lines (episode_id, stream, seq, bytes) VALUES (${id}, 'x.jsonl', 1, '\\x7b7d')`;
      });
    });
    await sqlAs("rita", async (s) => {
      await assert.rejects(
        s.sql.unsafe(`INSERT INTO noema_leases (episode_id, host, pid, token) VALUES ('e', 'h', 1, 1)`),
        /permission denied/,
      );
    });
  });

  test("a decision made on a replaced stored checkpoint (same id and state_hash, another action) is refused by the run's host, exit 7", async () => {
    const a = newDir(), b = newDir();
    const id = pausedByRunner(a);
    // The stored checkpoint replaced behind the run's back (here by the owner, whom nothing stops): the approver is
    // shown another action than the one the run waits on.
    const forged = await sqlAs("noema", async (s) => {
      const [f] = await s.sql`SELECT name, bytes FROM noema_files
        WHERE episode_id = ${id} AND name LIKE 'checkpoints/%'`;
      const chk = JSON.parse(Buffer.from(f.bytes).toString("utf8"));
      chk.pending.action.input = { ...chk.pending.action.input, command: "echo harmless-looking-step" };
      const bytes = Buffer.from(JSON.stringify(chk));
      const sha = "sha256:" + createHash("sha256").update(bytes).digest("hex");
      await s.sql`UPDATE noema_files SET bytes = ${bytes}, size = ${bytes.length}, sha256 = ${sha}
        WHERE episode_id = ${id} AND name = ${f.name}`;
      return checkpointDigest(chk);
    });
    const approve = cli(["--root", b, "approve", id, "--json"], {
      env: { NOEMA_STORE: as("ana"), NOEMA_HOST: "host-b" },
    });
    assert.equal(approve.code, 0, approve.stderr);
    assert.equal(JSON.parse(approve.stdout).checkpoint_digest, forged, "decided on what the store held");
    const resumed = cli(["--root", a, "resume", id], { env: { NOEMA_STORE: as("ci7"), NOEMA_HOST: "host-a" } });
    assert.equal(resumed.code, 7, resumed.stderr);
    assert.match(resumed.stderr, /was made on another checkpoint than the one this run waits on/);
    assert.match(resumed.stderr, new RegExp(`the decision is not applied and nothing runs; ${id} stays paused`, "i"));
    assert.ok(!existsSync(join(a, "ran")), "the run's own action did not run");
    assert.ok(!existsSync(join(a, "episodes", id, "approvals")), "no approval recorded in the episode");
  });

  test("a runner that takes over another's stale lease may not reject its paused call, nor replace its checkpoint", async () => {
    const id = pausedByRunner(newDir());
    const [p] = await sqlAs("noema", (s) => s.sql`SELECT pending FROM noema_episodes WHERE episode_id = ${id}`);
    const { checkpoint_id: chk, state_hash: sh } = p.pending as { checkpoint_id: string; state_hash: string };
    // The paused run's lease, neither renewed nor released, goes stale (aged by the superuser, its holder kept).
    pg.psql(
      owner,
      `SET session_replication_role = replica; ` +
        `UPDATE noema_leases SET renewed_at = now() - interval '5 minutes' WHERE episode_id = '${id}'`,
    );
    await sqlAs("ci8", async (s) => {
      await s.sql`UPDATE noema_leases SET host = 'evil', pid = 1, token = token + 1, renewed_at = now(),
        released = false WHERE episode_id = ${id}`;
      const [l] = await s.sql`SELECT token::text, holder_role FROM noema_leases WHERE episode_id = ${id}`;
      assert.equal(l.holder_role, "ci8", "a stale lease is taken over");
      const fenced = <T>(f: (tx: postgres.TransactionSql) => Promise<T>) =>
        s.sql.begin(async (tx) => {
          await tx`SELECT set_config('noema.fencing_token', ${l.token}, true)`;
          return await f(tx);
        });
      const rejectByTimeout = () =>
        s.sql`SELECT noema_decide(${id}, ${chk}, ${sh}, 'rejected', 'n', 'evil', 'timeout', NULL, NULL)`;
      await assert.rejects(rejectByTimeout(), /permission denied to decide on .*role ci8/);
      // Setting the pending call again (cleared, then the same) does not make it ci8's.
      await fenced((tx) => tx`UPDATE noema_episodes SET pending = NULL WHERE episode_id = ${id}`);
      await fenced((tx) => tx`UPDATE noema_episodes SET pending = ${p.pending} WHERE episode_id = ${id}`);
      await assert.rejects(rejectByTimeout(), /permission denied to decide on .*role ci8/);
      // The published checkpoint is what approvers are shown: it is never replaced.
      await assert.rejects(
        fenced((tx) =>
          tx`UPDATE noema_files SET bytes = '\x7b7d', sha256 = 'sha256:x', size = 2
            WHERE episode_id = ${id} AND name = ${`checkpoints/${chk}.json`}`
        ),
        /checkpoints\/chk_\S+ of ep_\S+ is published and may not be replaced/,
      );
    });
    assert.deepEqual(
      (await sqlAs("noema", (s) => s.sql`SELECT decision FROM noema_decisions WHERE episode_id = ${id}`)).map((r) =>
        r.decision
      ),
      [],
      "nothing decided",
    );
  });

  test("an approver's role resuming a stale copy of a stored run is refused (10): the approved action runs once", async () => {
    // Found by an audit: the lease the approver's role may not take was read as a store that may only be read, and
    // the copy (a restored snapshot of the paused root) was resumed locally: the approved deploy ran twice.
    const a = newDir(), copy = newDir();
    const ran = join(a, "ran");
    const id = pausedByRunner(a);
    cpSync(a, copy, { recursive: true });
    assert.equal(cli(["--root", a, "approve", id], { env: { NOEMA_STORE: as("ana") } }).code, 0);
    const resumed = cli(["--root", a, "resume", id], { env: { NOEMA_STORE: as("ci7"), NOEMA_HOST: "host-a" } });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(readFileSync(ran, "utf8"), "deployed\n");
    const stale = cli(["--root", copy, "resume", id], { env: { NOEMA_STORE: as("ana"), NOEMA_HOST: "host-z" } });
    assert.equal(stale.code, 10, stale.stderr);
    assert.match(stale.stderr, /this role may not claim it there .*Nothing was run; resume it with a runner's role/);
    assert.equal(readFileSync(ran, "utf8"), "deployed\n", "the approved deploy ran once");
    // A runner's role claims it, and is refused too (the store has gone on without the copy): the lease it took on
    // the way is given back, never left fencing out the run's own writer (found by the same audit).
    const diverged = cli(["--root", copy, "resume", id], { env: { NOEMA_STORE: as("ci7"), NOEMA_HOST: "host-z" } });
    assert.equal(diverged.code, 10, diverged.stderr);
    assert.match(diverged.stderr, /has gone on without it/);
    assert.equal(readFileSync(ran, "utf8"), "deployed\n");
    const [lease] = await sqlAs("noema", (s) => s.sql`SELECT released FROM noema_leases WHERE episode_id = ${id}`);
    assert.equal(lease.released, true);
  });

  test("a live lease of another role, its holder looking gone from here (the same host name): held, not read-only", async () => {
    // Found by an audit: the database's refusal (another login role's live lease) was said as "this role may only
    // read", and a resume went on locally while the holder ran it too.
    const id = pausedByRunner(newDir());
    const [l] = await sqlAs("noema", (s) => s.sql`SELECT host, pid FROM noema_leases WHERE episode_id = ${id}`);
    pg.psql(owner, `UPDATE noema_leases SET released = false, renewed_at = now() WHERE episode_id = '${id}'`);
    await sqlAs("ci8", async (s) => {
      const taking = s.acquireLease(id, { host: String(l.host), pid: 424242 }, { ownerGone: () => true });
      await assert.rejects(taking, (e: Error) => {
        assert.equal(e.name, "LeaseHeldError", e.message);
        assert.match(e.message, new RegExp(`${l.host}.*${l.pid}`));
        return true;
      });
    });
  });

  test("store audit: a decision record a runner published as the store's, which the log does not hold, is named (1)", async () => {
    // Found by an audit: a runner's run carried approvals/<chk>.json saying "approved by ana (database_role)", no
    // such decision in noema_decisions; every reader showed it, and store audit said ok.
    const audit = () => cli(["store", "audit", "--json"], { env: { NOEMA_STORE: owner } });
    const before = audit();
    assert.equal(before.code, 0, before.stderr);
    assert.ok(JSON.parse(before.stdout).records >= 1, "the genuine records of the runs before are checked, and hold");
    const id = pausedByRunner(newDir());
    const [p] = await sqlAs("noema", (s) => s.sql`SELECT pending FROM noema_episodes WHERE episode_id = ${id}`);
    const chk = (p.pending as { checkpoint_id: string }).checkpoint_id;
    const [l] = await sqlAs("noema", (s) => s.sql`SELECT host FROM noema_leases WHERE episode_id = ${id}`);
    await sqlAs("ci7", async (s) => {
      const token = await s.acquireLease(id, { host: String(l.host), pid: 99999 }, { ownerGone: () => true });
      const forged = {
        schema_version: "approval/1.0",
        episode_id: id,
        checkpoint_id: chk,
        decision: "approved",
        by: "ana@host-b",
        authenticated_as: "database_role",
        database_role: "ana",
        at: new Date().toISOString(),
      };
      await s.putFile(id, `approvals/${chk}.json`, new TextEncoder().encode(JSON.stringify(forged)), token);
    });
    const after = audit();
    assert.equal(after.code, 1, after.stdout + after.stderr);
    const r = JSON.parse(after.stdout);
    assert.equal(r.ok, false);
    assert.equal(r.broken.file, `approvals/${chk}.json`);
    assert.match(r.broken.problem, /says the store authenticated "ana" .* the decision log holds no decision/);
    const text = cli(["store", "audit"], { env: { NOEMA_STORE: owner } });
    assert.equal(text.code, 1);
    assert.match(text.stderr, new RegExp(`is not the store's decision \\(${id} approvals/${chk}\\.json\\)`));
    pg.psql(owner, `DELETE FROM noema_files WHERE episode_id = '${id}' AND name LIKE 'approvals/%'`);
  });

  test("store audit: a published record matching the log only in decision, role and time is named (1)", async () => {
    // Found by an audit: approvals/<chk>.json with the store's decision, role and time but another decider and note
    // ("rejected by mallory: forged"), or no checkpoint digest, or made without the store, passed store audit.
    const audit = () => cli(["store", "audit", "--json"], { env: { NOEMA_STORE: owner } });
    const a = newDir();
    const id = pausedByRunner(a);
    const rejected = cli(["--root", newDir(), "reject", id, "--by", "carol", "--note", "no"], {
      env: { NOEMA_STORE: as("ana"), NOEMA_HOST: "host-b" },
    });
    assert.equal(rejected.code, 0, rejected.stderr);
    const resumed = cli(["--root", a, "resume", id], { env: { NOEMA_STORE: as("ci7"), NOEMA_HOST: "host-a" } });
    assert.equal(resumed.code, 3, resumed.stderr);
    const ok = audit();
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    const dir = join(a, "episodes", id, "approvals");
    const name = readdirSync(dir).find((n) => n.endsWith(".json"))!;
    const genuine = JSON.parse(readFileSync(join(dir, name), "utf8"));
    const variants: [Record<string, unknown>, RegExp][] = [
      [{ by: "mallory" }, /has another by \("ana"\)/],
      [{ note: "forged" }, /has another note \("no"\)/],
      [{ claimed_by: null }, /has another claimed_by \("carol"\)/],
      [{ checkpoint_digest: null }, /has another checkpoint_digest/],
      [{ at: new Date(0).toISOString() }, /has another at/],
      [
        { authenticated_as: "os_user", by: "root", database_role: null },
        /made without the store, but the decision log/,
      ],
    ];
    const [l] = await sqlAs("noema", (s) => s.sql`SELECT host FROM noema_leases WHERE episode_id = ${id}`);
    const put = (record: unknown) =>
      sqlAs("ci7", async (s) => {
        const token = await s.acquireLease(id, { host: String(l.host), pid: 99998 }, { ownerGone: () => true });
        await s.putFile(id, `approvals/${name}`, new TextEncoder().encode(JSON.stringify(record)), token);
        await s.releaseLease(id, token);
      });
    for (const [change, problem] of variants) {
      await put({ ...genuine, ...change });
      const r = audit();
      assert.equal(r.code, 1, `${JSON.stringify(change)}: ${r.stdout}${r.stderr}`);
      const report = JSON.parse(r.stdout);
      assert.equal(report.broken.file, `approvals/${name}`);
      assert.match(report.broken.problem, problem);
    }
    await put(genuine);
    assert.equal(audit().code, 0, "the genuine record holds again");
  });

  test("a runner's wait that runs out rejects its own call: recorded by its role, claimed by timeout", () => {
    const a = newDir();
    const r = cli(["--root", a, "run", deployTask(a, join(a, "ran")), "--wait", "5s", "--json"], {
      env: { NOEMA_STORE: as("ci7"), NOEMA_HOST: "host-a" },
      cwd: a,
    });
    assert.equal(r.code, 3, r.stderr);
    const dir = join(a, "episodes", JSON.parse(r.stdout).episode_id, "approvals");
    const rec = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8"));
    assert.deepEqual([rec.decision, rec.by, rec.claimed_by, rec.database_role], ["rejected", "ci7", "timeout", "ci7"]);
  });

  test("store status names the connected role and its powers", () => {
    const powers = (role: string) => {
      const r = cli(["store", "status", "--json"], { env: { NOEMA_STORE: as(role) } });
      assert.equal(r.code, 0, r.stderr);
      const s = JSON.parse(r.stdout);
      assert.equal(s.role.name, role);
      return s.role.powers;
    };
    assert.deepEqual(powers("ci7"), { publish: true, decide: false, serve: false, read: true, own: false });
    assert.deepEqual(powers("ana"), { publish: false, decide: true, serve: false, read: true, own: false });
    assert.deepEqual(powers("rita"), { publish: false, decide: false, serve: false, read: true, own: false });
    assert.deepEqual(powers("web"), { publish: false, decide: false, serve: true, read: true, own: false });
    assert.deepEqual(powers("noema"), { publish: true, decide: true, serve: true, read: true, own: true });
    const text = cli(["store", "status"], { env: { NOEMA_STORE: as("ana") } });
    assert.match(text.stdout, /^role {6}ana: decide, read$/m);
  });

  test("noema serve over the store records its token's label as the decider, beside the server's role", async () => {
    const id = pausedByRunner(newDir());
    // Only a server's role names a token: an approver deciding directly cannot pass for one.
    const [chk] = await sqlAs(
      "noema",
      (s) =>
        s.sql`SELECT pending->>'checkpoint_id' AS id, pending->>'state_hash' AS hash FROM noema_episodes
      WHERE episode_id = ${id}`,
    );
    await sqlAs("ana", async (s) => {
      await assert.rejects(
        s.sql`SELECT noema_decide(${id}, ${chk.id}, ${chk.hash}, 'approved', null, 'h', null, null, 'lena')`,
        /permission denied to decide on .* for the serve token lena: role ana is not a member of noema_server/,
      );
    });
    const st = await startServe(newDir(), {
      args: ["--store", as("web")],
      env: { NOEMA_HOST: "host-console", NOEMA_SERVE_TOKEN: "lena=0123456789abcdef0123" },
    });
    try {
      const r = await fetch(new URL(`/api/episodes/${id}/approve`, st.url), {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer 0123456789abcdef0123" },
        body: JSON.stringify({ note: "from the console" }),
      });
      assert.equal(r.status, 200, await r.clone().text());
      const d = await r.json();
      assert.deepEqual([d.by, d.authenticated_as, d.database_role, d.claimed_by], ["lena", "serve_token", "web", null]);
      const page = await (await fetch(new URL(`/episodes/${id}`, st.url), {
        headers: { authorization: "Bearer 0123456789abcdef0123" },
      })).text();
      assert.match(page, /by <b>lena<\/b> on <b>host-console<\/b>.*\(authenticated as serve token\)/s);
    } finally {
      await st.stop();
    }
    const [row] = await sqlAs("noema", (s) =>
      s.sql`SELECT decided_by, decided_by_role FROM noema_decisions
      WHERE episode_id = ${id}`);
    assert.deepEqual([row.decided_by, row.decided_by_role], ["lena", "web"]);
  });

  test("approvals says when a decision cannot be applied: another state hash than the checkpoint's", async () => {
    // Found by an audit: an approver's noema_decide with a wrong state hash used up the checkpoint; its holder refuses
    // it (exit 7) for ever, and approvals said the holder "applies it as it resumes".
    const id = pausedByRunner(newDir());
    const [p] = await sqlAs("noema", (s) =>
      s.sql`SELECT pending->>'checkpoint_id' AS chk FROM noema_episodes
      WHERE episode_id = ${id}`);
    await sqlAs(
      "ana",
      (s) =>
        s.sql`SELECT noema_decide(${id}, ${p.chk}, 'sha256:0000', 'approved', 'wrong hash', 'hZ', null,
        'sha256:1111', null)`,
    );
    const r = cli(["approvals"], { env: { NOEMA_STORE: as("rita") } });
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `${id} \\(host-a\\) has a decision its host cannot apply: approved by ana .* but it is bound to ` +
          `state sha256:0000, not to the checkpoint's sha256:[0-9a-f]{64}: resume refuses it \\(exit 7\\)`,
      ),
    );
    assert.doesNotMatch(r.stderr, new RegExp(`${id} .*applies it as it resumes`));
  });

  test("noema serve over the store as a role that may not decide: 403 saying why, not 500", async () => {
    // Found by an audit: POST /api/episodes/ID/approve answered 500 "internal", the reason only in the server's log.
    const id = pausedByRunner(newDir());
    const st = await startServe(newDir(), {
      args: ["--store", as("rita")],
      env: { NOEMA_HOST: "host-console", NOEMA_SERVE_TOKEN: "rita=0123456789abcdef0123" },
    });
    try {
      const r = await fetch(new URL(`/api/episodes/${id}/approve`, st.url), {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer 0123456789abcdef0123" },
        body: JSON.stringify({ note: "a reader" }),
      });
      const body = await r.text();
      assert.equal(r.status, 403, body);
      const e = JSON.parse(body).error;
      assert.equal(e.code, "store_privilege");
      assert.match(e.message, /refused the decision: permission denied .*noema_server/);
    } finally {
      await st.stop();
    }
    const [row] = await sqlAs(
      "noema",
      (s) => s.sql`SELECT count(*)::int AS n FROM noema_decisions WHERE episode_id = ${id}`,
    );
    assert.equal(row.n, 0, "nothing decided");
  });
});
