// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
/**
 * The resident hook server (src/agents/server/): the first `noema hook` call
 * of a session answers in its own process and starts a server; later calls
 * are answered by it over a Unix socket, with the same verdicts, into one
 * valid episode. Parallel calls, a call handled by another process in
 * between, a policy that throws and the server's stop when its directory is
 * removed are covered. The server needs Bun, so every call runs
 * `bun bin/noema.ts` whichever runtime runs the tests.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { validate } from "noema";
import { REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";
import { runChild } from "./helpers/child.ts";
import { replyTimeoutMs } from "../src/agents/server/client.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
const BUN = join(REPO, "node_modules", ".bin", "bun");
const ENTRY = join(REPO, "bin", "noema.ts");
const policy = join(tmp.path, "guard.ts");
writeFileSync(
  policy,
  `export default {
  name: "Guard",
  version: "1.0",
  advise(state) {
    const c = String(state.action.command ?? "");
    if (c.includes("git push")) return { kind: "veto", advice: "no pushes from agents", confidence: 0.9 };
    if (c.includes("explode")) throw new Error("the guard exploded");
    // A slow decision: longer than the server's short idle time in the test that uses it, shorter than the 5 s policy
    // timeout (past it, the call would be denied).
    if (c.includes("slowly")) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3500);
  },
};
`,
);

interface Hook {
  code: number | null;
  out: string;
  err: string;
}

async function hook(root: string, servers: string, payload: unknown, env: Record<string, string> = {}): Promise<Hook> {
  const r = await runChild(
    BUN,
    [ENTRY, "hook", "claude-code", "--root", root, "--policy", policy, "--print", "--grant", "--no-finish"],
    {
      cwd: tmp.path,
      input: typeof payload === "string" ? payload : JSON.stringify(payload),
      env: {
        ...process.env,
        NOEMA_HOOK_SERVER_DIR: servers,
        NOEMA_HOOK_SERVER_LOG: join(servers, "..", "server.log"),
        ...env,
      },
    },
  );
  return { code: r.code, out: r.stdout, err: r.stderr };
}

function pre(session: string, id: string, command: string) {
  return {
    session_id: session,
    transcript_path: join(tmp.path, "t.jsonl"),
    cwd: tmp.path,
    permission_mode: "default",
    hook_event_name: "PreToolUse",
    tool_name: "Bash",
    tool_input: { command },
    tool_use_id: id,
  };
}

function post(session: string, id: string, command: string, stdout: string) {
  return { ...pre(session, id, command), hook_event_name: "PostToolUse", tool_response: { stdout, stderr: "" } };
}

async function waitFor(check: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}

function episodeDir(root: string): string {
  const ids = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
  assert.equal(ids.length, 1, "one episode for the session");
  return join(root, "episodes", ids[0]);
}

function events(dir: string): any[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

function box(name: string) {
  const dir = join(tmp.path, name);
  const servers = join(dir, "servers");
  mkdirSync(servers, { recursive: true, mode: 0o700 });
  return { root: join(dir, ".noema"), servers, log: join(dir, "server.log") };
}

/** Real processes on a machine that may be loaded: far more than they need, far less than forever. */
const REAL_AGENT_TIMEOUT_MS = 60_000;

describe("how long a hook waits for the server", () => {
  test("it gives up (exit 2, the call blocked) before the agent's own hook timeout would kill it and run the call", () => {
    const saved = process.env.NOEMA_HOOK_SERVER_TIMEOUT_MS;
    delete process.env.NOEMA_HOOK_SERVER_TIMEOUT_MS;
    try {
      // The agent's timeout (60 s; with --wait D, install-hooks registers D + 30 s), less a margin and the time spent.
      const plain = replyTimeoutMs([]), waiting = replyTimeoutMs(["hook", "claude-code", "--wait", "40s"]);
      assert.ok(plain <= 50_000 && plain >= 1_000, String(plain));
      assert.ok(waiting <= 60_000 && waiting > plain, String(waiting));
    } finally {
      if (saved !== undefined) process.env.NOEMA_HOOK_SERVER_TIMEOUT_MS = saved;
    }
  });
});

describe("resident hook server", () => {
  test(
    "later calls are answered by the server: same verdicts, one valid episode",
    { timeout: REAL_AGENT_TIMEOUT_MS },
    async () => {
      const b = box("serial");
      const first = await hook(b.root, b.servers, pre("s1", "toolu_1", "ls"));
      assert.equal(first.code, 0, first.err);
      await waitFor(() => readdirSync(b.servers).some((n) => n.endsWith(".sock")));
      await new Promise((r) => setTimeout(r, 300));
      const veto = await hook(b.root, b.servers, pre("s1", "toolu_2", "git push origin main"));
      assert.equal(veto.code, 0, veto.err);
      const answer = JSON.parse(veto.out).hookSpecificOutput;
      assert.equal(answer.permissionDecision, "deny");
      assert.match(answer.permissionDecisionReason, /no pushes from agents/);
      assert.equal((await hook(b.root, b.servers, post("s1", "toolu_1", "ls", "a.txt"))).code, 0);
      const allow = await hook(b.root, b.servers, pre("s1", "toolu_3", "pwd"));
      assert.equal(JSON.parse(allow.out).hookSpecificOutput.permissionDecision, "allow");
      assert.match(readFileSync(b.log, "utf8"), /answered exit 0/, "the server answered calls");
      // Stopping the server (its directory removed) writes the state and releases the episode.
      rmSync(b.servers, { recursive: true, force: true });
      await waitFor(() => /stopping/.test(readFileSync(b.log, "utf8")));
      const dir = episodeDir(b.root);
      await waitFor(() => !existsSync(join(dir, "lock")));
      const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
      assert.deepEqual(state.plan.steps.map((s: any) => s.status), ["done", "vetoed", "pending"]);
      const recorded = state.outcomes.actions.find((a: any) => a.step_id === "step-1");
      assert.match(JSON.stringify(recorded.output), /a\.txt/, "the result recorded through the server");
      assert.deepEqual(validate(dir).problems, []);
    },
  );

  test(
    "a server with no episode open (a no-op SessionStart) stops after the short idle time; one with an episode stays",
    {
      timeout: REAL_AGENT_TIMEOUT_MS,
    },
    async () => {
      const env = { NOEMA_HOOK_SERVER_EMPTY_IDLE_MS: "3000", NOEMA_HOOK_SERVER_IDLE_MS: "600000" };
      const start = (session: string) => ({
        session_id: session,
        transcript_path: join(tmp.path, "t.jsonl"),
        cwd: tmp.path,
        hook_event_name: "SessionStart",
        source: "startup",
      });
      const idle = box("idle-empty");
      assert.equal((await hook(idle.root, idle.servers, start("s-empty"), env)).code, 0);
      await waitFor(() => existsSync(idle.log) && /listening/.test(readFileSync(idle.log, "utf8")));
      await waitFor(() => /stopping/.test(readFileSync(idle.log, "utf8")), 15_000);
      const busy = box("idle-busy");
      assert.equal((await hook(busy.root, busy.servers, pre("s-busy", "toolu_1", "ls"), env)).code, 0);
      await waitFor(() => existsSync(busy.log) && /listening/.test(readFileSync(busy.log, "utf8")));
      assert.equal((await hook(busy.root, busy.servers, pre("s-busy", "toolu_2", "pwd"), env)).code, 0);
      await new Promise((r) => setTimeout(r, 5000)); // past the short idle time
      assert.doesNotMatch(readFileSync(busy.log, "utf8"), /stopping/, "an open episode keeps its server");
      rmSync(busy.servers, { recursive: true, force: true });
      await waitFor(() => /stopping/.test(readFileSync(busy.log, "utf8")));
    },
  );

  test("the idle timer does not stop the server in the middle of a call: the call is answered, then it stops", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const env = { NOEMA_HOOK_SERVER_EMPTY_IDLE_MS: "2000", NOEMA_HOOK_SERVER_IDLE_MS: "2000" };
    const b = box("idle-mid-call");
    const start = {
      session_id: "s-mid",
      transcript_path: join(tmp.path, "t.jsonl"),
      cwd: tmp.path,
      hook_event_name: "SessionStart",
      source: "startup",
    };
    assert.equal((await hook(b.root, b.servers, start, env)).code, 0);
    await waitFor(() => existsSync(b.log) && /listening/.test(readFileSync(b.log, "utf8")));
    const slow = await hook(b.root, b.servers, pre("s-mid", "toolu_slow", "echo slowly"), env);
    assert.equal(JSON.parse(slow.out).hookSpecificOutput.permissionDecision, "allow", slow.err);
    await waitFor(() => /stopping/.test(readFileSync(b.log, "utf8")), 15_000);
    const log = readFileSync(b.log, "utf8");
    // The server settled the slow call before it stopped (it used to stop mid-call and drop its connection).
    const settled = log.lastIndexOf("settled in"), stopping = log.indexOf("stopping");
    assert.ok(settled !== -1 && settled < stopping, log);
  });

  test("parallel calls and a call handled by another process in between stay one consistent log", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const b = box("parallel");
    assert.equal((await hook(b.root, b.servers, pre("s2", "toolu_0", "echo 0"))).code, 0);
    await waitFor(() => readdirSync(b.servers).some((n) => n.endsWith(".sock")));
    const calls = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => hook(b.root, b.servers, pre("s2", `toolu_${i}`, `echo ${i}`))),
    );
    for (const c of calls) assert.equal(JSON.parse(c.out).hookSpecificOutput.permissionDecision, "allow", c.err);
    // Without the server: this process loads the episode itself; the server notices and reloads it.
    const direct = await hook(b.root, b.servers, pre("s2", "toolu_6", "echo 6"), { NOEMA_HOOK_SERVER: "0" });
    assert.equal(direct.code, 0, direct.err);
    const again = await hook(b.root, b.servers, pre("s2", "toolu_7", "echo 7"));
    assert.equal(JSON.parse(again.out).hookSpecificOutput.permissionDecision, "allow", again.err);
    // The same call asked twice is answered once (idempotent per tool_use_id).
    await hook(b.root, b.servers, pre("s2", "toolu_7", "echo 7"));
    rmSync(b.servers, { recursive: true, force: true });
    await waitFor(() => /stopping/.test(readFileSync(b.log, "utf8")));
    const dir = episodeDir(b.root);
    await new Promise((r) => setTimeout(r, 300));
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
    assert.equal(state.plan.steps.length, 8, "eight distinct calls, eight steps");
    const ids = state.plan.steps.map((s: any) => s.id);
    assert.equal(new Set(ids).size, ids.length, "no step id twice");
    const candidates = events(dir).filter((e) => e.phase === "action_candidate");
    assert.equal(candidates.length, 8);
    assert.deepEqual(validate(dir).problems, []);
  });

  test("a server started from a removed directory exits at once instead of spinning (Bun's net would)", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const b = box("gone");
    const cwd = join(tmp.path, "gone", "cwd");
    mkdirSync(cwd);
    const code = await new Promise<number | null>((resolve, reject) => {
      // The shell removes its own working directory, then becomes the server (spawn needs a directory that exists).
      const args = [ENTRY, "hook", "claude-code", "--root", b.root, "--policy", policy];
      const child = spawn("sh", ["-c", 'rmdir "$PWD" && exec "$0" "$@"', BUN, ...args], {
        cwd,
        env: { ...process.env, NOEMA_HOOK_SERVE: join(b.servers, "x.sock") },
        stdio: "ignore",
      });
      const timer = setTimeout(() => {
        child.kill("SIGKILL");
        reject(new Error("the server did not exit")); // a bound that catches the spin, not a speed
      }, 60_000);
      child.on("close", (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    assert.equal(code, 0);
    assert.equal(existsSync(cwd), false, "it ran from a removed directory");
  });

  test("a policy that throws denies the call (fail closed) through the server too; bad stdin exits 2", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const b = box("fail");
    assert.equal((await hook(b.root, b.servers, pre("s3", "toolu_1", "ls"))).code, 0);
    await waitFor(() => readdirSync(b.servers).some((n) => n.endsWith(".sock")));
    await new Promise((r) => setTimeout(r, 300));
    const boom = await hook(b.root, b.servers, pre("s3", "toolu_2", "explode now"));
    assert.equal(boom.code, 0, boom.err);
    const denied = JSON.parse(boom.out).hookSpecificOutput;
    assert.equal(denied.permissionDecision, "deny");
    assert.match(denied.permissionDecisionReason, /the guard exploded.*fail_closed/);
    assert.equal(readFileSync(b.log, "utf8").match(/answered exit 0/g)?.length, 1, "the server answered it");
    // An edited policy file is refused mid-episode, as a new process would refuse it.
    writeFileSync(policy, readFileSync(policy, "utf8") + "// edited\n");
    const edited = await hook(b.root, b.servers, pre("s3", "toolu_3", "ls"));
    assert.equal(edited.code, 2, edited.out);
    assert.match(edited.err, /changed since the run started/);
    const garbage = await hook(b.root, b.servers, "{not json");
    assert.equal(garbage.code, 2);
    assert.match(garbage.err, /not JSON/);
    rmSync(b.servers, { recursive: true, force: true });
    await waitFor(() => /stopping/.test(readFileSync(b.log, "utf8")));
  });

  test("every launch path reaches the server: the package launcher (npx noema), and global options before hook", {
    timeout: REAL_AGENT_TIMEOUT_MS,
  }, async () => {
    const launchers: [string, string[]][] = [
      ["node", [join(REPO, "bin", "noema.mjs")]],
      [BUN, [ENTRY]],
    ];
    for (const [n, [cmd, pre0]] of launchers.entries()) {
      const b = box(`launch-${n}`);
      const env = { ...process.env, NOEMA_HOOK_SERVER_DIR: b.servers, NOEMA_HOOK_SERVER_LOG: b.log };
      // The global option first, as `noema --root DIR hook …` is written.
      const args = [...pre0, "--root", b.root, "hook", "claude-code", "--policy", policy, "--print", "--grant"];
      const call = (id: string, command: string) =>
        runChild(cmd, args, { cwd: tmp.path, input: JSON.stringify(pre(`launch-${n}`, id, command)), env });
      const first = await call("toolu_1", "ls");
      assert.equal(first.code, 0, first.stderr);
      await waitFor(() => existsSync(b.log) && /listening/.test(readFileSync(b.log, "utf8")));
      const veto = await call("toolu_2", "git push origin main");
      assert.equal(JSON.parse(veto.stdout).hookSpecificOutput.permissionDecision, "deny", `${cmd}: ${veto.stderr}`);
      assert.equal(
        readFileSync(b.log, "utf8").match(/answered exit 0/g)?.length,
        1,
        `${cmd}: the server answered the second call`,
      );
      // The server serves the --root given before hook.
      rmSync(b.servers, { recursive: true, force: true });
      await waitFor(() => /stopping/.test(readFileSync(b.log, "utf8")));
      const dir = episodeDir(b.root);
      await waitFor(() => !existsSync(join(dir, "lock")));
      const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
      assert.deepEqual(state.plan.steps.map((s: any) => s.status), ["pending", "vetoed"]);
    }
  });
});
