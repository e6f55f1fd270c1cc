/**
 * The bad-input corpus (tests/corpus/cases.jsonc): each case runs the real
 * CLI and must give its documented error — the message naming file, line and
 * field, the documented exit code, no stack trace — and must leave no corrupted
 * or half-written artifact (a run either wrote no episode at all, or one that
 * validates).
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { parseJsonc, validate } from "noema";
import { cli, REPO } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

interface Case {
  id: string;
  what: string;
  args: string[];
  generate?: "huge-line";
  expect: { exit: number; stream: "stdout" | "stderr"; contains: string[] };
  run?: { direction_error: { type: string; message: string } };
}

const CORPUS = join(REPO, "tests", "corpus");
const cases = parseJsonc(readFileSync(join(CORPUS, "cases.jsonc"), "utf8"), "cases.jsonc") as Case[];
const tmp = tempDir("noema-corpus-");

/** A 50 MB event line that is broken at its very end (valid first line, then the huge one, newline-terminated). */
function generateHugeLine(path: string): void {
  const fd = openSync(path, "w");
  try {
    const head =
      '{"id":"ev_1","timestamp":"2026-03-02T10:00:00.000Z","episode_id":"ep_1","phase":"start","payload":{},"evidence_ids":[]}\n';
    writeSync(fd, head);
    writeSync(
      fd,
      '{"id":"ev_2","timestamp":"2026-03-02T10:00:00.001Z","episode_id":"ep_1","phase":"observe","evidence_ids":[],"payload":{"blob":"',
    );
    const chunk = "x".repeat(1 << 20);
    for (let i = 0; i < 50; i++) writeSync(fd, chunk);
    writeSync(fd, '"}\n'); // the event object is never closed
  } finally {
    closeSync(fd);
  }
}

function episodeDirs(root: string): string[] {
  const dir = join(root, "episodes");
  return existsSync(dir) ? readdirSync(dir).map((d) => join(dir, d)) : [];
}

after(() => tmp.cleanup());

describe(`corpus: ${cases.length} cases`, () => {
  test("the manifest is well-formed: unique ids, every case has an exit code and expected text", () => {
    assert.ok(cases.length >= 40, `only ${cases.length} cases`);
    assert.equal(new Set(cases.map((c) => c.id)).size, cases.length);
    for (const c of cases) {
      assert.ok(c.expect.contains.length > 0 && c.expect.contains.every((s) => s.length > 0), c.id);
      assert.equal(typeof c.expect.exit, "number", c.id);
    }
  });

  for (const c of cases) {
    test(`${c.id}: ${c.what}`, () => {
      const root = join(tmp.path, `root-${c.id}`);
      if (c.generate === "huge-line") generateHugeLine(join(tmp.path, "huge.events.jsonl"));
      const args = c.args.map((a) => a.replaceAll("{tmp}", tmp.path));
      const r = cli(args[0] === "run" ? ["--root", root, ...args] : args, { cwd: CORPUS, timeoutMs: 120_000 });
      const out = c.expect.stream === "stdout" ? r.stdout : r.stderr;
      const context = `exit ${r.code}\nstdout: ${r.stdout.slice(0, 2000)}\nstderr: ${r.stderr.slice(0, 2000)}`;
      assert.equal(r.code, c.expect.exit, context);
      for (const s of c.expect.contains) {
        assert.ok(out.includes(s), `expected ${JSON.stringify(s)} in ${c.expect.stream}\n${context}`);
      }
      // No stack trace, ever.
      assert.doesNotMatch(r.stderr, /^\s+at /m, context);
      assert.doesNotMatch(r.stdout, /^\s+at /m, context);
      if (c.expect.stream === "stderr") assert.match(r.stderr, /^noema: /, context);
      if (args[0] !== "run") return;
      // No corrupted or half-written artifact: no episode at all, or one that validates.
      const dirs = episodeDirs(root);
      if (c.expect.exit === 2) assert.deepEqual(dirs, [], "a usage error must write nothing");
      for (const dir of dirs) {
        const report = validate(dir);
        assert.equal(report.valid, true, JSON.stringify(report.problems.slice(0, 5)));
        assert.equal(readdirSync(dir).some((f) => f.includes(".tmp-")), false, "a temp file was left behind");
      }
      if (c.run) {
        assert.equal(dirs.length, 1);
        const events = readFileSync(join(dirs[0], "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
        const direction = events.find((e) => e.phase === "direction");
        assert.ok(direction, "a direction event was recorded");
        assert.equal(direction.payload.status, "blocked");
        assert.equal(direction.payload.error?.type, c.run.direction_error.type, JSON.stringify(direction.payload));
        assert.ok(
          String(direction.payload.error?.message).includes(c.run.direction_error.message),
          JSON.stringify(direction.payload),
        );
        const governance = events.find((e) => e.phase === "governance");
        assert.equal(governance?.payload.decision, "veto");
      }
    });
  }
});
