/**
 * Where an agent's shell moved does not move noema: a hook call made after `cd sub` (Claude Code runs its hooks in
 * its current directory, and a `cd` carries over) still reads the project's `noema.jsonc`, records into the
 * project's root and the session's one episode, and reads the call's relative paths against where the call runs.
 * Found by an audit with the real Claude Code: after `cd sub`, `touch ../after.txt` and `cat ../.env` ran under
 * deny rules, in a second, ungoverned episode under `sub/.noema`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";
import { rulesVerdict } from "../src/runtime/rules/policy.ts";
import { toLayer } from "../src/runtime/rules/schema.ts";

/** A git repository with deny rules in its noema.jsonc, a `.env`, and a `sub` folder. */
function project(t: { path: string }): string {
  const dir = join(t.path, "proj");
  mkdirSync(join(dir, "sub"), { recursive: true });
  execFileSync("git", ["init", "-q"], { cwd: dir });
  writeFileSync(join(dir, ".env"), "SECRET=hunter2\n");
  writeFileSync(join(dir, "noema.jsonc"), '{ "rules": { "deny": ["Bash(git push:*)", "Read(./.env)"] } }');
  return dir;
}

/** One PreToolUse call of session S, made from `cwd` (the hook's process directory and the event's cwd). */
function call(cwd: string, command: string, id: string, env: Record<string, string | undefined> = {}) {
  const event = {
    session_id: "S",
    cwd,
    hook_event_name: "PreToolUse",
    tool_name: "Bash",
    tool_input: { command },
    tool_use_id: id,
  };
  return cli(["hook", "claude-code"], {
    cwd,
    input: JSON.stringify(event),
    env: { NOEMA_ROOT: undefined, NOEMA_USER_RULES: "", NOEMA_HOOK_SERVER: "0", CLAUDE_PROJECT_DIR: undefined, ...env },
  });
}

const denied = (r: { code: number | null; stdout: string }) =>
  r.code === 0 && /"permissionDecision":"deny"/.test(r.stdout);

describe("a hook call after the agent's shell moved", () => {
  test("from a sub-folder of the repository: the project's rules, root and episode", () => {
    const t = tempDir();
    try {
      const dir = project(t);
      assert.ok(denied(call(dir, "git push origin main", "t1")), "from the project");
      const sub = join(dir, "sub");
      const push = call(sub, "git push origin main", "t2");
      assert.ok(denied(push), push.stdout + push.stderr);
      const env = call(sub, "cat ../.env", "t3");
      assert.ok(denied(env), "a path relative to where the call runs: " + env.stdout + env.stderr);
      assert.match(env.stdout, /denied by rule \\"Read\(\.\/\.env\)\\"/);
      assert.equal(call(sub, "ls", "t4").stdout, "", "an ordinary call is allowed");
      assert.equal(existsSync(join(sub, ".noema")), false, "no second root under the folder the shell moved to");
      assert.equal(readdirSync(join(dir, ".noema", "episodes")).length, 1, "the session's one episode");
    } finally {
      t.cleanup();
    }
  });

  test("outside any repository: CLAUDE_PROJECT_DIR, which Claude Code sets for its hooks, names the project", () => {
    const t = tempDir();
    try {
      const dir = join(t.path, "plain");
      mkdirSync(join(dir, "sub"), { recursive: true });
      writeFileSync(join(dir, "noema.jsonc"), '{ "rules": { "deny": ["Bash(git push:*)"] } }');
      const r = call(join(dir, "sub"), "git push origin main", "t1", { CLAUDE_PROJECT_DIR: dir });
      assert.ok(denied(r), r.stdout + r.stderr);
      assert.equal(existsSync(join(dir, "sub", ".noema")), false);
      assert.ok(existsSync(join(dir, ".noema", "episodes")));
    } finally {
      t.cleanup();
    }
  });
});

describe("where a call says it runs, and every URL it fetches, meet the rules", () => {
  const layer = toLayer(
    { deny: ["Read(./.env)", "WebFetch(domain:pastebin.com)"] },
    { source: "noema.jsonc", field: "rules", base: "/w" },
  );
  const verdict = (tool: string, input: Record<string, unknown>, cwd?: string) =>
    rulesVerdict([layer], { kind: "tool", tool, input, command: String(input.command ?? ""), cwd }, "/w")?.kind ??
      "allow";

  test("the agent's cwd, Gemini's dir_path and Codex's workdir: relative paths read against them", () => {
    assert.equal(verdict("Bash", { command: "cat ../.env" }, "/w/sub"), "veto");
    assert.equal(verdict("run_shell_command", { command: "cat ../.env", dir_path: "sub" }), "veto");
    assert.equal(verdict("shell", { command: "cat ../.env", workdir: "/w/sub" }), "veto");
    assert.equal(verdict("Bash", { command: "cat .env" }, "/w/sub"), "allow", "sub/.env is not ./.env");
  });

  test("Gemini's web_fetch: each URL of its prompt, in any letter case", () => {
    assert.equal(verdict("web_fetch", { prompt: "https://pastebin.com/raw/x" }), "veto");
    assert.equal(
      verdict("web_fetch", { prompt: "compare https://example.com/a with https://pastebin.com/raw/x" }),
      "veto",
    );
    assert.equal(verdict("web_fetch", { prompt: "summarize HTTPS://pastebin.com/raw/x" }), "veto");
    assert.equal(verdict("web_fetch", { prompt: "see https://example.com and https://example.org" }), "allow");
  });
});
