/**
 * The shared store keeps a published run's one decision: a decision taken on the holding machine without the store
 * neither runs the held action nor overrules the fleet's, and the holder's own `approve` racing its `run --wait`
 * leaves both told the truth. Over a files store (`file:///…`): the same code decides for PostgreSQL.
 *
 * @module
 */
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import process from "node:process";
import { describe, test } from "node:test";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { tempDir } from "./helpers/tmp.ts";
import { decide } from "../src/serve/approvals.ts";
import { storeDecide } from "../src/serve/store_source.ts";
import { HttpError } from "../src/serve/paths.ts";
import { processGone } from "../src/store/lock.ts";
import { applyDecision } from "../src/cli/store_approvals.ts";
import { pendingCheckpoint } from "../src/runtime/resume.ts";
import { checkpointDigest } from "../src/store/checkpoint_digest.ts";

const gate = join(REPO, "plugins/policies/approval-gate.ts");

/** A shell task whose second step deploys (creates `deployed` in `ws`): the approval gate holds it. */
function deployTask(dir: string): string {
  const path = join(dir, "deploy.json");
  mkdirSync(join(dir, "ws"), { recursive: true });
  writeFileSync(
    path,
    JSON.stringify({
      task: "build and deploy",
      using: "shell",
      workspace: "ws",
      policies: [gate],
      steps: [
        { kind: "act", description: "build", inputs: { command: "echo built" } },
        { kind: "act", description: "deploy", inputs: { command: "touch deployed && echo deploy done" } },
      ],
    }),
  );
  return path;
}

/** A store, and host A's root holding a run paused at the deploy step, published to the store. */
function pausedRun(t: { path: string }): { url: string; a: string; b: string; id: string; ws: string } {
  const url = pathToFileURL(join(t.path, "share")).href;
  assert.equal(cli(["store", "init", "--store", url]).code, 0);
  const a = join(t.path, "a"), b = join(t.path, "b"), ws = join(t.path, "ws");
  const r = cli(["--root", a, "run", deployTask(t.path), "--json"], {
    cwd: t.path,
    env: { NOEMA_STORE: url, NOEMA_HOST: "host-a" },
  });
  assert.equal(r.code, 4, r.stderr);
  return { url, a, b, ws, id: JSON.parse(r.stdout).episode_id };
}

/**
 * Waits (a bound that only catches hangs) until the run's last publish is done and its publishing process (the one
 * its pending marker names) is gone: that process holds the run's lease till then, and a resume is refused meanwhile.
 */
async function published(root: string, id: string): Promise<void> {
  const marker = join(root, "state", "publish-pending", id);
  const until = Date.now() + 120_000;
  let pid: number | null = null;
  while ((existsSync(marker) || (pid !== null && !processGone(pid))) && Date.now() < until) {
    const named = existsSync(marker) ? Number(readFileSync(marker, "utf8").trim()) : NaN;
    if (Number.isInteger(named) && named > 0) pid = named;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(existsSync(marker), false, "published");
}

const approvals = (root: string, id: string) => readdirSync(join(root, "episodes", id, "approvals")).sort();

describe("the store keeps a published run's one decision", () => {
  test("without the store, the holder may neither decide nor resume it (exit 2, naming the store)", async () => {
    const t = tempDir();
    try {
      const { a, id, url, ws } = pausedRun(t);
      await published(a, id);
      const env = { NOEMA_STORE: undefined, NOEMA_HOST: "host-a" };
      for (const args of [["approve", id], ["reject", id], ["resume", id]]) {
        const r = cli(["--root", a, ...args], { env });
        assert.equal(r.code, 2, `${args[0]}: ${r.stderr}`);
        assert.ok(r.stderr.includes(`is published to ${url}`), r.stderr);
      }
      assert.equal(existsSync(join(a, "episodes", id, "approvals")), false, "nothing decided");
      const r = cli(["--root", a, "approve", id, "--resume"], { env: { NOEMA_STORE: url, NOEMA_HOST: "host-a" } });
      assert.equal(r.code, 0, r.stderr);
      assert.ok(existsSync(join(ws, "deployed")), "decided through the store, it ran");
      assert.equal(existsSync(join(a, "state", "published", id)), false, "the run ended: its marker is gone");
    } finally {
      t.cleanup();
    }
  });

  test("a decision made here without the store is set aside for the store's: the fleet's rejection holds", async () => {
    const t = tempDir();
    try {
      const { a, b, id, url, ws } = pausedRun(t);
      await published(a, id);
      // As an older noema (or a hand) would: the marker gone, a local approval is recorded.
      rmSync(join(a, "state", "published", id));
      const local = cli(["--root", a, "approve", id, "--by", "ana"], {
        env: { NOEMA_STORE: undefined, NOEMA_HOST: "host-a" },
      });
      assert.equal(local.code, 0, local.stderr);
      const refused = cli(["--root", a, "resume", id], { env: { NOEMA_STORE: url, NOEMA_HOST: "host-a" } });
      assert.equal(refused.code, 6, "the store holds no decision: nothing runs");
      assert.match(refused.stderr, /was made without the store, and .* holds no decision/);
      assert.equal(existsSync(join(ws, "deployed")), false);

      const rejected = cli(["--root", b, "reject", id, "--by", "bob", "--note", "NO"], {
        env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" },
      });
      assert.equal(rejected.code, 0, rejected.stderr);
      const resumed = cli(["--root", a, "resume", id], { env: { NOEMA_STORE: url, NOEMA_HOST: "host-a" } });
      assert.equal(resumed.code, 3, "the store's rejection applies: " + resumed.stderr);
      assert.match(resumed.stderr, /is not the decision the store holds \(rejected by .*bob.*\): .* set aside/);
      assert.equal(existsSync(join(ws, "deployed")), false, "the held action did not run");
      const files = approvals(a, id);
      assert.equal(files.length, 2);
      assert.match(files[1], /^chk_[0-9a-f]+\.json\.overruled-\d+$/);
      const kept = JSON.parse(readFileSync(join(a, "episodes", id, "approvals", files[0]), "utf8"));
      assert.deepEqual([kept.decision, kept.claimed_by], ["rejected", "bob"]);
      const aside = JSON.parse(readFileSync(join(a, "episodes", id, "approvals", files[1]), "utf8"));
      assert.deepEqual([aside.decision, aside.claimed_by], ["approved", "ana"], "kept as evidence");
      const v = cli(["--root", a, "validate", id, "--profile", "noema"]);
      assert.equal(v.code, 0, v.stdout + v.stderr);
      assert.equal(cli(["--root", a, "verify", id]).code, 0);
    } finally {
      t.cleanup();
    }
  });

  test("a hand-written record copying only the store's decision and time is set aside for the store's", async () => {
    const t = tempDir();
    try {
      const { a, b, id, url, ws } = pausedRun(t);
      await published(a, id);
      const rejected = cli(["--root", b, "reject", id, "--by", "bob", "--note", "NO"], {
        env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" },
      });
      assert.equal(rejected.code, 0, rejected.stderr);
      const decisions = join(t.path, "share", "episodes", id, "decisions");
      const stored = JSON.parse(readFileSync(join(decisions, readdirSync(decisions)[0]), "utf8"));
      const chk = stored.checkpoint_id;
      const checkpoint = JSON.parse(readFileSync(join(a, "episodes", id, "checkpoints", `${chk}.json`), "utf8"));
      const own = {
        schema_version: "approval/1.0",
        episode_id: id,
        checkpoint_id: chk,
        state_hash: checkpoint.state_hash,
        checkpoint_digest: checkpointDigest(checkpoint),
        decision: stored.decision,
        by: `${stored.by}@${stored.host}`,
        at: stored.at,
        note: stored.note,
        consumed_at: null,
        consumed_by: null,
        authenticated_as: stored.authenticated_as,
        database_role: stored.database_role ?? null,
        claimed_by: stored.claimed_by,
      };
      // Each forgery keeps the store's decision and time: another decider and note, or no checkpoint digest.
      const forgeries = [
        { by: "mallory", note: "forged", authenticated_as: "serve_token", claimed_by: null },
        { checkpoint_digest: null },
      ];
      const dir = join(a, "episodes", id);
      mkdirSync(join(dir, "approvals"), { recursive: true });
      const said: string[] = [];
      for (const forged of forgeries) {
        writeFileSync(join(dir, "approvals", `${chk}.json`), JSON.stringify({ ...own, ...forged }));
        const kept = applyDecision(pendingCheckpoint(id, { root: a }), stored, (line) => said.push(line));
        assert.deepEqual(kept, own, `the store's record, over ${JSON.stringify(forged)}`);
        const record = JSON.parse(readFileSync(join(dir, "approvals", `${chk}.json`), "utf8"));
        assert.deepEqual(record, own);
      }
      assert.equal(said.length, 2, said.join("\n"));
      assert.match(said[0], /\(rejected by mallory\) is not the decision the store holds \(rejected by .*bob.*\)/);
      assert.equal(approvals(a, id).filter((f) => f.includes(".overruled-")).length, 2, "both kept as evidence");
      // The store's own record, applied again, is kept as it is (nothing set aside).
      applyDecision(pendingCheckpoint(id, { root: a }), stored, (line) => said.push(line));
      assert.equal(said.length, 2);

      writeFileSync(join(dir, "approvals", `${chk}.json`), JSON.stringify({ ...own, ...forgeries[0] }));
      const resumed = cli(["--root", a, "resume", id], { env: { NOEMA_STORE: url, NOEMA_HOST: "host-a" } });
      assert.equal(resumed.code, 3, resumed.stderr);
      assert.doesNotMatch(resumed.stderr + resumed.stdout, /rejected by mallory: forged/);
      assert.equal(existsSync(join(ws, "deployed")), false);
      const final = JSON.parse(readFileSync(join(dir, "approvals", `${chk}.json`), "utf8"));
      assert.deepEqual([final.by, final.note, final.claimed_by], [own.by, "NO", "bob"]);
    } finally {
      t.cleanup();
    }
  });

  test("a copy of a published run, decided and resumed without the store, is not published over the store's decision", async () => {
    // Found by an audit: `cp -a` of a paused, published episode to another root, approved there without the store
    // and resumed; `noema sync` then published it: the catalog said it ran while the decision log said rejected.
    const t = tempDir();
    try {
      const { a, b, id, url } = pausedRun(t);
      await published(a, id);
      const rejected = cli(["--root", b, "reject", id, "--by", "bob", "--note", "no"], {
        env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" },
      });
      assert.equal(rejected.code, 0, rejected.stderr);
      const c = join(t.path, "c");
      mkdirSync(join(c, "episodes"), { recursive: true });
      cpSync(join(a, "episodes", id), join(c, "episodes", id), { recursive: true });
      const local = { NOEMA_STORE: undefined, NOEMA_HOST: "host-a" };
      assert.equal(cli(["--root", c, "approve", id, "--note", "copy says yes"], { env: local }).code, 0);
      const ran = cli(["--root", c, "resume", id], { env: local });
      assert.equal(ran.code, 0, ran.stderr);
      const catalog = () => JSON.parse(readFileSync(join(t.path, "share", "episodes", id, "catalog.json"), "utf8"));
      const before = JSON.stringify(catalog());
      const files = () => readdirSync(join(t.path, "share", "episodes", id, "files")).sort().join(",");
      const stored = files();
      const sync = cli(["--root", c, "sync"], { env: { NOEMA_STORE: url, NOEMA_HOST: "host-a" } });
      assert.notEqual(sync.code, 0, sync.stdout + sync.stderr);
      assert.match(
        sync.stderr,
        new RegExp(
          `${id}: approvals/chk_[0-9a-f]+\\.json \\(approved by .*\\) is not the store's decision: .* holds another decision on chk_[0-9a-f]+ \\(rejected by`,
        ),
      );
      assert.match(sync.stderr, /nothing of .* was published/);
      assert.equal(JSON.stringify(catalog()), before, "the catalog still says it waits");
      assert.equal(catalog().run_state, "waiting_for_approval");
      assert.equal(files(), stored, "no file of the copy was published");
      // The holder applies the store's rejection and publishes it, as ever.
      const resumed = cli(["--root", a, "resume", id], { env: { NOEMA_STORE: url, NOEMA_HOST: "host-a" } });
      assert.equal(resumed.code, 3, resumed.stderr);
    } finally {
      t.cleanup();
    }
  });

  test("a pulled copy takes no decision without the store (exit 2; serve 409), naming the store", async () => {
    // Found by an audit: `noema approve ID` without the store on a copy pulled from it exited 0, leaving an
    // approvals/<chk>.json nothing would ever apply.
    const t = tempDir();
    try {
      const { a, id, url } = pausedRun(t);
      await published(a, id);
      const c = join(t.path, "c");
      const pulled = cli(["--root", c, "pull", id], { env: { NOEMA_STORE: url } });
      assert.equal(pulled.code, 0, pulled.stderr);
      const location = JSON.parse(readFileSync(join(c, "state", "pulled", id), "utf8")).store;
      assert.ok(typeof location === "string" && location.length > 0, "the marker names the store");
      for (const verb of ["approve", "reject"]) {
        const r = cli(["--root", c, verb, id, "--note", "here"], { env: { NOEMA_STORE: undefined } });
        assert.equal(r.code, 2, `${verb}: ${r.stderr}`);
        assert.ok(r.stderr.includes(`${id} is a copy pulled from ${location}`), r.stderr);
      }
      assert.equal(existsSync(join(c, "episodes", id, "approvals")), false, "nothing decided");
      assert.throws(
        () => decide(c, id, { decision: "approved", note: null, by: null, checkpointId: null }),
        (e) => e instanceof HttpError && e.status === 409 && e.message.includes(`a copy pulled from ${location}`),
      );
      assert.equal(existsSync(join(c, "episodes", id, "approvals")), false, "nothing decided by the server");
    } finally {
      t.cleanup();
    }
  });

  test("a decider's note and name reach the store masked, as they reach the episode", async () => {
    const t = tempDir();
    try {
      const { b, id, url, a } = pausedRun(t);
      await published(a, id);
      const token = "ghp_" + "a1B2".repeat(9);
      const r = cli(["--root", b, "approve", id, "--note", `ok ${token}`, "--by", `ana ${token}`, "--json"], {
        env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" },
      });
      assert.equal(r.code, 0, r.stderr);
      assert.ok(!r.stdout.includes(token), r.stdout);
      const decisions = join(t.path, "share", "episodes", id, "decisions");
      const stored = readdirSync(decisions).map((n) => readFileSync(join(decisions, n), "utf8")).join("\n");
      assert.ok(stored.includes("[REDACTED]"), stored);
      assert.ok(!stored.includes(token), "the token never reaches the store");
    } finally {
      t.cleanup();
    }
  });

  test("a note over 4,000 characters is refused (400) over a store as in an episode, before the store is asked", async () => {
    const src = { root: "/nonexistent", store: { get: () => Promise.reject(new Error("the store was asked")) } };
    await assert.rejects(
      storeDecide(src as never, "ep_1", { decision: "approved", note: "x".repeat(4001), by: null, checkpointId: null }),
      (e) => e instanceof HttpError && e.status === 400 && /at most 4000 characters/.test(e.message),
    );
  });

  test("a server without the store decides nothing on a published run (409)", () => {
    const t = tempDir();
    try {
      const { a, id, url } = pausedRun(t);
      assert.throws(
        () => decide(a, id, { decision: "approved", note: null, by: null, checkpointId: null }),
        (e) => e instanceof HttpError && e.status === 409 && e.message.includes(url),
      );
    } finally {
      t.cleanup();
    }
  });

  test("the holder's approve --resume racing its own run --wait: the action runs once, both exit 0", async () => {
    const t = tempDir();
    try {
      const url = pathToFileURL(join(t.path, "share")).href;
      assert.equal(cli(["store", "init", "--store", url]).code, 0);
      const a = join(t.path, "a"), ws = join(t.path, "ws");
      const env = { ...process.env, NOEMA_STORE: url };
      const [cmd, ...args] = cliCommand();
      let stderr = "";
      const waiting = runChild(cmd, [...args, "--root", a, "run", deployTask(t.path), "--wait", "2m", "--json"], {
        cwd: t.path,
        env,
        timeoutMs: 150_000,
        onStderr: (chunk) => void (stderr += chunk),
      });
      const until = Date.now() + 60_000;
      while (!stderr.includes("waits for approval of") && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const id = readdirSync(join(a, "episodes"))[0];
      const approve = await runChild(cmd, [...args, "--root", a, "approve", id, "--resume", "--json"], {
        env,
        timeoutMs: 120_000,
      });
      const run = await waiting;
      assert.equal(run.code, 0, run.stderr);
      assert.ok(existsSync(join(ws, "deployed")));
      // Whichever resumed it: the waiting run (the approver says so, or, caught while it resumes, that it holds the
      // run: exit 10), or the approver itself (its result). Never "already decided" (8): its decision is the one.
      if (approve.code === 10) assert.match(approve.stderr, /that process applies its decisions/);
      else {
        assert.equal(approve.code, 0, approve.stderr);
        const out = JSON.parse(approve.stdout);
        assert.ok(out.resumed_by_another_process === true || out.status === "ok", approve.stdout);
      }
      const events = readFileSync(join(a, "episodes", id, "events.jsonl"), "utf8");
      assert.equal(events.split("\n").filter((l) => l.includes('"event_type":"run.resume"')).length, 1);
    } finally {
      t.cleanup();
    }
  });
});
