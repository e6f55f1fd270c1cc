/**
 * Inputs that used to become internal errors (issue 12 §5): JSON nested
 * 100,000 levels deep, a 2 GB line in `events.jsonl` (a sparse file: no disk
 * cost), duplicate keys and invalid UTF-8 in a task file.
 *
 * @module
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { Buffer } from "node:buffer";
import {
  appendFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { validateEpisodeDir } from "../src/validate/validate.ts";
import { cli, cliCommand, REPO } from "./helpers/cli.ts";
import { crashedRun } from "./helpers/race.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-inputs-");
after(() => tmp.cleanup());
const root = join(tmp.path, "root");
const DEEP = 100_000;
const deep = (key: string) => `{"${key}": ${"[".repeat(DEEP)}${"]".repeat(DEEP)}}\n`;

describe("JSON nested 100,000 levels deep", () => {
  test("in a task file: exit 2 naming the file and line", () => {
    const task = tmp.file("deep-task.json", `{\n  "task": "x",\n  "tags": ${"[".repeat(DEEP)}${"]".repeat(DEEP)}\n}\n`);
    const r = cli(["run", task, "--root", root]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`${task.replaceAll("/", "\\/")}:3: nested deeper than 256 levels`));
  });

  for (const name of ["state.json", "summary.json", "manifest.json"]) {
    test(`in ${name}: validate reports a located problem`, () => {
      const dir = join(tmp.path, `deep-${name}`);
      cpSync(join(REPO, "testdata", "episodes", "valid-terminal"), dir, { recursive: true });
      writeFileSync(join(dir, name), deep("version"));
      const report = validateEpisodeDir(dir);
      const p = report.problems.find((x) => x.file.endsWith(name) && x.rule === "file.json");
      assert.ok(p, JSON.stringify(report.problems.slice(0, 3)));
      assert.equal(p.line, 1);
      assert.match(p.message, /nested deeper than 256 levels/);
      const c = cli(["validate", dir]);
      assert.equal(c.code, 1);
      assert.match(c.stdout, new RegExp(`${name}:1: file\\.json: nested deeper`));
    });
  }
});

describe("task files: duplicate keys and invalid UTF-8", () => {
  test("a duplicate key: exit 2 with file:line and the key", () => {
    const task = tmp.file("dup.jsonc", '{\n  "task": "a",\n  // a comment\n  "tags": {"k": "1", "k": "2"}\n}\n');
    const r = cli(["run", task, "--root", root]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /dup\.jsonc:4: tags\.k: duplicate key "k"/);
  });

  test("invalid UTF-8: exit 2 with file:line", () => {
    const task = join(tmp.path, "bad-utf8.json");
    writeFileSync(
      task,
      Buffer.concat([
        Buffer.from('{\n  "task": "ok",\n  "tags": {"a": "'),
        Buffer.from([0xc3, 0x28]),
        Buffer.from('"}\n}\n'),
      ]),
    );
    const r = cli(["run", task, "--root", root]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /bad-utf8\.json:3: not valid UTF-8/);
  });
});

/** Runs the CLI under /usr/bin/time; returns its output and peak RSS in MB. */
function measured(args: string[]): { code: number | null; out: string; rssMb: number } {
  const [cmd, ...rest] = cliCommand();
  const r = spawnSync("/usr/bin/time", ["-f", "RSS_KB=%M", cmd, ...rest, ...args], {
    encoding: "utf8",
    env: { ...process.env, NO_COLOR: "1" },
    maxBuffer: 1 << 26,
  });
  const m = /RSS_KB=(\d+)/.exec(r.stderr);
  assert.ok(m, r.stderr);
  return { code: r.status, out: r.stdout + r.stderr, rssMb: Number(m[1]) / 1024 };
}

describe("a 2 GB line in events.jsonl (sparse)", () => {
  const id = "ep_sparse";
  let dir = "";
  let badOffset = 0; // where the 2 GB line starts: the size of the log before
  before(async () => {
    const work = join(tmp.path, "sparse");
    mkdirSync(work);
    dir = await crashedRun(root, work, id);
    badOffset = statSync(join(dir, "events.jsonl")).size;
    truncateSync(join(dir, "events.jsonl"), 2 ** 31 + 5); // zeros after the last newline: one 2 GB unterminated line
  });

  for (const cmd of ["validate", "view", "events"]) {
    // Reading past 2 GB of zeros takes seconds on a loaded machine (bun's default timeout is 5 s).
    test(`${cmd}: a located problem, in < 128 MB`, { timeout: 120_000 }, () => {
      const r = measured([cmd, id, "--root", root]);
      assert.match(r.out, /events\.jsonl:\d+: (jsonl\.torn: )?torn final line: 21474\d{5} bytes/);
      assert.ok(r.rssMb < 128, `${cmd} peaked at ${r.rssMb.toFixed(0)} MB`);
    });
  }

  test("resume --abort seals the run, setting the bad part aside (still sparse)", { timeout: 300_000 }, () => {
    const r = measured(["resume", id, "--abort", "--root", root]);
    assert.ok(r.rssMb < 256, `resume peaked at ${r.rssMb.toFixed(0)} MB`);
    assert.ok(existsSync(join(dir, "manifest.json")), r.out);
    const aside = join(dir, `events.jsonl.torn-${badOffset}`);
    assert.equal(statSync(aside).size, 2 ** 31 + 5 - badOffset);
    assert.ok(statSync(aside).blocks * 512 < 1 << 20, "the set-aside part stays sparse");
    assert.equal(cli(["validate", id, "--root", root]).code, 0);
  });
});

describe("a 16 MiB line of arrays nested 8 million deep in events.jsonl", () => {
  // Found by a break-it run: each reader parsed it, at about 90 bytes a level: 700 MB.
  const id = "ep_deep";
  before(async () => {
    const work = join(tmp.path, "deep");
    mkdirSync(work);
    const dir = await crashedRun(root, work, id);
    appendFileSync(join(dir, "events.jsonl"), "[".repeat(8_000_000) + "]".repeat(8_000_000) + "\n");
  });
  for (const cmd of ["validate", "view", "events"]) {
    test(`${cmd}: the line is named as too deep, in < 192 MB`, { timeout: 120_000 }, () => {
      const r = measured([cmd, id, "--root", root]);
      assert.match(r.out, /events\.jsonl:\d+: .*nested deeper than 100000 levels/);
      assert.ok(r.rssMb < 192, `${cmd} peaked at ${r.rssMb.toFixed(0)} MB`);
    });
  }
});

describe("a line that is JSON but no event, or an event repeated, at the end of a crashed run's log", () => {
  // Found by a break-it run: resume took `{"x":1}` (and a repeated last line) for events, went on, and wrote a
  // state.json its own schema refuses: the run could then be neither resumed, approved nor aborted.
  for (
    const [name, extra] of [
      ["an object that is no event", () => `{"x":1}\n`],
      [
        "an event of another episode",
        (last: string) =>
          last.replace(/"episode_id":"[^"]+"/, `"episode_id":"ep_other"`).replace(
            /"id":"ev_[^"]+"/,
            `"id":"ev_other"`,
          ) + "\n",
      ],
      ["the last event again (its id repeated)", (last: string) => last + "\n"],
    ] as const
  ) {
    test(`${name}: resume refuses (7) writing nothing; resume --abort sets it aside and seals a valid run`, async () => {
      const work = join(tmp.path, `not-event-${name.length}`);
      mkdirSync(work);
      const id = `ep_not_event_${name.length}`;
      const dir = await crashedRun(root, work, id);
      const events = join(dir, "events.jsonl");
      const before = readFileSync(events, "utf8");
      appendFileSync(events, extra(before.trimEnd().split("\n").at(-1)!));
      const withBad = readFileSync(events, "utf8");
      const state = readFileSync(join(dir, "state.json"), "utf8");
      const r = cli(["resume", id, "--root", root]);
      assert.equal(r.code, 7, r.stderr);
      assert.match(r.stderr, /events\.jsonl has damaged lines \(line \d+: /);
      assert.equal(readFileSync(events, "utf8"), withBad, "nothing appended");
      assert.equal(readFileSync(join(dir, "state.json"), "utf8"), state, "state.json untouched");
      const aborted = cli(["resume", id, "--abort", "--root", root]);
      assert.ok(existsSync(join(dir, "manifest.json")), aborted.stderr);
      assert.ok(readFileSync(events, "utf8").startsWith(before), "the good lines stay");
      assert.ok(existsSync(join(dir, `events.jsonl.torn-${Buffer.byteLength(before)}`)));
      const v = cli(["validate", id, "--root", root]);
      assert.equal(v.code, 0, v.stdout);
    });
  }
});

describe("a line over the limit in the middle of events.jsonl", () => {
  test("validate reports jsonl.too_long at its line; resume refuses (7); resume --abort seals it aside", async () => {
    const work = join(tmp.path, "middle");
    mkdirSync(work);
    const id = "ep_long_middle";
    const dir = await crashedRun(root, work, id);
    const events = join(dir, "events.jsonl");
    const before = readFileSync(events, "utf8");
    const lines = before.trimEnd().split("\n").length;
    appendFileSync(events, `{"blob":"${"x".repeat(17 << 20)}"}\n${before.trimEnd().split("\n").at(-1)}\n`);
    const v = cli(["validate", id, "--root", root]);
    assert.equal(v.code, 1);
    assert.match(v.stdout, new RegExp(`events\\.jsonl:${lines + 1}: jsonl\\.too_long: line of \\d+ bytes`));
    assert.equal(cli(["resume", id, "--root", root]).code, 7);
    const r = cli(["resume", id, "--abort", "--root", root]);
    assert.ok(existsSync(join(dir, "manifest.json")), r.stderr);
    assert.equal(readFileSync(events, "utf8").startsWith(before), true, "the good lines stay");
    assert.ok(existsSync(join(dir, `events.jsonl.torn-${Buffer.byteLength(before)}`)));
    assert.equal(cli(["validate", id, "--root", root]).code, 0);
  });
});
