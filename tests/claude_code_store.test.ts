/**
 * `noema run --using claude-code --wait` with a shared store, the real Claude
 * Code offline (a scripted Anthropic Messages server on 127.0.0.1 plays the
 * model) and a real PostgreSQL 15: host A's run defers a call the gate holds,
 * host B lists it and approves it through the store, A's run resumes the same
 * episode and finishes, and B's pulled copy is byte-identical, validates and
 * verifies.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { assertSound, bash, claudeSessions, noemaCli } from "./helpers/claude_session.ts";
import { writeAgentPolicies } from "./helpers/policies.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";
import { tree } from "./helpers/files.ts";

const skip = pgUnavailable() ?? false;

async function until<T>(f: () => Promise<T | null | undefined>, what: string, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe(
  "noema run --using claude-code --wait: a call approved on another machine (real Claude Code)",
  { skip },
  () => {
    const tmp = tempDir("noema-claude-store-");
    let pg: PgServer;
    let url: string;
    before(async () => {
      pg = await startPostgres();
      url = pg.createDatabase();
    });
    after(() => {
      pg?.stop();
      tmp.cleanup();
    });

    test(
      "A's run waits; B approves through the store; A resumes and finishes; B's pulled copy is identical and verifies",
      {
        timeout: 180_000,
      },
      async () => {
        const gate = ["--policy", join(writeAgentPolicies(join(tmp.path, "policies")), "gate.ts")];
        const s = await claudeSessions(tmp.path)([
          { text: "Deploying", tools: [bash("toolu_w1", "echo deployed > deploy.txt")] },
          { text: "Deployed." },
        ]);
        const b = join(tmp.path, "host-b");
        mkdirSync(b);
        const envA = { ...s.env, NOEMA_STORE: url, NOEMA_HOST: "host-a" };
        const envB = { ...s.env, NOEMA_STORE: url, NOEMA_HOST: "host-b" };
        try {
          assert.equal((await noemaCli(["store", "init"], envA, s.box.workspace)).code, 0);
          const runA = noemaCli(
            [
              "run",
              "deploy",
              "--using",
              "claude-code",
              "--workspace",
              s.box.workspace,
              "--root",
              s.box.root,
              ...gate,
              "--wait",
              "90s",
              "--json",
            ],
            envA,
            s.box.workspace,
          );
          // B sees the waiting call in the fleet's list, and approves it.
          const waiting = await until(async () => {
            const r = await noemaCli(["approvals", "--json", "--root", b], envB, b);
            assert.equal(r.code, 0, r.stderr);
            return (JSON.parse(r.stdout) as { episode_id: string; host: string; pending: { reason: string } }[])[0];
          }, "the waiting call in the store");
          assert.equal(waiting.host, "host-a");
          assert.equal(existsSync(join(s.box.workspace, "deploy.txt")), false, "held: not run before the decision");
          const approve = await noemaCli(
            ["approve", waiting.episode_id, "--by", "bea", "--note", "go", "--json", "--root", b],
            envB,
            b,
          );
          assert.equal(approve.code, 0, approve.stderr);
          const ra = await runA;
          assert.equal(ra.code, 0, ra.stderr);
          const out = JSON.parse(ra.stdout.trim().split("\n").pop()!);
          assert.equal(out.episode_id, waiting.episode_id);
          assert.equal(out.status, "ok");
          assert.equal(readFileSync(join(s.box.workspace, "deploy.txt"), "utf8").trim(), "deployed");
          assert.equal(s.server.toolResults().get("toolu_w1")?.is_error ?? false, false, "the model got its result");
          const dir = out.episode_dir as string;
          const [approval] = readdirSync(join(dir, "approvals"));
          const rec = JSON.parse(readFileSync(join(dir, "approvals", approval), "utf8"));
          assert.deepEqual([rec.by, rec.claimed_by, rec.authenticated_as], ["noema@host-b", "bea", "database_role"]);
          assert.ok(rec.consumed_at, "the resumed run used it");
          await assertSound(s, dir);
          // B pulls the finished run once A published it all: byte-identical; validate and verify pass on the copy.
          const marker = join(s.box.root, "state", "publish-pending", out.episode_id);
          await until(() => Promise.resolve(!existsSync(marker)), "A's publishing");
          const pull = await noemaCli(["pull", out.episode_id, "--root", b], envB, b);
          assert.equal(pull.code, 0, pull.stderr);
          assert.deepEqual(tree(join(b, "episodes", out.episode_id)), tree(dir));
          for (const verb of ["validate", "verify"]) {
            const r = await noemaCli([verb, out.episode_id, "--root", b], envB, b);
            assert.equal(r.code, 0, `${verb}: ${r.stdout}${r.stderr}`);
          }
        } finally {
          await s.server.close();
        }
      },
    );
  },
);

describe("noema run --using claude-code with the shared store unreachable (real Claude Code)", () => {
  const tmp = tempDir("noema-claude-store-down-");
  after(() => tmp.cleanup());

  test("the run goes on locally, says so once, and records it as a runtime event", { timeout: 120_000 }, async () => {
    const s = await claudeSessions(tmp.path)([{ text: "Nothing to do." }]);
    try {
      // Port 1 on 127.0.0.1: connection refused at once.
      const env = { ...s.env, NOEMA_STORE: "postgres://noema:s3cret-pw@127.0.0.1:1/noema" };
      const args = ["run", "look around", "--using", "claude-code", "--workspace", s.box.workspace];
      const r = await noemaCli([...args, "--root", s.box.root, "--json"], env, s.box.workspace);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stderr.match(/the run goes on locally/g)?.length, 1, r.stderr);
      const dir = JSON.parse(r.stdout.trim().split("\n").pop()!).episode_dir as string;
      const events = readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      const down = events.filter((e) => e.phase === "runtime" && e.event_type === "store.unavailable");
      assert.equal(down.length, 1, "one store.unavailable runtime event");
      assert.ok(!JSON.stringify(down[0]).includes("s3cret-pw"), "the password is masked");
      assert.ok(
        events.findIndex((e) => e.phase === "terminate") > events.indexOf(down[0]),
        "recorded before terminate",
      );
      await assertSound(s, dir);
    } finally {
      await s.server.close();
    }
  });
});
