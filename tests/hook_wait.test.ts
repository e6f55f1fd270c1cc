/**
 * An interactive Claude Code session's hook waits for a decision made on
 * another machine (`noema hook … --wait`, `install-hooks --wait`), over a real
 * PostgreSQL 15: host A's hook holds a call the approval gate stops, host B
 * sees it in `noema approvals` and decides it, and A's hook answers allow or
 * deny, the decision recorded in A's episode as a local `noema approve` would
 * record it. Both hook paths: a hook process answering in its own process, and
 * the resident hook server.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { after, before, describe, test } from "node:test";
import { PostgresStore } from "../src/shared_store/postgres/postgres_store.ts";
import { pullEpisode } from "../src/shared_store/pull.ts";
import { runChild } from "./helpers/child.ts";
import { cli, hookCommand, REPO } from "./helpers/cli.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";
import { stopHookServers } from "./helpers/processes.ts";
import { tree } from "./helpers/files.ts";

const skip = pgUnavailable() ?? false;
const GATE = join(REPO, "plugins/policies/approval-gate.ts");
const [NOEMA, ...PRE] = hookCommand(); // the binary, or bun and bin/noema.ts

async function until<T>(
  f: () => T | null | undefined | Promise<T | null | undefined>,
  what: string,
  timeoutMs = 60_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("an interactive session's hook waits for a decision made on another machine", { skip }, () => {
  let pg: PgServer;
  let url: string;
  before(async () => {
    pg = await startPostgres();
    url = pg.createDatabase();
    assert.equal(cli(["store", "init", "--store", url]).code, 0);
  });
  after(() => pg?.stop());

  /** Host A's session: a hook call per event, through a hook process (and the resident server when `servers`). */
  function session(dir: string, hookArgs: string[], servers: string | null) {
    const root = join(dir, ".noema");
    const env: Record<string, string | undefined> = {
      ...process.env,
      NOEMA_STORE: url,
      NOEMA_HOST: "host-a",
      ...(servers === null
        ? { NOEMA_HOOK_SERVER: "0" }
        // A client waits for the server's answer longer than the hook's --wait, whatever its usual timeout (2 s here).
        : {
          NOEMA_HOOK_SERVER_DIR: servers,
          NOEMA_HOOK_SERVER_LOG: join(dir, "server.log"),
          NOEMA_HOOK_SERVER_EMPTY_IDLE_MS: "500",
          NOEMA_HOOK_SERVER_TIMEOUT_MS: "2000",
        }),
    };
    const id = `sess-${Math.random().toString(36).slice(2)}`;
    const call = (payload: Record<string, unknown>, more: Record<string, string> = {}) =>
      runChild(NOEMA, [...PRE, "hook", "claude-code", "--root", root, ...hookArgs], {
        cwd: dir,
        input: JSON.stringify({ session_id: id, cwd: dir, ...payload }),
        env: { ...env, ...more },
        timeoutMs: 180_000,
      });
    const bash = (
      kind: string,
      useId: string,
      command: string,
      extra: Record<string, unknown> = {},
      more: Record<string, string> = {},
    ) =>
      call({ hook_event_name: kind, tool_name: "Bash", tool_input: { command }, tool_use_id: useId, ...extra }, more);
    /** A call as its own child process, to kill while it waits. */
    const spawned = (payload: Record<string, unknown>) => {
      const child = spawn(NOEMA, [...PRE, "hook", "claude-code", "--root", root, ...hookArgs], {
        cwd: dir,
        env,
        stdio: ["pipe", "ignore", "ignore"],
      });
      child.stdin!.end(JSON.stringify({ session_id: id, cwd: dir, ...payload }));
      return child;
    };
    return { root, call, bash, spawned };
  }

  /** Host B: the call A's session (episodes under `root`) waits on, from the fleet's list, once A published it. */
  async function waitingOn(b: string, root: string) {
    return await until(() => {
      const ids = existsSync(join(root, "episodes")) ? readdirSync(join(root, "episodes")) : [];
      const r = cli(["--root", b, "approvals", "--json"], { env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" } });
      assert.equal(r.code, 0, r.stderr);
      return (JSON.parse(r.stdout) as {
        episode_id: string;
        host: string;
        pending: { reason: string; checkpoint_id: string };
      }[])
        .find((w) => ids.includes(w.episode_id));
    }, "the waiting call in the store");
  }

  for (const path of ["a hook process", "the resident hook server"]) {
    test(
      `${path}: B approves the held call; A's hook answers allow, records bea@host-b, and the shared copy equals A's`,
      {
        timeout: 300_000,
      },
      async () => {
        const a = tempDir(), b = tempDir();
        const servers = path === "a hook process" ? null : join(a.path, "servers");
        if (servers) mkdirSync(servers, { mode: 0o700 });
        try {
          const s = session(a.path, ["--policy", GATE, "--wait", "60s"], servers);
          assert.equal((await s.call({ hook_event_name: "UserPromptSubmit", prompt: "build and deploy" })).code, 0);
          if (servers) {
            // The first call started the server; the session's next calls go to it once it listens (a person
            // types slower than it starts; a loaded test machine may not).
            const log = join(a.path, "server.log");
            await until(
              () => existsSync(log) && readFileSync(log, "utf8").includes("listening on"),
              "the server",
              60_000,
            );
          }
          const built = await s.bash("PreToolUse", "t1", "echo built");
          assert.equal(built.code, 0, built.stderr);
          assert.equal(
            (await s.bash("PostToolUse", "t1", "echo built", { tool_response: { stdout: "built" } })).code,
            0,
          );
          const heldAt = Date.now();
          const held = s.bash("PreToolUse", "t2", "echo deploy done");
          const waiting = await waitingOn(b.path, s.root);
          // Decided after the client's usual reply timeout (2 s): the server's answer must still be awaited.
          await new Promise((r) => setTimeout(r, Math.max(0, heldAt + 3000 - Date.now())));
          assert.equal(waiting.host, "host-a");
          assert.ok(waiting.pending.reason.includes("Approval required"), JSON.stringify(waiting));
          const approve = cli(["--root", b.path, "approve", waiting.episode_id, "--by", "bea", "--note", "ok"], {
            env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" },
          });
          assert.equal(approve.code, 0, approve.stderr);
          const answer = await held;
          assert.equal(answer.code, 0, answer.stderr);
          if (servers) {
            // Its log, not its socket: a server with no episode open stops after 500 ms idle (and removes the socket).
            const log = existsSync(join(a.path, "server.log")) ? readFileSync(join(a.path, "server.log"), "utf8") : "";
            assert.match(log, /answered exit 0/, "a resident server answered the session's calls");
          }
          // Allowed, said so: Claude Code does not ask its own user again (nor deny it, headless).
          assert.equal(JSON.parse(answer.stdout).hookSpecificOutput?.permissionDecision, "allow", answer.stdout);
          const id = waiting.episode_id;
          const dir = join(s.root, "episodes", id);
          const approvals = readdirSync(join(dir, "approvals"));
          const rec = JSON.parse(readFileSync(join(dir, "approvals", approvals[0]), "utf8"));
          assert.equal(rec.decision, "approved");
          assert.deepEqual([rec.by, rec.claimed_by, rec.authenticated_as], ["noema@host-b", "bea", "database_role"]);
          assert.equal(rec.note, "ok");
          assert.ok(rec.consumed_at, "the call used it");
          const ran = await s.bash("PostToolUse", "t2", "echo deploy done", {
            tool_response: { stdout: "deploy done" },
          });
          assert.equal(ran.code, 0, ran.stderr);
          const stop = await s.call({ hook_event_name: "Stop", last_assistant_message: "deployed" });
          const serverLog = servers && existsSync(join(a.path, "server.log"))
            ? readFileSync(join(a.path, "server.log"), "utf8").slice(-4000)
            : "";
          assert.equal(stop.code, 0, `${stop.stderr}\n${serverLog}`);
          const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
          assert.equal(state.outcomes.status, "ok");
          // The episode reaches the store: the server publishes it; a call answered in its own process leaves it
          // pending for the next command (sync here).
          if (!servers) {
            const sync = cli(["--root", s.root, "sync"], { env: { NOEMA_STORE: url, NOEMA_HOST: "host-a" } });
            assert.equal(sync.code, 0, sync.stderr);
          }
          const db = new PostgresStore(url);
          try {
            // A slow publish is handed to a background `noema sync`, which waits for the lease up to 120 s.
            await until(async () => (await db.get(id))?.run_state === "terminal", "the terminal catalog row", 150_000)
              .catch((e) => {
                // What the server did, and what it left pending, to tell a lost publish from a slow one.
                const log = existsSync(join(a.path, "server.log"))
                  ? readFileSync(join(a.path, "server.log"), "utf8")
                  : "";
                const pending = join(s.root, "state", "publish-pending");
                const left = existsSync(pending) ? readdirSync(pending) : [];
                throw new Error(`${(e as Error).message}; pending: ${JSON.stringify(left)}; server log:\n${log}`);
              });
            await pullEpisode(db, id, b.path);
          } finally {
            await db.close();
          }
          assert.deepEqual(tree(join(b.path, "episodes", id)), tree(dir));
          const v = cli(["--root", b.path, "verify", id]);
          assert.equal(v.code, 0, v.stdout + v.stderr);
        } finally {
          if (servers) await stopHookServers(servers); // and waits: it writes its episode as it stops
          a.cleanup();
          b.cleanup();
        }
      },
    );
  }

  for (const path of ["a hook process", "the resident hook server"]) {
    test(`${path}: a call run beside the waiting one has its result recorded at once; the decision still applies`, {
      timeout: 300_000,
    }, async () => {
      // Found by an audit: the waiting hook held the episode (its lock, or the server's one lane) for the whole wait,
      // so the result of a call Claude Code ran beside it waited, then failed, and was recorded as not run.
      const a = tempDir(), b = tempDir();
      const servers = path === "a hook process" ? null : join(a.path, "servers");
      if (servers) mkdirSync(servers, { mode: 0o700 });
      try {
        const s = session(a.path, ["--policy", GATE, "--wait", "150s"], servers);
        assert.equal((await s.call({ hook_event_name: "UserPromptSubmit", prompt: "build and deploy" })).code, 0);
        if (servers) {
          const log = join(a.path, "server.log");
          await until(() => existsSync(log) && readFileSync(log, "utf8").includes("listening on"), "the server");
        }
        assert.equal((await s.bash("PreToolUse", "t0", "ls")).code, 0);
        const held = s.bash("PreToolUse", "t1", "./deploy.sh");
        const first = await waitingOn(b.path, s.root);
        // Its client waits up to 60 s, less than the wait (150 s): answered only if the wait let the episode go.
        const ran = await s.bash("PostToolUse", "t0", "ls", { tool_response: { stdout: "a b" } }, {
          NOEMA_HOOK_SERVER_TIMEOUT_MS: "60000",
        });
        assert.equal(ran.code, 0, ran.stderr);
        // The call waits again at a new checkpoint, which the waiting hook publishes: B decides that one.
        const again = await until(async () => {
          const w = await waitingOn(b.path, s.root);
          return w.pending.checkpoint_id !== first.pending.checkpoint_id ? w : null;
        }, "the new checkpoint in the store");
        const approve = cli([
          "--root",
          b.path,
          "approve",
          again.episode_id,
          "--checkpoint",
          again.pending.checkpoint_id,
        ], {
          env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" },
        });
        assert.equal(approve.code, 0, approve.stderr);
        const answer = await held;
        assert.equal(answer.code, 0, answer.stderr);
        assert.equal(JSON.parse(answer.stdout).hookSpecificOutput?.permissionDecision, "allow", answer.stdout);
        await s.bash("PostToolUse", "t1", "./deploy.sh", { tool_response: { stdout: "deployed" } });
        assert.equal((await s.call({ hook_event_name: "Stop" })).code, 0);
        const dir = join(s.root, "episodes", again.episode_id);
        const v = cli(["validate", dir, "--profile", "noema", "--strict"]);
        assert.equal(v.code, 0, v.stdout + v.stderr);
        const actions = JSON.parse(readFileSync(join(dir, "state.json"), "utf8")).outcomes.actions;
        assert.deepEqual(actions.map((x: { result_status: string }) => x.result_status), ["ok", "ok"]);
      } finally {
        if (servers) await stopHookServers(servers);
        a.cleanup();
        b.cleanup();
      }
    });
  }

  test(
    "the resident server: a waiting hook its agent killed stops waiting; a later decision applies at the next call",
    {
      timeout: 300_000,
    },
    async () => {
      // Found by an audit: the server went on waiting for the killed client's call, every later call of the session
      // queued behind it for the whole --wait.
      const a = tempDir(), b = tempDir();
      const servers = join(a.path, "servers");
      mkdirSync(servers, { mode: 0o700 });
      try {
        const s = session(a.path, ["--policy", GATE, "--wait", "150s"], servers);
        assert.equal((await s.call({ hook_event_name: "UserPromptSubmit", prompt: "deploy" })).code, 0);
        const log = join(a.path, "server.log");
        await until(() => existsSync(log) && readFileSync(log, "utf8").includes("listening on"), "the server", 60_000);
        const waiter = s.spawned({
          hook_event_name: "PreToolUse",
          tool_name: "Bash",
          tool_input: { command: "./deploy.sh" },
          tool_use_id: "t1",
        });
        const gone = new Promise((r) => waiter.once("exit", r));
        const waiting = await waitingOn(b.path, s.root);
        waiter.kill("SIGKILL");
        await gone;
        // Its client waits up to 60 s for the server's answer, less than the killed call's wait (150 s): the server
        // answers it only if it stopped waiting when the killed client left.
        const next = await s.bash("PreToolUse", "t2", "echo next", {}, { NOEMA_HOOK_SERVER_TIMEOUT_MS: "60000" });
        assert.equal(next.code, 0, next.stderr);
        assert.match(JSON.parse(next.stdout).hookSpecificOutput.permissionDecisionReason, /waiting for a human/);
        const approve = cli(["--root", b.path, "approve", waiting.episode_id], {
          env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" },
        });
        assert.equal(approve.code, 0, approve.stderr);
        const third = await s.bash("PreToolUse", "t3", "echo third", {}, { NOEMA_HOOK_SERVER_TIMEOUT_MS: "60000" });
        assert.equal(third.code, 0, third.stderr);
        assert.notEqual(JSON.parse(third.stdout || "{}").hookSpecificOutput?.permissionDecision, "deny", third.stdout);
        assert.equal((await s.call({ hook_event_name: "Stop" })).code, 0);
        const v = cli(["validate", join(s.root, "episodes", waiting.episode_id), "--profile", "noema", "--strict"]);
        assert.equal(v.code, 0, v.stdout + v.stderr);
      } finally {
        await stopHookServers(servers);
        a.cleanup();
        b.cleanup();
      }
    },
  );

  test("B rejects: the hook answers deny, saying who rejected it", async () => {
    const a = tempDir(), b = tempDir();
    try {
      const s = session(a.path, ["--policy", GATE, "--wait", "60s"], null);
      assert.equal((await s.call({ hook_event_name: "UserPromptSubmit", prompt: "deploy" })).code, 0);
      const held = s.bash("PreToolUse", "t1", "echo deploy");
      const waiting = await waitingOn(b.path, s.root);
      const reject = cli(["--root", b.path, "reject", waiting.episode_id, "--by", "cid", "--note", "not today"], {
        env: { NOEMA_STORE: url, NOEMA_HOST: "host-b" },
      });
      assert.equal(reject.code, 0, reject.stderr);
      const answer = await held;
      assert.equal(answer.code, 0, answer.stderr);
      const out = JSON.parse(answer.stdout).hookSpecificOutput;
      assert.equal(out.permissionDecision, "deny");
      assert.match(out.permissionDecisionReason, /Rejected by noema@host-b \(claimed: cid\): not today/);
      // Decided and applied: the session waits for nobody any more (its checkpoint stays, as the record).
      const listed = cli(["--root", s.root, "list", "--json"]);
      const entry = JSON.parse(listed.stdout).find((e: { episode_id: string }) => e.episode_id === waiting.episode_id);
      assert.notEqual(entry?.run_state, "waiting_for_approval", listed.stdout);
    } finally {
      a.cleanup();
      b.cleanup();
    }
  });

  test("a wait that runs out: deny (decided by timeout), or abort (the episode ends aborted)", async () => {
    const a = tempDir();
    try {
      // A wait of 5 s, not 1 s: the hook must reach the store within its wait, or the wait decides nothing and the call
      // stays asked ("ask"), which a busy machine made it answer.
      const s = session(a.path, ["--policy", GATE, "--wait", "5s"], null);
      assert.equal((await s.call({ hook_event_name: "UserPromptSubmit", prompt: "deploy" })).code, 0);
      const denied = await s.bash("PreToolUse", "t1", "echo deploy");
      assert.equal(denied.code, 0, denied.stderr);
      assert.equal(JSON.parse(denied.stdout).hookSpecificOutput.permissionDecision, "deny");
      const [id] = readdirSync(join(s.root, "episodes"));
      const dir = join(s.root, "episodes", id, "approvals");
      const rec = JSON.parse(readFileSync(join(dir, readdirSync(dir)[0]), "utf8"));
      assert.equal(rec.decision, "rejected");
      assert.deepEqual([rec.by, rec.claimed_by], ["noema", "timeout"]);

      const s2 = session(join(a.path), ["--policy", GATE, "--wait", "5s", "--approval-timeout", "abort"], null);
      assert.equal((await s2.call({ hook_event_name: "UserPromptSubmit", prompt: "deploy again" })).code, 0);
      const aborted = await s2.bash("PreToolUse", "t1", "echo deploy");
      assert.equal(aborted.code, 0, aborted.stderr);
      assert.equal(JSON.parse(aborted.stdout).hookSpecificOutput.permissionDecision, "deny");
      const other = readdirSync(join(s2.root, "episodes")).find((e) => e !== id)!;
      const state = JSON.parse(readFileSync(join(s2.root, "episodes", other, "state.json"), "utf8"));
      assert.equal(state.outcomes.status, "aborted");
    } finally {
      a.cleanup();
    }
  });

  test("install-hooks claude-code --wait 10m registers the wait and a hook timeout longer than it; no store: exit 2", () => {
    const a = tempDir();
    try {
      const local = join(a.path, ".claude", "settings.local.json");
      const lone = cli(["install-hooks", "claude-code", "--wait", "10m"], {
        cwd: a.path,
        env: { NOEMA_STORE: undefined },
      });
      assert.equal(lone.code, 2, lone.stdout);
      assert.match(lone.stderr, /--wait: no shared store is configured/);
      assert.ok(!existsSync(join(a.path, ".claude")), "nothing registered");
      const env = { NOEMA_STORE: `file://${join(a.path, "store")}` };
      const r = cli(["install-hooks", "claude-code", "--wait", "10m", "--approval-timeout", "abort", "--json"], {
        cwd: a.path,
        env,
      });
      assert.equal(r.code, 0, r.stderr);
      const settings = JSON.parse(readFileSync(local, "utf8"));
      const pre = settings.hooks.PreToolUse[0].hooks[0];
      assert.match(pre.command, / hook claude-code .*--wait 10m --approval-timeout abort/);
      assert.ok(pre.timeout > 600, `timeout ${pre.timeout} s`);
      // Installing again keeps it; --no-wait removes it.
      assert.equal(cli(["install-hooks", "claude-code"], { cwd: a.path, env }).code, 0);
      const kept = JSON.parse(readFileSync(local, "utf8"));
      assert.match(kept.hooks.PreToolUse[0].hooks[0].command, /--wait 10m/);
      assert.equal(cli(["install-hooks", "claude-code", "--no-wait"], { cwd: a.path, env }).code, 0);
      const none = JSON.parse(readFileSync(local, "utf8"));
      assert.doesNotMatch(none.hooks.PreToolUse[0].hooks[0].command, /--wait/);
      assert.equal(none.hooks.PreToolUse[0].hooks[0].timeout, undefined);
      assert.equal(cli(["install-hooks", "codex", "--wait", "10m"], { cwd: a.path, env }).code, 2);
      assert.ok(!existsSync(join(a.path, ".codex", "hooks.json")));
      writeFileSync(join(a.path, "x"), "");
    } finally {
      a.cleanup();
    }
  });
});
