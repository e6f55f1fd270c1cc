/**
 * One conformance suite for the shared store interface, run against every
 * backend: a directory (`file:///…`) and a real PostgreSQL 15 (skipped, saying
 * why, when it is not installed). Append and read back with exact bytes,
 * idempotent resends, conflicts that store nothing, whole files, the catalog
 * with its filters, order, limit and states, decisions made exactly once
 * (racing in one process and in two), leases with fencing, and wake-ups.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import {
  appendFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, describe, test } from "node:test";
import { openSharedStore } from "../src/shared_store/open.ts";
import {
  AlreadyDecidedError,
  type CatalogEntry,
  type CatalogFilter,
  type CatalogRow,
  LeaseHeldError,
  type SharedStore,
  StaleLeaseError,
  StoreConflictError,
  type StoredDecision,
  StoredFileTooLargeError,
  StoreUnreachableError,
  type UnreadableCatalogRow,
} from "../src/shared_store/shared_store.ts";
import { FileStore } from "../src/shared_store/files/file_store.ts";
import { storeKind } from "../src/shared_store/store_url.ts";
import { REPO, runtimeCommand } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";
import { bytes, row, spoilCatalog } from "./helpers/store_rows.ts";

function decision(over: Partial<StoredDecision> = {}): StoredDecision {
  return {
    episode_id: "ep_d",
    checkpoint_id: "chk_1",
    state_hash: "sha256:" + "1".repeat(64),
    decision: "approved",
    by: "ana",
    note: null,
    host: "host-a",
    at: "2026-11-05T10:00:00.000Z",
    ...over,
  };
}

async function waitFor(f: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A store URL that is new and empty (not initialised); `cleanup` removes what it made. */
type FreshStore = () => Promise<string>;

/** Writes a released lease of `episodeId` with `token` straight into the store at `url`, as the backend keeps it. */
type PlantLease = (url: string, episodeId: string, token: bigint) => Promise<void>;

/**
 * The conformance suite: every test opens its own new store from `fresh`.
 */
function conformance(
  name: string,
  fresh: FreshStore,
  plantLease: PlantLease,
  options: { skip?: string | false } = {},
): void {
  describe(`shared store conformance: ${name}`, { skip: options.skip ?? false }, () => {
    const opened: SharedStore[] = [];
    const open = async (url?: string) => {
      const s = await openSharedStore(url ?? await fresh());
      opened.push(s);
      return s;
    };
    const ready = async () => {
      const s = await open();
      await s.migrate();
      return s;
    };
    after(async () => {
      for (const s of opened) await s.close().catch(() => {});
    });

    test("migrate creates the schema once (racing migrators), status reports it; a store without it is refused", async () => {
      const url = await fresh();
      const s = await open(url);
      const st0 = await s.status();
      assert.equal(st0.schema_version, 0);
      assert.equal(st0.episodes, null);
      await assert.rejects(s.lineCount("ep_x", "events.jsonl"), /run noema store init/);
      const other = await open(url);
      const [a, b] = await Promise.all([s.migrate(), other.migrate()]);
      assert.equal(a.to, b.to);
      assert.ok(a.to >= 1);
      assert.deepEqual([a.from, b.from].sort(), [0, a.to]);
      const st = await s.status();
      assert.equal(st.schema_version, a.to);
      assert.equal(st.latest_version, a.to);
      assert.equal(st.episodes, 0);
      assert.equal(st.kind, s.kind);
      assert.deepEqual(await s.migrate(), { from: a.to, to: a.to }, "a second migrate is a no-op");
    });

    test("lines: exact bytes (0xff, 0x00, \\r, UTF-8) read back in order; an identical resend is ignored", async () => {
      const s = await ready();
      const lines = [bytes('{"a":1}'), new Uint8Array([0xff, 0x00, 0x0d]), bytes("é"), new Uint8Array([])];
      assert.deepEqual(await s.appendLines("ep_l", "events.jsonl", 1, lines), { inserted: 4, duplicates: 0 });
      assert.deepEqual(await s.appendLines("ep_l", "events.jsonl", 2, lines.slice(1)), { inserted: 0, duplicates: 3 });
      assert.deepEqual(await s.appendLines("ep_l", "events.jsonl", 4, [lines[3], bytes("five")]), {
        inserted: 1,
        duplicates: 1,
      });
      assert.equal(await s.lineCount("ep_l", "events.jsonl"), 5);
      assert.deepEqual(await s.readLines("ep_l", "events.jsonl", 1, 10), [...lines, bytes("five")]);
      assert.deepEqual(await s.readLines("ep_l", "events.jsonl", 3, 2), [lines[2], lines[3]]);
      assert.deepEqual(await s.readLines("ep_l", "events.jsonl", 9, 10), []);
      assert.deepEqual(await s.readLines("ep_none", "events.jsonl", 1, 10), []);
      assert.equal(await s.lineCount("ep_none", "events.jsonl"), 0);
      await s.appendLines("ep_l", "learn.jsonl", 1, [bytes("{}")]);
      assert.deepEqual(await s.streams("ep_l"), [{ stream: "events.jsonl", lines: 5 }, {
        stream: "learn.jsonl",
        lines: 1,
      }]);
    });

    test("lines come back byte for byte: UTF-8 beyond ASCII, a byte order mark, NUL, bytes that are not UTF-8", async () => {
      const s = await ready();
      const enc = (t: string) => new TextEncoder().encode(t);
      const text = [enc('{"t":"é ü \u2028 😀"}'), enc("\uFEFF{}"), enc('{"nul":"\\u0000"}'), enc("plain")];
      await s.appendLines("ep_u", "events.jsonl", 1, text);
      const odd = [new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), new Uint8Array([0x61, 0x00, 0x62]), enc("after")];
      await s.appendLines("ep_u", "events.jsonl", 5, odd);
      assert.deepEqual(await s.readLines("ep_u", "events.jsonl", 1, 10), [...text, ...odd]);
      // Sent again, the same bytes are duplicates, and other bytes a conflict, whichever way they travel.
      assert.deepEqual(await s.appendLines("ep_u", "events.jsonl", 1, text), { inserted: 0, duplicates: 4 });
      assert.deepEqual(await s.appendLines("ep_u", "events.jsonl", 5, odd), { inserted: 0, duplicates: 3 });
      await assert.rejects(
        s.appendLines("ep_u", "events.jsonl", 2, [enc("\uFEFF{ }")]),
        (e: unknown) => e instanceof StoreConflictError && e.seq === 2,
      );
    });

    test("a page of a long stream is read from the middle", async () => {
      const s = await ready();
      const many = Array.from({ length: 3000 }, (_, i) => bytes(`{"seq":${i + 1}}`));
      for (let i = 0; i < many.length; i += 1000) {
        await s.appendLines("ep_p", "events.jsonl", i + 1, many.slice(i, i + 1000));
      }
      assert.equal(await s.lineCount("ep_p", "events.jsonl"), 3000);
      assert.deepEqual(await s.readLines("ep_p", "events.jsonl", 2001, 3), many.slice(2000, 2003));
      assert.deepEqual(await s.readLines("ep_p", "events.jsonl", 2999, 100), many.slice(2998));
    });

    test("a different line under the same (episode, stream, seq) is a conflict: nothing of the batch is stored", async () => {
      const s = await ready();
      await s.appendLines("ep_c", "events.jsonl", 1, [bytes("one"), bytes("two")]);
      await assert.rejects(
        s.appendLines("ep_c", "events.jsonl", 2, [bytes("TWO"), bytes("three")]),
        (e: unknown) => e instanceof StoreConflictError && e.seq === 2 && /different bytes/.test(e.message),
      );
      await assert.rejects(
        s.appendLines("ep_c", "events.jsonl", 1, [bytes("one"), bytes("tw0"), bytes("three")]),
        (e: unknown) => e instanceof StoreConflictError && e.seq === 2,
      );
      assert.deepEqual(await s.readLines("ep_c", "events.jsonl", 1, 10), [bytes("one"), bytes("two")]);
      assert.equal(await s.lineCount("ep_c", "events.jsonl"), 2);
    });

    test("files are stored whole, with size and sha256, and replaced only when they change", async () => {
      const s = await ready();
      await s.putFile("ep_f", "state.json", bytes('{"v":1}\n'));
      await s.putFile("ep_f", "checkpoints/c1.json", bytes("{}"));
      await s.putFile("ep_f", "state.json", bytes('{"v":2}\n'));
      await s.putFile("ep_f", "blob.bin", new Uint8Array([0xff, 0x00, 0x0d, 0x0a]));
      const files = await s.listFiles("ep_f");
      assert.deepEqual(files.map((f) => [f.name, f.size]), [
        ["blob.bin", 4],
        ["checkpoints/c1.json", 2],
        ["state.json", 8],
      ]);
      assert.equal(
        files[1].sha256,
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
        "sha256 of {}",
      );
      assert.deepEqual(await s.readFile("ep_f", "state.json"), bytes('{"v":2}\n'));
      assert.deepEqual(await s.readFile("ep_f", "blob.bin"), new Uint8Array([0xff, 0x00, 0x0d, 0x0a]));
      assert.equal(await s.readFile("ep_f", "nope.json"), null);
      assert.deepEqual(await s.listFiles("ep_nothing"), []);
    });

    test("a read bounded by maxBytes never loads a larger file: it is refused, naming file and size", async () => {
      // Found by an audit: a runner published a 300 MB checkpoint and every approver's `approvals` took 2.5 GB.
      const s = await ready();
      const big = new Uint8Array(3 << 20).fill(0x7b);
      await s.putFile("ep_big", "checkpoints/chk_big.json", big);
      await assert.rejects(
        s.readFile("ep_big", "checkpoints/chk_big.json", 1 << 20),
        (e: unknown) =>
          e instanceof StoredFileTooLargeError && e.size === big.length &&
          /checkpoints\/chk_big\.json of ep_big .* 3145728 bytes, over the 1048576/.test(e.message),
      );
      assert.equal((await s.readFile("ep_big", "checkpoints/chk_big.json", 4 << 20))?.length, big.length);
      assert.equal(await s.readFile("ep_big", "nope.json", 1), null);
    });

    /**
     * Upserts a row, then waits until the store's clock has moved past the time it stored it at, so that the next
     * row is stored later (a file system's times are as coarse as its kernel's clock tick, a few ms).
     */
    const put = async (s: SharedStore, r: CatalogRow) => {
      await s.upsertCatalog(r);
      const at = Date.parse((await s.get(r.episode_id))?.stored_at ?? "");
      assert.ok(!Number.isNaN(at), "the store gave the row its stored_at");
      while (Date.now() <= at + 20) await new Promise((r) => setTimeout(r, 5));
    };

    test("the catalog: one row per episode; filters, newest stored first, limit", async () => {
      const s = await ready();
      await put(s, row("ep_1", { started_at: "2026-11-01T00:00:00.000Z", tags: { team: "infra", x: "1" } }));
      await put(s, row("ep_2", { started_at: "2026-11-02T00:00:00.000Z", status: "vetoed", host: "b" }));
      await put(
        s,
        row("ep_3", {
          started_at: "2026-11-03T00:00:00.000Z",
          run_state: "waiting_for_approval",
          status: "pending",
          outcome: null,
          adapter: "llm",
          policy_ids: ["NoPush@1.0", "PathRisk@1.0"],
          task: "Fix 100% of the_tests",
        }),
      );
      await put(s, row("ep_4", { started_at: null, task: null, run_state: "crashed", status: "error" }));
      await put(s, row("ep_0", { started_at: "2026-11-02T00:00:00.000Z", status: "error" }));
      // Written again: it keeps the place its first row was stored at.
      await put(
        s,
        row("ep_1", { started_at: "2026-11-01T00:00:00.000Z", tags: { team: "infra", x: "1" }, veto_count: 2 }),
      );
      const ids = async (f: CatalogFilter) => (await s.list(f)).map((r) => r.episode_id);
      assert.deepEqual(await ids({}), ["ep_0", "ep_4", "ep_3", "ep_2", "ep_1"]);
      assert.deepEqual(await ids({ status: ["vetoed"] }), ["ep_2"]);
      assert.deepEqual(await ids({ status: ["error"] }), ["ep_0"], "a crashed run's status is not a terminal one");
      assert.deepEqual(await ids({ status: ["crashed", "waiting_for_approval"] }), ["ep_4", "ep_3"]);
      assert.deepEqual(await ids({ status: ["pending"] }), [], "status words: terminal statuses or run states");
      assert.deepEqual(await ids({ run_state: ["waiting_for_approval"] }), ["ep_3"]);
      assert.deepEqual(await ids({ tags: { team: "infra" } }), ["ep_1"]);
      assert.deepEqual(await ids({ tags: { team: "infra", x: "2" } }), []);
      assert.deepEqual(await ids({ task: "100% of THE_" }), ["ep_3"]);
      assert.deepEqual(await ids({ task: "1_0" }), []); // _ (and %) are literal, not wildcards
      assert.deepEqual(await ids({ task: "%" }), ["ep_3"]);
      const since = (await s.get("ep_3"))!.stored_at!;
      assert.deepEqual(await ids({ since }), ["ep_0", "ep_4", "ep_3"]);
      assert.deepEqual(await ids({ host: "b" }), ["ep_2"]);
      assert.deepEqual(await ids({ adapter: "llm" }), ["ep_3"]);
      assert.deepEqual(await ids({ policy: "PathRisk@1.0" }), ["ep_3"]);
      assert.deepEqual(await ids({ policy: "Path" }), []);
      assert.deepEqual(await ids({ limit: 2 }), ["ep_0", "ep_4"]);
      assert.deepEqual(await ids({ host: "a", status: ["ok"], limit: 1 }), ["ep_1"]);
      assert.equal((await s.get("ep_1"))?.veto_count, 2);
      assert.equal(await s.get("ep_missing"), null);
      assert.equal((await s.status()).episodes, 5);
    });

    test("host clocks do not order the fleet: a host 2 h fast and one 3 h slow, ordered and filtered by the store's clock", async () => {
      const s = await ready();
      const hour = 3_600_000;
      const sinceAnHour = new Date(Date.now() - hour).toISOString(); // as --since 1h asks, before both are stored
      const fast = row("ep_fast", { host: "fast", started_at: new Date(Date.now() + 2 * hour).toISOString() });
      await put(s, fast);
      await put(s, row("ep_slow", { host: "slow", started_at: new Date(Date.now() - 3 * hour).toISOString() }));
      const ids = async (f: CatalogFilter) => (await s.list(f)).map((r) => r.episode_id);
      assert.deepEqual(await ids({}), ["ep_slow", "ep_fast"], "the run stored last comes first");
      assert.deepEqual(await ids({ since: sinceAnHour }), ["ep_slow", "ep_fast"], "a new run of a slow host is kept");
      assert.deepEqual(await ids({ since: (await s.get("ep_slow"))!.stored_at! }), ["ep_slow"]);
      // --since 1h: an hour before the store's now, whatever the reader's clock says.
      assert.deepEqual(await ids({ within_ms: hour }), ["ep_slow", "ep_fast"]);
      assert.deepEqual(await ids({ within_ms: hour, host: "fast" }), ["ep_fast"]);
      assert.deepEqual(await ids({ limit: 1 }), ["ep_slow"], "pages follow the store's clock");
      const first = (await s.get("ep_fast"))!.stored_at;
      await put(s, { ...fast, run_state: "terminal", ended_at: new Date(Date.now() + 2 * hour).toISOString() });
      assert.equal((await s.get("ep_fast"))!.stored_at, first, "a later write keeps the time it was first stored");
      assert.deepEqual(await ids({}), ["ep_slow", "ep_fast"]);
      assert.equal((await s.get("ep_fast"))!.started_at, fast.started_at, "the host's own time is kept as recorded");
    });

    test("catalog states: running → waiting for approval (the pending call) → terminal", async () => {
      const s = await ready();
      const pending = {
        checkpoint_id: "chk_01",
        state_hash: "sha256:" + "a".repeat(64),
        kind: "approval",
        step_id: "s2",
        reason: "deploys need a human",
        policy_id: "ApprovalGate@1.0",
        action: { tool: "shell", input_excerpt: "echo deploy" },
        created_at: "2026-11-04T00:00:01.000Z",
      };
      const base = { started_at: "2026-11-04T00:00:00.000Z", outcome: null, status: "pending" };
      await s.upsertCatalog(row("ep_s", { ...base, run_state: "running" }));
      assert.equal((await s.get("ep_s"))?.run_state, "running");
      assert.equal((await s.get("ep_s"))?.pending, null);
      await s.upsertCatalog(row("ep_s", { ...base, run_state: "waiting_for_approval", pending }));
      const waiting = await s.list({ run_state: ["waiting_for_approval"] });
      assert.deepEqual(waiting.map((r) => r.pending), [pending]);
      assert.deepEqual((await s.get("ep_s"))?.pending, pending);
      await s.upsertCatalog(row("ep_s", { run_state: "paused", status: "pending", outcome: null }));
      assert.deepEqual(await s.list({ status: ["paused"] }).then((r) => r.map((x) => x.episode_id)), ["ep_s"]);
      const done = row("ep_s", {
        started_at: "2026-11-04T00:00:00.000Z",
        ended_at: "2026-11-04T00:01:00.000Z",
        policy_ids: ["ApprovalGate@1.0"],
        tags: { team: "ops" },
      });
      await s.upsertCatalog(done);
      const { stored_at, ...got } = (await s.get("ep_s"))!;
      assert.deepEqual(got, done);
      assert.ok(!Number.isNaN(Date.parse(stored_at ?? "")), "stored_at, set by the store");
      assert.deepEqual(await s.list({ run_state: ["waiting_for_approval"] }), []);
    });

    test("a catalog row of the wrong types is listed as unreadable under its id, and never stops the others", async () => {
      const s = await ready();
      const pending = {
        checkpoint_id: "chk_01",
        state_hash: "sha256:" + "a".repeat(64),
        kind: "approval",
        step_id: "s2",
        reason: "deploys need a human",
        policy_id: null,
        action: { tool: "shell", input_excerpt: "echo deploy" },
        created_at: "2026-11-04T00:00:01.000Z",
      };
      const waiting = { run_state: "waiting_for_approval" as const, status: "pending", outcome: null, pending };
      const good = [
        row("ep_g1", { started_at: "2026-11-01T00:00:00.000Z", tags: { team: "x" } }),
        row("ep_g2", { started_at: "2026-11-02T00:00:00.000Z", ...waiting }),
      ];
      // Each stored after the last by the store's clock (put): the list's order is the order they were stored in.
      for (const r of good) await put(s, r);
      await put(s, row("ep_p", { started_at: "2026-11-03T00:00:00.000Z", ...waiting }));
      await put(s, row("ep_t", { started_at: "2026-11-04T00:00:00.000Z", tags: { team: "x" } }));
      await put(s, row("ep_r", { started_at: "2026-11-05T00:00:00.000Z" }));
      await spoilCatalog(s, "ep_p", "pending", "str");
      await spoilCatalog(s, "ep_t", "tags", null);
      await spoilCatalog(s, "ep_r", "run_state", "exploded");
      const all = await s.list();
      assert.deepEqual(all.map((r) => [r.episode_id, r.run_state]), [
        ["ep_r", "unreadable"],
        ["ep_t", "unreadable"],
        ["ep_p", "unreadable"],
        ["ep_g2", "waiting_for_approval"],
        ["ep_g1", "terminal"],
      ]);
      // As written, with the time the store first stored each (its own clock).
      const written = (r: CatalogEntry) => ({ ...r, stored_at: undefined });
      assert.deepEqual(all.slice(3).map(written), [good[1], good[0]].map(written), "the good rows as written");
      assert.ok(all.every((r) => typeof r.stored_at === "string"), "each with its stored_at");
      const [r, t, p] = all as UnreadableCatalogRow[];
      assert.match(r.error, /ep_r.*run_state/);
      assert.match(t.error, /ep_t.*tags/);
      assert.match(p.error, /ep_p.*pending/);
      for (const u of [r, t, p]) {
        assert.equal(u.status, "unreadable");
        assert.equal(u.host, null, "nothing the row says is shown: its host");
        assert.equal(u.task, null);
        assert.equal(u.pending, null);
      }
      assert.deepEqual(await s.get("ep_p"), p);
      assert.deepEqual(written((await s.get("ep_g2"))!), written(good[1]));
      // Filters see the fields that can be read, as SQL sees the columns: a bad field matches no filter on it.
      const ids = async (f: CatalogFilter) => (await s.list(f)).map((r) => `${r.episode_id} ${r.run_state}`);
      assert.deepEqual(await ids({ run_state: ["waiting_for_approval"] }), [
        "ep_p unreadable",
        "ep_g2 waiting_for_approval",
      ]);
      assert.deepEqual(await ids({ tags: { team: "x" } }), ["ep_g1 terminal"]);
      assert.deepEqual(await ids({ host: "a", limit: 2 }), ["ep_r unreadable", "ep_t unreadable"]);
      assert.equal((await s.status()).episodes, 5);
    });

    test("decisions: one per checkpoint; two racing deciders (two connections), one wins, the other is told who", async () => {
      const url = await fresh();
      const a = await open(url), b = await open(url);
      await a.migrate();
      assert.equal(await a.decision("ep_d", "chk_1"), null);
      const results = await Promise.allSettled([
        a.decide(decision({ by: "ana", host: "host-a" })),
        b.decide(decision({ by: "bea", host: "host-b", decision: "rejected", note: "no" })),
      ]);
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
      assert.equal(won.length, 1, JSON.stringify(results));
      assert.ok(lost[0].reason instanceof AlreadyDecidedError, String(lost[0].reason));
      const stored = await b.decision("ep_d", "chk_1");
      assert.ok(stored);
      // As recorded: PostgreSQL stamps the decider (its session_user) and the time (its clock).
      assert.deepEqual(stored, (won[0] as PromiseFulfilledResult<StoredDecision>).value);
      assert.equal(lost[0].reason.existing.by, stored.by);
      assert.equal(lost[0].reason.existing.host, stored.host);
      assert.equal(lost[0].reason.exitCode, 8);
      assert.equal(stored.state_hash, "sha256:" + "1".repeat(64));
      await a.decide(decision({ checkpoint_id: "chk_2" })); // another checkpoint is another decision
      await assert.rejects(a.decide(decision({ checkpoint_id: "chk_2", by: "cid" })), AlreadyDecidedError);
    });

    test("waiting: the runs waiting for approval, newest first, each with the decision held on the checkpoint it waits on", async () => {
      const s = await ready();
      const call = (checkpoint: string) => ({
        checkpoint_id: checkpoint,
        state_hash: "sha256:" + "1".repeat(64),
        kind: "approval",
        step_id: "s2",
        reason: "deploys need a human",
        policy_id: null,
        action: { tool: "shell", input_excerpt: "echo deploy" },
        created_at: "2026-11-04T00:00:01.000Z",
      });
      const waits = (id: string, day: number, checkpoint: string) =>
        row(id, {
          run_state: "waiting_for_approval",
          status: "pending",
          outcome: null,
          started_at: `2026-11-0${day}T00:00:00.000Z`,
          pending: call(checkpoint),
        });
      await s.upsertCatalog(waits("ep_w1", 1, "chk_w1"));
      await s.upsertCatalog(waits("ep_w2", 2, "chk_w2b")); // paused again: its first checkpoint was decided and used
      await s.upsertCatalog(waits("ep_w3", 3, "chk_w3"));
      await s.upsertCatalog(row("ep_done"));
      const d1 = await s.decide(decision({ episode_id: "ep_w1", checkpoint_id: "chk_w1", by: "ana" }));
      await s.decide(decision({ episode_id: "ep_w2", checkpoint_id: "chk_w2a", by: "bea" }));
      await s.decide(decision({ episode_id: "ep_done", checkpoint_id: "chk_d" }));
      const got = await s.waiting();
      assert.deepEqual(got.map((w) => w.row.episode_id), ["ep_w3", "ep_w2", "ep_w1"]);
      assert.deepEqual(got.map((w) => w.row), await s.list({ run_state: ["waiting_for_approval"] }));
      assert.deepEqual(
        got.map((w) => w.decision?.checkpoint_id ?? null),
        [null, null, "chk_w1"],
        "only the one waited on",
      );
      assert.deepEqual(got[2].decision, d1);
      assert.deepEqual((await s.waiting(1)).map((w) => w.row.episode_id), ["ep_w3"]);
    });

    test("decisions: two processes race to decide one checkpoint; exactly one wins", async () => {
      const url = await fresh();
      const s = await open(url);
      await s.migrate();
      const script = join(REPO, "tests", "helpers", "store_child.ts");
      const cmd = [...runtimeCommand(), script];
      for (let round = 0; round < 3; round++) {
        const chk = `chk_race_${round}`;
        const [ra, rb] = await Promise.all(
          ["ana", "bea"].map((by) =>
            runChild(cmd[0], [...cmd.slice(1), url, "decide", "ep_race", chk, "approved", by], { timeoutMs: 60_000 })
          ),
        );
        assert.deepEqual([ra.code, rb.code].sort(), [0, 8], ra.stderr + rb.stderr);
        const winner = ra.code === 0 ? "ana" : "bea";
        assert.equal((await s.decision("ep_race", chk))?.host, `host-${winner}`);
      }
    });

    test("lines: three processes append to one stream at once; each line is stored once, whole, none lost", async () => {
      const url = await fresh();
      const s = await open(url);
      await s.migrate();
      const script = join(REPO, "tests", "helpers", "store_child.ts");
      const cmd = [...runtimeCommand(), script];
      const writers = ["a", "b", "c"];
      const results = await Promise.all(
        writers.map((w) =>
          runChild(cmd[0], [...cmd.slice(1), url, "append", "ep_many", "events.jsonl", w, "150"], { timeoutMs: 90_000 })
        ),
      );
      for (const r of results) assert.equal(r.code, 0, r.stderr);
      assert.equal(await s.lineCount("ep_many", "events.jsonl"), 450);
      const got = (await s.readLines("ep_many", "events.jsonl", 1, 1000)).map((b) =>
        JSON.parse(new TextDecoder().decode(b))
      );
      for (const w of writers) {
        assert.deepEqual(got.filter((l) => l.w === w).map((l) => l.n), Array.from({ length: 150 }, (_, i) => i + 1));
      }
    });

    test("leases: one writer per episode; a stale, dead or released writer is taken over, its token fenced off", async () => {
      const s = await ready();
      const a = { host: "host-a", pid: 101 }, b = { host: "host-b", pid: 202 };
      const t1 = await s.acquireLease("ep_lease", a);
      assert.equal(await s.acquireLease("ep_lease", a), t1, "renewing keeps the token");
      await assert.rejects(
        s.acquireLease("ep_lease", b),
        (e) => e instanceof LeaseHeldError && e.owner.host === "host-a",
      );
      await s.appendLines("ep_lease", "events.jsonl", 1, [bytes("a1")], t1);
      await s.putFile("ep_lease", "state.json", bytes("{}"), t1);
      await s.upsertCatalog(row("ep_lease"), t1);
      // host-a stops renewing: after staleAfterMs, host-b takes over with a higher token.
      await new Promise((r) => setTimeout(r, 5));
      const t2 = await s.acquireLease("ep_lease", b, { staleAfterMs: 0 });
      assert.ok(t2 > t1);
      await assert.rejects(
        s.appendLines("ep_lease", "events.jsonl", 2, [bytes("a2")], t1),
        (e) => e instanceof StaleLeaseError && e.token === t1 && e.current === t2,
      );
      await assert.rejects(s.putFile("ep_lease", "state.json", bytes('{"a":2}'), t1), StaleLeaseError);
      await assert.rejects(s.upsertCatalog(row("ep_lease", { status: "vetoed" }), t1), StaleLeaseError);
      assert.deepEqual(
        await s.readLines("ep_lease", "events.jsonl", 1, 10),
        [bytes("a1")],
        "the stale write left nothing",
      );
      assert.deepEqual(await s.readFile("ep_lease", "state.json"), bytes("{}"));
      assert.equal((await s.get("ep_lease"))?.status, "ok");
      await s.appendLines("ep_lease", "events.jsonl", 2, [bytes("b2")], t2);
      await assert.rejects(s.appendLines("ep_other", "events.jsonl", 1, [bytes("x")], 7n), StaleLeaseError);
      // Another process of host-b that is gone is taken over at once; a live one is not.
      const b2 = { host: "host-b", pid: 303 };
      await assert.rejects(s.acquireLease("ep_lease", b2, { ownerGone: () => false }), LeaseHeldError);
      await assert.rejects(
        s.acquireLease("ep_lease", { host: "host-c", pid: 202 }, { ownerGone: () => true }),
        LeaseHeldError,
        "ownerGone is for this host only",
      );
      const t3 = await s.acquireLease("ep_lease", b2, { ownerGone: (pid) => pid === 202 });
      assert.ok(t3 > t2);
      // A released lease (a finished run) is free; releasing with a stale token does nothing.
      await s.releaseLease("ep_lease", t2);
      await assert.rejects(s.acquireLease("ep_lease", a), LeaseHeldError);
      await s.releaseLease("ep_lease", t3);
      const t4 = await s.acquireLease("ep_lease", a);
      assert.ok(t4 > t3);
    });

    test("fencing tokens are exact past 2^53: a planted lease is taken over with the next token, the old one is stale", async () => {
      const url = await fresh();
      const s = await open(url);
      await s.migrate();
      // 2^53 + 1 rounds to 2^53 as a number: taken over, it would repeat its predecessor's token.
      for (const planted of [2n ** 53n, 2n ** 53n + 1n]) {
        const id = `ep_big_${planted}`;
        await plantLease(url, id, planted);
        const t = await s.acquireLease(id, { host: "host-a", pid: 101 });
        assert.equal(t, planted + 1n);
        await assert.rejects(
          s.appendLines(id, "events.jsonl", 1, [bytes("old")], planted),
          (e) => e instanceof StaleLeaseError && e.token === planted && e.current === planted + 1n,
        );
        await s.appendLines(id, "events.jsonl", 1, [bytes("new")], t);
        assert.equal(await s.acquireLease(id, { host: "host-a", pid: 101 }), t, "renewing keeps the token");
        await s.releaseLease(id, t);
        const next = await s.acquireLease(id, { host: "host-b", pid: 202 });
        assert.equal(next, planted + 2n);
        await assert.rejects(s.putFile(id, "state.json", bytes("{}"), t), StaleLeaseError);
        await s.putFile(id, "state.json", bytes("{}"), next);
        assert.deepEqual(await s.readLines(id, "events.jsonl", 1, 10), [bytes("new")]);
      }
    });

    test("subscribe wakes a follower soon after lines or a catalog row of its episode are stored (by another connection)", async () => {
      const url = await fresh();
      const writer = await open(url), reader = await open(url);
      await writer.migrate();
      let wakes = 0;
      const stop = await reader.subscribe("ep_sub", () => wakes++);
      try {
        await writer.appendLines("ep_sub", "events.jsonl", 1, [bytes("{}")]);
        await waitFor(() => wakes > 0, "a wake-up after an append");
        const seen = wakes;
        await writer.upsertCatalog(row("ep_sub", { run_state: "running", status: "pending" }));
        await waitFor(() => wakes > seen, "a wake-up after a catalog change");
      } finally {
        await stop();
      }
      const after = wakes;
      await writer.appendLines("ep_sub", "events.jsonl", 2, [bytes("{}")]);
      await new Promise((r) => setTimeout(r, 600));
      assert.equal(wakes, after, "no wake-up once stopped");
    });
  });
}

// The files backend: a directory per store.
const dirs: { cleanup(): void }[] = [];
after(() => dirs.forEach((d) => d.cleanup()));
conformance(
  "files",
  () => {
    const d = tempDir("noema-filestore-");
    dirs.push(d);
    mkdirSync(join(d.path, "team share"));
    return Promise.resolve(pathToFileURL(join(d.path, "team share")).href);
  },
  (url, episodeId, token) => {
    // As an older noema wrote it: the token a JSON number, which JSON.parse would round.
    const dir = join(fileURLToPath(url), "episodes", episodeId);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(
      join(dir, "lease.json"),
      `{"host":"host-z","pid":9,"token":${token},"renewed_at":0,"released":true}\n`,
      { mode: 0o600 },
    );
    return Promise.resolve();
  },
);

// PostgreSQL: a database per store, on one server for the whole file.
const skip = pgUnavailable() ?? false;
conformance(
  "PostgreSQL",
  async () => (await startPostgres()).createDatabase(),
  async (url, episodeId, token) =>
    (await startPostgres()).psql(
      url,
      `INSERT INTO noema_leases (episode_id, host, pid, token, released) VALUES ('${episodeId}', 'host-z', 9, ${token}, true)`,
    ),
  { skip },
);

describe("shared store: what only the files backend has to guard", () => {
  const root = tempDir("noema-filestore-");
  after(() => root.cleanup());
  let n = 0;
  const store = async () => {
    const dir = join(root.path, `s${++n}`);
    const s = new FileStore(pathToFileURL(dir).href);
    await s.migrate();
    return { s, dir };
  };

  test("a crashed append's leftovers (bytes past the index, a torn index entry) are never read, and cut by the next append", async () => {
    const { s, dir } = await store();
    await s.appendLines("ep_t", "events.jsonl", 1, [bytes("one"), bytes("two")]);
    const stream = join(dir, "episodes", "ep_t", "lines", "events.jsonl");
    assert.equal(readFileSync(join(stream, "data"), "utf8"), "one\ntwo\n", "data is the stream as written");
    appendFileSync(join(stream, "data"), "half a li"); // killed after writing data, before its index entry
    appendFileSync(join(stream, "index"), new Uint8Array([0, 0, 0])); // …or in the middle of an entry
    assert.equal(await s.lineCount("ep_t", "events.jsonl"), 2);
    assert.deepEqual(await s.readLines("ep_t", "events.jsonl", 1, 10), [bytes("one"), bytes("two")]);
    assert.deepEqual(await s.appendLines("ep_t", "events.jsonl", 2, [bytes("two"), bytes("three")]), {
      inserted: 1,
      duplicates: 1,
    });
    assert.deepEqual(await s.readLines("ep_t", "events.jsonl", 1, 10), [bytes("one"), bytes("two"), bytes("three")]);
    assert.equal(readFileSync(join(stream, "data"), "utf8"), "one\ntwo\nthree\n");
  });

  test("catalog.json: not an object, not UTF-8, wrong types, copied from another episode, a link, a FIFO or huge: each unreadable under its folder's id, never read whole", async () => {
    const { s, dir } = await store();
    const ids = ["ep_ok", "ep_arr", "ep_utf8", "ep_task", "ep_tags", "ep_copy", "ep_link", "ep_fifo", "ep_huge"];
    for (const id of ids) await s.upsertCatalog(row(id, { started_at: null }));
    const file = (id: string) => join(dir, "episodes", id, "catalog.json");
    const good = readFileSync(file("ep_ok"), "utf8");
    writeFileSync(file("ep_arr"), "[]");
    writeFileSync(file("ep_utf8"), new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])); // {"\xff":1}
    writeFileSync(file("ep_task"), JSON.stringify({ ...row("ep_task", { started_at: null }), task: 123 }));
    writeFileSync(file("ep_tags"), JSON.stringify({ ...row("ep_tags", { started_at: null }), tags: null }));
    // A real row copied into another episode's folder, with a forged host and a harmless-looking action.
    writeFileSync(file("ep_copy"), good.replace('"host":"a"', '"host":"trusted-ci"'));
    rmSync(file("ep_link"));
    symlinkSync(file("ep_ok"), file("ep_link"));
    rmSync(file("ep_fifo"));
    execFileSync("mkfifo", [file("ep_fifo")]);
    truncateSync(file("ep_huge"), 1.5 * 2 ** 30); // sparse: takes no disk
    const listed = await s.list();
    // Each once (stored within the same few milliseconds, their order is the store's).
    assert.deepEqual(listed.map((r) => [r.episode_id, r.run_state]).sort(), [
      ["ep_arr", "unreadable"],
      ["ep_copy", "unreadable"],
      ["ep_fifo", "unreadable"],
      ["ep_huge", "unreadable"],
      ["ep_link", "unreadable"],
      ["ep_ok", "terminal"],
      ["ep_tags", "unreadable"],
      ["ep_task", "unreadable"],
      ["ep_utf8", "unreadable"],
    ]);
    const error = (id: string) => (listed.find((r) => r.episode_id === id) as UnreadableCatalogRow).error;
    assert.match(error("ep_arr"), /ep_arr\/catalog\.json:1: expected a JSON object/);
    assert.match(error("ep_utf8"), /ep_utf8\/catalog\.json: not valid UTF-8/);
    assert.match(error("ep_task"), /ep_task\/catalog\.json: task: expected string, got number/);
    assert.match(error("ep_tags"), /ep_tags\/catalog\.json: tags: expected Object, got null/);
    assert.match(error("ep_copy"), /ep_copy\/catalog\.json: names episode ep_ok, not ep_copy/);
    assert.match(error("ep_link"), /ep_link\/catalog\.json: is a symbolic link/);
    assert.match(error("ep_fifo"), /ep_fifo\/catalog\.json: not a regular file \(a FIFO\)/);
    assert.match(error("ep_huge"), /ep_huge\/catalog\.json: 1610612736 bytes, over noema's limit of 4194304 bytes/);
    assert.equal((await s.get("ep_copy"))?.host, null, "the forged host is not shown");
    assert.equal((await s.get("ep_ok"))?.host, "a");
    assert.equal((await s.get("ep_huge"))?.run_state, "unreadable");
    assert.equal((await s.status()).episodes, 9);
  });

  test("a gap in a stream is refused: lines follow each other", async () => {
    const { s } = await store();
    await assert.rejects(s.appendLines("ep_g", "events.jsonl", 3, [bytes("x")]), StoreConflictError);
    assert.equal(await s.lineCount("ep_g", "events.jsonl"), 0);
  });

  test("nothing is written through a symbolic link or outside the directory", async () => {
    const { s, dir } = await store();
    const elsewhere = tempDir();
    try {
      symlinkSync(elsewhere.path, join(dir, "episodes", "ep_link"));
      await assert.rejects(s.appendLines("ep_link", "events.jsonl", 1, [bytes("x")]), /symbolic link/);
      await assert.rejects(s.putFile("ep_link", "state.json", bytes("{}")), /symbolic link/);
      await assert.rejects(s.upsertCatalog(row("ep_link")), /symbolic link/);
      await assert.rejects(s.readLines("ep_link", "events.jsonl", 1, 1), /symbolic link/);
      assert.deepEqual(readdirSync(elsewhere.path), []);
      await assert.rejects(s.appendLines("../ep_x", "events.jsonl", 1, [bytes("x")]), /invalid episode id/);
      await assert.rejects(s.appendLines("ep_x", "../x", 1, [bytes("x")]), /invalid stream name/);
      await assert.rejects(s.putFile("ep_x", "../../x.json", bytes("{}")), /invalid stored file name/);
      await assert.rejects(s.putFile("ep_x", "/etc/x", bytes("{}")), /invalid stored file name/);
      assert.deepEqual(readdirSync(dirname(dir)).filter((e) => e.endsWith(".json")), [], "nothing outside");
      await s.putFile("ep_x", "a.b/c..d.json", bytes("{}")); // dots inside a name are fine
      assert.deepEqual((await s.listFiles("ep_x")).map((f) => f.name), ["a.b/c..d.json"]);
    } finally {
      elsewhere.cleanup();
    }
  });

  test("a missing directory cannot be reached; a directory without the schema asks for store init; URLs are checked", async () => {
    const gone = new FileStore(pathToFileURL(join(root.path, "not-mounted")).href);
    await assert.rejects(gone.lineCount("ep_1", "events.jsonl"), StoreUnreachableError);
    await assert.rejects(gone.status(), /cannot be reached: no such directory/);
    assert.equal(storeKind("file:///mnt/team/noema", "--store"), "files");
    assert.equal(storeKind("file://localhost/mnt/team/noema", "--store"), "files");
    assert.throws(() => storeKind("file://nas/share", "--store"), /file:\/\/\/absolute\/path/);
    assert.throws(() => storeKind("file:///", "NOEMA_STORE"), /NOEMA_STORE/);
  });
});
