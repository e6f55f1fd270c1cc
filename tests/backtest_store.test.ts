// `noema policy backtest --store URL`: the fleet's episodes, read from a shared store (a files store and a real
// PostgreSQL), give the flip counts the test computes from the recorded commands, the same as a backtest of the root
// they were published from; the store's files (or its catalog) and the reading root are left as they were.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { cli } from "./helpers/cli.ts";
import { tree } from "./helpers/episode_trees.ts";
import { type PgServer, pgUnavailable, startPostgres } from "./helpers/postgres.ts";
import { tempDir } from "./helpers/tmp.ts";
import { writeShellTask } from "./helpers/shell_task.ts";

const tmp = tempDir("noema-backtest-store-");
after(() => tmp.cleanup());

type V = "allow" | "ask" | "deny";
const EPISODES = [["echo ok", "pwd", "id"], ["pwd", "date", "echo ok"], ["uname", "echo ok"], ["id", "pwd"]];
const RECORDED = { deny: ["date"], ask: ["uname"] };
const ADDED = { deny: ["pwd"], ask: ["id"] };
const program = (c: string) => c.split(" ")[0];
const by = (set: { deny: string[]; ask: string[] }, c: string): V =>
  set.deny.includes(program(c)) ? "deny" : set.ask.includes(program(c)) ? "ask" : "allow";
const rulesFile = (set: { deny: string[]; ask: string[] }) =>
  JSON.stringify({ deny: set.deny.map((p) => `Bash(${p}:*)`), ask: set.ask.map((p) => `Bash(${p}:*)`) });

/** The flips a backtest adding ADDED to the recorded rules must count (plan runs stop at their first block). */
function expected(): Record<string, number> {
  const flips: Record<string, number> = {};
  for (const a of ["allow", "ask", "deny"]) {
    for (const b of ["allow", "ask", "deny"]) if (a !== b) flips[`${a}_to_${b}`] = 0;
  }
  for (const commands of EPISODES) {
    for (const c of commands) {
      const r = by(RECORDED, c), a = by(ADDED, c);
      const k: V = r === "deny" || a === "deny" ? "deny" : r === "ask" || a === "ask" ? "ask" : "allow";
      if (k !== r) flips[`${r}_to_${k}`]++;
      if (r !== "allow") break;
    }
  }
  return flips;
}

const project = join(tmp.path, "project");
const root = join(project, ".noema");
const env = { NOEMA_USER_RULES: "", NOEMA_STORE: undefined, NOEMA_ROOT: undefined };

before(() => {
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, "rules.jsonc"), rulesFile(RECORDED));
  writeFileSync(join(project, "added.jsonc"), rulesFile(ADDED));
  for (const [e, commands] of EPISODES.entries()) {
    const task = writeShellTask(join(project, `task${e}.json`), `episode ${e}`, commands, {
      rules_file: "rules.jsonc",
    });
    const r = cli(["--root", root, "run", task], { cwd: project, env });
    assert.ok([0, 3, 4].includes(r.code!), r.stderr);
  }
});

/** Publishes the root to the store, backtests the store from an empty root; its totals, and what it left behind. */
function backtestThroughStore(url: string) {
  const init = cli(["store", "init", "--store", url], { env });
  assert.equal(init.code, 0, init.stderr);
  const sync = cli(["--root", root, "sync", "--store", url, "--json"], { env });
  assert.equal(sync.code, 0, sync.stderr);
  const catalog = () => JSON.parse(cli(["list", "--store", url, "--json", "-n", "100"], { env }).stdout);
  const listed = catalog();
  assert.equal(listed.length, EPISODES.length);
  const reader = join(tmp.path, `reader-${Math.random().toString(36).slice(2)}`);
  const r = cli(["--root", reader, "policy", "backtest", "--store", url, "--json", "--rules", "added.jsonc"], {
    cwd: project,
    env,
  });
  const rows = r.stdout.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
  assert.equal(existsSync(reader), false, "nothing written to the reading root");
  assert.deepEqual(catalog(), listed, "the catalog is as it was");
  return { code: r.code, stderr: r.stderr, rows, totals: rows.at(-1) };
}

function assertTotals(got: ReturnType<typeof backtestThroughStore>): void {
  assert.equal(got.code, 3, got.stderr);
  assert.equal(got.totals.type, "totals");
  assert.deepEqual(got.totals.flips, expected());
  assert.equal(got.totals.episodes, EPISODES.length);
  assert.equal(got.totals.skipped, 0, JSON.stringify(got.rows));
  const local = cli(["--root", root, "policy", "backtest", "--json", "--rules", "added.jsonc"], { cwd: project, env });
  const localRows = local.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(got.rows, localRows, "the store's episodes backtest as the root they came from");
}

describe("noema policy backtest --store", () => {
  test("a files store (file:///…): its files are byte for byte unchanged", () => {
    const dir = join(tmp.path, "share", "team");
    const url = pathToFileURL(dir).href;
    assertTotals(backtestThroughStore(url));
    const beforeBacktest = tree(dir);
    const again = cli(["--root", join(tmp.path, "reader2"), "policy", "backtest", "--store", url, "--json"], {
      cwd: project,
      env,
    });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(tree(dir), beforeBacktest, "the store's files are unchanged");
  });

  const skip = pgUnavailable() ?? false;
  describe("PostgreSQL", { skip }, () => {
    let pg: PgServer;
    before(async () => {
      pg = await startPostgres();
    });
    test("a PostgreSQL store", () => {
      assertTotals(backtestThroughStore(pg.createDatabase()));
    });
  });
});
