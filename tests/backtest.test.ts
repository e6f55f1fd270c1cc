// `noema policy backtest` over real plan-driven shell episodes recorded by `noema run`: the counts of each flip kind,
// the policy errors and the episodes not reached equal what this test computes itself from the recorded commands,
// for a rules file added, a rules file edited in place, the recorded rules left out, and a policy file (one that
// reads the rebuilt snapshot, and throws on one command); the root and every file around it are byte for byte
// unchanged; exit codes 0, 3 and 2.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { tree } from "./helpers/episode_trees.ts";
import { tempDir } from "./helpers/tmp.ts";
import { writeShellTask } from "./helpers/shell_task.ts";

const tmp = tempDir("noema-backtest-");
after(() => tmp.cleanup());

type V = "allow" | "ask" | "deny";
interface RuleSet {
  deny: string[];
  ask: string[];
}

/** Each episode's commands (harmless, read-only programs), as its task file lists them. */
const EPISODES: string[][] = [
  ["echo ok", "pwd", "true", "id"],
  ["echo ok", "date", "pwd"],
  ["pwd", "uname", "echo ok"],
  ["printf x", "hostname", "whoami", "id", "echo ok"],
  ["true", "whoami", "date"],
  ["hostname", "printf x", "id", "pwd", "uname"],
];

const RECORDED: RuleSet = { deny: ["date"], ask: ["uname"] };
const ADDED: RuleSet = { deny: ["pwd"], ask: ["date", "id"] };

const program = (command: string) => command.split(" ")[0];
const rulesFile = (set: RuleSet) =>
  JSON.stringify({ deny: set.deny.map((p) => `Bash(${p}:*)`), ask: set.ask.map((p) => `Bash(${p}:*)`) });
const byRules = (set: RuleSet, command: string): V =>
  set.deny.includes(program(command)) ? "deny" : set.ask.includes(program(command)) ? "ask" : "allow";
const strictest = (
  a: V,
  b: V,
): V => (a === "deny" || b === "deny" ? "deny" : a === "ask" || b === "ask" ? "ask" : "allow");

/** The policy file the policy scenario adds: it reads the rebuilt snapshot (the actions before this one). */
const POLICY = `export default {
  name: "Backtested",
  version: "1.0",
  api: "1.0",
  advise(state) {
    const c = state.action.command;
    if (c.startsWith("whoami")) throw new Error("boom on " + c);
    if (state.outcomes.actions.length >= 3) return { kind: "veto", advice: "three actions are enough", confidence: 1 };
    if (c.startsWith("printf")) return { kind: "veto", advice: "no printf", confidence: 1 };
    if (c.startsWith("hostname")) {
      return { kind: "veto", advice: "approve hostname", confidence: 1, requires_approval: true };
    }
    return undefined;
  },
};
`;

/** What the policy file decides about the action at `index` (the actions before it all ran). */
function byPolicy(command: string, index: number): { veto: boolean; ask: boolean; error: boolean } {
  if (program(command) === "whoami") return { veto: false, ask: false, error: true };
  if (index >= 3) return { veto: true, ask: false, error: false };
  if (program(command) === "printf") return { veto: true, ask: false, error: false };
  if (program(command) === "hostname") return { veto: true, ask: true, error: false };
  return { veto: false, ask: false, error: false };
}

const dir = join(tmp.path, "project");
const root = join(dir, ".noema");
const ids: string[] = [];

/** The proposals each recorded episode made: its commands up to and including the first the recorded rules block. */
function proposals(): { episode: string; step: string; command: string; index: number; recorded: V }[][] {
  return EPISODES.map((commands, e) => {
    const out = [];
    for (const [index, command] of commands.entries()) {
      const recorded = byRules(RECORDED, command);
      out.push({ episode: ids[e], step: `step-${index + 1}`, command, index, recorded });
      if (recorded !== "allow") break;
    }
    return out;
  });
}

/** The totals and flipped actions the backtest must report, for a candidate verdict per proposal. */
function expected(candidate: (command: string, index: number) => V) {
  const flips: Record<string, number> = {};
  for (const a of ["allow", "ask", "deny"]) {
    for (const b of ["allow", "ask", "deny"]) if (a !== b) flips[`${a}_to_${b}`] = 0;
  }
  const flipped: string[] = [];
  let actions = 0, notReached = 0;
  for (const episode of proposals()) {
    for (const p of episode) {
      actions++;
      const c = candidate(p.command, p.index);
      if (c !== p.recorded) {
        flips[`${p.recorded}_to_${c}`]++;
        flipped.push(`${p.episode} ${p.step} ${p.recorded}_to_${c}`);
      }
    }
    const last = episode.at(-1)!;
    if (last.recorded !== "allow" && candidate(last.command, last.index) === "allow") notReached++;
  }
  return { flips, flipped: flipped.sort(), actions, notReached };
}

/** Runs the backtest with --json: its exit code, rows and totals. */
function backtest(args: string[]) {
  const r = cli(["policy", "backtest", "--json", ...args], {
    cwd: dir,
    env: { NOEMA_USER_RULES: "", NOEMA_ROOT: root },
  });
  const rows = r.stdout.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
  const totals = rows.at(-1);
  assert.equal(totals?.type, "totals", `${r.stdout}\n${r.stderr}`);
  const flipped = rows.filter((x) => x.type === "flip").map((x) => `${x.episode_id} ${x.step_id} ${x.flip}`).sort();
  return { ...r, rows, totals, flipped };
}

function assertMatches(got: ReturnType<typeof backtest>, want: ReturnType<typeof expected>) {
  assert.deepEqual(got.totals.flips, want.flips, got.stdout);
  assert.deepEqual(got.flipped, want.flipped);
  assert.equal(got.totals.actions, want.actions);
  assert.equal(got.totals.episodes, EPISODES.length);
  assert.equal(got.totals.not_reached, want.notReached);
  assert.equal(got.totals.unchanged, want.actions - want.flipped.length);
  assert.equal(got.code, want.flipped.length > 0 ? 3 : 0, got.stderr);
}

before(() => {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "rules.jsonc"), rulesFile(RECORDED));
  for (const [e, commands] of EPISODES.entries()) {
    const task = writeShellTask(join(dir, `task${e}.json`), `episode ${e}`, commands, { rules_file: "rules.jsonc" });
    const r = cli(["run", task], { cwd: dir, env: { NOEMA_USER_RULES: "", NOEMA_ROOT: root } });
    const verdicts = commands.map((c) => byRules(RECORDED, c));
    const stop = verdicts.find((v) => v !== "allow") ?? "allow";
    assert.equal(r.code, stop === "deny" ? 3 : stop === "ask" ? 4 : 0, r.stdout + r.stderr);
    ids.push(r.stdout.split(/\s/)[0]);
  }
});

describe("noema policy backtest over recorded shell episodes", () => {
  test("the recorded policies as they are: nothing flips, exit 0", () => {
    const got = backtest([]);
    assertMatches(got, expected((c) => byRules(RECORDED, c)));
    assert.equal(got.totals.flipped, 0);
  });

  test("a rules file added: layers only tighten, each flip counted as the test computes it", () => {
    writeFileSync(join(dir, "added.jsonc"), rulesFile(ADDED));
    const want = expected((c) => strictest(byRules(RECORDED, c), byRules(ADDED, c)));
    assert.ok(want.flips.allow_to_deny > 0 && want.flips.allow_to_ask > 0, "the scenario flips something");
    assertMatches(backtest(["--rules", "added.jsonc"]), want);
  });

  test("the recorded rules file edited in place replaces the recorded rule set", () => {
    writeFileSync(join(dir, "rules.jsonc"), rulesFile(ADDED));
    try {
      const want = expected((c) => byRules(ADDED, c));
      assert.ok(want.flips.deny_to_ask > 0 && want.flips.ask_to_allow > 0 && want.notReached > 0);
      assertMatches(backtest(["--rules", "rules.jsonc"]), want);
    } finally {
      writeFileSync(join(dir, "rules.jsonc"), rulesFile(RECORDED));
    }
  });

  test("--without Rules@1.0 lets everything through: the blocked episodes are not reached further", () => {
    const want = expected(() => "allow");
    assert.ok(want.flips.deny_to_allow > 0 && want.flips.ask_to_allow > 0);
    const got = backtest(["--without", "Rules@1.0"]);
    assertMatches(got, want);
    const notReached = got.rows.filter((x) => x.type === "not_reached").map((x) => x.episode_id).sort();
    assert.deepEqual(
      notReached,
      proposals().filter((p) => p.at(-1)!.recorded !== "allow").map((p) => p[0].episode).sort(),
    );
  });

  test("a policy file: verdicts from the rebuilt snapshot, and a policy that throws reported on each action", () => {
    writeFileSync(join(dir, "backtested.ts"), POLICY);
    const want = expected((c, i) => {
      const rules = byRules(RECORDED, c);
      const p = byPolicy(c, i);
      if (rules === "allow" && !p.veto && !p.error) return "allow";
      // Blocked: an ask only when every veto asks for approval and the policy did not fail (fail_closed).
      const vetoes = [...(rules === "allow" ? [] : [rules]), ...(p.veto ? [p.ask ? "ask" : "deny"] : [])];
      return !p.error && vetoes.every((v) => v === "ask") ? "ask" : "deny";
    });
    const got = backtest(["--policy", "backtested.ts"]);
    assertMatches(got, want);
    const throwing = proposals().flat().filter((p) => program(p.command) === "whoami");
    assert.ok(throwing.length > 0);
    assert.equal(got.totals.policy_errors, throwing.length);
    const failed = got.rows.filter((x) => x.candidate?.errors?.length > 0);
    assert.deepEqual(
      failed.map((x) => `${x.episode_id} ${x.step_id}`).sort(),
      throwing.map((p) => `${p.episode} ${p.step}`).sort(),
    );
    for (const x of failed) {
      assert.equal(x.candidate.errors[0].policy_id, "Backtested@1.0");
      assert.match(x.candidate.errors[0].message, /boom on whoami/);
      assert.equal(x.candidate.verdict, "deny", "fail_closed: the failure blocks");
    }
  });

  test("the root and every file beside it are byte for byte unchanged by a backtest", () => {
    writeFileSync(join(dir, "backtested.ts"), POLICY);
    writeFileSync(join(dir, "added.jsonc"), rulesFile(ADDED));
    const beforeTree = tree(dir);
    const got = backtest(["--policy", "backtested.ts", "--rules", "added.jsonc", "--rules", "rules.jsonc"]);
    assert.equal(got.code, 3);
    assert.deepEqual(tree(dir), beforeTree);
  });

  test("filters select episodes as noema list does: --status, --task, --limit (the newest)", () => {
    const stops = proposals().map((p) => p.at(-1)!.recorded);
    const vetoed = backtest(["--status", "vetoed", "--without", "Rules@1.0"]);
    assert.equal(vetoed.totals.episodes, stops.filter((v) => v === "deny").length);
    assert.equal(vetoed.totals.flips.deny_to_allow, vetoed.totals.episodes);
    assert.equal(backtest(["--task", "episode 3"]).totals.actions, EPISODES[3].length);
    const newest = backtest(["--limit", "1", "--without", "Rules@1.0"]);
    assert.equal(newest.totals.episodes, 1);
    assert.deepEqual(newest.flipped, [`${ids.at(-1)} step-5 ask_to_allow`]);
  });

  test("a policy that never returns is cut off at the episode's recorded timeout, in its worker, on each action", () => {
    const other = join(tmp.path, "hang");
    mkdirSync(other, { recursive: true });
    const task = join(other, "task.json");
    writeFileSync(
      task,
      JSON.stringify({
        task: "short timeout",
        using: "shell",
        // 2 s, not 300 ms: the normal `pwd` step's call must answer within it on a loaded machine (the worker's
        // restart and reload after the timeout are outside that call's timeout: tests/policy_restart.test.ts).
        policy_timeout_ms: 2000,
        steps: ["id", "pwd", "id"].map((command) => ({ kind: "act", description: command, inputs: { command } })),
      }),
    );
    const otherRoot = join(other, ".noema");
    const run = cli(["run", task], { cwd: other, env: { NOEMA_USER_RULES: "", NOEMA_ROOT: otherRoot } });
    assert.equal(run.code, 0, run.stderr);
    const id = run.stdout.split(/\s/)[0];
    writeFileSync(
      join(other, "hang.ts"),
      `export default { name: "Hang", version: "1.0", api: "1.0",
        advise(state) { if (state.action.command.startsWith("id")) { while (true) {} } return undefined; } };`,
    );
    const r = cli(["policy", "backtest", "--json", id, "--policy", "hang.ts"], {
      cwd: other,
      env: { NOEMA_USER_RULES: "", NOEMA_ROOT: otherRoot },
      timeoutMs: 60_000,
    });
    assert.equal(r.code, 3, r.stderr);
    const rows = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    const failed = rows.filter((x) => x.type === "flip");
    assert.deepEqual(failed.map((x) => x.step_id), ["step-1", "step-3"]);
    for (const x of failed) {
      assert.equal(x.candidate.errors[0].type, "PolicyTimeout");
      assert.match(x.candidate.errors[0].message, /2000 ms/);
    }
    assert.equal(rows.at(-1).policy_errors, 2);
  });

  test("a recorded policy file runs as it is now: edited, it flips and is named changed; gone, its episode is left out", () => {
    const other = join(tmp.path, "edited");
    mkdirSync(other, { recursive: true });
    const guard = (vetoed: string) =>
      `export default { name: "Guard", version: "1.0", api: "1.0",
        advise(state) { return state.action.command === ${JSON.stringify(vetoed)}
          ? { kind: "veto", advice: "not " + state.action.command, confidence: 1 } : undefined; } };`;
    writeFileSync(join(other, "guard.ts"), guard("nothing"));
    const task = join(other, "task.json");
    writeFileSync(
      task,
      JSON.stringify({
        task: "guarded",
        using: "shell",
        policies: ["guard.ts"],
        steps: ["pwd", "id"].map((command) => ({ kind: "act", description: command, inputs: { command } })),
      }),
    );
    const env = { NOEMA_USER_RULES: "", NOEMA_ROOT: join(other, ".noema") };
    assert.equal(cli(["run", task], { cwd: other, env }).code, 0);
    const same = cli(["policy", "backtest", "--json"], { cwd: other, env });
    assert.equal(same.code, 0, same.stderr);
    writeFileSync(join(other, "guard.ts"), guard("pwd"));
    const edited = cli(["policy", "backtest", "--json"], { cwd: other, env });
    assert.equal(edited.code, 3, edited.stderr);
    const rows = edited.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(rows.filter((x) => x.type === "flip").map((x) => [x.step_id, x.flip]), [[
      "step-1",
      "allow_to_deny",
    ]]);
    assert.deepEqual(rows.at(-1).changed_policies, ["Guard@1.0"]);
    rmSync(join(other, "guard.ts"));
    const gone = cli(["policy", "backtest"], { cwd: other, env });
    assert.equal(gone.code, 0, gone.stderr);
    assert.match(
      gone.stderr,
      /left out: policy Guard@1\.0: its file is gone: .*guard\.ts \(give it with --policy FILE, or leave it out with --without Guard@1\.0\)/,
    );
    assert.match(gone.stdout, /backtest: 0 episodes, 0 actions: 0 unchanged, 0 flipped\n {2}left out: 1 episode/);
  });

  test("text report names each flip with its reasons; a bad rules file is a usage error (exit 2) and prints nothing", () => {
    writeFileSync(join(dir, "added.jsonc"), rulesFile(ADDED));
    const r = cli(["policy", "backtest", "--rules", "added.jsonc"], {
      cwd: dir,
      env: { NOEMA_USER_RULES: "", NOEMA_ROOT: root },
    });
    assert.equal(r.code, 3, r.stderr);
    assert.match(
      r.stdout,
      /allow→deny {2}ep_\S+ {2}step-2 {2}adapter:shell {2}pwd\n {2}recorded: {2}allow .*\n {2}candidate: deny {3}Rules@1\.0: denied by rule "Bash\(pwd:\*\)"/,
    );
    assert.match(r.stdout, /^backtest: 6 episodes, \d+ actions: \d+ unchanged, \d+ flipped \(/m);
    writeFileSync(join(dir, "bad.jsonc"), '{ "deny": ["Bash(:*)"] }');
    const bad = cli(["policy", "backtest", "--rules", "bad.jsonc"], { cwd: dir, env: { NOEMA_ROOT: root } });
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /bad\.jsonc/);
    assert.equal(bad.stdout, "");
  });
});
