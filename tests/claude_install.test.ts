// noema install-hooks claude-code, and the hook's fail-closed exits, through the real CLI.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import process from "node:process";
import { runChild } from "./helpers/child.ts";
import { join } from "node:path";
import { parse } from "jsonc-parser";
import { cli as runCli, type CliOptions, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-claude-install-");
after(() => tmp.cleanup());
// The command install-hooks registers depends on how noema was installed: the npm package's (`npx --no-install noema`)
// is tested here, so the CLI runs from source even where the Bun runs use the binary (whose own command, `noema` from
// PATH, tests/binary.test.ts checks).
const cli = (args: string[], options: CliOptions = {}) => runCli(args, { ...options, source: true });
const fixture = (name: string) => readFileSync(join(REPO, "tests", "fixtures", "claude", `${name}.json`), "utf8");

describe("noema install-hooks claude-code", () => {
  const project = join(tmp.path, "proj");
  const settings = join(project, ".claude", "settings.json");
  const local = join(project, ".claude", "settings.local.json");
  const original = '{\n  // my rules\n  "permissions": { "allow": ["Bash(ls)"] },\n' +
    '  "hooks": { "PreToolUse": [{ "matcher": "Bash", "hooks": [{ "type": "command", "command": "my-check" }] }] }\n}\n';

  test("by default into this machine's .claude/settings.local.json; the shared settings.json is untouched", () => {
    mkdirSync(join(project, ".claude"), { recursive: true });
    writeFileSync(settings, original);
    const first = cli(["install-hooks", "claude-code", "--project"], { cwd: project });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /settings\.local\.json: noema hook claude-code registered for UserPromptSubmit/);
    assert.equal(readFileSync(settings, "utf8"), original, "the team's file is not touched");
    const text = readFileSync(local, "utf8");
    const command = parse(text).hooks.PreToolUse[0].hooks[0].command;
    // A noema that cannot start or dies blocks the call: the agent runs it on any exit but 2.
    assert.match(command, / hook claude-code \|\| exit 2$/);
    assert.doesNotMatch(command, /^npx /, "this machine's own noema");
    const again = cli(["install-hooks", "claude-code"], { cwd: project });
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already installed; nothing changed/);
    assert.equal(readFileSync(local, "utf8"), text);
  });

  test("--shared installs next to the user's own hooks with a portable command, keeps the rest, and is idempotent", () => {
    mkdirSync(join(project, "policies"), { recursive: true });
    writeFileSync(join(project, "policies", "p.ts"), 'export default { name: "P", version: "1", advise() {} };\n');
    const first = cli(["install-hooks", "claude-code", "--shared", "--policy", join(project, "policies", "p.ts")], {
      cwd: project,
    });
    assert.equal(first.code, 0, first.stderr);
    assert.match(
      first.stdout,
      /registered for UserPromptSubmit, PreToolUse, PostToolUse, PostToolUseFailure, PermissionDenied, PermissionRequest, Stop/,
    );
    assert.match(first.stdout, /settings\.local\.json registers noema's hook too/, "two registrations would both run");
    const text = readFileSync(settings, "utf8");
    assert.match(text, /\/\/ my rules/, "comments survive");
    const value = parse(text);
    assert.deepEqual(value.permissions, { allow: ["Bash(ls)"] });
    assert.equal(value.hooks.PreToolUse.length, 2);
    assert.equal(value.hooks.PreToolUse[0].hooks[0].command, "my-check");
    assert.equal(
      value.hooks.PreToolUse[1].hooks[0].command,
      "npx --no-install noema hook claude-code --policy policies/p.ts || exit 2",
      "no path into this clone: the project's noema and a project-relative policy",
    );
    assert.equal(value.hooks.PreToolUse[1].matcher, "*");
    assert.equal(value.hooks.Stop[0].matcher, undefined);
    const again = cli(["install-hooks", "claude-code", "--shared"], { cwd: project });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /already installed; nothing changed/);
    assert.equal(readFileSync(settings, "utf8"), text);
    // A policy a teammate's machine would not have is refused, and nothing changes.
    writeFileSync(join(tmp.path, "outside.ts"), 'export default { name: "O", version: "1", advise() {} };\n');
    const outside = cli(["install-hooks", "claude-code", "--shared", "--policy", join(tmp.path, "outside.ts")], {
      cwd: project,
    });
    assert.equal(outside.code, 2, outside.stdout);
    assert.match(outside.stderr, /outside\.ts: outside the project/);
    assert.match(outside.stderr, /or install without --shared \(see 'noema install-hooks --help'\)$/m);
    // Codex has no per-machine project file: the way out is --user, and nothing is written.
    const codex = cli(["install-hooks", "codex", "--policy", join(tmp.path, "outside.ts")], { cwd: project });
    assert.equal(codex.code, 2, codex.stdout);
    assert.match(
      codex.stderr,
      /outside\.ts: outside the project;.* or install with --user \(see 'noema install-hooks --help'\)$/m,
    );
    assert.equal(existsSync(join(project, ".codex")), false);
    assert.equal(readFileSync(settings, "utf8"), text);
    assert.equal(cli(["install-hooks", "claude-code", "--shared", "--user"], { cwd: project }).code, 2);
  });

  test("--uninstall removes only noema's entries, and a settings file it leaves empty", () => {
    const r = cli(["install-hooks", "claude-code", "--shared", "--uninstall", "--json"], { cwd: project });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).removed.length, 8);
    const value = parse(readFileSync(settings, "utf8"));
    assert.deepEqual(Object.keys(value.hooks), ["PreToolUse"]);
    assert.equal(value.hooks.PreToolUse[0].hooks[0].command, "my-check");
    assert.match(readFileSync(settings, "utf8"), /\/\/ my rules/);
    const gone = cli(["install-hooks", "claude-code", "--uninstall"], { cwd: project });
    assert.equal(gone.code, 0, gone.stderr);
    assert.match(gone.stdout, /file removed/);
    assert.equal(existsSync(local), false, "settings.local.json held only noema's hooks: removed");
    assert.ok(existsSync(settings), "the file with the user's own settings stays");
  });

  test("another tool's '… hook claude-code' is kept; noema's entry merged into a user's group is removed alone", () => {
    const dir = join(tmp.path, "others");
    mkdirSync(join(dir, ".claude"), { recursive: true });
    const file = join(dir, ".claude", "settings.local.json");
    const theirs = { type: "command", command: "npx -y cc-notify hook claude-code" };
    const logger = { type: "command", command: "my-audit-logger" };
    writeFileSync(file, JSON.stringify({ hooks: { PreToolUse: [{ matcher: "*", hooks: [theirs] }] } }));
    assert.equal(cli(["install-hooks", "claude-code"], { cwd: dir }).code, 0);
    let pre = parse(readFileSync(file, "utf8")).hooks.PreToolUse;
    assert.deepEqual(pre[0].hooks, [theirs], "cc-notify's hook is not taken for noema's");
    const ours = pre[1].hooks[0];
    assert.match(ours.command, /hook claude-code/);
    // The user merges noema's hook into a group of their own, then uninstalls noema.
    writeFileSync(
      file,
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: "*", hooks: [theirs] }, { hooks: [ours, logger] }] } }),
    );
    const un = cli(["install-hooks", "claude-code", "--uninstall"], { cwd: dir });
    assert.equal(un.code, 0, un.stderr);
    pre = parse(readFileSync(file, "utf8")).hooks.PreToolUse;
    assert.deepEqual(pre, [{ matcher: "*", hooks: [theirs] }, { hooks: [logger] }]);
  });

  test("--user writes ~/.claude/settings.json; a broken settings file is refused (exit 2)", () => {
    const home = join(tmp.path, "home");
    mkdirSync(home);
    writeFileSync(join(project, "p.ts"), 'export default { name: "P", version: "1", advise() {} };\n');
    const r = cli(["install-hooks", "claude-code", "--user", "--policy", "p.ts"], {
      cwd: project,
      env: { HOME: home },
    });
    assert.equal(r.code, 0, r.stderr);
    const value = parse(readFileSync(join(home, ".claude", "settings.json"), "utf8"));
    assert.match(value.hooks.PreToolUse[0].hooks[0].command, /hook claude-code --policy .*p\.ts \|\| exit 2$/);
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

describe("the registered hook command ignores the governed project's bunfig.toml, .env and tsconfig", () => {
  test("installed through the package launcher (npx noema): a planted preload never runs, the hook still denies", {
    timeout: 120_000,
  }, async () => {
    const project = join(tmp.path, "planted");
    const servers = join(tmp.path, "planted-servers");
    mkdirSync(project, { recursive: true });
    mkdirSync(servers, { recursive: true, mode: 0o700 });
    const pwned = join(project, "PWNED");
    writeFileSync(join(project, "bunfig.toml"), 'preload = ["./evil.ts"]\n');
    writeFileSync(join(project, "evil.ts"), `require("node:fs").appendFileSync(${JSON.stringify(pwned)}, "ran\\n");\n`);
    writeFileSync(join(project, ".env"), "NOEMA_HOOK_SERVER=0\nNOEMA_POLICY_ISOLATION=thread\n");
    writeFileSync(
      join(project, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { paths: { "noema": ["./evil.ts"] } } }),
    );
    writeFileSync(
      join(project, "deny.ts"),
      `import { DirectedIntuition } from "noema";
export default class NoLs extends DirectedIntuition {
  name = "NoLs"; version = "1";
  advise(s) { if (String(s.action.command).startsWith("ls")) return { kind: "veto", advice: "no ls here", confidence: 1 }; }
}
`,
    );
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "NOEMA_HOOK_BIN") env[k] = v;
    env.NOEMA_HOOK_SERVER_DIR = servers;
    const installed = spawnSync("node", [
      join(REPO, "bin", "noema.mjs"),
      "install-hooks",
      "claude-code",
      "--policy",
      "deny.ts",
    ], {
      cwd: project,
      env,
      encoding: "utf8",
    });
    assert.equal(installed.status, 0, installed.stderr);
    const command =
      parse(readFileSync(join(project, ".claude", "settings.local.json"), "utf8")).hooks.PreToolUse[0].hooks[0].command;
    assert.match(command, /--no-env-file --no-install --config=/);
    const call = (id: string) =>
      runChild("sh", ["-c", command], {
        cwd: project,
        env,
        input: JSON.stringify({
          ...JSON.parse(fixture("PreToolUse_Bash")),
          cwd: project,
          tool_input: { command: "ls -la" },
          tool_use_id: id,
        }),
        timeoutMs: 60_000,
      });
    // The first call in its own process, the next through the resident server it started.
    for (const id of ["toolu_p1", "toolu_p2", "toolu_p3"]) {
      const r = await call(id);
      assert.equal(r.code, 0, r.stderr);
      const answer = JSON.parse(r.stdout).hookSpecificOutput;
      assert.equal(answer.permissionDecision, "deny", r.stdout);
      assert.match(answer.permissionDecisionReason, /no ls here/);
      await new Promise((r) => setTimeout(r, 300));
    }
    assert.equal(existsSync(pwned), false, "the project's preload never ran");
    assert.ok(readdirSync(servers).length > 0, "the .env (NOEMA_HOOK_SERVER=0) was not read: a server started");
    rmSync(servers, { recursive: true, force: true });
  });
});

describe("install-hooks again keeps what is registered; policies are checked first", () => {
  const project = join(tmp.path, "again");
  const command = (file: string) =>
    parse(readFileSync(join(project, file), "utf8")).hooks.BeforeTool[0].hooks[0].command as string;
  test("gemini --print after --policy keeps the policy and prints the final command; --no-policy removes it", () => {
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, "p.ts"), 'export default { name: "P", version: "1", advise() {} };\n');
    const first = cli(["install-hooks", "gemini", "--policy", "p.ts"], { cwd: project });
    assert.equal(first.code, 0, first.stderr);
    const print = cli(["install-hooks", "gemini", "--print"], { cwd: project });
    assert.equal(print.code, 0, print.stderr);
    const registered = command(join(".gemini", "settings.json"));
    // The project's .gemini/settings.json is the team's: the portable command, the policy relative to the project.
    assert.equal(
      registered,
      "npx --no-install noema hook gemini --policy p.ts --print || exit 2",
      "the policy is kept",
    );
    assert.match(print.stdout, new RegExp(`command: .*hook gemini --policy p\\.ts --print`));
    const again = cli(["install-hooks", "gemini"], { cwd: project });
    assert.match(again.stdout, /already installed; nothing changed/);
    assert.equal(command(join(".gemini", "settings.json")), registered, "installing again keeps it all");
    const none = cli(["install-hooks", "gemini", "--no-policy", "--no-print"], { cwd: project });
    assert.equal(none.code, 0, none.stderr);
    assert.equal(command(join(".gemini", "settings.json")), "npx --no-install noema hook gemini || exit 2");
    assert.match(none.stdout, /ungoverned: recorded only/);
  });

  test("a missing or broken policy is refused with its location (exit 2), and nothing is registered", () => {
    const dir = join(tmp.path, "refused");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "broken.ts"), "export default {\n");
    writeFileSync(join(dir, "empty.ts"), "export const x = 1;\n");
    for (
      const [file, why] of [
        ["missing.ts", /missing\.ts: plugin file not found/],
        ["broken.ts", /broken\.ts: .*line 1/],
        [
          "empty.ts",
          /empty\.ts: has no default export/,
        ],
      ] as const
    ) {
      const r = cli(["install-hooks", "claude-code", "--policy", file], { cwd: dir });
      assert.equal(r.code, 2, `${file}: ${r.stdout}`);
      assert.match(r.stderr, why);
      assert.equal(existsSync(join(dir, ".claude", "settings.json")), false, `${file}: nothing registered`);
    }
    // A broken policy in the project's policy folder would block every call too.
    writeFileSync(join(dir, "noema.jsonc"), '{ "policies_dir": "policies" }\n');
    mkdirSync(join(dir, "policies"));
    writeFileSync(join(dir, "policies", "local.ts"), "export default {\n");
    const local = cli(["install-hooks", "claude-code"], { cwd: dir });
    assert.equal(local.code, 2, local.stdout);
    assert.match(local.stderr, /local\.ts: .*line 1/);
  });
});

describe("install-hooks --shared: the registered command works on a teammate's clone", () => {
  test("through the clone's own noema (npx --no-install), policies found in the project; no noema blocks", {
    timeout: 120_000,
  }, async () => {
    const mine = join(tmp.path, "shared-mine");
    const theirs = join(tmp.path, "shared-theirs");
    const bare = join(tmp.path, "shared-bare");
    const deny = `export default { name: "NoLs", version: "1", advise(s) {
  if (String(s.action.command).startsWith("ls")) return { kind: "veto", advice: "no ls here", confidence: 1 };
} };
`;
    for (const dir of [mine, theirs, bare]) {
      mkdirSync(join(dir, "policies"), { recursive: true });
      writeFileSync(join(dir, "package.json"), '{ "name": "proj", "private": true }\n');
      writeFileSync(join(dir, "policies", "deny.ts"), deny);
    }
    const installed = cli(["install-hooks", "claude-code", "--shared", "--policy", "policies/deny.ts"], { cwd: mine });
    assert.equal(installed.code, 0, installed.stderr);
    // The teammate's clone: the committed settings, and noema installed as the project's dependency (npm ci).
    mkdirSync(join(theirs, ".claude"));
    writeFileSync(join(theirs, ".claude", "settings.json"), readFileSync(join(mine, ".claude", "settings.json")));
    mkdirSync(join(theirs, "node_modules", ".bin"), { recursive: true });
    symlinkSync(REPO, join(theirs, "node_modules", "noema"));
    symlinkSync(join("..", "noema", "bin", "noema.mjs"), join(theirs, "node_modules", ".bin", "noema"));
    const command = parse(readFileSync(join(theirs, ".claude", "settings.json"), "utf8")).hooks.PreToolUse[0]
      .hooks[0].command;
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("NOEMA_")) env[k] = v;
    // Never the registry: npx finds the local bin, or fails.
    Object.assign(env, { npm_config_offline: "true", NOEMA_HOOK_SERVER: "0", npm_config_update_notifier: "false" });
    const call = (cwd: string) =>
      runChild("sh", ["-c", command], {
        cwd,
        env,
        input: JSON.stringify({ ...JSON.parse(fixture("PreToolUse_Bash")), cwd, tool_input: { command: "ls -la" } }),
        timeoutMs: 60_000,
      });
    const r = await call(theirs);
    assert.equal(r.code, 0, r.stderr);
    const answer = JSON.parse(r.stdout).hookSpecificOutput;
    assert.equal(answer.permissionDecision, "deny", r.stdout);
    assert.match(answer.permissionDecisionReason, /no ls here/);
    assert.ok(existsSync(join(theirs, ".noema", "episodes")), "recorded in the teammate's project");
    // A clone where noema is not installed: the call is blocked (exit 2), not let through ungoverned.
    mkdirSync(join(bare, ".claude"));
    writeFileSync(join(bare, ".claude", "settings.json"), readFileSync(join(mine, ".claude", "settings.json")));
    const blocked = await call(bare);
    assert.equal(blocked.code, 2, blocked.stdout);
  });
});
