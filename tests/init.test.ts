/**
 * `noema init policy|adapter NAME`: the generated files are written (and not
 * overwritten without `--force`), their own tests pass under the runtime
 * running this test, and an episode run with the generated policy and
 * adapter through the library `run()` is valid.
 *
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { run, validate } from "noema";
import { initPlugin } from "../src/cli/commands/init.ts";
import { pluginNames } from "../src/cli/templates/plugins.ts";
import { cliCommand, IS_DENO, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

/** Runs the CLI from source with the current runtime. */
function cli(args: string[], cwd: string): { code: number | null; stdout: string; stderr: string } {
  const [cmd, ...argv] = [...cliCommand({ source: true }), ...args];
  const r = spawnSync(cmd, argv, { cwd, encoding: "utf8", env: { ...process.env, NO_COLOR: "1" } });
  if (r.error) throw r.error;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("noema init", () => {
  const tmp = tempDir("noema-init-");
  const dir = join(tmp.path, "plugins");
  after(() => tmp.cleanup());

  test("derives file, class and adapter names, and refuses unusable names", () => {
    assert.deepEqual(pluginNames("no-force-push"), {
      file: "no-force-push",
      pascal: "NoForcePush",
      kebab: "no-force-push",
    });
    assert.deepEqual(pluginNames("MyAgent"), { file: "my-agent", pascal: "MyAgent", kebab: "my-agent" });
    assert.deepEqual(pluginNames("sql_guard2.ts"), { file: "sql-guard2", pascal: "SqlGuard2", kebab: "sql-guard2" });
    assert.match(String(pluginNames("9lives")), /invalid name "9lives"/);
    assert.match(String(pluginNames("../evil")), /invalid name/);
  });

  test("the CLI writes a policy and its test, then refuses to overwrite them without --force", () => {
    const first = cli(["init", "policy", "no-force-push", "--dir", dir], tmp.path);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /wrote plugins\/no-force-push\.ts/);
    assert.match(first.stdout, /wrote plugins\/no-force-push\.test\.ts/);
    const policy = readFileSync(join(dir, "no-force-push.ts"), "utf8");
    assert.match(policy, /export default class NoForcePush extends DirectedIntuition/);
    assert.match(policy, /static override api = "1\.0"/);
    assert.match(policy, /import \{ DirectedIntuition, type PolicyState, type Verdict \} from "noema"/);

    writeFileSync(join(dir, "no-force-push.ts"), policy + "// edited by hand\n");
    const again = cli(["init", "policy", "no-force-push", "--dir", dir], tmp.path);
    assert.equal(again.code, 2);
    assert.equal(again.stderr.trim().split("\n").length, 1, again.stderr);
    assert.match(
      again.stderr,
      /no-force-push\.ts, .*no-force-push\.test\.ts: already exist \(use --force to overwrite\)/,
    );
    assert.match(readFileSync(join(dir, "no-force-push.ts"), "utf8"), /edited by hand/);

    const forced = cli(["init", "policy", "no-force-push", "--dir", dir, "--force", "--json"], tmp.path);
    assert.equal(forced.code, 0, forced.stderr);
    const result = JSON.parse(forced.stdout) as { kind: string; plugin: string; overwritten: string[] };
    assert.equal(result.kind, "policy");
    assert.equal(result.overwritten.length, 2);
    assert.doesNotMatch(readFileSync(join(dir, "no-force-push.ts"), "utf8"), /edited by hand/);
  });

  test("a bad kind or name is a one-line usage error", () => {
    const kind = cli(["init", "planner", "x", "--dir", dir], tmp.path);
    assert.equal(kind.code, 2);
    assert.match(kind.stderr, /'planner' is invalid for argument 'kind'. Allowed choices are policy, adapter/);
    const name = cli(["init", "policy", "../x", "--dir", dir], tmp.path);
    assert.equal(name.code, 2);
    assert.equal(
      name.stderr.trim(),
      'noema: invalid name "../x": use letters, digits, "-" and "_", starting with a letter (e.g. no-force-push)',
    );
  });

  test("initPlugin writes an adapter and its test", () => {
    const r = initPlugin("adapter", "echo-agent", { dir });
    assert.equal(r.plugin, join(dir, "echo-agent.ts"));
    assert.equal(r.test, join(dir, "echo-agent.test.ts"));
    assert.match(readFileSync(r.plugin, "utf8"), /name: "echo-agent"/);
    assert.throws(() => initPlugin("adapter", "echo-agent", { dir }), /already exist/);
  });

  test("the generated tests pass under this runtime", () => {
    // As in a project that depends on noema: `noema` resolves from node_modules (Bun) or the import map (Deno).
    mkdirSync(join(tmp.path, "node_modules"), { recursive: true });
    symlinkSync(REPO, join(tmp.path, "node_modules", "noema"), "dir");
    const files = [join(dir, "no-force-push.test.ts"), join(dir, "echo-agent.test.ts")];
    // Under Deno without the type check (ten seconds of a core): `npm test`'s `deno check` checks the same files,
    // committed in examples/init/ (the next test keeps them equal to what init writes).
    const argv = IS_DENO
      ? ["test", "-A", "--no-check", "--config", join(REPO, "deno.json"), ...files]
      : ["test", ...files];
    const r = spawnSync(process.execPath, argv, {
      cwd: tmp.path,
      encoding: "utf8",
      env: { ...process.env, NO_COLOR: "1" },
    });
    const out = `${r.stdout}${r.stderr}`;
    assert.equal(r.status, 0, out);
    // 5 policy tests + 3 adapter tests.
    if (IS_DENO) assert.match(out, /ok \| 8 passed \| 0 failed/, out);
    else assert.match(out, /^\s*8 pass$/m, out);
  });

  test("examples/init/ holds what init writes today (so `deno check` type-checks the generated files)", () => {
    const fresh = join(tmp.path, "fresh");
    initPlugin("policy", "no-force-push", { dir: fresh });
    initPlugin("adapter", "echo-agent", { dir: fresh });
    const committed = join(REPO, "examples", "init");
    for (const f of ["no-force-push.ts", "no-force-push.test.ts", "echo-agent.ts", "echo-agent.test.ts"]) {
      assert.equal(
        readFileSync(join(committed, f), "utf8"),
        readFileSync(join(fresh, f), "utf8"),
        `examples/init/${f} differs from what noema init writes: regenerate it (noema init … --dir examples/init --force)`,
      );
    }
  });
});

describe("an episode with the generated policy and adapter", () => {
  const tmp = tempDir("noema-init-run-");
  let policy = "";
  let adapter = "";
  before(() => {
    policy = initPlugin("policy", "house-rules", { dir: tmp.path }).plugin;
    adapter = initPlugin("adapter", "echo-agent", { dir: tmp.path }).plugin;
  });
  after(() => tmp.cleanup());

  test("hints and interventions are applied, the run succeeds and is valid", async () => {
    const result = await run("tidy the repository", {
      root: join(tmp.path, ".noema"),
      using: adapter,
      policies: [policy],
      steps: [
        { kind: "act", description: "update packages", inputs: { command: "sudo apt-get update" } },
        { kind: "act", description: "publish", inputs: { command: "git push origin main --force" } },
      ],
    });
    assert.equal(result.status, "ok");
    assert.equal(result.exit_code, 0);
    const events = readFileSync(result.paths.events, "utf8").trim().split("\n").map((l) =>
      JSON.parse(l) as {
        phase: string;
        payload: Record<string, unknown>;
      }
    );
    const acts = events.filter((e) => e.phase === "act");
    assert.equal(acts.length, 2);
    const direction = events.filter((e) => e.phase === "direction").map((e) => JSON.stringify(e.payload));
    assert.ok(direction.some((d) => d.includes("HouseRules@1.0") && d.includes("hint")), direction.join("\n"));
    assert.ok(direction.some((d) => d.includes("--force-with-lease")), direction.join("\n"));
    const actText = JSON.stringify(acts[1].payload);
    assert.match(actText, /echo-agent: act step/);
    const report = validate(result.episode_dir);
    assert.equal(report.valid, true, JSON.stringify(report.problems, null, 2));
  });

  test("a veto ends the run vetoed (exit 3), still valid", async () => {
    const result = await run("wipe the disk", {
      root: join(tmp.path, ".noema"),
      using: adapter,
      policies: [policy],
      steps: [{ kind: "act", description: "wipe", inputs: { command: "rm -rf /" } }],
    });
    assert.equal(result.status, "vetoed");
    assert.equal(result.exit_code, 3);
    const report = validate(result.episode_dir);
    assert.equal(report.valid, true, JSON.stringify(report.problems, null, 2));
  });
});
