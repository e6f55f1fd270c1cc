/**
 * The library under plain Node (issue 23.15): `npm ci` runs `prepare`, which
 * compiles `mod.ts` to `dist/node/`; package.json `exports` sends Node there.
 * A Node child process in a project with the package installed imports it
 * by name and runs real episodes.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-node-lib-");
after(() => tmp.cleanup());

const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8"));

/** Runs `script` (an ES module) with the `node` on PATH in a project that depends on noema; returns its result. */
function node(project: string, script: string): { code: number | null; stdout: string; stderr: string } {
  writeFileSync(join(project, "main.mjs"), script);
  const env: Record<string, string> = { ...process.env as Record<string, string> };
  delete env.NOEMA_ROOT;
  const r = spawnSync("node", ["main.mjs"], { cwd: project, env, encoding: "utf8", timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("the library under plain Node", () => {
  test("package.json: Node gets dist/node/mod.js, Bun/Deno/types get mod.ts, prepare builds it", () => {
    assert.deepEqual(pkg.exports["."], {
      types: "./mod.ts",
      bun: "./mod.ts",
      deno: "./mod.ts",
      node: "./dist/node/mod.js",
      default: "./dist/node/mod.js",
    });
    assert.equal(pkg.scripts.prepare, "bun scripts/build-node.ts");
    assert.equal(pkg.engines.node, ">=20");
  });

  test('import … from "noema" under Node runs an episode, governs it and reads it back', () => {
    // The package as `npm ci` leaves it (the prepare script's build), installed in a project. Built into the
    // project, not the checkout's dist/node, so a run of this file under the other runtime cannot race it: the
    // package folder holds package.json (its exports) and the build, its dependencies are the checkout's.
    const project = join(tmp.path, "project");
    const installed = join(project, "node_modules", "noema");
    mkdirSync(installed, { recursive: true });
    writeFileSync(join(installed, "package.json"), readFileSync(join(REPO, "package.json")));
    symlinkSync(join(REPO, "node_modules"), join(installed, "node_modules"));
    const bun = join(REPO, "node_modules", ".bin", "bun");
    const outdir = join(installed, "dist", "node");
    const built = spawnSync(bun, ["scripts/build-node.ts", "--outdir", outdir], { cwd: REPO, encoding: "utf8" });
    assert.equal(built.status, 0, built.stderr);
    writeFileSync(join(project, "package.json"), '{ "type": "module" }\n');
    writeFileSync(
      join(project, "veto-rm.mjs"),
      'export default { name: "NoRm", version: "1.0", advise: (s) => s.action.command.startsWith("rm") ' +
        '? { kind: "veto", advice: "no rm", confidence: 1 } : undefined };\n',
    );
    const r = node(
      project,
      `import { run, validate, listEpisodes, EXIT } from "noema";
const root = ".noema";
const hello = await run("Say hello", { root, policies: [{ name: "Hint", version: "1.0", advise: () => ({ kind: "hint", advice: "ok" }) }] });
const shell = await run("list", { root, using: "shell", steps: [{ kind: "act", description: "echo", inputs: { command: "echo hi" } }] });
const vetoed = await run("clean", { root, using: "shell", policies: ["./veto-rm.mjs"], steps: [{ kind: "act", description: "rm", inputs: { command: "rm -rf build" } }] });
let ts = null;
try { await run("x", { root, policies: [${
        JSON.stringify(join(REPO, "plugins", "policies", "sql-guard.ts"))
      }] }); } catch (e) { ts = e.message; }
console.log(JSON.stringify({
  node: process.versions.node,
  statuses: [hello.status, shell.status, vetoed.status],
  vetoedExit: vetoed.exit_code === EXIT.VETOED,
  valid: [hello, shell, vetoed].every((r) => validate(r.episode_dir).valid),
  listed: listEpisodes({ root }).length,
  ts,
}));
`,
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.ok(Number(out.node.split(".")[0]) >= 20, out.node);
    assert.deepEqual(out.statuses, ["ok", "ok", "vetoed"]);
    assert.equal(out.vetoedExit, true);
    assert.equal(out.valid, true);
    assert.equal(out.listed, 3);
    // A .ts plugin file under Node (which cannot import TypeScript) is a clear error, not a crash.
    assert.match(out.ts, /sql-guard\.ts: cannot load: .*Node cannot import \.ts files: run under Bun or Deno/);
  });
});
