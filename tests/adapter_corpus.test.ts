/**
 * The adapter corpus: adapter files that return (or throw, or never settle
 * with) every kind of bad value, each driven through a real `run()`. Every
 * run ends sealed (summary.json and manifest.json written), its artifacts
 * validate, nothing is an internal error, and a bad result is an adapter
 * error whose message names the adapter file and the field.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { ADAPTER_GUARD_DEFAULTS, EpisodeCore, NoemaError, run, validateEpisodeDir } from "noema";
import { tempDir } from "./helpers/tmp.ts";
import { cli } from "./helpers/cli.ts";

interface Case {
  /** What `act` does (the body of an arrow function returning the result). */
  act: string;
  /** The adapter config. */
  config?: Record<string, unknown>;
  /** Expected `outcomes.status` of the run. */
  status: "error" | "ok";
  /** What the recorded act error (or output, for `ok`) must match. */
  expect: RegExp;
}

const CASES: Record<string, Case> = {
  "returns undefined": { act: "undefined", status: "error", expect: /result: expected an object, got undefined/ },
  "returns null": { act: "null", status: "error", expect: /result: expected an object, got null/ },
  "returns a string": { act: '"ok"', status: "error", expect: /result: expected an object, got string/ },
  "returns an array": { act: '[{ status: "ok" }]', status: "error", expect: /result: expected an object, got array/ },
  "status missing": {
    act: '({ outcome: "done" })',
    status: "error",
    expect: /result\.status: expected "ok", "error" or "skipped", got undefined/,
  },
  "status not a status": {
    act: '({ status: "done" })',
    status: "error",
    expect: /result\.status: expected "ok", "error" or "skipped", got "done"/,
  },
  "status a BigInt": { act: "({ status: 1n })", status: "error", expect: /result\.status: expected/ },
  "status a getter that throws": {
    act: '({ get status() { throw new Error("no status for you"); } })',
    status: "error",
    expect: /result\.status: expected .*got "\[unreadable: no status for you\]"/,
  },
  "outcome a number": {
    act: '({ status: "ok", outcome: 42 })',
    status: "error",
    expect: /result\.outcome: expected a string, got number/,
  },
  "artifacts as strings": {
    act: '({ status: "ok", artifacts: ["x.txt"] })',
    status: "error",
    expect: /result\.artifacts\[0\]: expected an object \{ path, kind\? \}, got string/,
  },
  "artifacts a string": {
    act: '({ status: "ok", artifacts: "x.txt" })',
    status: "error",
    expect: /result\.artifacts: expected an array, got string/,
  },
  "artifact path a number": {
    act: '({ status: "ok", artifacts: [{ path: 7 }] })',
    status: "error",
    expect: /result\.artifacts\[0\]\.path: expected a string, got number/,
  },
  "facts without key": {
    act: '({ status: "ok", facts: [{ value: 1 }] })',
    status: "error",
    expect: /result\.facts\[0\]\.key: expected a string, got undefined/,
  },
  "error a string": {
    act: '({ status: "error", error: "boom" })',
    status: "error",
    expect: /result\.error: expected an object \{ type, message \}, got string/,
  },
  "a proxy whose traps throw": {
    act: 'new Proxy({}, { get() { throw new Error("trap"); }, ownKeys() { throw new Error("trap"); } })',
    status: "error",
    // Awaiting it reads `then`, which throws: an adapter that threw.
    expect: /^Error: trap$/,
  },
  "a revoked proxy": {
    act: "(() => { const r = Proxy.revocable({}, {}); r.revoke(); return r.proxy; })()",
    status: "error",
    expect: /result: expected an object, got object|adapter threw|revoked/,
  },
  "throws a string": {
    act: '(() => { throw "plain string"; })()',
    status: "error",
    expect: /^NonError: plain string$/,
  },
  "throws null": { act: "(() => { throw null; })()", status: "error", expect: /^NonError: null$/ },
  "throws an object with a cycle": {
    act: "(() => { const o = { code: 7 }; o.self = o; throw o; })()",
    status: "error",
    expect: /^NonError: \{"code":7,"self":"\[cycle\]"\}$/,
  },
  "rejects with undefined": { act: "Promise.reject(undefined)", status: "error", expect: /^NonError: undefined$/ },
  "a thenable whose then throws": {
    act: '({ get then() { throw new RangeError("then trap"); } })',
    status: "error",
    expect: /^RangeError: then trap$/,
  },
  "never settles": {
    act: "new Promise(() => {})",
    config: { act_timeout_ms: 300 },
    status: "error",
    expect: /^AdapterTimeout: adapter .*adapter-\d+\.ts: act did not settle within 300 ms \(adapter\.act_timeout_ms\)$/,
  },
  "output with a cycle, BigInt, function, symbol, NaN": {
    act:
      '(() => { const o = { n: 10n ** 30n, f() {}, s: Symbol("x"), x: NaN, u: undefined }; o.self = o; return { status: "ok", output: o }; })()',
    status: "ok",
    expect:
      /^\{"n":"1000000000000000000000000000000","f":"\[function f\]","s":"\[symbol x\]","x":"\[NaN\]","self":"\[cycle\]"\}$/,
  },
  "a huge output": {
    act: '({ status: "ok", output: { text: "y".repeat(3_000_000) } })',
    status: "ok",
    expect: /^\{"text":"y+…\[truncated: \d+ bytes\]"\}$/,
  },
  "a huge output under output_limit_bytes": {
    act: '({ status: "ok", output: Array.from({ length: 100000 }, (_, i) => i) })',
    config: { output_limit_bytes: 2000 },
    status: "ok",
    expect: /^\[0,1,2,.*"…\[truncated: \d+ more items\]"\]$/,
  },
  "facts larger than the limit": {
    act: '({ status: "ok", facts: Array.from({ length: 5000 }, (_, i) => ({ key: "k" + i, value: i })) })',
    config: { output_limit_bytes: 4096 },
    status: "error",
    expect: /adapter .*: result: larger than 4096 bytes as JSON \(adapter\.output_limit_bytes\)$/,
  },
  "an error message of megabytes": {
    act: '({ status: "error", error: { type: "Boom", message: "m".repeat(2_000_000) } })',
    status: "error",
    expect: /^Boom: m+…\[truncated: \d+ bytes\]$/,
  },
  "output nested 100,000 levels": {
    act: '(() => { let d = 1; for (let i = 0; i < 100000; i++) d = [d]; return { status: "ok", output: d }; })()',
    status: "ok",
    expect: /"\[depth limit\]"/,
  },
};

function adapterFile(body: string): string {
  return `export default {
  name: "corpus",
  version: "1.0",
  create: () => ({
    act: async () => ${body},
  }),
};
`;
}

function json(dir: string, name: string) {
  return JSON.parse(readFileSync(join(dir, name), "utf8"));
}

function actEvents(dir: string) {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l)).filter((e) =>
    e.phase === "act"
  );
}

function assertSealedAndValid(dir: string): void {
  assert.ok(existsSync(join(dir, "summary.json")), "summary.json written");
  assert.ok(existsSync(join(dir, "manifest.json")), "manifest.json written");
  const report = validateEpisodeDir(dir);
  assert.equal(report.valid, true, JSON.stringify(report.problems.slice(0, 3)));
}

describe("adapter corpus: no adapter value leaves a run unsealed or writes an invalid event", () => {
  const tmp = tempDir("noema-adapter-corpus-");
  const root = join(tmp.path, "root");
  after(() => tmp.cleanup());

  test("the corpus has at least 15 bad returns", () => {
    assert.ok(Object.values(CASES).filter((c) => c.status === "error").length >= 15);
  });

  let i = 0;
  for (const [name, c] of Object.entries(CASES)) {
    const file = `adapter-${++i}.ts`;
    test(name, async () => {
      const path = tmp.file(file, adapterFile(c.act));
      const r = await run(`corpus: ${name}`, {
        root,
        using: path,
        adapter: c.config,
        steps: [{ kind: "act", description: "the act" }],
      });
      // Sealed, valid, not an internal error.
      assert.ok(existsSync(join(r.episode_dir, "summary.json")), "summary.json written");
      assert.ok(existsSync(join(r.episode_dir, "manifest.json")), "manifest.json written");
      const report = validateEpisodeDir(r.episode_dir);
      assert.equal(report.valid, true, JSON.stringify(report.problems.slice(0, 3)));
      assert.equal(r.status, c.status);
      const [act] = actEvents(r.episode_dir);
      if (c.status === "error") {
        const err = act.payload.error;
        assert.equal(typeof err.type, "string");
        const text = `${err.type}: ${err.message}`;
        assert.match(text, c.expect);
        if (err.type === "InvalidAdapterResult" || err.type === "AdapterTimeout") {
          assert.ok(err.message.includes(file), `the message names the adapter file: ${err.message}`);
        }
        assert.equal(json(r.episode_dir, "state.json").outcomes.error.type, err.type);
      } else {
        const text = JSON.stringify(act.payload.output);
        assert.match(text, c.expect);
        const limit = (c.config?.output_limit_bytes as number | undefined) ??
          ADAPTER_GUARD_DEFAULTS.output_limit_bytes;
        assert.ok(Buffer.byteLength(text) <= limit, `output within ${limit} bytes`);
      }
    });
  }

  test("an adapter that throws an Error records where, in its own file", async () => {
    const path = tmp.file(
      "thrower.ts",
      `export default {
  name: "thrower",
  create: () => ({
    act() {
      const x = 1;
      throw new TypeError("bad input " + x);
    },
  }),
};
`,
    );
    const r = await run("throw", { root, using: path, steps: [{ kind: "act", description: "go" }] });
    const [act] = actEvents(r.episode_dir);
    assert.equal(act.payload.error.type, "TypeError");
    assert.equal(act.payload.error.message, "bad input 1");
    // Bun points at the constructor, V8 at `new`: the line is the same.
    assert.match(act.payload.error.at, /^thrower\.ts:6:1[37]$/);
    assert.equal(validateEpisodeDir(r.episode_dir).valid, true);
  });

  test("create() returning something that is not an adapter is a usage error naming it, before anything is written", async () => {
    const path = tmp.file("no-act.ts", `export default { name: "noact", create: () => ({ run() {} }) };\n`);
    const err = await run("x", { root: join(tmp.path, "other-root"), using: path }).then(
      () => null,
      (e) => e,
    );
    assert.ok(err instanceof NoemaError);
    assert.equal(err.exitCode, 2);
    assert.match(
      err.message,
      /adapter .*no-act\.ts: create\(\) returned object, expected an object \{ act\(request\) \}/,
    );
    assert.equal(existsSync(join(tmp.path, "other-root", "episodes")), false);
  });

  test("a bad adapter.act_timeout_ms is a usage error naming the field", async () => {
    const path = tmp.file("fine.ts", adapterFile('({ status: "ok" })'));
    await assert.rejects(
      run("x", { root, using: path, adapter: { act_timeout_ms: "soon" } }),
      (e: unknown) =>
        e instanceof NoemaError && e.exitCode === 2 &&
        /adapter\.act_timeout_ms: must be an integer from 1 to 2147483647/.test(e.message),
    );
  });

  test("results recorded from outside (EpisodeCore.record) are checked the same way", async () => {
    const core = await EpisodeCore.open("hook results", { root, using: "agent" });
    await core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "c1" });
    const output: Record<string, unknown> = { n: 5n, f() {} };
    output.self = output;
    await core.record("c1", { status: "ok", output } as never);
    await core.propose({ kind: "tool", tool: "Bash", input: { command: "cat x" }, call_id: "c2" });
    await core.record("c2", { status: "ok", artifacts: ["x.txt"] } as never);
    const r = await core.finish();
    assertSealedAndValid(r.episode_dir);
    const [first, second] = actEvents(r.episode_dir);
    assert.deepEqual(first.payload.output, { n: "5", f: "[function f]", self: "[cycle]" });
    assert.equal(
      second.payload.error.message,
      "adapter agent: result.artifacts[0]: expected an object { path, kind? }, got string",
    );
  });

  test("CLI: artifacts as strings end the run with exit 1, sealed and valid, naming ./file and the field", () => {
    tmp.file("cli-adapter.ts", adapterFile('({ status: "ok", artifacts: ["x.txt"] })'));
    const r = cli(["run", "artifacts", "--root", root, "--using", "./cli-adapter.ts", "--json"], { cwd: tmp.path });
    assert.equal(r.code, 1, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.status, "error");
    const [act] = actEvents(out.episode_dir);
    assert.equal(
      act.payload.error.message,
      "adapter ./cli-adapter.ts: result.artifacts[0]: expected an object { path, kind? }, got string",
    );
    const v = cli(["validate", out.episode_dir], { cwd: tmp.path });
    assert.equal(v.code, 0, v.stdout + v.stderr);
  });
});
