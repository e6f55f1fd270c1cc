// Rules from noema.jsonc, rules files, --rules and the user's rules file, through the real CLI: a plan-driven run
// denied by a rule, an ask rule that pauses and resumes, audit mode counted as would-veto in list and view, layers
// that only tighten, and bad rules refused at load and at install-hooks with the file, line and field.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { startOpenAiServer, toolMessages } from "./helpers/openai_server.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-rules-");
after(() => tmp.cleanup());
let n = 0;

const PUSH_TASK = {
  task: "push it",
  using: "shell",
  steps: [
    { kind: "act", description: "list", inputs: { command: "echo listed" } },
    { kind: "act", description: "push", inputs: { command: "cd . && FOO=1 'git' push origin main" } },
  ],
};

/** A project directory with noema.jsonc (when given), a task file, and no user rules unless named. */
function project(config: unknown | null, task: unknown = PUSH_TASK) {
  const dir = join(tmp.path, `p${++n}`);
  mkdirSync(dir, { recursive: true });
  if (config !== null) {
    writeFileSync(join(dir, "noema.jsonc"), typeof config === "string" ? config : JSON.stringify(config, null, 2));
  }
  writeFileSync(join(dir, "task.jsonc"), JSON.stringify(task));
  const run = (args: string[], env: Record<string, string> = {}) =>
    cli(args, { cwd: dir, env: { NOEMA_USER_RULES: "", ...env } });
  return { dir, run };
}

/** Every file under `dir`. */
function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? walk(join(dir, d.name)) : [join(dir, d.name)]
  );
}

describe("rules in a run", () => {
  test("a plan-driven run is vetoed by a rule in noema.jsonc, with the rule's reason", () => {
    const p = project({ rules: { deny: [{ rule: "Bash(git push:*)", reason: "pushes go through review" }] } });
    const r = p.run(["run", "task.jsonc", "--json"]);
    assert.equal(r.code, 3, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.status, "vetoed");
    assert.match(JSON.stringify(out.blocked), /Rules@1\.0/);
    assert.match(JSON.stringify(out.blocked), /denied by rule \\"Bash\(git push:\*\)\\": pushes go through review/);
    const events = readFileSync(join(out.episode_dir, "events.jsonl"), "utf8").trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    const start = events[0].payload.settings;
    assert.equal(start.policies[0].id, "Rules@1.0");
    assert.equal(start.rules[0].rules[0].rule, "Bash(git push:*)", "the rules are recorded in the start event");
    const acts = events.filter((e) => e.phase === "act");
    assert.deepEqual(acts.map((e) => e.payload.result_status), ["ok", "skipped"]);
    // Where the rule is, as docs/rules.md says: the verdict's rationale, recorded in its direction event.
    const vetoed = events.find((e) => e.phase === "direction" && e.payload.kind === "veto");
    assert.match(vetoed.payload.rationale, /^enforce rule set \/.*\/noema\.jsonc rules\.deny\[0\]$/);
    assert.equal(p.run(["validate", out.episode_id]).code, 0);
  });

  test("an ask rule pauses the run for approval; approved, it resumes under the recorded rules", () => {
    const p = project({ rules: { ask: ["Bash(git push:*)"], allow: ["Bash(echo:*)"] } });
    const r = p.run(["run", "task.jsonc", "--json"]);
    assert.equal(r.code, 4, r.stderr);
    const id = JSON.parse(r.stdout).episode_id;
    assert.equal(p.run(["approve", id, "--by", "ana"]).code, 0);
    const resumed = p.run(["resume", id, "--json"]);
    // git push runs (and fails: no repository), so the run ends in error, not vetoed or paused.
    assert.equal(JSON.parse(resumed.stdout).status, "error", resumed.stderr);
  });

  test("a rule the record masks is read again on resume; rules changed since the start are a mismatch (exit 9)", () => {
    const rules = { ask: ["Bash(git push:*)"], deny: ["Bash(curl https://bob:hunter22@example.com:*)"] };
    const p = project({ rules });
    const first = JSON.parse(p.run(["run", "task.jsonc", "--json"]).stdout).episode_id;
    const start = readFileSync(join(p.dir, ".noema", "episodes", first, "events.jsonl"), "utf8").split("\n")[0];
    assert.doesNotMatch(start, /hunter22/, "the recorded rule is masked");
    assert.equal(p.run(["approve", first]).code, 0);
    assert.equal(JSON.parse(p.run(["resume", first, "--json"]).stdout).status, "error", "resumed: the push ran");
    const second = JSON.parse(p.run(["run", "task.jsonc", "--json"]).stdout).episode_id;
    assert.equal(p.run(["approve", second]).code, 0);
    writeFileSync(join(p.dir, "noema.jsonc"), JSON.stringify({ rules: { ask: ["Bash(git push:*)"] } }));
    const changed = p.run(["resume", second]);
    assert.equal(changed.code, 9);
    assert.match(changed.stderr, /Rules@1\.0: the rules changed since the run started/);
  });

  test("audit mode: the action runs, and list --json and view count the would-have-vetoed", () => {
    const p = project({ rules: { mode: "audit", deny: ["Bash(git push:*)"] } });
    const r = p.run(["run", "task.jsonc", "--json"]);
    const out = JSON.parse(r.stdout);
    assert.notEqual(out.status, "vetoed");
    const listed = JSON.parse(p.run(["list", "--json"]).stdout);
    assert.equal(listed[0].would_veto_count, 1);
    const view = p.run(["view", out.episode_id]).stdout;
    assert.match(view, /1 would veto \(audit\)/);
    assert.match(view, /audit: would be denied by rule "Bash\(git push:\*\)"/);
    assert.equal(JSON.parse(p.run(["view", out.episode_id, "--json"]).stdout).counts.would_vetoes, 1);
    // And in the run's own result line (found by a newcomer run: only list and view said so).
    const text = p.run(["run", "task.jsonc"]);
    assert.match(text.stdout, /^ {2}audit: 1 veto not enforced \(would have blocked an action\)$/m);
  });

  test("the user's rules file comes first; the project's allow and default cannot loosen it", () => {
    const user = join(tmp.path, `user${++n}.jsonc`);
    writeFileSync(user, JSON.stringify({ deny: [{ rule: "Bash(git push:*)", reason: "user says no" }] }));
    const p = project({ rules: { allow: ["Bash(git push:*)", "Bash"], default: "allow" } });
    const r = p.run(["run", "task.jsonc", "--json"], { NOEMA_USER_RULES: user });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stdout, /user says no/);
    // XDG_CONFIG_HOME/noema/rules.jsonc is the user's file by default.
    const xdg = join(tmp.path, `xdg${n}`);
    mkdirSync(join(xdg, "noema"), { recursive: true });
    writeFileSync(join(xdg, "noema", "rules.jsonc"), '{ "deny": ["Bash(git push:*)"] }');
    const env = { NOEMA_USER_RULES: undefined as unknown as string, XDG_CONFIG_HOME: xdg };
    assert.equal(cli(["run", "task.jsonc"], { cwd: p.dir, env }).code, 3);
  });

  test("--rules FILE and rules_file add a rule set; a task file's rules too", () => {
    const p = project({ rules_file: "team/rules.jsonc" });
    mkdirSync(join(p.dir, "team"));
    writeFileSync(join(p.dir, "team", "rules.jsonc"), '// team rules\n{ "deny": ["Bash(git push:*)"] }\n');
    assert.equal(p.run(["run", "task.jsonc"]).code, 3);
    const q = project(null);
    writeFileSync(join(q.dir, "extra.jsonc"), '{ "deny": ["Bash(git:*)"] }');
    assert.equal(q.run(["run", "task.jsonc"]).code, 1, "no rules: the push runs and fails");
    assert.equal(q.run(["run", "task.jsonc", "--rules", "extra.jsonc"]).code, 3);
    writeFileSync(join(q.dir, "t2.jsonc"), JSON.stringify({ ...PUSH_TASK, rules: { deny: ["Bash(git push:*)"] } }));
    assert.equal(q.run(["run", "t2.jsonc"]).code, 3);
  });
});

test("noema's own llm agent: its shell and read_file calls answer to Bash(...) and Read(...) rules", async () => {
  const server = await startOpenAiServer([
    {
      tool_calls: [
        { id: "t1", name: "shell", arguments: JSON.stringify({ command: "cd . && git push origin main" }) },
        { id: "t2", name: "read_file", arguments: JSON.stringify({ path: ".env" }) },
        { id: "t3", name: "shell", arguments: JSON.stringify({ command: "echo fine" }) },
      ],
    },
    { text: "Done." },
  ]);
  try {
    const p = project({ rules: { deny: [{ rule: "Bash(git push:*)", reason: "no pushes" }, "Read(./.env)"] } });
    writeFileSync(join(p.dir, ".env"), "TOKEN=x\n");
    const [cmd, ...argv] = [...cliCommand(), "run", "tidy up", "--model", "openai-compatible:m"];
    const r = await runChild(cmd, [...argv, "--base-url", server.url, "--workspace", p.dir, "--json"], {
      cwd: p.dir,
      env: { ...process.env, NO_COLOR: "1", NOEMA_ROOT: "", NOEMA_USER_RULES: "" } as Record<string, string>,
      timeoutMs: 60_000,
    });
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const told = toolMessages(server.requests[1]);
    assert.match(told.get("t1")!, /denied by rule "Bash\(git push:\*\)": no pushes/);
    assert.match(told.get("t2")!, /denied by rule "Read\(\.\/\.env\)"/);
    assert.doesNotMatch(told.get("t2")!, /TOKEN=x/);
    assert.match(told.get("t3")!, /fine/);
  } finally {
    await server.close();
  }
});

test("noema rules shows the rule sets in effect; noema rules test decides one call (exit 0, 3, 4)", () => {
  const p = project({
    rules: { deny: [{ rule: "Bash(git push:*)", reason: "review" }], ask: ["Bash(npm publish:*)"] },
  });
  writeFileSync(join(p.dir, "more.jsonc"), '{ "mode": "audit", "deny": ["Read(./.env)"] }');
  const shown = p.run(["rules", "--rules", "more.jsonc"]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(
    shown.stdout,
    /noema\.jsonc rules {2}mode enforce · default allow\n {2}deny {3}Bash\(git push:\*\) {2}# review/,
  );
  assert.match(shown.stdout, /more\.jsonc {2}mode audit/);
  const denied = p.run(["rules", "test", "--command", "FOO=1 command git push && ls"]);
  assert.equal(denied.code, 3);
  const out = JSON.parse(denied.stdout);
  assert.equal(out.effect, "deny");
  assert.deepEqual(out.commands, ["git push", "ls"]);
  assert.equal(out.layers[0].rule, "Bash(git push:*)");
  assert.equal(p.run(["rules", "test", "-c", "npm publish"]).code, 4);
  assert.equal(p.run(["rules", "test", "-c", "ls"]).code, 0);
  const audited = p.run([
    "rules",
    "test",
    "--rules",
    "more.jsonc",
    "--tool",
    "Read",
    "--input",
    '{"file_path":".env"}',
  ]);
  assert.equal(audited.code, 0);
  assert.equal(JSON.parse(audited.stdout).audit, true);
  writeFileSync(join(p.dir, "bad.jsonc"), '{ "deny": ["Bash(x"] }');
  assert.match(p.run(["rules", "--rules", "bad.jsonc"]).stderr, /bad\.jsonc:1: deny\[0\]: missing "\)"/);
  // Its help lists --rules once (not again among the global options) and not `rules`' --json (its output is JSON).
  const help = p.run(["rules", "test", "--help"]).stdout;
  assert.equal(help.match(/--rules <file>/g)?.length, 1, help);
  assert.doesNotMatch(help, /--json/);
  assert.match(help, /Global Options:[\s\S]*--root <dir>/);
});

describe("a task file's adapter.env meets the rules", () => {
  test("a variable that names a command (GIT_EDITOR) is read as if the line set it; a plain one changes nothing", () => {
    // Found by a break-it run: the rules never saw adapter.env, and git commit ran `rm x` through GIT_EDITOR.
    const p = project({ rules: { deny: ["Bash(rm:*)"] } }, {
      task: "commit",
      using: "shell",
      adapter: {
        env: {
          GIT_EDITOR: "rm x; true",
          GIT_CONFIG_GLOBAL: "/dev/null",
          GIT_AUTHOR_NAME: "a",
          GIT_AUTHOR_EMAIL: "a@b",
          GIT_COMMITTER_NAME: "a",
          GIT_COMMITTER_EMAIL: "a@b",
        },
      },
      steps: [{
        kind: "act",
        description: "commit",
        inputs: { command: "git init -q && git commit --allow-empty -q" },
      }],
    });
    writeFileSync(join(p.dir, "x"), "");
    const r = p.run(["run", "task.jsonc", "--json", "--workspace", p.dir]);
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(JSON.parse(r.stdout).message, /denied by rule "Bash\(rm:\*\)"/);
    assert.ok(existsSync(join(p.dir, "x")), "rm did not run");
    const allowList = project({ rules: { allow: ["Bash(echo:*)"], default: "deny" } }, {
      task: "echo",
      using: "shell",
      adapter: { env: { GREETING: "hi" } },
      steps: [{ kind: "act", description: "say", inputs: { command: "echo $GREETING" } }],
    });
    const ok = allowList.run(["run", "task.jsonc", "--json"]);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  });
});

describe("a deny rule beside an approval gate", () => {
  test("noema hook claude-code answers deny, not ask: Claude Code's user is not offered a call the rules deny", () => {
    // Found by a newcomer run: ApprovalGate's request for approval turned the rule's deny into an ask.
    const p = project({ rules: { deny: ["Bash(cp:*)"] } });
    const gate = join(REPO, "plugins", "policies", "approval-gate.ts");
    const call = (command: string, id: string) =>
      cli(["hook", "claude-code", "--root", join(p.dir, ".noema"), "--policy", gate], {
        cwd: p.dir,
        env: { NOEMA_USER_RULES: "", NOEMA_HOOK_SERVER: "0" },
        input: JSON.stringify({
          session_id: "s-deny-ask",
          cwd: p.dir,
          hook_event_name: "PreToolUse",
          tool_name: "Bash",
          tool_input: { command },
          tool_use_id: id,
        }),
      });
    const answer = (r: ReturnType<typeof call>) => {
      assert.equal(r.code, 0, r.stderr);
      return r.stdout.trim() === "" ? { permissionDecision: "allow" } : JSON.parse(r.stdout).hookSpecificOutput;
    };
    const denied = answer(call("cp -r site public # deploy", "toolu_1"));
    assert.equal(denied.permissionDecision, "deny");
    assert.match(denied.permissionDecisionReason, /denied by rule "Bash\(cp:\*\)"/);
    assert.equal(answer(call("echo deploy", "toolu_2")).permissionDecision, "ask", "the gate alone still asks");
  });
});

describe("a call id is one call", () => {
  test("noema hook claude-code: a tool_use_id sent again with another command is denied and recorded", () => {
    const p = project({ rules: { deny: ["Bash(rm:*)"] } });
    const call = (command: string, tool = "Bash") =>
      cli(["hook", "claude-code", "--root", join(p.dir, ".noema")], {
        cwd: p.dir,
        env: { NOEMA_USER_RULES: "", NOEMA_HOOK_SERVER: "0" },
        input: JSON.stringify({
          session_id: "s-reuse",
          cwd: p.dir,
          hook_event_name: "PreToolUse",
          tool_name: tool,
          tool_input: { command },
          tool_use_id: "toolu_1",
        }),
      });
    const answer = (r: ReturnType<typeof call>) => {
      assert.equal(r.code, 0, r.stderr);
      // No output: no objection (Claude Code goes on as it would without the hook).
      return r.stdout.trim() === "" ? { permissionDecision: "allow" } : JSON.parse(r.stdout).hookSpecificOutput;
    };
    assert.equal(answer(call("ls")).permissionDecision, "allow");
    const reused = answer(call("rm -rf v"));
    assert.equal(reused.permissionDecision, "deny");
    assert.match(reused.permissionDecisionReason, /call id toolu_1 was already used by step-1 for another tool/);
    assert.equal(answer(call("ls", "Task")).permissionDecision, "deny", "another tool");
    assert.equal(answer(call("ls")).permissionDecision, "allow", "the same call sent again");
    const logs = walk(join(p.dir, ".noema")).filter((f) => f.endsWith("events.jsonl"));
    assert.equal(logs.length, 1);
    const refused = readFileSync(logs[0], "utf8").trim().split("\n").map((l) => JSON.parse(l))
      .filter((e) => e.phase === "governance" && e.payload.rule === "call_id_reused");
    assert.equal(refused.length, 2, "each refusal is in the episode's record");
  });
});

describe("bad rules are located errors at load, and at install-hooks", () => {
  const bad = '{\n  "rules": {\n    "deny": [\n      "Bash(git push:*)",\n      "Bash(rm -rf"\n    ]\n  }\n}\n';

  test("a bad rule in noema.jsonc: exit 2, file:line: field, nothing written", () => {
    const p = project(bad);
    const r = p.run(["run", "task.jsonc"]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr.trim(), `noema: ${join(p.dir, "noema.jsonc")}:5: rules.deny[1]: missing ")" at the end`);
    assert.equal(existsSync(join(p.dir, ".noema")), false);
  });

  test("unknown keys, wrong case, a missing rules_file, a bad --rules file", () => {
    const p = project('{\n "rules": {\n  "defualt": "deny"\n }\n}');
    assert.match(p.run(["run", "task.jsonc"]).stderr, /noema\.jsonc:3: rules\.defualt: .*did you mean "default"/);
    const q = project({ rules_file: "nope.jsonc" });
    assert.match(q.run(["run", "task.jsonc"]).stderr, /noema\.jsonc: rules_file: rules file not found/);
    writeFileSync(join(q.dir, "r.jsonc"), '{\n  "ask": [\n    { "rule": "bash(ls)", "reason": "x" }\n  ]\n}');
    const r = project(null).run(["run", join(q.dir, "task.jsonc"), "--rules", join(q.dir, "r.jsonc")]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /r\.jsonc:3: ask\[0\]\.rule: unknown tool "bash" \(did you mean "Bash"\?\)/);
  });

  test("a misspelled tool name loads with a warning, at noema rules, run and each hook call", () => {
    const p = project({ rules: { deny: ["Bsh(git push)", "Bash(rm:*)"] } });
    const warning =
      /noema: warning: .*noema\.jsonc: rules\.deny\[0\]: "Bsh\(git push\)": unknown tool "Bsh" \(did you mean "Bash"\?\)/;
    const listed = p.run(["rules"]);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stderr, warning);
    assert.doesNotMatch(listed.stderr, /deny\[1\]/, "only the unknown name");
    assert.match(p.run(["run", "task.jsonc"]).stderr, warning);
    const hook = cli(["hook", "claude-code", "--root", join(p.dir, ".noema")], {
      cwd: p.dir,
      env: { NOEMA_USER_RULES: "", NOEMA_HOOK_SERVER: "0" },
      input: JSON.stringify({
        session_id: "s-warn",
        cwd: p.dir,
        hook_event_name: "PreToolUse",
        tool_name: "Bash",
        tool_input: { command: "ls" },
        tool_use_id: "toolu_1",
      }),
    });
    assert.equal(hook.code, 0, hook.stderr);
    assert.match(hook.stderr, warning);
  });

  test("install-hooks refuses a bad rule (nothing registered), and counts rules as governance", () => {
    const p = project(bad);
    const home = join(p.dir, "home");
    mkdirSync(home);
    const r = p.run(["install-hooks", "claude-code"], { HOME: home });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /noema\.jsonc:5: rules\.deny\[1\]: missing "\)"/);
    assert.equal(existsSync(join(p.dir, ".claude")), false);
    const user = join(p.dir, "user.jsonc");
    writeFileSync(user, '{ "allow": ["Nope(x"] }');
    const u = p.run(["install-hooks", "codex", "--user"], { HOME: home, NOEMA_USER_RULES: user });
    assert.equal(u.code, 2);
    assert.match(u.stderr, /user\.jsonc:1: allow\[0\]/);
    const good = project({ rules: { deny: ["Bash(git push:*)"] } });
    const ok = good.run(["install-hooks", "claude-code"], { HOME: home });
    assert.equal(ok.code, 0, ok.stderr);
    assert.doesNotMatch(ok.stdout, /ungoverned/);
  });
});

describe("rules import Claude Code's own permission rules (rules.import)", () => {
  const claudeSettings = '{\n  // the team\'s Claude Code settings\n  "model": "sonnet",\n  "permissions": {\n' +
    '    "deny": ["Bash(git push:*)"],\n    "allow": ["Bash(echo:*)"],\n    "defaultMode": "default",\n  },\n}\n';

  test("a deny in .claude/settings.json blocks the shell command of a run; noema rules lists where it came from", () => {
    const p = project({ rules: { import: ".claude/settings.json" } });
    mkdirSync(join(p.dir, ".claude"));
    writeFileSync(join(p.dir, ".claude", "settings.json"), claudeSettings);
    const r = p.run(["run", "task.jsonc", "--json"]);
    assert.equal(r.code, 3, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.status, "vetoed");
    assert.match(JSON.stringify(out.blocked), /denied by rule \\"Bash\(git push:\*\)\\"/);
    const events = readFileSync(join(out.episode_dir, "events.jsonl"), "utf8").trim().split("\n").map((l) =>
      JSON.parse(l)
    );
    const acts = events.filter((e) => e.phase === "act");
    assert.deepEqual(acts.map((e) => e.payload.result_status), ["ok", "skipped"]);
    const [imported] = events[0].payload.settings.rules;
    assert.equal(imported.source, join(p.dir, ".claude", "settings.json"), "recorded with where it came from");
    assert.equal(imported.field, "permissions");
    assert.deepEqual(imported.rules.map((r: { field: string }) => r.field), [
      "permissions.deny[0]",
      "permissions.allow[0]",
    ]);
    const listed = JSON.parse(p.run(["rules", "--json"]).stdout);
    assert.match(JSON.stringify(listed), /\.claude\/settings\.json/);
    // Through Claude Code's hook too: the same deny answers the call.
    const call = JSON.parse(readFileSync(join(REPO, "tests", "fixtures", "claude", "PreToolUse_Bash.json"), "utf8"));
    const input = JSON.stringify({ ...call, cwd: p.dir, tool_input: { command: "git push origin main" } });
    const hook = cli(["hook", "claude-code", "--root", join(p.dir, ".noema")], {
      cwd: p.dir,
      env: { NOEMA_USER_RULES: "", NOEMA_HOOK_SERVER: "0" },
      input,
    });
    assert.equal(hook.code, 0, hook.stderr);
    const answer = JSON.parse(hook.stdout).hookSpecificOutput;
    assert.equal(answer.permissionDecision, "deny");
    assert.match(answer.permissionDecisionReason, /denied by rule "Bash\(git push:\*\)"/);
  });

  test("the imported set and noema.jsonc's rules: the strictest answer wins", () => {
    // noema.jsonc denies every echo; the import's allow of echo lifts nothing. The import's deny holds.
    const p = project({ rules: { import: ".claude/settings.json", deny: ["Bash(echo:*)"] } });
    mkdirSync(join(p.dir, ".claude"));
    writeFileSync(join(p.dir, ".claude", "settings.json"), claudeSettings);
    const echo = JSON.parse(p.run(["rules", "test", "--command", "echo hi"]).stdout);
    assert.equal(echo.effect, "deny");
    const push = p.run(["rules", "test", "--command", "git push origin main"]);
    assert.equal(push.code, 3);
    assert.match(JSON.parse(push.stdout).advice, /Bash\(git push:\*\)/);
    assert.equal(p.run(["rules", "test", "--command", "ls"]).code, 0);
  });

  test("a missing settings file or a rule noema cannot read is a located error (exit 2)", () => {
    const p = project({ rules: { import: ".claude/settings.json" } });
    const missing = p.run(["run", "task.jsonc"]);
    assert.equal(missing.code, 2);
    assert.match(
      missing.stderr,
      /noema\.jsonc: rules\.import: Claude Code settings file to import not found: .*\.claude\/settings\.json/,
    );
    assert.equal(existsSync(join(p.dir, ".noema", "episodes")), false, "nothing ran");
    mkdirSync(join(p.dir, ".claude"));
    writeFileSync(join(p.dir, ".claude", "settings.json"), '{\n  "permissions": {\n    "deny": ["bash(ls)"]\n  }\n}\n');
    const bad = p.run(["run", "task.jsonc"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /settings\.json:3: permissions\.deny\[0\]: .*did you mean "Bash"/);
  });
});
