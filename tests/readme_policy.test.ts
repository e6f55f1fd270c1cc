// deno-lint-ignore-file no-explicit-any -- tests read artifacts as loose JSON
/**
 * The README's policy example works as printed (issue 11 §2): the policy and
 * the two commands are taken from README.md itself and run through the real
 * CLI, with a `git` on PATH that only prints its arguments.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { cli, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir();
after(() => tmp.cleanup());

const readme = readFileSync(join(REPO, "README.md"), "utf8");
const policyBlock = /```ts\n(\/\/ no-force-push\.ts\n[\s\S]*?)```/.exec(readme)?.[1];
const commands = [...readme.matchAll(/^npx noema (run .*--policy no-force-push\.ts .*?)(?:\s+#.*)?$/gm)].map((m) =>
  m[1]
);

/**
 * Splits a printed command line into arguments (double-quoted strings kept whole), `$scratch` (the README's scratch
 * repository, where its examples act) standing for `scratch`.
 */
function words(line: string, scratch: string): string[] {
  return [...line.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => (m[1] ?? m[2]).replaceAll("$scratch", scratch));
}

function events(cwd: string): any[] {
  const root = join(cwd, ".noema", "episodes");
  const [id] = readdirSync(root).filter((d) => d.startsWith("ep_"));
  return readFileSync(join(root, id, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

function setup(name: string): { cwd: string; env: Record<string, string> } {
  const cwd = join(tmp.path, name);
  const bin = join(tmp.path, `${name}-bin`);
  mkdirSync(join(cwd, "build"), { recursive: true });
  writeFileSync(join(cwd, "build", "out.o"), "object");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "git"), `#!/bin/sh\necho "fake git: $*"\n`);
  chmodSync(join(bin, "git"), 0o755);
  writeFileSync(join(cwd, "no-force-push.ts"), policyBlock!);
  return { cwd, env: { PATH: `${bin}:${process.env.PATH}` } };
}

describe("the README's policy example, as printed", () => {
  test("the README has the policy and both commands", () => {
    assert.ok(policyBlock?.includes("class NoForcePush"), "the policy block is in README.md");
    assert.equal(commands.length, 2);
  });

  test("-- git push --force: the intervention rewrites the command that runs", () => {
    const { cwd, env } = setup("push");
    const line = commands.find((c) => c.includes("git push"))!;
    const r = cli(words(line, cwd), { cwd, env });
    assert.equal(r.code, 0, r.stderr);
    const ev = events(cwd);
    const direction = ev.find((e) => e.phase === "direction" && e.payload.kind === "intervention");
    assert.equal(direction.payload.status, "applied");
    const act = ev.find((e) => e.phase === "act" && e.payload.step_status === "done" && e.payload.input.command);
    assert.equal(act.payload.input.command, "git push --force-with-lease");
    assert.equal(act.payload.input.argv, undefined);
    assert.match(JSON.stringify(act.payload.output), /fake git: push --force-with-lease/);
  });

  test("-- rm -rf build with --using shell: vetoed, exit 3, and build/ still exists", () => {
    const { cwd, env } = setup("clean");
    const line = commands.find((c) => c.includes("rm -rf"))!;
    assert.match(line, /--using shell/);
    const r = cli(words(line, cwd), { cwd, env });
    assert.equal(r.code, 3, r.stderr);
    assert.ok(existsSync(join(cwd, "build", "out.o")), "build/ was not deleted");
    const ev = events(cwd);
    assert.ok(ev.some((e) => e.phase === "direction" && e.payload.kind === "veto" && e.payload.status === "applied"));
    assert.equal(
      ev.filter((e) => e.phase === "act" && e.payload.result_status === "ok" && e.payload.input?.argv).length,
      0,
    );
  });
});

describe("help and docs agree with what `noema policy test` does (issue 23.14)", () => {
  /** A directory holding a no-force-push.ts: the README's, or the one `noema init policy` writes. */
  let dirs = 0;
  function withPolicy(which: "readme" | "template"): { cwd: string; env: Record<string, string> } {
    const at = setup(`policy-test-${which}-${++dirs}`);
    if (which === "template") {
      rmSync(join(at.cwd, "no-force-push.ts"));
      const init = cli(["init", "policy", "no-force-push"], { cwd: at.cwd });
      assert.equal(init.code, 0, init.stderr);
    }
    return at;
  }

  test("each `policy test --help` example exits with the code its comment promises, for either no-force-push.ts", () => {
    const help = cli(["policy", "test", "--help"]).stdout;
    const examples = [...help.matchAll(/^\s+\$ noema (policy test no-force-push\.ts .*?)\s+# (.*)$/gm)];
    assert.ok(examples.length >= 2, help);
    for (const which of ["readme", "template"] as const) {
      const { cwd, env } = withPolicy(which);
      for (const [, command, comment] of examples) {
        const promised = /exit (\d)/.exec(comment);
        assert.ok(promised, `the example says its exit code: ${comment}`);
        const r = cli(words(command, cwd), { cwd, env });
        assert.equal(r.code, Number(promised[1]), `${which}: ${command}  # ${comment}\n${r.stdout}${r.stderr}`);
        const result = JSON.parse(r.stdout).result;
        if (/vetoed/.test(comment)) assert.equal(result, "vetoed");
        if (/allowed/.test(comment)) assert.equal(result, "allowed");
      }
    }
  });

  test("docs/cli.md's example prints exactly what the command prints on the template's policy, and its exit code", () => {
    const docs = readFileSync(join(REPO, "docs", "cli.md"), "utf8");
    const [, command, output, code] =
      /\$ npx noema init policy no-force-push .*\n\$ npx noema (policy test no-force-push\.ts [^;]*); echo \$\?\n(.*)\n(\d)\n```/
        .exec(docs)!;
    const { cwd, env } = withPolicy("template");
    const r = cli(words(command, cwd), { cwd, env });
    assert.equal(r.stdout.trim(), output);
    assert.equal(r.code, Number(code));
  });

  test("--json prints the same JSON; --policy-timeout bounds the policy as in a run (too slow: failed, exit 1)", () => {
    const { cwd, env } = withPolicy("template");
    const plain = cli(["policy", "test", "no-force-push.ts", "--command", "rm -rf /"], { cwd, env });
    const json = cli(["policy", "test", "no-force-push.ts", "--command", "rm -rf /", "--json"], { cwd, env });
    assert.equal(json.code, 3, json.stderr);
    assert.equal(json.stdout, plain.stdout);
    // A policy that waits 60 s: the 200 ms bound fails it (fail_closed), and the error names that bound.
    writeFileSync(
      join(cwd, "slow.ts"),
      `export default { name: "Slow", version: "1.0", async advise() { await new Promise((r) => setTimeout(r, 60_000)); } };\n`,
    );
    const slow = cli(["policy", "test", "slow.ts", "--command", "ls", "--policy-timeout", "200"], { cwd, env });
    assert.equal(slow.code, 1, slow.stdout + slow.stderr);
    const out = JSON.parse(slow.stdout);
    assert.equal(out.result, "failed");
    assert.deepEqual(out.verdicts[0].error, { type: "PolicyTimeout", message: "advise did not settle within 200 ms" });
    const bad = cli(["policy", "test", "slow.ts", "--command", "ls", "--policy-timeout", "soon"], { cwd, env });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--policy-timeout/);
  });
});
