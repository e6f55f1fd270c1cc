/**
 * Security claims, tried through the real CLI and the library:
 * - episode ids and task-file paths never lead a write outside the root
 *   (`..`, absolute paths, separators, NUL bytes, planted symlinks);
 * - a planted secret (an env var named in `secrets`, and a GitHub token) put
 *   in the task, the step inputs, the adapter output and a policy's advice is
 *   found nowhere in the episode's artifacts;
 * - artifacts are created 0600, directories 0700.
 *
 * Checkpoint ids: not tried here — the approval/resume API landed while
 * this suite was written (checkpoint files are named by the runtime, not
 * by users); see the report of issue 8.
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { run } from "noema";
import { acquireLock, LOCK_FILE } from "../src/store/lock.ts";
import { cli } from "./helpers/cli.ts";
import { foundUnder, walk } from "./helpers/files.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-security-");
after(() => tmp.cleanup());

describe("episode ids and task-file paths cannot escape the root", () => {
  const root = join(tmp.path, "root");
  const outside = join(tmp.path, "outside");
  mkdirSync(outside, { recursive: true });
  const untouched = () => assert.deepEqual(readdirSync(outside), [], "something was written outside the root");

  for (
    const id of ["..", "../outside", "../../etc", "a/b", "/tmp/abs-episode", "a\\b", ".hidden", "-rf", "x".repeat(129)]
  ) {
    test(`--episode-id ${JSON.stringify(id.length > 20 ? id.slice(0, 10) + "…" : id)} is refused (exit 2), nothing written`, () => {
      const r = cli(["--root", root, "run", "hello", "--episode-id", id]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^noema: invalid episode id /);
      assert.doesNotMatch(r.stderr, /^\s+at /m);
      untouched();
      assert.equal(existsSync(join(root, "episodes")) && readdirSync(join(root, "episodes")).length > 0, false);
      assert.equal(existsSync("/tmp/abs-episode"), false);
    });
  }

  test("a NUL byte in an episode id is refused (library API and task file)", async () => {
    await assert.rejects(run("hello", { root, episode_id: "ep_a\u0000b" }), /invalid episode id .*control characters/);
    const task = join(tmp.path, "nul.jsonc");
    writeFileSync(task, JSON.stringify({ task: "hello", episode_id: "ep_a\u0000/../../outside" }));
    const r = cli(["--root", root, "run", task]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /invalid episode id/);
    untouched();
  });

  test("episode_id from a task file with '..' or an absolute path is refused", () => {
    for (const id of ["../outside/x", join(outside, "abs")]) {
      const task = join(tmp.path, "escape.jsonc");
      writeFileSync(task, JSON.stringify({ task: "hello", episode_id: id }));
      const r = cli(["--root", root, "run", task]);
      assert.equal(r.code, 2, r.stderr);
      untouched();
    }
  });

  test("a symlink planted at episodes/<id> is never written through", () => {
    mkdirSync(join(root, "episodes"), { recursive: true });
    symlinkSync(outside, join(root, "episodes", "ep_planted"));
    const r = cli(["--root", root, "run", "hello", "--episode-id", "ep_planted"]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /already exists/);
    // A dangling symlink too (existsSync is false for it).
    symlinkSync(join(outside, "not-yet"), join(root, "episodes", "ep_dangling"));
    const r2 = cli(["--root", root, "run", "hello", "--episode-id", "ep_dangling"]);
    assert.notEqual(r2.code, 0);
    assert.doesNotMatch(r2.stderr, /^\s+at /m);
    untouched();
    // Reading through a symlink that leaves the root is refused as well.
    const r3 = cli(["--root", root, "verify", "ep_planted"]);
    assert.equal(r3.code, 1);
    assert.match(r3.stderr, /outside .*refused/);
  });

  test("manifest entries naming paths outside the episode are refused by verify, not read", () => {
    const r = cli(["--root", root, "run", "hello", "--episode-id", "ep_manifest_paths", "-q"]);
    assert.equal(r.code, 0, r.stderr);
    const mpath = join(root, "episodes", "ep_manifest_paths", "manifest.json");
    const m = JSON.parse(readFileSync(mpath, "utf8"));
    m.files.push({ name: "../../../outside/x", kind: "custom", size_bytes: 0, sha256: "sha256:" + "0".repeat(64) });
    m.files.push({ name: "/etc/passwd", kind: "custom", size_bytes: 0, sha256: "sha256:" + "0".repeat(64) });
    writeFileSync(mpath, JSON.stringify(m));
    const v = JSON.parse(cli(["--root", root, "verify", "ep_manifest_paths", "--json"]).stdout);
    assert.deepEqual(
      v.files.filter((f: { status: string }) => f.status === "unsafe_path").map((f: { name: string }) => f.name).sort(),
      ["../../../outside/x", "/etc/passwd"],
    );
  });
});

/** A secret (an env var named in `secrets`), a GitHub token, and a policy that returns both in its advice. */
const SECRET = "s3cr3t-Value-9f8e7d6c";
const GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8";
const policy = join(tmp.path, "leaky-policy.ts");
writeFileSync(
  policy,
  `import process from "node:process";
export default {
name: "Leaky",
version: "1.0",
advise(state: { step: { index: number } }) {
  return { kind: "hint", advice: "use " + process.env.MY_API_TOKEN + " and ${GH}", confidence: 0.9, risk_tags: ["x"] };
},
};
`,
);

describe("secrets are masked in every artifact", () => {
  const root = join(tmp.path, "secrets-root");
  const task = join(tmp.path, "secret-task.jsonc");
  writeFileSync(
    task,
    JSON.stringify({
      task: `Deploy with token ${SECRET} and ${GH}`,
      using: "shell",
      workspace: tmp.path,
      secrets: ["MY_API_TOKEN"],
      tags: { note: "plain" },
      steps: [
        {
          kind: "act",
          description: "call the API",
          inputs: { command: `echo "out: ${SECRET} ${GH}"; echo "err: ${SECRET}" >&2` },
        },
        { kind: "verify", description: "again", inputs: { argv: ["echo", SECRET, GH], token: SECRET } },
      ],
    }),
  );

  test("grepping all artifacts for the secret value and the token finds nothing", () => {
    const r = cli(["--root", root, "run", task, "--json", "--governance", "audit"], { env: { MY_API_TOKEN: SECRET } });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const { episode_dir } = JSON.parse(r.stdout);
    const files = walk(root).filter((p) => statSync(p).isFile());
    assert.ok(files.length >= 5, files.join(", "));
    assert.deepEqual(foundUnder(root, [SECRET, GH, GH.slice(4, 20)]), []);
    assert.equal(r.stdout.includes(SECRET) || r.stderr.includes(SECRET), false);
    const events = readFileSync(join(episode_dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    // The masking is reported: which variable, which pattern.
    const candidates = events.filter((e) => e.phase === "action_candidate");
    assert.equal(candidates.length, 2);
    assert.ok(
      candidates[0].payload.redaction.secrets.includes("MY_API_TOKEN"),
      JSON.stringify(candidates[0].payload.redaction),
    );
    assert.ok(
      JSON.stringify(candidates[0].payload.redaction.patterns).includes("github"),
      JSON.stringify(candidates[0].payload.redaction),
    );
    // The masked text is really there (the run did see the secret).
    const act = events.find((e) => e.phase === "act");
    assert.match(JSON.stringify(act.payload), /\[REDACTED(:\w+)?\]/);
  });
});

describe("secrets in policy advice and step descriptions", () => {
  test("a secret returned in a policy's advice, or written in a step description, is masked", () => {
    const root = join(tmp.path, "advice-root");
    const task = join(tmp.path, "advice-task.jsonc");
    writeFileSync(
      task,
      JSON.stringify({
        task: "t",
        secrets: ["MY_API_TOKEN"],
        policies: [policy],
        steps: [{ kind: "act", description: `use ${SECRET}` }],
      }),
    );
    const r = cli(["--root", root, "run", task, "-q", "--governance", "audit"], { env: { MY_API_TOKEN: SECRET } });
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(foundUnder(root, [SECRET, GH]), []);
  });
});

describe("owner-only permissions", () => {
  test("artifacts are 0600 and directories 0700, including learned policy state", () => {
    const root = join(tmp.path, "perm-root");
    const r = cli(["--root", root, "run", "examples/sql-vetoed.jsonc", "--json", "--learn", "apply"]);
    assert.equal(r.code, 3, r.stderr);
    const paths = walk(root);
    const files = paths.filter((p) => statSync(p).isFile());
    const dirs = [root, ...paths.filter((p) => statSync(p).isDirectory())];
    assert.ok(files.some((f) => f.endsWith("manifest.json")) && files.some((f) => f.endsWith("learn.jsonl")));
    for (const f of files) assert.equal((statSync(f).mode & 0o777).toString(8), "600", f);
    for (const d of dirs) assert.equal((statSync(d).mode & 0o777).toString(8), "700", d);
  });

  test("the episode lock file is 0600", () => {
    const dir = join(tmp.path, "lock-episode");
    mkdirSync(dir, { mode: 0o700 });
    const lock = acquireLock(dir, "test");
    try {
      assert.equal((statSync(join(dir, LOCK_FILE)).mode & 0o777).toString(8), "600");
    } finally {
      lock.release();
    }
    assert.equal(existsSync(join(dir, LOCK_FILE)), false);
  });
});
