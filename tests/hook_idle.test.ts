/**
 * An agent session's episode between two hook calls, with no resident hook
 * server (each call its own process): `idle` while the agent holding the
 * session lives (`list`, `view`, `events --follow`), `crashed` once it is
 * gone (issue 24, audit B3).
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { cli, cliCommand, REPO, runtimeCommand } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-hook-idle-");
after(() => tmp.cleanup());

const ENV = { NOEMA_HOOK_SERVER: "0" };

function call(session: string, id: string): string {
  return JSON.stringify({
    session_id: session,
    hook_event_name: "PreToolUse",
    tool_name: "Bash",
    tool_input: { command: `echo ${id}` },
    tool_use_id: id,
    cwd: tmp.path,
  });
}

function runState(root: string): { id: string; state: string; view: string } {
  const [id] = readdirSync(join(root, "episodes"));
  const listed = cli(["list", "--json", "--root", root]);
  assert.equal(listed.code, 0, listed.stderr);
  const view = cli(["view", id, "--root", root]);
  return { id, state: JSON.parse(listed.stdout)[0].run_state, view: view.stdout };
}

describe("an agent session between hook calls", () => {
  test("idle while the agent that starts its hooks lives; each call continues it", () => {
    const root = join(tmp.path, "alive");
    // This test process is the agent here: it starts each hook call.
    for (const id of ["t1", "t2"]) {
      const r = cli(["hook", "claude-code", "--root", root], { env: ENV, input: call("s-idle", id) });
      assert.equal(r.code, 0, r.stderr);
      const s = runState(root);
      assert.equal(s.state, "idle", `after ${id}`);
      assert.match(s.view, /idle \(an agent session between two hook calls/);
    }
    const listed = cli(["list", "--status", "crashed", "-q", "--root", root]);
    assert.equal(listed.stdout.trim(), "", "not listed as crashed");
    const idle = cli(["list", "--status", "idle", "-q", "--root", root]);
    assert.equal(idle.stdout.trim(), runState(root).id);
  });

  test("crashed once the agent holding the session is gone (killed before its Stop)", () => {
    const root = join(tmp.path, "gone");
    // A short-lived "agent" process starts both calls, each through a shell, then ends without a Stop.
    const [cmd, ...args] = cliCommand();
    const agent = join(tmp.path, "agent.mjs");
    writeFileSync(
      agent,
      `import { execFileSync } from "node:child_process";
for (const input of JSON.parse(process.argv[2])) {
  execFileSync("sh", ["-c", 'exec "$@"', "sh", ...JSON.parse(process.argv[3])], { input, env: process.env });
}
`,
    );
    const runner = [...runtimeCommand(), agent];
    const inputs = JSON.stringify([call("s-gone", "t1"), call("s-gone", "t2")]);
    const r = spawnSync(runner[0], [
      ...runner.slice(1),
      inputs,
      JSON.stringify([cmd, ...args, "hook", "claude-code", "--root", root]),
    ], {
      cwd: REPO,
      env: { ...process.env, ...ENV, NOEMA_ROOT: undefined },
      encoding: "utf8",
    });
    assert.equal(r.status, 0, r.stderr);
    const s = runState(root);
    assert.equal(s.state, "crashed");
    assert.match(s.view, /crashed \(no live process/);
  });
});
