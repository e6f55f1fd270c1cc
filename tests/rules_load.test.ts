/**
 * Rules files that cannot hold (issue 37 §5): a rule that can match nothing
 * (`Bash(:*)`, `Read(//)`) is an error at load naming the file, the line and
 * the rule; a FIFO (or any file that is not a regular one) given as a rules
 * file, or as `noema.jsonc`, is refused as "not a regular file" without
 * waiting for a writer.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ruleProblem } from "../src/runtime/rules/rule.ts";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir();
after(() => tmp.cleanup());
/** No user rules file: only what the test names is loaded. */
const env = { NOEMA_USER_RULES: "" };

function fifo(path: string): string {
  const r = spawnSync("mkfifo", [path]);
  assert.equal(r.status, 0, String(r.stderr));
  return path;
}

describe("rules that can match nothing are errors at load", () => {
  test("an empty command prefix, an empty absolute path; their neighbours stay valid", () => {
    for (const rule of ["Bash(:*)", "Bash(  :*)", "Bash(\t:*)"]) {
      assert.match(ruleProblem(rule) ?? "", /an empty command prefix matches no command/, rule);
    }
    for (const rule of ["Read(//)", "Edit(///)", "Grep(//)"]) {
      assert.match(ruleProblem(rule) ?? "", /an empty path after "\/\/" matches no file/, rule);
    }
    for (const rule of ["Bash(::*)", "Bash(git:*)", "Bash", "Read(/)", "Read(//etc/**)", "Read(./)"]) {
      assert.equal(ruleProblem(rule), null, rule);
    }
  });

  test("noema rules test names the file, the line and the rule (exit 2)", () => {
    const file = join(tmp.path, "team.jsonc");
    writeFileSync(file, '{\n  "deny": [\n    "Bash(git push:*)",\n    "Bash(:*)"\n  ]\n}\n');
    const r = cli(["rules", "test", "--rules", file, "-c", "git push"], { env });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /team\.jsonc:4: deny\[1\]: "Bash\(:\*\)": an empty command prefix matches no command/);
    assert.equal(r.stdout, "");
    writeFileSync(file, '{ "ask": ["Read(//)"] }\n');
    const path = cli(["rules", "test", "--rules", file, "-c", "ls"], { env });
    assert.equal(path.code, 2, path.stderr);
    assert.match(path.stderr, /team\.jsonc:1: ask\[0\]: "Read\(\/\/\)": an empty path after/);
  });
});

describe("a rules file must be a regular file", () => {
  test("a FIFO as --rules, as NOEMA_USER_RULES and as rules_file: not a regular file, nothing waits", () => {
    const dir = join(tmp.path, "fifo");
    mkdirSync(dir);
    const pipe = fifo(join(dir, "rules.jsonc"));
    // Each bound only catches a hang (a blocking open waits for a writer that never comes).
    const r = cli(["rules", "test", "--rules", pipe, "-c", "ls"], { env, timeoutMs: 60_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /rules\.jsonc: rules file is not a regular file \(a FIFO\)/);
    const user = cli(["rules", "test", "-c", "ls"], { env: { NOEMA_USER_RULES: pipe }, timeoutMs: 60_000 });
    assert.equal(user.code, 2, user.stderr);
    assert.match(user.stderr, /not a regular file \(a FIFO\)/);
    const project = join(tmp.path, "project");
    mkdirSync(project);
    writeFileSync(join(project, "noema.jsonc"), `{\n  "rules_file": ${JSON.stringify(pipe)}\n}\n`);
    const named = cli(["rules", "test", "-c", "ls"], { env, cwd: project, timeoutMs: 60_000 });
    assert.equal(named.code, 2, named.stderr);
    assert.match(named.stderr, /noema\.jsonc.*rules_file: rules file is not a regular file \(a FIFO\)/);
  });

  test("a FIFO as noema.jsonc is refused the same way, not read", () => {
    const project = join(tmp.path, "fifo-settings");
    mkdirSync(project);
    fifo(join(project, "noema.jsonc"));
    const r = cli(["rules", "test", "-c", "ls"], { env, cwd: project, timeoutMs: 60_000 });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /noema\.jsonc: not a regular file \(a FIFO\)/);
  });
});

describe("noema rules test shows every reading the rules check", () => {
  test("other_readings: the other ways a wrapper's words may run a command, which decided the deny", () => {
    const file = join(tmp.path, "push.jsonc");
    writeFileSync(file, '{ "deny": ["Bash(git push:*)"] }\n');
    // `faketime -f X git push`: with -f taking no value, `X git push` would run.
    const r = cli(["rules", "test", "--rules", file, "-c", "faketime -f X git push"], { env });
    assert.equal(r.code, 3, r.stdout + r.stderr);
    const out = JSON.parse(r.stdout);
    assert.deepEqual(out.commands, ["git push"]);
    assert.ok(out.other_readings.includes("X git push"), r.stdout);
    // A name only a case-insensitive file system runs as git: the main reading is allowed, the other is denied.
    const upper = JSON.parse(cli(["rules", "test", "--rules", file, "-c", "ls && GIT push"], { env }).stdout);
    assert.deepEqual([upper.effect, upper.commands, upper.other_readings], ["deny", ["ls", "GIT push"], ["git push"]]);
    const plain = JSON.parse(cli(["rules", "test", "--rules", file, "-c", "ls -l"], { env }).stdout);
    assert.deepEqual([plain.effect, plain.other_readings], ["allow", []]);
    const read = JSON.parse(
      cli(["rules", "test", "--rules", file, "--tool", "Read", "--input", '{"file_path": "x"}'], {
        env,
      }).stdout,
    );
    assert.equal(read.other_readings, null, "not a shell command");
  });
});
