/**
 * `noema hook` fails closed whatever happens to it: a policy that ends the
 * process (in-thread, in a worker, in the resident server), an uncaught
 * error, a stdin that never closes, a kill at any point of the hook path
 * (the next call still works). Every call runs `bun bin/noema.ts`, the
 * command `install-hooks` registers from source, whichever runtime runs the
 * tests.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { validate } from "noema";
import { REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";
import { runChild } from "./helpers/child.ts";

const tmp = tempDir("noema-hook-closed-");
after(() => tmp.cleanup());
const BUN = join(REPO, "node_modules", ".bin", "bun");
const ENTRY = join(REPO, "bin", "noema.ts");
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
  const r = await runChild(BUN, [ENTRY, "hook", "claude-code", "--root", root, "--policy", exiter, ...extra], {
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
    const r = await runChild(BUN, [ENTRY, "run", "echo exit-in-run", "--root", root, "--policy", exiter, "--quiet"], {
      cwd: tmp.path,
      env: { ...process.env, NOEMA_POLICY_ISOLATION: "thread" },
      timeoutMs: 60_000,
    });
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
function hookOpenStdin(root: string, input: string, env: Record<string, string>): Promise<Hook & { ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(BUN, [ENTRY, "hook", "claude-code", "--root", root, "--policy", exiter], {
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
      resolve({ code, out, err, ms: Date.now() - t0 });
    });
  });
}

describe("a stdin that never closes", () => {
  for (const server of ["1", "0"]) {
    test(`fails closed within its bounds; a whole event is answered without waiting (server ${server})`, {
      ...TIMEOUT,
    }, async () => {
      const root = join(tmp.path, `stdin-${server}`);
      const env = { NOEMA_HOOK_SERVER: server, NOEMA_HOOK_STDIN_IDLE_MS: "800", NOEMA_HOOK_STDIN_MAX_MS: "5000" };
      const silent = await hookOpenStdin(root, "", env);
      assert.equal(silent.code, 2, silent.err);
      assert.match(silent.err, /stdin: no input for 800 ms/);
      const partial = await hookOpenStdin(root, '{"session_id": "open", "hook_event_name": "PreTo', env);
      assert.equal(partial.code, 2, partial.err);
      assert.match(partial.err, /stdin: no input/);
      const whole = await hookOpenStdin(root, JSON.stringify(pre(`open-${server}`, "t1", "ls")), {
        ...env,
        NOEMA_HOOK_STDIN_IDLE_MS: "30000",
        NOEMA_HOOK_STDIN_MAX_MS: "30000",
      });
      assert.equal(whole.code, 0, whole.err);
      assert.ok(whole.ms < 25_000, `answered without waiting for the bounds (${whole.ms} ms)`);
    });
  }

  test("a trickle that never ends is cut at the total cap", TIMEOUT, async () => {
    const root = join(tmp.path, "stdin-trickle");
    const child = spawn(BUN, [ENTRY, "hook", "claude-code", "--root", root], {
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
