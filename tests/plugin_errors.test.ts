/**
 * Plugin load errors from source (the CLI under the runtime running this
 * test, from a directory outside the repository): a plugin for another major
 * API version, a default export that is not a plugin, a syntax error and a
 * missing file each give one line naming the file and what is wrong, exit 2,
 * and no stack trace unless `--debug`. `tests/binary.test.ts` checks the same
 * with the compiled binary.
 *
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { loadAdapter, loadPlannerFile, loadPolicyFile, NoemaError, PLUGIN_API_VERSION } from "noema";
import { tempDir } from "./helpers/tmp.ts";
import { assertOneLineError, cliCommand } from "./helpers/cli.ts";

interface Result {
  code: number | null;
  stderr: string;
}

function cli(args: string[], cwd: string): Result {
  const [cmd, ...argv] = [...cliCommand({ source: true }), ...args];
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "NOEMA_DEBUG") env[k] = v;
  const r = spawnSync(cmd, argv, { cwd, encoding: "utf8", env: { ...env, NO_COLOR: "1" } });
  if (r.error) throw r.error;
  return { code: r.status, stderr: r.stderr };
}

describe("plugin load errors", () => {
  const tmp = tempDir("noema-plugin-errors-");
  before(() => {
    tmp.file(
      "future.ts",
      `import { DirectedIntuition } from "noema";
export default class Future extends DirectedIntuition {
  static override api = "2.0";
  advise() {}
}
`,
    );
    tmp.file("future-object.ts", `export default { name: "F", api: "3.2", advise() {} };\n`);
    tmp.file(
      "future-adapter.ts",
      `export default { name: "a", api: "2.0", create: () => ({ act: () => ({ status: "ok" }) }) };\n`,
    );
    tmp.file("not-a-plugin.ts", "export default 42;\n");
    tmp.file("no-default.ts", "export const x = 1;\n");
    tmp.file("broken.ts", "export default { name: 'x', advise( {\n");
    tmp.file("throws.ts", "throw new Error('cannot start: no config');\n");
    mkdirSync(join(tmp.path, "lib"));
    tmp.file(join("lib", "config.ts"), "\nthrow new Error('no config file');\n");
    tmp.file("imports-throwing.ts", 'import "./lib/config.ts";\nexport default { name: "x", advise() {} };\n');
    tmp.file(join("lib", "names.ts"), "export const known = 1;\n");
    tmp.file(
      "imports-missing.ts",
      '// a name noema does not export\nimport { deepFreeze, notExported } from "noema";\n' +
        'export default { name: "x", advise() { return notExported(deepFreeze({})); } };\n',
    );
    tmp.file(
      "imports-missing-local.ts",
      'import {\n  known,\n  type Nope as N,\n  absent as alias,\n} from "./lib/names.ts";\n' +
        'export default { name: "x", advise() { return known + alias ? undefined : undefined; } };\n',
    );
  });
  after(() => tmp.cleanup());

  test("the plugin API version is 1.x", () => {
    assert.match(PLUGIN_API_VERSION, /^1\.\d+$/);
  });

  test("another major API version (class, object, adapter, planner)", () => {
    assertOneLineError(
      cli(["run", "t", "--policy", "future.ts"], tmp.path),
      "future.ts",
      /: written for plugin API 2\.0, but this noema provides 1\.0$/,
    );
    assertOneLineError(
      cli(["run", "t", "--policy", "future-object.ts"], tmp.path),
      "future-object.ts",
      /written for plugin API 3\.2/,
    );
    assertOneLineError(
      cli(["run", "t", "--using", "./future-adapter.ts"], tmp.path),
      "./future-adapter.ts",
      /written for plugin API 2\.0/,
    );
  });

  test("a default export that is not a plugin", () => {
    assertOneLineError(
      cli(["run", "t", "--policy", "not-a-plugin.ts"], tmp.path),
      "not-a-plugin.ts",
      /does not export a policy: the default export must be/,
    );
    assertOneLineError(
      cli(["run", "t", "--policy", "no-default.ts"], tmp.path),
      "no-default.ts",
      /has no default export/,
    );
    assertOneLineError(
      cli(["run", "t", "--using", "./not-a-plugin.ts"], tmp.path),
      "./not-a-plugin.ts",
      /does not export an adapter/,
    );
    assertOneLineError(
      cli(["run", "t", "--planner", "not-a-plugin.ts"], tmp.path),
      "not-a-plugin.ts",
      /does not export a planner/,
    );
  });

  test("a syntax error says where", () => {
    assertOneLineError(
      cli(["run", "t", "--policy", "broken.ts"], tmp.path),
      "broken.ts",
      /: syntax error at line 1, column \d+: /,
    );
  });

  test("a plugin that throws while loading", () => {
    assertOneLineError(
      cli(["run", "t", "--policy", "throws.ts"], tmp.path),
      "throws.ts",
      /: cannot load: cannot start: no config \(at throws\.ts:1:\d+\)$/,
    );
    // Thrown by a module the plugin imports: where in that module, relative to the plugin.
    assertOneLineError(
      cli(["run", "t", "--policy", "imports-throwing.ts"], tmp.path),
      "imports-throwing.ts",
      /: cannot load: no config file \(at lib\/config\.ts:2:\d+\)$/,
    );
  });

  test("a name the module does not export: where the plugin imports it (Bun does not say; Deno does)", () => {
    assertOneLineError(
      cli(["run", "t", "--policy", "imports-missing.ts"], tmp.path),
      "imports-missing.ts",
      /notExported.* (\(at imports-missing\.ts:2:22\)|at file:\/\/\/.*imports-missing\.ts:2:22)$/,
    );
    assertOneLineError(
      cli(["run", "t", "--policy", "imports-missing-local.ts"], tmp.path),
      "imports-missing-local.ts",
      /absent.* (\(at imports-missing-local\.ts:4:3\)|at file:\/\/\/.*imports-missing-local\.ts:4:3)$/,
    );
  });

  test("a missing file", () => {
    assertOneLineError(cli(["run", "t", "--policy", "missing.ts"], tmp.path), "missing.ts", /: plugin file not found$/);
    assertOneLineError(cli(["run", "t", "--planner", "gone.ts"], tmp.path), "gone.ts", /: plugin file not found$/);
  });

  test("--debug adds the stack trace", () => {
    const r = cli(["run", "t", "--policy", "broken.ts", "--debug"], tmp.path);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^noema: broken\.ts: syntax error/);
    assert.ok(r.stderr.trim().split("\n").length > 1, r.stderr);
  });

  test("the library loaders throw NoemaError with exit code 2 and the file", async () => {
    for (
      const load of [
        () => loadPolicyFile(join(tmp.path, "future.ts")),
        () => loadAdapter(join(tmp.path, "not-a-plugin.ts")),
        () => loadPlannerFile(join(tmp.path, "broken.ts")),
      ]
    ) {
      await assert.rejects(load, (e: unknown) => {
        assert.ok(e instanceof NoemaError);
        assert.equal(e.exitCode, 2);
        assert.ok(String(e.location.file).startsWith(tmp.path), String(e.location.file));
        return true;
      });
    }
  });
});

describe("a policy cannot end noema's process", () => {
  const tmp = tempDir("noema-plugin-kill-");
  after(() => tmp.cleanup());
  for (const isolation of ["worker", "thread"]) {
    test(`(${isolation}) a kill of this process by a numeric string, its group, or every process is refused`, () => {
      // Found by a break-it run: process.kill(String(process.pid), "SIGKILL") passed the guard and killed noema, the
      // episode left unsealed. SIGCONT for the targets beyond this process: harmless if the guard let one through.
      const dir = join(tmp.path, `killer-${isolation}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, "killer.ts"),
        `export default { name: "Killer", version: "1.0", advise() {
  const refused = [];
  for (const [pid, sig] of [[String(process.pid), "SIGKILL"], [0, "SIGCONT"], [-process.pid, "SIGCONT"], [-1, "SIGCONT"]]) {
    try { process.kill(pid, sig); } catch (e) { if (/refused/.test(String(e?.message))) refused.push(String(pid)); }
  }
  return { kind: "hint", advice: "refused " + refused.length + " of 4" };
} };
`,
      );
      const r = spawnSync(cliCommand({ source: true })[0], [
        ...cliCommand({ source: true }).slice(1),
        "--root",
        join(dir, "root"),
        "run",
        "kill",
        "--policy",
        join(dir, "killer.ts"),
        "--json",
      ], { cwd: dir, encoding: "utf8", env: { ...process.env, NOEMA_POLICY_ISOLATION: isolation } });
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout);
      const events = readFileSync(join(out.episode_dir, "events.jsonl"), "utf8");
      assert.match(events, /refused 4 of 4/);
      assert.ok(existsSync(join(out.episode_dir, "manifest.json")), "the run sealed");
    });
  }
});
