/**
 * `resume` on damaged input fails with a located error and writes nothing:
 * a state.json that breaks the schema, an empty events.jsonl, and artifacts
 * that are FIFOs (which used to block `resume` for ever in open()).
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import process from "node:process";
import { cli } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-resume-inputs-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");

/** An episode killed while sealing (its log has `terminate`): what resume would complete. */
function killedEpisode(id: string): string {
  const r = cli(["run", "t", "--using", "command", "--root", root, "--episode-id", id, "--", "true"], {
    env: { NOEMA_TEST_KILL_BEFORE_RENAME: "summary.json" },
  });
  assert.equal(r.code, null, r.stderr);
  const dir = join(root, "episodes", id);
  for (const n of readdirSync(dir)) if (n.includes(".tmp-")) rmSync(join(dir, n)); // only what matters here
  return dir;
}

/** Every file of a directory with its content. */
function snapshot(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((n) => [n, readFileSync(join(dir, n), "utf8")]));
}

describe("resume on damaged input", () => {
  test("a state.json that breaks the schema: exit 7 naming the file and field, nothing written, every time", () => {
    const dir = killedEpisode("bad-state");
    const state = JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
    state.outcomes = 5;
    writeFileSync(join(dir, "state.json"), JSON.stringify(state));
    const before = snapshot(dir);
    for (let i = 0; i < 2; i++) {
      for (const extra of [[], ["--abort"]]) {
        const r = cli(["resume", "bad-state", "--root", root, ...extra]);
        assert.equal(r.code, 7, r.stderr);
        assert.match(r.stderr, /state\.json: outcomes: .*cannot be resumed/);
        assert.doesNotMatch(r.stderr, /internal error|TypeError/);
        assert.deepEqual(snapshot(dir), before, "a failed resume writes nothing (no stray insight event)");
      }
    }
  });

  test("an empty events.jsonl: a located error (exit 7), not an internal error", () => {
    const dir = killedEpisode("empty-log");
    writeFileSync(join(dir, "events.jsonl"), "");
    const r = cli(["resume", "empty-log", "--root", root]);
    assert.equal(r.code, 7, r.stderr);
    assert.match(r.stderr, /events\.jsonl:1: no events: the run cannot be rebuilt/);
    assert.doesNotMatch(r.stderr, /internal error/);
    assert.equal(existsSync(join(dir, "lock")), false);
  });

  test("an artifact that is a FIFO: resume and resume --abort refuse at once (exit 1), never block", {
    skip: process.platform === "win32",
  }, () => {
    for (const file of ["events.jsonl", "state.json"]) {
      const id = `fifo-${file.replace(".", "-")}`;
      const dir = killedEpisode(id);
      rmSync(join(dir, file));
      assert.equal(spawnSync("mkfifo", [join(dir, file)]).status, 0);
      for (const extra of [[], ["--abort"]]) {
        const r = cli(["resume", id, "--root", root, ...extra], { timeoutMs: 30_000 });
        assert.equal(r.code, 1, `${file} ${extra}: ${r.stderr}`);
        assert.match(r.stderr, new RegExp(`${file.replace(".", "\\.")}: not a regular file \\(a FIFO\\)`));
      }
    }
  });
});
