/**
 * The read side on damaged episodes, through the real CLI: an artifact that
 * is not a regular file (a directory, a FIFO, a symlink to a device) is a
 * one-line error naming the file, never a hang, an out-of-memory read or an
 * internal error.
 */
import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-read-side-");
// A child that hangs is killed after 20 s; the test itself may wait that long.
const SLOW = { timeout: 60_000 };
after(() => tmp.cleanup());

const root = join(tmp.path, "root");
const episodes = join(root, "episodes");

/** A finished episode of the minimal adapter, copied under a new name for each damage. */
function finished(): string {
  const r = cli(["run", "Say hello", "--root", root, "--json"]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).episode_dir;
}

function copy(source: string, name: string): string {
  const dir = join(episodes, name);
  cpSync(source, dir, { recursive: true });
  return dir;
}

function assertFileError(r: { code: number | null; stderr: string }, file: string): void {
  assert.equal(r.code, 1, r.stderr);
  const lines = r.stderr.trim().split("\n");
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], new RegExp(`^noema: \\S*${file.replace(".", "\\.")}: .*not a regular file`), lines[0]);
  assert.doesNotMatch(r.stderr, /internal error/);
}

describe("artifacts that are not regular files", () => {
  const source = finished();
  const evDir = copy(source, "ep_events_dir");
  rmSync(join(evDir, "events.jsonl"));
  mkdirSync(join(evDir, "events.jsonl"));
  const fifo = copy(source, "ep_events_fifo");
  rmSync(join(fifo, "events.jsonl"));
  assert.equal(spawnSync("mkfifo", [join(fifo, "events.jsonl")]).status, 0);
  const zero = copy(source, "ep_state_zero");
  rmSync(join(zero, "state.json"));
  symlinkSync("/dev/zero", join(zero, "state.json"));

  const opts = { timeoutMs: 20_000 };
  for (const name of ["ep_events_dir", "ep_events_fifo"]) {
    for (
      const cmd of [["view"], ["view", "--json"], ["events"], ["events", "--json"], ["plan"], ["report", "-o", "-"]]
    ) {
      it(`${cmd.join(" ")} on ${name}: a one-line error naming events.jsonl, exit 1`, SLOW, () => {
        const r = cli([cmd[0], name, ...cmd.slice(1), "--root", root], opts);
        assertFileError(r, "events.jsonl");
      });
    }
    it(`validate ${name}: a file.json problem on events.jsonl, exit 1`, SLOW, () => {
      const r = cli(["validate", name, "--root", root, "--json"], opts);
      assert.equal(r.code, 1, r.stderr);
      const report = JSON.parse(r.stdout);
      assert.ok(
        report.problems.some((p: { file: string; rule: string; message: string }) =>
          p.file.endsWith("events.jsonl") && p.rule === "file.json" && /not a regular file/.test(p.message)
        ),
        r.stdout,
      );
    });
  }
  it("events --follow on a FIFO: an error, not a hang", SLOW, () => {
    const r = cli(["events", "ep_events_fifo", "--follow", "--root", root], opts);
    assertFileError(r, "events.jsonl");
  });
  it("state on a symlink to /dev/zero: an error naming state.json, not a read until memory runs out", SLOW, () => {
    // A link planted in an episode is refused before anything is read through it.
    const r = cli(["state", "ep_state_zero", "--root", root], opts);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^noema: \S*state\.json: is a symbolic link; refusing to read through it/);
  });
  it("list shows that episode as unreadable, quickly", SLOW, () => {
    const r = cli(["list", "--json", "--root", root], opts);
    assert.equal(r.code, 0, r.stderr);
    const entry = JSON.parse(r.stdout).find((e: { episode_id: string }) => e.episode_id === "ep_state_zero");
    assert.equal(entry.status, "unreadable");
    assert.match(entry.error, /state\.json: is a symbolic link/);
  });
});

describe("noema diff on an edited summary.json", () => {
  const ws = join(tmp.path, "ws");
  mkdirSync(ws);
  const r = cli([
    "run",
    "make out.txt",
    "--root",
    root,
    "--json",
    "--using",
    "shell",
    "--workspace",
    ws,
    "--verify-file-exists",
    "out.txt",
    "--",
    "sh",
    "-c",
    "echo hi > out.txt",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const source = JSON.parse(r.stdout).episode_dir;
  const edit = (
    name: string,
    change: (s: { episode_id?: string; verification: { workspace_diff: unknown } }) => void,
  ) => {
    const dir = copy(source, name);
    const summary = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
    change(summary);
    writeFileSync(join(dir, "summary.json"), JSON.stringify(summary));
    return dir;
  };

  it("the real diff first", SLOW, () => {
    const d = cli(["diff", JSON.parse(r.stdout).episode_id, "--root", root, "--json"]);
    assert.equal(d.code, 0, d.stderr);
    assert.deepEqual(JSON.parse(d.stdout), { added: ["out.txt"], modified: [], deleted: [] });
  });
  for (
    const [name, value] of [["ep_diff_number", 5], ["ep_diff_string", "abc"], ["ep_diff_numbers", [1, 2]]] as const
  ) {
    it(`${name}: a one-line error naming summary.json and the field, exit 1`, SLOW, () => {
      edit(name, (s) => ((s.verification.workspace_diff as Record<string, unknown>).added = value));
      for (const extra of [[], ["--json"]]) {
        const d = cli(["diff", name, "--root", root, ...extra]);
        assert.equal(d.code, 1, d.stderr);
        assert.equal(d.stdout, "");
        const lines = d.stderr.trim().split("\n");
        assert.equal(lines.length, 1, d.stderr);
        assert.match(
          lines[0],
          /^noema: \S*summary\.json: verification\.workspace_diff\.added: expected an array of paths/,
        );
      }
    });
  }
  it("a summary without episode_id: the message names the episode, not 'undefined'", SLOW, () => {
    edit("ep_diff_noid", (s) => {
      delete s.episode_id;
      s.verification.workspace_diff = null;
    });
    const d = cli(["diff", "ep_diff_noid", "--root", root]);
    assert.equal(d.code, 1, d.stderr);
    assert.match(d.stderr, /^noema: episode ep_diff_noid has no workspace diff/);
  });
});

describe("noema report -o into a directory that does not exist", () => {
  it("is an error naming the directory, exit 1, and creates nothing", SLOW, () => {
    const source = finished();
    const missing = join(tmp.path, "no-such-dir", "deeper");
    const r = cli(["report", source, "-o", join(missing, "r.html")]);
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr.trim().split("\n");
    assert.equal(lines.length, 1, r.stderr);
    assert.match(
      lines[0],
      /^noema: cannot write .*no-such-dir\/deeper\/r\.html: .*no-such-dir\/deeper.* does not exist/,
    );
    assert.equal(existsSync(join(tmp.path, "no-such-dir")), false, "no directory was created");
    const ok = cli(["report", source, "-o", join(tmp.path, "r.html")]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(existsSync(join(tmp.path, "r.html")));
  });
});
