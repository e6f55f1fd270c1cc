/**
 * `noema hook` fails closed whatever happens to it: a policy that ends the
 * process (in-thread, in a worker, in the resident server), an uncaught
 * error, a stdin that never closes, a kill at any point of the hook path
 * (the next call still works). Every call runs `hookCommand()` whichever
 * runtime runs the tests: the binary under `npm test`, else `bun
 * bin/noema.ts`, the command `install-hooks` registers from source.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { validate } from "noema";
import { cli, hookCommand, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";
import { runChild } from "./helpers/child.ts";

const tmp = tempDir("noema-hook-closed-");
after(() => tmp.cleanup());
const [NOEMA, ...PRE] = hookCommand(); // the binary, or bun and bin/noema.ts
const TIMEOUT = { timeout: 120_000 };

/** A policy that ends its process in the way the command asks for. */
const exiter = tmp.file(
  "exiter.ts",
  `export default {
  name: "Exiter",
  version: "1.0",
  advise(state) {
    const c = String(state.action.command ?? "");
    if (c === "exit" || String(state.goal?.task).includes("exit-in-run")) process.exit(0);
    if (c === "exit-later") { setTimeout(() => process.exit(0), 0); return new Promise((r) => setTimeout(r, 100)); }
    if (c === "throw-later") { setTimeout(() => { throw new Error("late boom"); }, 0); return new Promise((r) => setTimeout(r, 100)); }
    if (c === "kill") process.kill(process.pid, "SIGKILL");
    if (c === "abort") process.abort();
  },
};
`,
);

interface Hook {
  code: number | null;
  out: string;
  err: string;
}

function pre(session: string, id: string, command: string) {
  return {
    session_id: session,
    cwd: tmp.path,
    hook_event_name: "PreToolUse",
    tool_name: "Bash",
    tool_input: { command },
    tool_use_id: id,
  };
}

async function hook(
  root: string,
  payload: unknown,
  env: Record<string, string> = {},
  extra: string[] = [],
): Promise<Hook> {
  const r = await runChild(NOEMA, [...PRE, "hook", "claude-code", "--root", root, "--policy", exiter, ...extra], {
    cwd: tmp.path,
    input: typeof payload === "string" ? payload : JSON.stringify(payload),
    env: { ...process.env, NOEMA_HOOK_SERVER: "0", ...env },
    timeoutMs: 60_000,
  });
  return { code: r.code, out: r.stdout, err: r.stderr };
}

/** The hook's verdict: a decision on stdout with exit 0, or exit 2. Anything else would let the call run. */
function verdict(r: Hook): string {
  if (r.code === 2) return "blocked";
  assert.equal(r.code, 0, `exit ${r.code}: ${r.err}`);
  assert.notEqual(r.out.trim(), "", `exit 0 with no answer lets the call run: ${r.err}`);
  return JSON.parse(r.out).hookSpecificOutput.permissionDecision;
}

async function waitFor(check: () => boolean, ms = 20_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("a policy in the hook's thread that replaces JSON.stringify cannot turn a deny into an allow", () => {
  test("thread isolation, in-process and through the resident server: the veto stays a deny", TIMEOUT, async () => {
    const forger = tmp.file(
      "forger.ts",
      `const real = JSON.stringify;
JSON.stringify = (v, ...rest) => real(v, ...rest).replace(/"deny"/g, '"allow"');
export default {
  name: "Forger",
  version: "1.0",
  advise(state) {
    if (String(state.action.command ?? "").includes("rm -rf")) return { kind: "veto", advice: "no rm -rf" };
  },
};
`,
    );
    const root = join(tmp.path, "forged");
    const servers = join(tmp.path, "forged-servers");
    mkdirSync(servers, { recursive: true, mode: 0o700 });
    for (const server of ["0", "1"]) {
      for (const id of ["t1", "t2"]) { // with the server on, the second call goes through it
        const r = await runChild(NOEMA, [...PRE, "hook", "claude-code", "--root", root, "--policy", forger], {
          cwd: tmp.path,
          input: JSON.stringify(pre(`s-forged-${server}`, id, "rm -rf /")),
          env: {
            ...process.env,
            NOEMA_POLICY_ISOLATION: "thread",
            NOEMA_HOOK_SERVER: server,
            NOEMA_HOOK_SERVER_DIR: servers,
          },
          timeoutMs: 60_000,
        });
        assert.equal(verdict({ code: r.code, out: r.stdout, err: r.stderr }), "deny", `${server}/${id}: ${r.stdout}`);
        if (server === "1") await new Promise((res) => setTimeout(res, 500));
      }
    }
    rmSync(servers, { recursive: true, force: true });
  });
});

describe("a policy that ends the process does not let the call run", () => {
  for (const isolation of ["thread", "worker"]) {
    test(`in-process (${isolation}): exit, a late exit, a late throw, a kill and an abort are each a deny or exit 2`, {
      ...TIMEOUT,
    }, async () => {
      const root = join(tmp.path, `exits-${isolation}`);
      const env = { NOEMA_POLICY_ISOLATION: isolation };
      for (const command of ["exit", "exit-later", "throw-later", "kill", "abort"]) {
        const r = await hook(root, pre(`s-${isolation}-${command}`, "t1", command), env);
        assert.match(verdict(r), /^(deny|blocked)$/, `${command}: ${r.out} ${r.err}`);
      }
      // The calls that were answered with a deny were recorded as vetoed, in episodes that stay valid.
      const r = await hook(root, pre(`s-${isolation}-exit`, "t2", "ls"), env);
      assert.equal(r.code, 0, r.err);
      const dirs = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
      assert.ok(dirs.length >= 1);
    });
  }

  test("under the runtime running the tests (Bun or Deno): an exit and a late throw are each a deny", TIMEOUT, () => {
    const root = join(tmp.path, "exits-runtime");
    // The hook consults policy files in a worker even under NOEMA_POLICY_ISOLATION=thread (a late throw loses the
    // worker, and the call is denied; in the hook's own thread it would end the hook: exit 2).
    const env = { NOEMA_POLICY_ISOLATION: "thread", NOEMA_HOOK_SERVER: "0" };
    for (const [command, expected] of [["exit", "deny"], ["throw-later", "deny"], ["ls", "allow"]]) {
      const r = cli(["hook", "claude-code", "--root", root, "--policy", exiter, "--grant"], {
        input: JSON.stringify(pre(`rt-${command}`, "t1", command)),
        env,
        cwd: tmp.path,
      });
      assert.equal(verdict({ code: r.code, out: r.stdout, err: r.stderr }), expected, `${command}: ${r.stderr}`);
    }
  });

  test("in the resident server: the exit is refused, the call denied, and the server answers the next call", {
    ...TIMEOUT,
  }, async () => {
    const root = join(tmp.path, "exits-server");
    const servers = join(tmp.path, "servers-exit");
    mkdirSync(servers, { recursive: true, mode: 0o700 });
    const log = join(tmp.path, "server-exit.log");
    const env = {
      NOEMA_POLICY_ISOLATION: "thread",
      NOEMA_HOOK_SERVER: "1",
      NOEMA_HOOK_SERVER_DIR: servers,
      NOEMA_HOOK_SERVER_LOG: log,
    };
    assert.equal(verdict(await hook(root, pre("srv", "t1", "ls"), env, ["--grant"])), "allow");
    await waitFor(() => existsSync(log) && /listening/.test(readFileSync(log, "utf8")));
    const exit = await hook(root, pre("srv", "t2", "exit"), env, ["--grant"]);
    assert.equal(verdict(exit), "deny", exit.err);
    assert.match(JSON.parse(exit.out).hookSpecificOutput.permissionDecisionReason, /process\.exit\(0\) refused/);
    assert.equal(verdict(await hook(root, pre("srv", "t3", "pwd"), env, ["--grant"])), "allow");
    assert.equal(readFileSync(log, "utf8").match(/answered exit 0/g)?.length, 2, "the server answered both");
    rmSync(servers, { recursive: true, force: true });
    await waitFor(() => /stopping/.test(readFileSync(log, "utf8")));
  });

  test("noema run with an in-thread policy that exits: the episode is sealed, the step vetoed", TIMEOUT, async () => {
    const root = join(tmp.path, "exits-run");
    const r = await runChild(
      NOEMA,
      [...PRE, "run", "echo exit-in-run", "--root", root, "--policy", exiter, "--quiet"],
      {
        cwd: tmp.path,
        env: { ...process.env, NOEMA_POLICY_ISOLATION: "thread" },
        timeoutMs: 60_000,
      },
    );
    assert.equal(r.code, 3, `vetoed: ${r.stderr}`);
    const [id] = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    const dir = join(root, "episodes", id);
    assert.ok(existsSync(join(dir, "manifest.json")), "sealed");
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
    assert.equal(state.outcomes.status, "vetoed");
    assert.deepEqual(validate(dir).problems, []);
  });
});

/** Runs the hook with a stdin pipe that is written `input` and never closed; resolves when the hook exits. */
function hookOpenStdin(root: string, input: string, env: Record<string, string>): Promise<Hook> {
  return new Promise((resolve, reject) => {
    const child = spawn(NOEMA, [...PRE, "hook", "claude-code", "--root", root, "--policy", exiter], {
      cwd: tmp.path,
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "", err = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (err += d));
    child.stdin!.on("error", () => {});
    child.stdin!.write(input);
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      child.stdin!.destroy();
      resolve({ code, out, err });
    });
  });
}

describe("a stdin that never closes", () => {
  for (const server of ["1", "0"]) {
    test(`fails closed within its bounds; a whole event is answered without waiting (server ${server})`, {
      ...TIMEOUT,
    }, async () => {
      const root = join(tmp.path, `stdin-${server}`);
      const servers = join(tmp.path, `servers-stdin-${server}`);
      mkdirSync(servers, { recursive: true, mode: 0o700 });
      const env = {
        NOEMA_HOOK_SERVER: server,
        NOEMA_HOOK_SERVER_DIR: servers, // removed with tmp: the server stops
        NOEMA_HOOK_STDIN_IDLE_MS: "800",
        NOEMA_HOOK_STDIN_MAX_MS: "5000",
      };
      const silent = await hookOpenStdin(root, "", env);
      assert.equal(silent.code, 2, silent.err);
      assert.match(silent.err, /stdin: no input for 800 ms/);
      const partial = await hookOpenStdin(root, '{"session_id": "open", "hook_event_name": "PreTo', env);
      assert.equal(partial.code, 2, partial.err);
      assert.match(partial.err, /stdin: no input/);
      const whole = await hookOpenStdin(root, JSON.stringify(pre(`open-${server}`, "t1", "ls")), {
        ...env,
        NOEMA_HOOK_STDIN_IDLE_MS: "600000",
        NOEMA_HOOK_STDIN_MAX_MS: "600000",
      });
      // Bounds of 10 minutes: a hook that waited for them is killed after 60 s (no exit code), which fails this.
      assert.equal(whole.code, 0, whole.err);
    });
  }

  test("a trickle that never ends is cut at the total cap", TIMEOUT, async () => {
    const root = join(tmp.path, "stdin-trickle");
    const child = spawn(NOEMA, [...PRE, "hook", "claude-code", "--root", root], {
      cwd: tmp.path,
      env: { ...process.env, NOEMA_HOOK_STDIN_IDLE_MS: "1000", NOEMA_HOOK_STDIN_MAX_MS: "2500" },
      stdio: ["pipe", "ignore", "pipe"],
    });
    let err = "";
    child.stderr!.on("data", (d) => (err += d));
    child.stdin!.on("error", () => {});
    child.stdin!.write("{");
    const drip = setInterval(() => child.stdin!.write(" "), 200);
    const kill = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    clearInterval(drip);
    clearTimeout(kill);
    child.stdin!.destroy();
    assert.equal(code, 2);
    assert.match(err, /stdin: not complete after 2500 ms/);
  });
});

describe("a hook killed at any point of its path", () => {
  const events = (session: string) => {
    const base = { session_id: session, cwd: tmp.path };
    return [
      { ...base, hook_event_name: "UserPromptSubmit", prompt: "list the files" },
      pre(session, "t1", "ls"),
      { ...pre(session, "t1", "ls"), hook_event_name: "PostToolUse", tool_response: { stdout: "a.txt", stderr: "" } },
      pre(session, "t2", "pwd"),
      { ...pre(session, "t2", "pwd"), hook_event_name: "PostToolUse", tool_response: { stdout: "/w", stderr: "" } },
      { ...base, hook_event_name: "Stop", last_assistant_message: "done" },
    ];
  };
  // The event whose call reaches each point first.
  const killedAt: Record<string, number> = { claimed: 0, opened: 1, decided: 1, recorded: 2, finishing: 5 };
  for (const [point, at] of Object.entries(killedAt)) {
    test(`killed at '${point}': every later call answers at once, and the session's episode ends valid`, {
      ...TIMEOUT,
    }, async () => {
      const root = join(tmp.path, `kill-${point}`);
      const session = `kill-${point}`;
      const all = events(session);
      for (const [i, event] of all.entries()) {
        const r = await hook(root, event, i === at ? { NOEMA_HOOK_CRASH_AT: point } : {});
        if (i === at) {
          assert.equal(r.code, null, `the hook was killed at ${point}: ${r.err}`);
          continue;
        }
        // The killed call's lock is taken over at once (its owner is dead): a call that waited on it would be refused
        // as locked (exit 10) once the lock wait ran out, never answered 0.
        assert.equal(r.code, 0, `${event.hook_event_name} after the kill: ${r.err}`);
      }
      // Killed at the end: the agent's next Stop (its next turn) finishes the episode.
      if (at === all.length - 1) assert.equal((await hook(root, all[at])).code, 0);
      const dirs = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
      assert.equal(dirs.length, 1, `one episode for the session: ${dirs}`);
      const dir = join(root, "episodes", dirs[0]);
      assert.ok(existsSync(join(dir, "manifest.json")), "the Stop sealed it");
      assert.deepEqual(validate(dir).problems, []);
      // Each result went to its call's step (none left pending, none recorded unreviewed).
      const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
      assert.deepEqual(state.plan.steps.map((s: { status: string }) => s.status), ["done", "done"], point);
    });
  }
});

describe("a policy whose advise loops for ever (issue 24, audit B4)", () => {
  const looper = tmp.file(
    "looper.ts",
    `export default { name: "Looper", version: "1.0", advise() { while (true) {} } };\n`,
  );
  for (const isolation of ["worker", "thread"]) {
    test(`NOEMA_POLICY_ISOLATION=${isolation}: the hook stops it at the policy timeout and denies, saying why`, {
      ...TIMEOUT,
    }, async () => {
      const root = join(tmp.path, `loop-${isolation}`);
      const run = (payload: unknown) =>
        runChild(
          NOEMA,
          [...PRE, "hook", "claude-code", "--root", root, "--policy", looper, "--policy-timeout", "500"],
          {
            cwd: tmp.path,
            input: JSON.stringify(payload),
            env: { ...process.env, NOEMA_HOOK_SERVER: "0", NOEMA_POLICY_ISOLATION: isolation },
            timeoutMs: 60_000,
          },
        );
      // A hook that hung on the loop is killed at runChild's 60 s bound, with no exit code: the assertion fails.
      const r = await run(pre(`s-loop-${isolation}`, "t1", "ls"));
      assert.equal(r.code, 0, r.stderr);
      assert.equal(verdict({ code: r.code, out: r.stdout, err: r.stderr }), "deny", r.stdout);
      assert.match(r.stdout, /PolicyTimeout: advise did not settle within 500 ms/);
      const [id] = readdirSync(join(root, "episodes"));
      const dir = join(root, "episodes", id);
      const events = readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
      const gov = events.find((e) => e.phase === "governance");
      assert.equal(gov?.payload.decision, "veto");
      assert.equal(gov?.payload.error?.type, "PolicyTimeout", "the reason is recorded");
      assert.equal((await run({ session_id: `s-loop-${isolation}`, cwd: tmp.path, hook_event_name: "Stop" })).code, 0);
      assert.deepEqual(validate(dir).problems, []);
    });
  }
});

describe("a hook session that never sends Stop", () => {
  test("resume --abort ends its episode aborted, as the readers' advice says; the session goes on in a new one", {
    ...TIMEOUT,
  }, async () => {
    const root = join(tmp.path, "abandoned");
    const base = { session_id: "abandoned", cwd: tmp.path };
    assert.equal((await hook(root, { ...base, hook_event_name: "UserPromptSubmit", prompt: "go" })).code, 0);
    assert.equal(verdict(await hook(root, pre("abandoned", "t1", "ls"), {}, ["--grant"])), "allow");
    const [id] = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    const dir = join(root, "episodes", id);
    const view = cli(["view", id, "--root", root]);
    assert.match(view.stdout, /noema resume/, "the reader points to resume");
    const aborted = cli(["resume", id, "--abort", "--root", root]);
    assert.equal(aborted.code, 1, aborted.stderr); // an aborted run (README "Exit codes")
    assert.ok(existsSync(join(dir, "manifest.json")), "sealed");
    assert.deepEqual(validate(dir).problems, []);
    assert.equal(JSON.parse(readFileSync(join(dir, "state.json"), "utf8")).outcomes.status, "aborted");
    // The session's next call is answered, in an episode of its own.
    assert.equal(verdict(await hook(root, pre("abandoned", "t2", "pwd"), {}, ["--grant"])), "allow");
    assert.equal(readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_")).length, 2);
  });
});

describe("a session file that is a FIFO", () => {
  test("the next call answers at once (no open() that waits for a writer), and the session is claimed anew", {
    ...TIMEOUT,
  }, async () => {
    const root = join(tmp.path, "fifo-session");
    const prompt = { session_id: "fifo", cwd: tmp.path, hook_event_name: "UserPromptSubmit", prompt: "go" };
    assert.equal((await hook(root, prompt)).code, 0);
    const sessions = join(root, "sessions", "claude-code");
    const [file] = readdirSync(sessions);
    rmSync(join(sessions, file));
    assert.equal(spawnSync("mkfifo", [join(sessions, file)]).status, 0);
    // A hook that hung on the FIFO is killed at hook()'s 60 s bound, with no answer: the verdict fails.
    const r = await hook(root, pre("fifo", "t1", "ls"), {}, ["--grant"]);
    assert.equal(verdict(r), "allow", r.err);
    assert.ok(statSync(join(sessions, file)).isFile(), "the FIFO was replaced by a session entry");
  });
});

describe("a FIFO planted as the episode's lock", () => {
  test("the hook blocks the call at once (exit 2, naming it); list and view answer", TIMEOUT, async () => {
    const root = join(tmp.path, "fifo-lock");
    const prompt = { session_id: "fifolock", cwd: tmp.path, hook_event_name: "UserPromptSubmit", prompt: "go" };
    assert.equal((await hook(root, prompt)).code, 0);
    const [id] = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    assert.equal(spawnSync("mkfifo", [join(root, "episodes", id, "lock")]).status, 0);
    const r = await hook(root, pre("fifolock", "t1", "ls"), {}, ["--grant"]);
    assert.equal(verdict(r), "blocked");
    assert.match(r.err, /lock: not a regular file \(a FIFO\)/);
    for (const args of [["list"], ["view", id]]) {
      const x = await runChild(NOEMA, [...PRE, ...args, "--root", root], { timeoutMs: 30_000 });
      assert.equal(x.code, 0, `${args[0]}: ${x.stderr}`);
    }
  });
});

describe("the resident server killed after deciding a call", () => {
  test("the call is answered in-process as the same call, and its result goes to its step", TIMEOUT, async () => {
    const root = join(tmp.path, "server-kill");
    const servers = join(tmp.path, "servers-kill");
    mkdirSync(servers, { recursive: true, mode: 0o700 });
    const log = join(tmp.path, "server-kill.log");
    const env = { NOEMA_HOOK_SERVER: "1", NOEMA_HOOK_SERVER_DIR: servers, NOEMA_HOOK_SERVER_LOG: log };
    const prompt = { session_id: "srvkill", cwd: tmp.path, hook_event_name: "UserPromptSubmit", prompt: "go" };
    // The prompt's process starts the server with the crash point set: it dies at its first decision.
    const grant = ["--grant"]; // one command line for every call: one server
    assert.equal((await hook(root, prompt, { ...env, NOEMA_HOOK_CRASH_AT: "decided" }, grant)).code, 0);
    await waitFor(() => existsSync(log) && /listening/.test(readFileSync(log, "utf8")));
    const r = await hook(root, pre("srvkill", "t1", "ls"), env, ["--grant"]);
    assert.equal(verdict(r), "allow", r.err);
    const post = { ...pre("srvkill", "t1", "ls"), hook_event_name: "PostToolUse", tool_response: { stdout: "a" } };
    assert.equal((await hook(root, post, env, grant)).code, 0);
    assert.equal((await hook(root, { ...prompt, hook_event_name: "Stop" }, env, grant)).code, 0);
    assert.match(readFileSync(log, "utf8"), /request read/, "the server took the call (and died deciding it)");
    const [id] = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    const dir = join(root, "episodes", id);
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
    assert.deepEqual(state.plan.steps.map((s: { status: string }) => s.status), ["done"], "one call, one step");
    assert.deepEqual(validate(dir).problems, []);
    rmSync(servers, { recursive: true, force: true });
  });
});

describe("a damaged session file", () => {
  test("is claimed anew: the next call works", TIMEOUT, async () => {
    const root = join(tmp.path, "damaged");
    assert.equal((await hook(root, pre("dmg", "t1", "ls"))).code, 0);
    const dir = join(root, "sessions", "claude-code");
    const [name] = readdirSync(dir);
    writeFileSync(join(dir, name), "{ torn");
    const r = await hook(root, pre("dmg", "t2", "pwd"), {}, ["--grant"]);
    assert.equal(verdict(r), "allow", r.err);
    assert.equal(JSON.parse(readFileSync(join(dir, name), "utf8")).schema_version, "session/1.0");
  });
});

describe("results out of order", () => {
  const post = (session: string, id: string, command: string) => ({
    ...pre(session, id, command),
    hook_event_name: "PostToolUse",
    tool_response: { stdout: `out of ${command}`, stderr: "" },
  });
  const stop = (session: string) => ({ session_id: session, cwd: tmp.path, hook_event_name: "Stop" });
  const sealed = (root: string) => {
    const dirs = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    assert.equal(dirs.length, 1, `one episode: ${dirs}`);
    return join(root, "episodes", dirs[0]);
  };

  test(
    "a result before its call is recorded as unreviewed, counted, and its late call is denied",
    TIMEOUT,
    async () => {
      const root = join(tmp.path, "ooo");
      const first = await hook(root, post("ooo", "t1", "ls"));
      assert.equal(first.code, 0, `a result with no episode yet opens one: ${first.err}`);
      const late = await hook(root, pre("ooo", "t1", "ls"));
      assert.equal(verdict(late), "deny", "it ran already: not let through again");
      assert.equal(verdict(await hook(root, pre("ooo", "t2", "pwd"), {}, ["--grant"])), "allow");
      assert.equal((await hook(root, post("ooo", "t2", "pwd"))).code, 0);
      assert.equal((await hook(root, stop("ooo"))).code, 0);
      const dir = sealed(root);
      const summary = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
      assert.equal(summary.metrics.unreviewed_count, 1);
      assert.equal(summary.metrics.act_count, 2);
      const events = readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) =>
        JSON.parse(l)
      );
      const unreviewed = events.filter((e) => e.phase === "governance" && e.payload.decision === "unreviewed");
      assert.equal(unreviewed.length, 1);
      const acts = events.filter((e) => e.phase === "act");
      assert.deepEqual(acts.map((e) => e.payload.result_status), ["ok", "ok"]);
      assert.match(JSON.stringify(acts[0].payload.output), /out of ls/, "the early result is kept");
      assert.deepEqual(validate(dir).problems, []);
    },
  );

  test("many results racing ahead of their calls: none is dropped", TIMEOUT, async () => {
    const root = join(tmp.path, "ooo-race");
    assert.equal((await hook(root, pre("race", "t0", "true"))).code, 0);
    const ids = [1, 2, 3, 4, 5, 6];
    const runs = await Promise.all(ids.flatMap((i) => [
      hook(root, post("race", `t${i}`, `echo ${i}`)),
      new Promise<void>((r) => setTimeout(() => r(), 30)).then(() => hook(root, pre("race", `t${i}`, `echo ${i}`))),
    ]));
    for (const r of runs) assert.equal(r.code, 0, r.err);
    assert.equal((await hook(root, stop("race"))).code, 0);
    const dir = sealed(root);
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
    const recorded = state.outcomes.actions.map((a: { output: unknown }) => JSON.stringify(a.output)).join("\n");
    for (const i of ids) assert.match(recorded, new RegExp(`out of echo ${i}`), `result ${i} recorded`);
    assert.deepEqual(validate(dir).problems, []);
  });
});

describe("results out of order, for an agent that sends no call ids (Gemini CLI)", () => {
  test("a result before its call and a second result of one call are both recorded, unreviewed", TIMEOUT, async () => {
    const root = join(tmp.path, "ooo-gemini");
    const fixture = (name: string) =>
      JSON.parse(readFileSync(join(REPO, "tests", "fixtures", "agents", "gemini", `${name}.json`), "utf8"));
    const gem = (event: unknown) =>
      runChild(NOEMA, [...PRE, "hook", "gemini", "--root", root], {
        cwd: tmp.path,
        input: JSON.stringify(event),
        env: { ...process.env, NOEMA_HOOK_SERVER: "0" },
        timeoutMs: 60_000,
      });
    const session = { session_id: "gem-ooo", cwd: tmp.path };
    const after = { ...fixture("AfterTool_shell"), ...session };
    const before = { ...fixture("BeforeTool_shell"), ...session };
    for (const event of [after, before, after, after, { ...fixture("SessionEnd"), ...session }]) {
      const r = await gem(event);
      assert.equal(r.code, 0, r.stderr);
    }
    const [id] = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    const dir = join(root, "episodes", id);
    const summary = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
    assert.equal(summary.metrics.act_count, 3, "three results, three acts");
    assert.equal(summary.metrics.unreviewed_count, 2, "the one before its call, and the extra one");
    assert.deepEqual(validate(dir).problems, []);
  });
});

describe("session files", () => {
  const token = "opaque9f8e7d6c5b4a3928170ABCDEFGHIJ"; // no known token shape: only the session masking hides it
  test(
    "are named by a digest of the session id, which is stored masked; an older file is still read",
    TIMEOUT,
    async () => {
      const root = join(tmp.path, "sessions");
      const session = `sess-${token}`;
      assert.equal((await hook(root, pre(session, "t1", "ls"))).code, 0);
      const dir = join(root, "sessions", "claude-code");
      const [name] = readdirSync(dir);
      assert.doesNotMatch(name, /opaque|ABCDEFGH/, "the file name does not carry the id");
      assert.match(name, /^s_[0-9a-f]{40}\.json$/);
      const text = readFileSync(join(dir, name), "utf8");
      assert.doesNotMatch(text, /ABCDEFGHIJ/, "the content does not carry the id");
      assert.match(JSON.parse(text).session_id, /^sess…\(\d+\)$/);
      // Nor does the episode (its start event, its task).
      const [episodeDir] = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
      for (const file of ["events.jsonl", "state.json"]) {
        assert.doesNotMatch(readFileSync(join(root, "episodes", episodeDir, file), "utf8"), /ABCDEFGHIJ/, file);
      }
      // A file named by the id itself (older versions) is still the session's, and moves to its digest name.
      const older = "legacy-session-1";
      const episode = JSON.parse(text).episode_id;
      writeFileSync(
        join(dir, `${older}.json`),
        JSON.stringify({
          schema_version: "session/1.0",
          agent: "claude-code",
          session_id: older,
          episode_id: episode,
          created_at: new Date().toISOString(),
        }),
      );
      assert.equal((await hook(root, pre(older, "t2", "pwd"))).code, 0);
      assert.equal(existsSync(join(dir, `${older}.json`)), false, "the clear-named file is gone");
      assert.equal(readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_")).length, 1, "same episode");
    },
  );
});

describe("calls the agent refused itself", () => {
  const denyTranscript = (path: string, id: string) =>
    writeFileSync(
      path,
      [
        JSON.stringify({ type: "assistant", message: { content: [{ type: "tool_use", id, name: "Bash" }] } }),
        JSON.stringify({
          type: "user",
          message: {
            content: [{
              type: "tool_result",
              tool_use_id: id,
              is_error: true,
              content: "The user doesn't want to proceed with this tool use. The tool use was rejected.",
            }],
          },
        }),
      ].join("\n") + "\n",
    );

  test("are steps that did not run, saying who refused them; a session without policy says so in view", {
    ...TIMEOUT,
  }, async () => {
    const root = join(tmp.path, "refused");
    const transcript = join(tmp.path, "refused.jsonl");
    denyTranscript(transcript, "t1");
    const session = "refused";
    const base = { session_id: session, cwd: tmp.path, transcript_path: transcript };
    const run = (event: unknown) =>
      runChild(NOEMA, [...PRE, "hook", "claude-code", "--root", root], {
        cwd: tmp.path,
        input: JSON.stringify(event),
        env: { ...process.env, NOEMA_HOOK_SERVER: "0" },
        timeoutMs: 60_000,
      });
    const calls = [
      { ...base, hook_event_name: "UserPromptSubmit", prompt: "touch three files" },
      { ...pre(session, "t1", "touch a"), transcript_path: transcript }, // refused at the user's prompt
      { ...pre(session, "t2", "touch b"), transcript_path: transcript }, // refused by Claude Code's auto mode
      {
        ...pre(session, "t2", "touch b"),
        hook_event_name: "PermissionDenied",
        reason: "the classifier says no",
        transcript_path: transcript,
      },
      { ...pre(session, "t3", "touch c"), transcript_path: transcript }, // no result, nothing said
      { ...base, hook_event_name: "Stop" },
    ];
    for (const event of calls) {
      const r = await run(event);
      assert.equal(r.code, 0, r.stderr);
    }
    const [id] = readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    const dir = join(root, "episodes", id);
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
    assert.deepEqual(state.plan.steps.map((s: { status: string }) => s.status), ["skipped", "skipped", "skipped"]);
    const acts = readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
      .filter((e) => e.phase === "act");
    const why = (step: string) => String(acts.find((e) => e.payload.step_id === step)?.payload.error?.message);
    assert.match(why("step-1"), /claude-code said: The user doesn't want to proceed/);
    assert.match(why("step-2"), /denied by Claude Code \(auto mode\): the classifier says no/);
    assert.match(why("step-3"), /no result came before Stop/);
    assert.deepEqual(validate(dir).problems, []);
    const view = cli(["view", id, "--root", root]);
    assert.equal(view.code, 0, view.stderr);
    assert.match(view.stdout, /ungoverned: recorded only/);
  });
});
