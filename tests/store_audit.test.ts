/**
 * The tamper-evident decision log (issue 36, item 3), against a real PostgreSQL 15: decisions recorded before
 * migration 5 are chained by it; each decision through `noema_decide` links to the one before; `noema store audit`
 * recomputes every row's hash and names the first row the owner changed, deleted or inserted out of band (exit 1);
 * a tombstone (`pruned_at`, content cleared) is checked for linkage only. A files store says audit is
 * PostgreSQL-only.
 */
import assert from "node:assert/strict";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import { MIGRATIONS } from "../src/shared_store/postgres/migrations.ts";
import { schemaAt } from "./helpers/store_rows.ts";
import type { StoredDecision } from "../src/shared_store/shared_store.ts";
import { cli } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";

const skip = pgUnavailable() ?? false;

function decision(i: number): StoredDecision {
  return {
    episode_id: `ep_audit_${i}`,
    checkpoint_id: `chk_${i}`,
    state_hash: `sha256:${String(i).padStart(64, "0")}`,
    decision: i % 3 === 0 ? "rejected" : "approved",
    by: "ignored",
    note: i === 4 ? "a note with | pipes, 1:2 colons and ünïcödé\nover two lines" : null,
    host: "host-b",
    at: new Date().toISOString(),
    claimed_by: i % 2 ? `claimant ${i}` : null,
    checkpoint_digest: `sha256:${String(i).padStart(64, "f")}`,
  };
}

describe("store audit: the hash-chained decision log", { skip }, () => {
  let pg: PgServer;
  let url: string;
  let store: PostgresStore;
  const audit = () => {
    const r = cli(["store", "audit", "--json"], { env: { NOEMA_STORE: url } });
    return { code: r.code, stderr: r.stderr, report: JSON.parse(r.stdout) };
  };

  before(async () => {
    pg = await startPostgres();
    url = pg.createDatabase();
    store = new PostgresStore(url);
    // A store at schema version 4 holding decisions made before the chain (decided_by as the client said).
    await schemaAt(store, 4);
    for (const i of [1, 2, 3]) {
      await store.sql`INSERT INTO noema_decisions (episode_id, checkpoint_id, state_hash, decision, decided_by, host,
        decided_at) VALUES (${`ep_old_${i}`}, ${`chk_old_${i}`}, 'sha256:0', 'approved', ${`old ${i}`}, 'host-x',
        ${`2026-01-0${i}T10:00:00.123456Z`})`;
    }
    assert.deepEqual(await store.migrate(), { from: 4, to: MIGRATIONS.at(-1)!.version });
  });

  after(async () => {
    await store?.close();
  });

  test("the migration chains the decisions made before it; every later decision links on", async () => {
    let a = audit();
    assert.equal(a.code, 0, a.stderr);
    assert.deepEqual([a.report.ok, a.report.rows, a.report.head.chain_seq], [true, 3, 3]);
    for (let i = 1; i <= 8; i++) await store.decide(decision(i));
    a = audit();
    assert.equal(a.code, 0, a.stderr);
    assert.deepEqual([a.report.ok, a.report.rows, a.report.tombstones, a.report.broken], [true, 11, 0, null]);
    const [head] = await store.sql`SELECT chain_seq, row_hash FROM noema_decisions ORDER BY chain_seq DESC LIMIT 1`;
    assert.deepEqual(a.report.head, { chain_seq: Number(head.chain_seq), row_hash: head.row_hash });
    const text = cli(["store", "audit"], { env: { NOEMA_STORE: url } });
    assert.match(text.stdout, /11 decisions chained \(0 tombstones\), ok; head 11 [0-9a-f]{64}/);
  });

  test("a tombstone (pruned, its content cleared) is checked for linkage only", async () => {
    await store.sql`UPDATE noema_decisions SET pruned_at = now(), note = NULL, decided_by = '', claimed_by = NULL
      WHERE chain_seq = 2`;
    const a = audit();
    assert.equal(a.code, 0, a.stderr);
    assert.deepEqual([a.report.ok, a.report.rows, a.report.tombstones], [true, 11, 1]);
  });

  test("a row the owner changed is named (exit 1); restored, the chain holds again", async () => {
    const [row] = await store.sql`SELECT decided_by FROM noema_decisions WHERE chain_seq = 7`;
    await store.sql`UPDATE noema_decisions SET decided_by = 'cto' WHERE chain_seq = 7`;
    let a = audit();
    assert.equal(a.code, 1);
    assert.equal(a.report.ok, false);
    assert.equal(a.report.broken.chain_seq, 7);
    assert.equal(a.report.broken.episode_id, "ep_audit_4");
    assert.match(a.report.broken.problem, /does not match its row_hash/);
    assert.equal(a.report.rows, 6, "the rows before it hold");
    const text = cli(["store", "audit"], { env: { NOEMA_STORE: url } });
    assert.equal(text.code, 1);
    assert.match(text.stderr, /the decision log of .* is broken at row 7 \(ep_audit_4 chk_4\): its content does not/);
    // A changed time is caught too (the note's pipes and newline cannot be shifted into another field).
    await store.sql`UPDATE noema_decisions SET decided_by = ${row.decided_by},
      decided_at = decided_at + interval '1 microsecond' WHERE chain_seq = 7`;
    assert.equal(audit().report.broken?.chain_seq, 7);
    await store.sql`UPDATE noema_decisions SET decided_at = decided_at - interval '1 microsecond' WHERE chain_seq = 7`;
    a = audit();
    assert.equal(a.code, 0, a.stderr);
  });

  test("a row the owner deleted is named by the gap it leaves; a row inserted out of band is named", async () => {
    // Kept aside in the database, exactly (a client's Date would lose the microseconds).
    await store.sql`CREATE TABLE audit_gone AS SELECT * FROM noema_decisions WHERE chain_seq = 9`;
    await store.sql`DELETE FROM noema_decisions WHERE chain_seq = 9`;
    let a = audit();
    assert.equal(a.code, 1);
    assert.equal(a.report.broken.chain_seq, 10);
    assert.match(a.report.broken.problem, /follows chain_seq 8: row 9 is missing \(deleted\)/);
    await store.sql`INSERT INTO noema_decisions SELECT * FROM audit_gone`;
    assert.equal(audit().code, 0);
    await store.sql`INSERT INTO noema_decisions (episode_id, checkpoint_id, state_hash, decision, decided_by, host)
      VALUES ('ep_forged', 'chk_forged', 'sha256:0', 'approved', 'cto', 'host-z')`;
    a = audit();
    assert.equal(a.code, 1);
    assert.equal(a.report.broken.episode_id, "ep_forged");
    assert.match(a.report.broken.problem, /inserted out of band/);
    // Given a place in the chain, with a made-up hash, it is still named.
    await store.sql`UPDATE noema_decisions SET chain_seq = 12, prev_hash = 'x', row_hash = 'y'
      WHERE episode_id = 'ep_forged'`;
    a = audit();
    assert.equal(a.report.broken.chain_seq, 12);
    assert.match(a.report.broken.problem, /does not link to the previous row's hash/);
    await store.sql`DELETE FROM noema_decisions WHERE episode_id = 'ep_forged'`;
    assert.equal(audit().code, 0);
  });

  test("what audit alone cannot catch, a head pinned elsewhere does: a chain rewritten whole, or cut short", async () => {
    const pinned = audit().report.head;
    const head = `${pinned.chain_seq}:${pinned.row_hash}`;
    assert.equal(cli(["store", "audit", "--head", head], { env: { NOEMA_STORE: url } }).code, 0);
    // The owner changes row 5 and recomputes every hash after it: consistent, so the chain alone still holds.
    await store.sql.unsafe(`DO $d$ DECLARE r noema_decisions; prev text; BEGIN
      UPDATE noema_decisions SET decided_by = 'cto' WHERE chain_seq = 5;
      FOR r IN SELECT * FROM noema_decisions WHERE chain_seq >= 5 ORDER BY chain_seq LOOP
        IF r.chain_seq > 5 THEN r.prev_hash := prev; END IF;
        r.row_hash := noema_decision_hash(r);
        prev := r.row_hash;
        UPDATE noema_decisions SET prev_hash = r.prev_hash, row_hash = r.row_hash WHERE chain_seq = r.chain_seq;
      END LOOP; END $d$`);
    assert.equal(audit().code, 0, "a chain rewritten whole is consistent");
    const r = cli(["store", "audit", "--head", head, "--json"], { env: { NOEMA_STORE: url } });
    assert.equal(r.code, 1);
    assert.equal(JSON.parse(r.stdout).broken.chain_seq, pinned.chain_seq);
    assert.match(JSON.parse(r.stdout).broken.problem, /is not the pinned head's .*: the chain was rewritten/);
    // Cut short: the last row removed.
    await store.sql`DELETE FROM noema_decisions WHERE chain_seq = ${pinned.chain_seq}`;
    assert.equal(audit().code, 0, "a chain that ends earlier is consistent");
    const cut = cli(["store", "audit", "--head", head], { env: { NOEMA_STORE: url } });
    assert.equal(cut.code, 1);
    assert.match(cut.stderr, /the chain ends at chain_seq \d+, before the pinned head \d+: rows were removed/);
    const bad = cli(["store", "audit", "--head", "7:nothex"], { env: { NOEMA_STORE: url } });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--head "7:nothex": give chain_seq:row_hash/);
  });

  test("a files store: store audit says it is PostgreSQL-only (exit 2)", () => {
    const t = tempDir();
    try {
      const files = pathToFileURL(join(t.path, "share")).href;
      assert.equal(cli(["store", "init", "--store", files]).code, 0);
      const r = cli(["store", "audit", "--store", files]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /is a files store; the hash-chained decision log is PostgreSQL-only/);
    } finally {
      t.cleanup();
    }
  });
});
