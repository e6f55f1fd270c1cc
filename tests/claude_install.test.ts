// noema install-hooks claude-code, and the hook's fail-closed exits, through the real CLI.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "jsonc-parser";
import { cli, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-claude-install-");
after(() => tmp.cleanup());
const fixture = (name: string) => readFileSync(join(REPO, "tests", "fixtures", "claude", `${name}.json`), "utf8");

describe("noema install-hooks claude-code", () => {
  const project = join(tmp.path, "proj");
  const settings = join(project, ".claude", "settings.json");
  const original = '{\n  // my rules\n  "permissions": { "allow": ["Bash(ls)"] },\n' +
    '  "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "my-check" }] }] }\n}\n';

  test("installs next to the user's own hooks, keeps the rest, and is idempotent", () => {
    mkdirSync(join(project, ".claude"), { recursive: true });
    writeFileSync(settings, original);
    const first = cli(["install-hooks", "claude-code", "--project"], { cwd: project });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /registered for UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, Stop/);
    const text = readFileSync(settings, "utf8");
    assert.match(text, /\/\/ my rules/, "comments survive");
    const value = parse(text);
    assert.deepEqual(value.permissions, { allow: ["Bash(ls)"] });
    assert.equal(value.hooks.PreToolUse.length, 2);
    assert.equal(value.hooks.PreToolUse[0].hooks[0].command, "my-check");
    assert.match(value.hooks.PreToolUse[1].hooks[0].command, / hook claude-code$/);
    assert.equal(value.hooks.PreToolUse[1].matcher, "*");
    assert.equal(value.hooks.Stop[0].matcher, undefined);
    const again = cli(["install-hooks", "claude-code"], { cwd: project });
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already installed; nothing changed/);
    assert.equal(readFileSync(settings, "utf8"), text);
  });

  test("--uninstall removes only noema's entries", () => {
    const r = cli(["install-hooks", "claude-code", "--uninstall", "--json"], { cwd: project });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).removed.length, 6);
    const value = parse(readFileSync(settings, "utf8"));
    assert.deepEqual(Object.keys(value.hooks), ["PreToolUse"]);
    assert.equal(value.hooks.PreToolUse[0].hooks[0].command, "my-check");
    assert.match(readFileSync(settings, "utf8"), /\/\/ my rules/);
  });

  test("--user writes ~/.claude/settings.json; a broken settings file is refused (exit 2)", () => {
    const home = join(tmp.path, "home");
    mkdirSync(home);
    const r = cli(["install-hooks", "claude-code", "--user", "--policy", "p.ts"], {
      cwd: project,
      env: { HOME: home },
    });
    assert.equal(r.code, 0, r.stderr);
    const value = parse(readFileSync(join(home, ".claude", "settings.json"), "utf8"));
    assert.match(value.hooks.PreToolUse[0].hooks[0].command, /hook claude-code --policy .*p\.ts$/);
    writeFileSync(join(home, ".claude", "settings.json"), "{ broken");
    const bad = cli(["install-hooks", "claude-code", "--user"], { cwd: project, env: { HOME: home } });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /settings\.json.*not a JSON object/);
    assert.equal(readFileSync(join(home, ".claude", "settings.json"), "utf8"), "{ broken");
  });
});

describe("noema hook fails closed", () => {
  const root = join(tmp.path, "root");
  test("garbage, empty stdin and malformed events exit 2 with the reason on stderr", () => {
    for (const input of ["garbage", "", "[1,2]", '{"hook_event_name":"PreToolUse","session_id":"s"}']) {
      const r = cli(["hook", "claude-code", "--root", root], { input });
      assert.equal(r.code, 2, `${JSON.stringify(input)}: ${r.stderr}`);
      assert.match(r.stderr, /^noema: stdin: /);
      assert.equal(r.stdout, "");
    }
  });
  test("a missing policy exits 2 before anything is written", () => {
    const r = cli(["hook", "claude-code", "--root", root, "--policy", join(tmp.path, "gone.ts")], {
      input: fixture("PreToolUse_Bash"),
    });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /gone\.ts: policy file not found/);
  });
  test("an unknown agent is a usage error; events noema does not act on get no answer (exit 0)", () => {
    assert.equal(cli(["hook", "cursor"], { input: "{}" }).code, 2);
    const r = cli(["hook", "claude-code", "--root", root], {
      input: JSON.stringify({ ...JSON.parse(fixture("Stop")), hook_event_name: "PreCompact" }),
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "");
  });
});

describe("noema hook --episode", () => {
  test("takes last and a unique id prefix, like view and events", () => {
    const root = join(tmp.path, "episode-ref");
    const workspace = join(tmp.path, "episode-ref-ws");
    mkdirSync(workspace, { recursive: true });
    const hook = (input: string, ...extra: string[]) =>
      cli(["hook", "claude-code", "--root", root, "--workspace", workspace, "--no-finish", ...extra], { input });
    const opened = hook(fixture("UserPromptSubmit"));
    assert.equal(opened.code, 0, opened.stderr);
    const episodes = () => readdirSync(join(root, "episodes")).filter((n) => n.startsWith("ep_"));
    const [id] = episodes();
    assert.ok(id, "the prompt opened an episode");
    // Another session's tool calls, sent into that episode by reference.
    const call = (n: number) =>
      JSON.stringify({
        ...JSON.parse(fixture("PreToolUse_Bash")),
        session_id: "another",
        tool_use_id: `toolu_ref_${n}`,
      });
    const refs = ["last", id.slice(0, 10), id.slice(3, 10).toLowerCase()];
    refs.forEach((ref, n) => {
      const r = hook(call(n), "--episode", ref);
      assert.equal(r.code, 0, `--episode ${ref}: ${r.stderr}`);
    });
    assert.deepEqual(episodes(), [id], "no other episode was opened");
    const events = readFileSync(join(root, "episodes", id, "events.jsonl"), "utf8").split("\n").filter(Boolean);
    const proposed = events.map((l) => JSON.parse(l)).filter((e) => e.phase === "action_candidate");
    assert.equal(proposed.length, refs.length, "each call went through the episode's policies");
  });
});
