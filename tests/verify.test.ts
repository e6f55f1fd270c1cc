import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { NoemaError } from "../src/errors.ts";
import { checkSummary } from "../src/schema/summary.ts";
import {
  type AssertionContext,
  type AssertionSpec,
  buildVerification,
  captureSnapshot,
  computeOutcome,
  DEFAULT_IGNORE,
  diffSnapshots,
  evaluateAssertions,
  loadAssertionPlugins,
  notProvidedVerification,
  outcomeSuccess,
  parseAssertions,
  readSnapshot,
  resolvePointer,
  type Snapshot,
  snapshotPolicy,
  startVerification,
  WorkspaceUnavailableError,
  writeSnapshot,
} from "../src/verify/mod.ts";

const roots: string[] = [];
after(() => {
  for (const r of roots) {
    try {
      chmodSync(r, 0o700);
    } catch { /* already gone */ }
    rmSync(r, { recursive: true, force: true });
  }
});

/** A fresh temp dir holding the given files (path → content). */
function tree(files: Record<string, string | Uint8Array> = {}): string {
  const root = mkdtempSync(join(tmpdir(), "noema-verify-"));
  roots.push(root);
  for (const [p, content] of Object.entries(files)) put(root, p, content);
  return root;
}

function put(root: string, rel: string, content: string | Uint8Array): void {
  const abs = join(root, rel);
  mkdirSync(join(abs, ".."), { recursive: true });
  writeFileSync(abs, content);
}

const hex = (data: string | Uint8Array) => "sha256:" + createHash("sha256").update(data).digest("hex");
const isRoot = typeof process.getuid === "function" && process.getuid() === 0;

/** Snapshot before, apply a change, snapshot after: a full evaluation context. */
async function scenario(
  files: Record<string, string>,
  change: (root: string) => void = () => {},
): Promise<AssertionContext & { workspace: string; pre: Snapshot; post: Snapshot }> {
  const workspace = tree(files);
  const pre = await captureSnapshot(workspace);
  change(workspace);
  const post = await captureSnapshot(workspace);
  return { workspace, pre, post, diff: diffSnapshots(pre, post), baseDir: workspace };
}

async function evalOne(spec: unknown, ctx: AssertionContext) {
  const specs = parseAssertions([spec], "verify.jsonc", { baseDir: ctx.baseDir });
  const [r] = await evaluateAssertions(specs, ctx);
  return r;
}

function usageError(fn: () => unknown): NoemaError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof NoemaError, `expected a NoemaError, got ${e}`);
    assert.equal(e.exitCode, 2);
    return e;
  }
  assert.fail("expected a usage error");
}

describe("captureSnapshot", () => {
  test("reports progress (files hashed so far) at each yield, for a progress display", async () => {
    const ws = tree(Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${i}.txt`, String(i)])));
    const seen: number[] = [];
    const snap = await captureSnapshot(ws, undefined, { sliceMs: 0, onProgress: (n) => seen.push(n) });
    assert.equal(Object.keys(snap.files).length, 50);
    assert.ok(seen.length >= 10, `expected many progress calls, got ${seen.length}`);
    assert.deepEqual(seen, [...seen].sort((a, b) => a - b), "counts only grow");
    assert.ok(seen.every((n) => n >= 1 && n <= 50));
  });

  test("hashes every regular file, sorted by relative POSIX path, with the policy and root", async () => {
    const big = new Uint8Array(3 * (1 << 20) + 17).map((_, i) => (i * 31) & 0xff);
    const ws = tree({
      "b.txt": "b",
      "a/z.txt": "z",
      "a-b.txt": "dash",
      "a/b/c.txt": "deep",
      "big.bin": big,
      "10": "n",
    });
    const snap = await captureSnapshot(ws);
    assert.deepEqual(Object.keys(snap.files).sort(), ["10", "a-b.txt", "a/b/c.txt", "a/z.txt", "b.txt", "big.bin"]);
    assert.equal(snap.files["a/b/c.txt"], hex("deep"));
    assert.equal(snap.files["big.bin"], hex(big), "multi-chunk file hashed correctly");
    assert.deepEqual(snap.policy, { ignore: [...DEFAULT_IGNORE], symlinks: "skip" });
    assert.equal(snap.workspace_root, ws.split("\\").join("/"));
    assert.ok(!Number.isNaN(Date.parse(snap.captured_at)));
    // Written JSON keeps path order, even for the all-digit name JS objects would move first.
    const path = join(tree(), "snapshots", "pre.json");
    writeSnapshot(path, snap);
    const text = readFileSync(path, "utf8");
    const order = ["10", "a-b.txt", "a/b/c.txt", "a/z.txt", "b.txt", "big.bin"].map((p) => text.indexOf(`"${p}"`));
    assert.deepEqual([...order].sort((x, y) => x - y), order);
    assert.deepEqual(readSnapshot(path), snap);
  });

  test("ignores any path segment equal to an entry, nested or not, and only whole segments", async () => {
    const ws = tree({
      ".git/HEAD": "ref",
      "node_modules/x/index.js": "x",
      "pkg/node_modules/y.js": "y",
      "deep/er/.noema/episodes/e.json": "{}",
      "src/.git": "file named like an entry",
      "src/git.ts": "kept",
      "node_modules_old/k.js": "kept",
      "dist/out.js": "built",
      "src/dist/keep-me-not.js": "nested dist",
    });
    const snap = await captureSnapshot(ws);
    assert.deepEqual(Object.keys(snap.files), [
      "dist/out.js",
      "node_modules_old/k.js",
      "src/dist/keep-me-not.js",
      "src/git.ts",
    ]);
    const extended = await captureSnapshot(ws, snapshotPolicy({ extra: ["dist/"] }));
    assert.deepEqual(Object.keys(extended.files), ["node_modules_old/k.js", "src/git.ts"]);
    assert.deepEqual(extended.policy.ignore, [".git", "node_modules", ".noema", "dist"]);
    const none = await captureSnapshot(ws, snapshotPolicy({ ignore: [] }));
    assert.equal(Object.keys(none.files).length, 9);
  });

  test("an ignore entry that is not one segment is a usage error", () => {
    const e = usageError(() => snapshotPolicy({ extra: ["build/out"] }));
    assert.match(e.message, /single path segment/);
    usageError(() => snapshotPolicy({ extra: [""] }));
  });

  test("symlinked files and directories, dangling links and symlink loops are skipped", async () => {
    const ws = tree({ "real/file.txt": "r", "top.txt": "t" });
    symlinkSync(join(ws, "top.txt"), join(ws, "link-file.txt"));
    symlinkSync(join(ws, "real"), join(ws, "link-dir"));
    symlinkSync(ws, join(ws, "real", "loop-to-root"));
    symlinkSync("loop-b", join(ws, "loop-a"));
    symlinkSync("loop-a", join(ws, "loop-b"));
    symlinkSync("missing-target", join(ws, "dangling"));
    const snap = await captureSnapshot(ws);
    assert.deepEqual(Object.keys(snap.files), ["real/file.txt", "top.txt"]);
  });

  test("a workspace given as a symlink is resolved once", async () => {
    const ws = tree({ "a.txt": "a" });
    const parent = tree();
    symlinkSync(ws, join(parent, "ws-link"));
    const snap = await captureSnapshot(join(parent, "ws-link"));
    assert.deepEqual(Object.keys(snap.files), ["a.txt"]);
  });

  test("a FIFO is skipped, not opened", { skip: process.platform === "win32" }, async () => {
    const ws = tree({ "a.txt": "a" });
    const r = spawnSync("mkfifo", [join(ws, "pipe")]);
    assert.equal(r.status, 0, "mkfifo available");
    const snap = await captureSnapshot(ws);
    assert.deepEqual(Object.keys(snap.files), ["a.txt"]);
  });

  test("a missing workspace, a file given as workspace, and a looping workspace path are unavailable", async () => {
    const parent = tree({ "file.txt": "x" });
    await assert.rejects(captureSnapshot(join(parent, "nope")), (e: unknown) => {
      assert.ok(e instanceof WorkspaceUnavailableError);
      assert.equal(e.code, "workspace_unavailable");
      assert.equal(e.reason, "ENOENT");
      assert.equal(e.relPath, "");
      return true;
    });
    await assert.rejects(
      captureSnapshot(join(parent, "file.txt")),
      (e: unknown) => e instanceof WorkspaceUnavailableError && e.reason === "not_a_directory",
    );
    symlinkSync("self", join(parent, "self"));
    await assert.rejects(
      captureSnapshot(join(parent, "self")),
      (e: unknown) => e instanceof WorkspaceUnavailableError && e.reason === "ELOOP",
    );
  });

  test(
    "an unreadable file, directory or workspace fails the whole capture",
    { skip: process.platform === "win32" },
    () => {
      // Root reads anything, so as root the probe runs as user nobody (setpriv); otherwise as the current user.
      const dir = tree();
      chmodSync(dir, 0o777); // the probe may run as another user
      const mod = new URL("../src/verify/mod.ts", import.meta.url).href;
      const probe = join(dir, "probe.ts");
      writeFileSync(
        probe,
        `import { captureSnapshot } from ${JSON.stringify(mod)};
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
const ws = ${JSON.stringify(join(dir, "ws"))};
mkdirSync(ws + "/secret", { recursive: true });
writeFileSync(ws + "/ok.txt", "ok");
writeFileSync(ws + "/secret/s.txt", "s");
writeFileSync(ws + "/locked.txt", "l");
const out = [];
const attempt = async () => {
  try { out.push(Object.keys((await captureSnapshot(ws)).files)); } catch (e) { out.push([e.name, e.relPath, e.reason]); }
};
chmodSync(ws + "/locked.txt", 0); await attempt(); chmodSync(ws + "/locked.txt", 0o644);
chmodSync(ws + "/secret", 0); await attempt(); chmodSync(ws + "/secret", 0o755);
chmodSync(ws, 0); await attempt(); chmodSync(ws, 0o755);
await attempt();
console.log(JSON.stringify(out));
`,
      );
      const isDeno = typeof (globalThis as { Deno?: unknown }).Deno !== "undefined";
      const root = new URL("..", import.meta.url).pathname;
      const runtime = isDeno
        ? [process.execPath, "run", "-A", "--config", join(root, "deno.json"), probe]
        : [process.execPath, probe];
      const asNobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"];
      if (isRoot) {
        // Root reads anything; user nobody must be able to reach the runtime and this checkout (a clone
        // in a private directory is not reachable), else this case cannot be observed here.
        const reach = spawnSync(asNobody[0], [
          ...asNobody.slice(1),
          "sh",
          "-c",
          'test -x "$0" && test -r "$1"',
          runtime[0],
          fileURLToPath(mod),
        ]);
        if (reach.error || reach.status !== 0) {
          process.stderr.write(
            "note: unreadable-workspace case not observable (user nobody cannot reach this checkout)\n",
          );
          return;
        }
      }
      const cmd = isRoot ? [...asNobody, ...runtime] : runtime;
      const r = spawnSync(cmd[0], cmd.slice(1), {
        cwd: root,
        encoding: "utf8",
        env: { ...process.env, HOME: dir, DENO_DIR: join(dir, ".deno"), NO_COLOR: "1" },
      });
      if (isRoot && r.error) return; // no setpriv: nothing can be unreadable for root
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout.trim().split("\n").pop() as string), [
        ["WorkspaceUnavailableError", "locked.txt", "EACCES"],
        ["WorkspaceUnavailableError", "secret", "EACCES"],
        ["WorkspaceUnavailableError", "", "EACCES"],
        ["locked.txt", "ok.txt", "secret/s.txt"],
      ]);
    },
  );
});

describe("diffSnapshots", () => {
  test("added, modified and deleted are sorted; the same content rewritten is not modified", async () => {
    const ctx = await scenario({ "same.txt": "same", "edit.txt": "v1", "gone.txt": "g", "b/keep.txt": "k" }, (ws) => {
      writeFileSync(join(ws, "same.txt"), "same"); // rewritten, identical bytes
      writeFileSync(join(ws, "edit.txt"), "v2");
      rmSync(join(ws, "gone.txt"));
      put(ws, "z/new.txt", "n");
      put(ws, "a/new.txt", "n");
    });
    assert.deepEqual(ctx.diff, { added: ["a/new.txt", "z/new.txt"], modified: ["edit.txt"], deleted: ["gone.txt"] });
    assert.deepEqual(diffSnapshots(ctx.pre, ctx.pre), { added: [], modified: [], deleted: [] });
  });
});

describe("parseAssertions", () => {
  test("accepts the reference aliases and a case-insensitive kind", () => {
    const specs = parseAssertions([
      { name: "FILE_EXISTS", target: "./out/a.txt" },
      { type: "File_Contains", path: "r.md", content: "hi" },
      { kind: "only_modified", target: "src/" },
      { kind: "no_modifications" },
      { kind: "json_equals", path: "p.json", pointer: "/v", value: null },
      { kind: "command_succeeds", command: "true", timeout_ms: 1000 },
    ], "verify.jsonc");
    assert.deepEqual(specs, [
      { kind: "file_exists", path: "out/a.txt" },
      { kind: "file_contains", path: "r.md", text: "hi" },
      { kind: "only_modified", paths: ["src"] },
      { kind: "no_modifications" },
      { kind: "json_equals", path: "p.json", pointer: "/v", value: null },
      { kind: "command_succeeds", command: "true", timeout_ms: 1000 },
    ]);
  });

  test("a malformed or unknown entry is a usage error naming source, index and field", () => {
    const ok = { kind: "no_modifications" };
    const cases: Array<[unknown, string]> = [
      [[ok, ok, { kind: "file_exists" }], "verify.jsonc: [2].path: required field is missing"],
      [[{ kind: "file_exist", path: "a" }], 'verify.jsonc: [0].kind: unknown assertion kind "file_exist"'],
      [[{ path: "a" }], "verify.jsonc: [0].kind: required field is missing"],
      [[{ name: "file_exists", target: 3 }], "verify.jsonc: [0].target: expected string, got number"],
      [[{ kind: "file_contains", path: "a", text: "x", regex: "yes" }], "verify.jsonc: [0].regex: expected boolean"],
      [
        [{ kind: "file_contains", path: "a", text: "(", regex: true }],
        "verify.jsonc: [0].text: invalid regular expression",
      ],
      [[{ kind: "json_equals", path: "a", pointer: "x", value: 1 }], "verify.jsonc: [0].pointer: must be an RFC 6901"],
      [[{ kind: "json_equals", path: "a", pointer: "/x" }], "verify.jsonc: [0].value: required field is missing"],
      [[{ kind: "file_exists", path: "/etc/passwd" }], "verify.jsonc: [0].path: must be relative"],
      [[{ kind: "file_exists", path: "../x" }], "verify.jsonc: [0].path: must stay inside"],
      [[{ kind: "command_succeeds", command: "true", timeout: 5 }], "verify.jsonc: [0].timeout: unknown field"],
      [
        [{ kind: "command_succeeds", command: "true", timeout_ms: -1 }],
        "verify.jsonc: [0].timeout_ms: must be at least 1",
      ],
      [[{ kind: "only_modified", paths: [] }], "verify.jsonc: [0].paths: must list at least one"],
      [[{ kind: "file_exists", path: "a", target: "b" }], "verify.jsonc: [0].target: give only one of path, target"],
      [[{ kind: "file_exists", path: "a", constructor: 1 }], "verify.jsonc: [0].constructor: unknown field"],
      [[{ kind: "toString" }], "verify.jsonc: [0].kind: unknown assertion kind"],
      [["file_exists"], "verify.jsonc: [0]: expected an assertion object, got string"],
      [{ kind: "no_modifications" }, "verify.jsonc: expected a list of assertions, got object"],
    ];
    for (const [value, prefix] of cases) {
      const e = usageError(() => parseAssertions(value, "verify.jsonc"));
      assert.ok(e.message.startsWith(prefix), `${JSON.stringify(value)}: got ${e.message}`);
      assert.equal(e.code, "invalid_assertion");
    }
    const inTask = usageError(() => parseAssertions([{ kind: "file_exists" }], "task.json", { field: "verify" }));
    assert.equal(inTask.message, "task.json: verify[0].path: required field is missing");
    const noPlugin = usageError(() =>
      parseAssertions([{ kind: "plugin", path: "nope.ts" }], "v.jsonc", { baseDir: tree() })
    );
    assert.equal(noPlugin.message, "v.jsonc: [0].path: plugin file not found: nope.ts");
  });
});

describe("evaluateAssertions", () => {
  test("file_exists and file_absent read the post snapshot (symlinks do not count; ignored paths use the disk)", async () => {
    const ctx = await scenario({ "keep.txt": "k", "old.txt": "o" }, (ws) => {
      put(ws, "out/a.txt", "a");
      rmSync(join(ws, "old.txt"));
      symlinkSync(join(ws, "keep.txt"), join(ws, "link.txt"));
      put(ws, "node_modules/.bin/tool", "#!");
    });
    assert.deepEqual(await evalOne({ kind: "file_exists", path: "out/a.txt" }, ctx), {
      name: "file_exists",
      target: "out/a.txt",
      passed: true,
      reason: null,
    });
    assert.deepEqual(await evalOne({ kind: "file_exists", path: "old.txt" }, ctx), {
      name: "file_exists",
      target: "old.txt",
      passed: false,
      reason: "file_not_found: old.txt",
    });
    assert.equal((await evalOne({ kind: "file_exists", path: "link.txt" }, ctx)).reason, "file_not_found: link.txt");
    assert.equal((await evalOne({ kind: "file_exists", path: "out" }, ctx)).passed, false, "a directory is not a file");
    assert.equal((await evalOne({ kind: "file_exists", path: "node_modules/.bin/tool" }, ctx)).passed, true);
    assert.equal((await evalOne({ kind: "file_absent", path: "old.txt" }, ctx)).passed, true);
    assert.deepEqual(await evalOne({ kind: "file_absent", path: "keep.txt" }, ctx), {
      name: "file_absent",
      target: "keep.txt",
      passed: false,
      reason: "file_present: keep.txt",
    });
  });

  test("file_contains: substring (also across the 1 MiB chunk boundary), regex, missing file", async () => {
    const pad = "x".repeat((1 << 20) - 3);
    const ctx = await scenario({ "a/b.txt": "hello wörld\nline two\n", "big.txt": pad + "NEEDLE" + pad });
    assert.equal((await evalOne({ kind: "file_contains", path: "a/b.txt", text: "wörld" }, ctx)).passed, true);
    assert.deepEqual(await evalOne({ kind: "file_contains", path: "a/b.txt", text: "goodbye" }, ctx), {
      name: "file_contains",
      target: "a/b.txt",
      passed: false,
      reason: 'substring_not_found: "goodbye" in a/b.txt',
    });
    assert.equal((await evalOne({ kind: "file_contains", path: "big.txt", text: "NEEDLE" }, ctx)).passed, true);
    assert.equal((await evalOne({ kind: "file_contains", path: "big.txt", text: "NEEDLES" }, ctx)).passed, false);
    assert.equal(
      (await evalOne({ kind: "file_contains", path: "a/b.txt", text: "^line \\w+$", regex: true }, ctx)).passed,
      false,
    );
    assert.equal(
      (await evalOne({ kind: "file_contains", path: "a/b.txt", text: "line \\w+\\n$", regex: true }, ctx)).passed,
      true,
    );
    assert.equal(
      (await evalOne({ kind: "file_contains", path: "a/b.txt", text: "^bye", regex: true }, ctx)).reason,
      "pattern_not_found: /^bye/ in a/b.txt",
    );
    assert.equal(
      (await evalOne({ kind: "file_contains", path: "no.txt", text: "x" }, ctx)).reason,
      "file_not_found: no.txt",
    );
  });

  test("json_equals: equal, mismatch, pointer not found, invalid JSON, escaped pointer", async () => {
    const ctx = await scenario({
      "p.json": JSON.stringify({ a: { b: 2, "x/y": [1, { k: "v" }] }, arr: [1, 2] }),
      "bad.json": "{nope",
    });
    const check = (pointer: string, value: unknown, path = "p.json") =>
      evalOne({ kind: "json_equals", path, pointer, value }, ctx);
    assert.equal((await check("/a/b", 2)).passed, true);
    assert.equal((await check("/a/x~1y/1", { k: "v" })).passed, true);
    assert.equal(
      (await check("", { arr: [1, 2], a: { "x/y": [1, { k: "v" }], b: 2 } })).passed,
      true,
      "key order ignored",
    );
    assert.deepEqual(await check("/a/b", 1), {
      name: "json_equals",
      target: "p.json",
      passed: false,
      reason: "json_mismatch: /a/b expected 1, got 2",
    });
    assert.equal((await check("/arr", [2, 1])).reason, "json_mismatch: /arr expected [2,1], got [1,2]");
    assert.equal((await check("/x", 1)).reason, "json_pointer_not_found: /x");
    assert.equal((await check("/arr/2", 1)).reason, "json_pointer_not_found: /arr/2");
    assert.equal((await check("/a", 1, "bad.json")).reason, "invalid_json: bad.json");
    assert.equal((await check("/a", 1, "none.json")).reason, "file_not_found: none.json");
    assert.deepEqual(resolvePointer({ "~a": 1 }, "/~0a"), { ok: true, value: 1 });
  });

  test("only_modified: exact paths, directories and globs; unexpected changes listed by kind", async () => {
    const ctx = await scenario({ "src/a.ts": "1", "README.md": "r", "docs/x.md": "d", "rm.txt": "z" }, (ws) => {
      writeFileSync(join(ws, "src/a.ts"), "2");
      put(ws, "src/deep/b.ts", "b");
      writeFileSync(join(ws, "README.md"), "r2");
      put(ws, "notes/n.md", "n");
      rmSync(join(ws, "rm.txt"));
    });
    const ok = await evalOne({ kind: "only_modified", paths: ["src", "**/*.md", "rm.txt", "src"] }, ctx);
    assert.deepEqual(ok, { name: "only_modified", target: ["**/*.md", "rm.txt", "src"], passed: true, reason: null });
    assert.equal(
      (await evalOne({ kind: "only_modified", paths: ["src/**", "*.md", "notes/", "rm.txt"] }, ctx)).passed,
      true,
    );
    const bad = await evalOne({ kind: "only_modified", paths: ["src/a.ts"] }, ctx);
    assert.equal(bad.passed, false);
    assert.deepEqual(bad.target, ["src/a.ts"]);
    assert.equal(
      bad.reason,
      'unexpected_changes: added=["notes/n.md", "src/deep/b.ts"] deleted=["rm.txt"] modified=["README.md"]',
    );
    assert.equal(
      (await evalOne({ kind: "only_modified", paths: ["src", "notes/n.md", "README.md"] }, ctx)).reason,
      'unexpected_changes: deleted=["rm.txt"]',
    );
  });

  test("no_modifications passes on an unchanged workspace and lists every change otherwise", async () => {
    const same = await scenario({ "a.txt": "a" }, (ws) => writeFileSync(join(ws, "a.txt"), "a"));
    assert.deepEqual(await evalOne({ kind: "no_modifications" }, same), {
      name: "no_modifications",
      target: null,
      passed: true,
      reason: null,
    });
    const changed = await scenario({ "a.txt": "a" }, (ws) => put(ws, "b.txt", "b"));
    assert.equal((await evalOne({ kind: "no_modifications" }, changed)).reason, 'unexpected_changes: added=["b.txt"]');
  });

  test("command_succeeds runs in the workspace: exit 0 passes, exit 2 fails, a timeout kills it", async () => {
    const ctx = await scenario({ "marker.txt": "m" });
    assert.deepEqual(await evalOne({ kind: "command_succeeds", command: "test -f marker.txt" }, ctx), {
      name: "command_succeeds",
      target: "test -f marker.txt",
      passed: true,
      reason: null,
    });
    assert.equal(
      (await evalOne({ kind: "command_succeeds", command: "exit 2" }, ctx)).reason,
      "command_failed: exit 2",
    );
    // The background subshell would outlive a kill of the shell alone; the whole process group is killed. The command
    // never ends by itself: an evaluation that waited for it instead of killing it would not settle (the 60 s bound).
    const mark = `sleep 600.${process.pid}`;
    let bound: ReturnType<typeof setTimeout> | undefined;
    const slow = await Promise.race([
      evalOne({ kind: "command_succeeds", command: `(${mark}; touch late.txt) & wait`, timeout_ms: 300 }, ctx),
      new Promise<never>((_, reject) =>
        bound = setTimeout(() => reject(new Error("the command was not killed")), 60_000)
      ),
    ]).finally(() => clearTimeout(bound));
    assert.equal(slow.reason, "command_timed_out: 300ms");
    const alive = () => spawnSync("pgrep", ["-f", mark]).status === 0;
    for (const until = Date.now() + 30_000; alive() && Date.now() < until;) await new Promise((r) => setTimeout(r, 50));
    assert.equal(alive(), false, "no process of the command survived");
    assert.equal(existsSync(join(ctx.workspace, "late.txt")), false);
  });

  test("plugins: named or default evaluate, extra fields and the diff in ctx, failures and errors", async () => {
    const ctx = await scenario({ "a.txt": "a" }, (ws) => put(ws, "b.txt", "b"));
    const ws = ctx.workspace;
    put(
      ws,
      "checks/count.ts",
      `export function evaluate(ctx: { diff: { added: string[] } | null; spec: { max?: number } }) {
        const n = ctx.diff?.added.length ?? -1;
        return n <= (ctx.spec.max ?? 0) ? { passed: true } : { passed: false, reason: "too_many_added: " + n, target: "b.txt" };
      }\n`,
    );
    put(ws, "checks/default.ts", `export default async () => ({ passed: true, name: "custom_check" });\n`);
    put(ws, "checks/throws.ts", `export function evaluate() { throw new Error("boom"); }\n`);
    put(ws, "checks/none.ts", `export const x = 1;\n`);
    const specs = parseAssertions(
      [
        { kind: "plugin", path: "checks/count.ts", max: 1 },
        { kind: "plugin", path: "checks/count.ts" },
        { kind: "plugin", target: "checks/default.ts" },
        { kind: "plugin", path: "checks/throws.ts" },
      ],
      "verify.jsonc",
      { baseDir: ws },
    );
    const results = await evaluateAssertions(specs, ctx);
    assert.deepEqual(results, [
      { name: "plugin:count", target: null, passed: true, reason: null },
      { name: "plugin:count", target: "b.txt", passed: false, reason: "too_many_added: 1" },
      { name: "custom_check", target: null, passed: true, reason: null },
      { name: "plugin:throws", target: null, passed: false, reason: "plugin_error: checks/throws.ts: boom" },
    ]);
    await loadAssertionPlugins(specs, ws);
    const e = await loadAssertionPlugins(parseAssertions([{ kind: "plugin", path: "checks/none.ts" }], "v"), ws).then(
      () => null,
      (err: unknown) => err,
    );
    assert.ok(e instanceof NoemaError && e.exitCode === 2 && /no evaluate/.test(e.message));
  });

  test("without a post snapshot every built-in assertion fails with snapshot_unavailable", async () => {
    const specs = parseAssertions([
      { kind: "file_exists", path: "a" },
      { kind: "only_modified", paths: ["a"] },
      { kind: "command_succeeds", command: "true" },
    ], "verify.jsonc");
    const results = await evaluateAssertions(specs, { workspace: null, pre: null, post: null, diff: null });
    assert.deepEqual(results.map((r) => [r.passed, r.reason]), [
      [false, "snapshot_unavailable"],
      [false, "snapshot_unavailable"],
      [false, "snapshot_unavailable"],
    ]);
  });
});

describe("outcome and the verification block", () => {
  const fullSummary = (verification: unknown, outcome: string) => ({
    schema_version: "1.3.0",
    episode_id: "ep_01K9RBBMXXRSFWR49SXFGF4SPR",
    task: "t",
    started_at: "2025-01-01T00:00:00.000Z",
    duration_sec: 1.5,
    adapter_result: "success",
    outcome,
    verification,
    flags: { intuition: true, mode: "minimal" },
    metrics: { success: 1, plan_count: 1, act_count: 3, reflect_count: 1, veto_count: 0 },
  });

  test("the outcome table", () => {
    const np = notProvidedVerification();
    const passed = { provided: true, passed: true, error: null };
    const failed = { provided: true, passed: false, error: null };
    const unavailable = { provided: true, passed: null, error: "workspace_unavailable" };
    const table: Array<[Parameters<typeof computeOutcome>[0], Parameters<typeof computeOutcome>[1], string]> = [
      ["error", passed, "error"],
      ["skipped", np, "error"],
      ["success", np, "success_unverified"],
      ["success", passed, "success"],
      ["success", failed, "goal_not_achieved"],
      ["success", unavailable, "error"],
    ];
    for (const [adapter, ver, want] of table) {
      assert.equal(computeOutcome(adapter, ver), want, `${adapter} ${JSON.stringify(ver)}`);
    }
    assert.deepEqual(
      ["success", "success_unverified", "goal_not_achieved", "error"].map((o) => outcomeSuccess(o as never)),
      [1, 1, 0, 0],
    );
  });

  test("the not-provided block is exact and validates inside a full summary", () => {
    const np = notProvidedVerification();
    assert.deepEqual(np, {
      provided: false,
      passed: null,
      assertions: [],
      workspace_diff: null,
      snapshots: null,
      policy: { ignore: [".git", "node_modules", ".noema"], symlinks: "skip" },
      error: null,
    });
    assert.deepEqual(checkSummary(fullSummary(np, computeOutcome("success", np))), []);
    const built = buildVerification({
      provided: false,
      results: [],
      policy: snapshotPolicy(),
      diff: null,
      snapshotsWritten: false,
      error: null,
    });
    assert.deepEqual(built, np);
  });

  test("startVerification writes both snapshots and builds a passing block", async () => {
    const ws = tree({ "a.txt": "a" });
    const episodeDir = join(tree(), "ep");
    const specs = parseAssertions([
      { kind: "file_exists", path: "out.txt" },
      { kind: "only_modified", paths: ["out.txt"] },
    ], "verify.jsonc");
    const session = await startVerification({ workspace: ws, specs, episodeDir });
    assert.ok(session.pre !== null && existsSync(join(episodeDir, "snapshots", "pre.json")));
    put(ws, "out.txt", "done");
    const ver = await session.finish();
    assert.deepEqual(ver, {
      provided: true,
      passed: true,
      assertions: [
        { name: "file_exists", target: "out.txt", passed: true, reason: null },
        { name: "only_modified", target: ["out.txt"], passed: true, reason: null },
      ],
      workspace_diff: { added: ["out.txt"], modified: [], deleted: [] },
      snapshots: { pre: "snapshots/pre.json", post: "snapshots/post.json" },
      policy: { ignore: [".git", "node_modules", ".noema"], symlinks: "skip" },
      error: null,
    });
    assert.deepEqual(Object.keys(readSnapshot(join(episodeDir, ver.snapshots!.post)).files), ["a.txt", "out.txt"]);
    assert.equal(computeOutcome("success", ver), "success");
    assert.deepEqual(checkSummary(fullSummary(ver, "success")), []);
  });

  test("a failed assertion gives goal_not_achieved; no specs captures nothing", async () => {
    const ws = tree({ "a.txt": "a" });
    const episodeDir = join(tree(), "ep");
    const session = await startVerification({
      workspace: ws,
      specs: parseAssertions([{ kind: "no_modifications" }], "v"),
      episodeDir,
    });
    writeFileSync(join(ws, "a.txt"), "changed");
    const ver = await session.finish();
    assert.equal(ver.passed, false);
    assert.equal(ver.assertions[0].reason, 'unexpected_changes: modified=["a.txt"]');
    assert.equal(computeOutcome("success", ver), "goal_not_achieved");

    const other = join(tree(), "ep");
    const none = await startVerification({ workspace: ws, specs: [] as AssertionSpec[], episodeDir: other });
    assert.deepEqual(await none.finish(), notProvidedVerification());
    assert.equal(existsSync(join(other, "snapshots")), false);
  });

  test("assertions with a missing workspace give passed null and workspace_unavailable, and still validate", async () => {
    const episodeDir = join(tree(), "ep");
    const specs = parseAssertions([{ kind: "file_exists", path: "out.txt" }], "verify.jsonc");
    for (const workspace of [join(tree(), "missing"), null]) {
      const session = await startVerification({ workspace, specs, episodeDir });
      assert.equal(session.pre, null);
      assert.ok(session.preError instanceof WorkspaceUnavailableError);
      const ver = await session.finish();
      assert.equal(ver.provided, true);
      assert.equal(ver.passed, null);
      assert.equal(ver.error, "workspace_unavailable");
      assert.equal(ver.workspace_diff, null);
      assert.equal(ver.snapshots, null);
      assert.deepEqual(ver.assertions, [
        { name: "file_exists", target: "out.txt", passed: false, reason: "snapshot_unavailable" },
      ]);
      const outcome = computeOutcome("success", ver);
      assert.equal(outcome, "error");
      assert.deepEqual(
        checkSummary({ ...fullSummary(ver, outcome), metrics: { ...fullSummary(ver, outcome).metrics, success: 0 } }),
        [],
      );
    }
  });
});
