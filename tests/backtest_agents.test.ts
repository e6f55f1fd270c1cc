// `noema policy backtest` over episodes of the other drivers, recorded for real and offline: noema's own `llm`
// agent (a scripted OpenAI-compatible server on 127.0.0.1) and the real Claude Code through noema's hooks (a scripted
// Anthropic server). Rules in noema.jsonc deny one of the agent's shell commands; the session goes on after the
// denied call, so every call is compared. The flip counts equal what the test computes from the commands.
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { cli, cliCommand } from "./helpers/cli.ts";
import { runChild } from "./helpers/child.ts";
import { startOpenAiServer } from "./helpers/openai_server.ts";
import { bash, claudeSessions } from "./helpers/claude_session.ts";
import { tree } from "./helpers/episode_trees.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-backtest-agents-");
after(() => tmp.cleanup());

type V = "allow" | "ask" | "deny";
/** The agent's shell commands, in order (harmless, read-only). */
const COMMANDS = ["echo ok", "pwd", "date", "uname", "printf x"];
const RECORDED = { deny: ["date"], ask: [] as string[] };
const CANDIDATE = { deny: ["pwd"], ask: ["uname"] };
const TIMEOUT = 120_000;

const program = (c: string) => c.split(" ")[0];
const rulesOf = (set: { deny: string[]; ask: string[] }) => ({
  deny: set.deny.map((p) => `Bash(${p}:*)`),
  ask: set.ask.map((p) => `Bash(${p}:*)`),
});
const by = (set: { deny: string[]; ask: string[] }, c: string): V =>
  set.deny.includes(program(c)) ? "deny" : set.ask.includes(program(c)) ? "ask" : "allow";

/** The flips the backtest must count: every call was proposed (an agent goes on after a denied call). */
function expected(candidate: (c: string) => V): Record<string, number> {
  const flips: Record<string, number> = {};
  for (const a of ["allow", "ask", "deny"]) {
    for (const b of ["allow", "ask", "deny"]) if (a !== b) flips[`${a}_to_${b}`] = 0;
  }
  for (const c of COMMANDS) {
    const r = by(RECORDED, c), k = candidate(c);
    if (r !== k) flips[`${r}_to_${k}`]++;
  }
  return flips;
}

/** Backtests `root` from `cwd`: the totals row, and the root byte for byte unchanged. */
function backtest(root: string, cwd: string, args: string[]) {
  const before = tree(root);
  const r = cli(["policy", "backtest", "--json", "--root", root, ...args], { cwd, env: { NOEMA_USER_RULES: "" } });
  const rows = r.stdout.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
  assert.deepEqual(tree(root), before, "the root is unchanged");
  return { code: r.code, totals: rows.at(-1), rows, stderr: r.stderr };
}

/** The three scenarios over one recorded session: as recorded, a rules file added, the recorded rules left out. */
function assertBacktests(root: string, cwd: string): void {
  const same = backtest(root, cwd, []);
  assert.equal(same.code, 0, same.stderr);
  assert.equal(same.totals.actions, COMMANDS.length);
  assert.equal(same.totals.flipped, 0);
  writeFileSync(join(cwd, "candidate.jsonc"), JSON.stringify(rulesOf(CANDIDATE)));
  const added = backtest(root, cwd, ["--rules", "candidate.jsonc"]);
  const tighter = (c: string): V => {
    const a = by(RECORDED, c), b = by(CANDIDATE, c);
    return a === "deny" || b === "deny" ? "deny" : a === "ask" || b === "ask" ? "ask" : "allow";
  };
  assert.deepEqual(added.totals.flips, expected(tighter));
  assert.equal(added.code, 3);
  const without = backtest(root, cwd, ["--without", "Rules@1.0", "--rules", "candidate.jsonc"]);
  assert.deepEqual(without.totals.flips, expected((c) => by(CANDIDATE, c)));
  assert.ok(without.totals.flips.deny_to_allow > 0 && without.totals.flips.allow_to_ask > 0);
  assert.equal(without.totals.not_reached, 0, "the session went on after the denied call");
  assert.equal(without.totals.actions, COMMANDS.length);
}

describe("backtest over agent episodes", () => {
  test("noema's own llm agent (noema run --model openai-compatible:…)", { timeout: TIMEOUT }, async () => {
    const script = [
      ...COMMANDS.map((command, i) => ({
        tool_calls: [{ id: `t${i}`, name: "shell", arguments: JSON.stringify({ command }) }],
      })),
      { text: "Done." },
    ];
    const server = await startOpenAiServer(script);
    try {
      const dir = join(tmp.path, "llm");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "noema.jsonc"), JSON.stringify({ rules: rulesOf(RECORDED) }));
      const root = join(dir, ".noema");
      const [cmd, ...argv] = [...cliCommand(), "run", "look around", "--model", "openai-compatible:m"];
      const r = await runChild(cmd, [...argv, "--base-url", server.url, "--workspace", dir, "--root", root], {
        cwd: dir,
        env: { ...process.env, NO_COLOR: "1", NOEMA_ROOT: "", NOEMA_USER_RULES: "" } as Record<string, string>,
        timeoutMs: 60_000,
      });
      assert.equal(r.code, 0, r.stderr + r.stdout);
      assertBacktests(root, dir);
    } finally {
      await server.close();
    }
  });

  test("the real Claude Code through noema's hooks (noema run --using claude-code)", { timeout: TIMEOUT }, async () => {
    const sessions = claudeSessions(join(tmp.path, "claude"));
    const s = await sessions([
      ...COMMANDS.map((command, i) => ({ text: `Running ${command}`, tools: [bash(`toolu_b${i}`, command)] })),
      { text: "Done." },
    ]);
    try {
      writeFileSync(join(s.box.workspace, "noema.jsonc"), JSON.stringify({ rules: rulesOf(RECORDED) }));
      const r = await s.run("look around", [], undefined);
      assert.equal(readdirSync(join(s.box.root, "episodes")).length, 1, r.stdout + r.stderr);
      assertBacktests(s.box.root, s.box.workspace);
    } finally {
      await s.server.close();
    }
  });
});
