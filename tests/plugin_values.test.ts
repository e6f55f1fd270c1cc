/**
 * No value a plugin returns can crash the runtime: `toPlainJson` on hostile
 * values, and policies (in a worker, in the caller's thread, and as objects)
 * whose verdicts have cycles, throwing getters, BigInts or megabytes of
 * advice, that throw non-Errors, print to stdout, allocate without bound, or
 * hang while loading. Every run ends sealed and valid.
 *
 * @module
 */
import { after, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { join } from "node:path";
import process from "node:process";
import {
  cutString,
  describeThrown,
  neutralize,
  PLUGIN_LIMITS,
  run,
  type RunOptions,
  throwSite,
  toPlainJson,
  validateEpisodeDir,
} from "noema";
import { tempDir } from "./helpers/tmp.ts";
import { assertOneLineError, cli, CLI_ON_DENO, cliCommand } from "./helpers/cli.ts";

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

describe("toPlainJson", () => {
  test("cycles, BigInt, functions, symbols, undefined, NaN/Infinity, -0", () => {
    const o: Record<string, unknown> = {
      big: 2n ** 70n,
      fn: function named() {},
      arrow: () => 1,
      sym: Symbol("s"),
      undef: undefined,
      list: [undefined, NaN, Infinity, -Infinity, -0],
    };
    o.self = o;
    o.list = [...(o.list as unknown[]), o];
    assert.deepEqual(toPlainJson(o), {
      big: "1180591620717411303424",
      fn: "[function named]",
      arrow: "[function arrow]",
      sym: "[symbol s]",
      list: [null, "[NaN]", "[Infinity]", "[-Infinity]", 0, "[cycle]"],
      self: "[cycle]",
    });
    // A shared object that is not a cycle is copied each time.
    const shared = { a: 1 };
    assert.deepEqual(toPlainJson([shared, shared]), [{ a: 1 }, { a: 1 }]);
  });

  test("getters that throw, proxies, revoked proxies, class instances, Map, Set, Date, Error, typed arrays", () => {
    class Point {
      x = 1;
      #secret = 2;
      get y() {
        return this.#secret;
      }
    }
    const revocable = Proxy.revocable({}, {});
    revocable.revoke();
    const value = {
      getter: Object.defineProperty({}, "bad", {
        enumerable: true,
        get() {
          throw new Error("no");
        },
      }),
      proxy: new Proxy({}, {
        ownKeys() {
          throw new Error("keys trap");
        },
      }),
      revoked: revocable.proxy,
      point: new Point(),
      map: new Map([["k", 1]]),
      set: new Set([1, 2]),
      date: new Date(0),
      error: new RangeError("out"),
      bytes: new Uint8Array(3),
      badJson: {
        toJSON() {
          throw new Error("toJSON broke");
        },
      },
      proto: JSON.parse('{"__proto__": {"polluted": true}}'),
    };
    const copy = toPlainJson(value) as Record<string, unknown>;
    assert.deepEqual(copy.getter, { bad: "[unreadable: no]" });
    assert.equal(copy.proxy, "[unreadable: keys trap]");
    assert.match(copy.revoked as string, /^\[unreadable: .*revoked/i);
    assert.deepEqual(copy.point, { x: 1 });
    assert.deepEqual(copy.map, [["k", 1]]);
    assert.deepEqual(copy.set, [1, 2]);
    assert.equal(copy.date, "1970-01-01T00:00:00.000Z");
    assert.deepEqual(copy.error, { name: "RangeError", message: "out" });
    assert.equal(copy.bytes, "[Uint8Array: 3 bytes]");
    assert.equal(copy.badJson, "[unreadable: toJSON broke]");
    // `__proto__` stays a key: the copy's prototype is untouched.
    assert.equal(Object.getPrototypeOf(copy.proto), Object.prototype);
    assert.equal(JSON.stringify(copy.proto), '{"__proto__":{"polluted":true}}');
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  test("depth: 100,000 levels of nesting copy without overflowing the stack", () => {
    let deep: unknown = "bottom";
    for (let i = 0; i < 100_000; i++) deep = { d: deep };
    const copy = toPlainJson(deep, { maxDepth: 5 });
    assert.equal(JSON.stringify(copy), '{"d":{"d":{"d":{"d":{"d":"[depth limit]"}}}}}');
  });

  test("size: huge strings, arrays and objects are cut with a marker, within maxBytes", () => {
    const s = toPlainJson("z".repeat(5_000_000), { maxBytes: 1000 }) as string;
    assert.match(s, /^z+…\[truncated: \d+ bytes\]$/);
    assert.ok(bytes(s) <= 1000);
    const dropped = Number(/truncated: (\d+) bytes/.exec(s)![1]);
    assert.equal(dropped + s.indexOf("…"), 5_000_000);
    const sparse = toPlainJson(new Array(2 ** 32 - 1), { maxBytes: 500 }) as unknown[];
    assert.match(String(sparse.at(-1)), /^…\[truncated: \d+ more items\]$/);
    const wide = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, i]));
    const cut = toPlainJson(wide, { maxBytes: 600 }) as Record<string, unknown>;
    assert.match(String(cut["…"]), /^\[truncated: \d+ more keys\]$/);
    assert.ok(bytes(cut) <= 600);
  });

  test("a string is never cut inside a surrogate pair, and a token straddling the cut is dropped whole", () => {
    const emoji = cutString("😀".repeat(1000), 301);
    assert.ok(!/[\ud800-\udbff]…/.test(emoji), "no lone high surrogate before the marker");
    assert.ok(bytes(emoji) <= 301);
    const words = cutString(`${"word ".repeat(50)}sk-live-0123456789abcdef0123456789`, 270);
    assert.doesNotMatch(words, /sk-/);
    assert.match(words, /word…\[truncated: \d+ bytes\]$/);
  });

  test("the JSON text of the copy never exceeds maxBytes (seeded fuzz over hostile shapes)", () => {
    let seed = 42;
    const rnd = () => { // mulberry32
      let t = (seed += 0x6d2b79f5);
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pieces = (depth: number): unknown => {
      const r = rnd();
      if (depth > 4 || r < 0.3) {
        const leaves = ["é".repeat(rnd() * 900), '\u0001"\\'.repeat(rnd() * 300), 1.5e300, -7, true, null, 10n, NaN];
        return leaves[Math.floor(rnd() * leaves.length)];
      }
      const n = Math.floor(rnd() * 8);
      if (r < 0.65) return Array.from({ length: n }, () => pieces(depth + 1));
      return Object.fromEntries(Array.from({ length: n }, (_, i) => [`ключ${i}`, pieces(depth + 1)]));
    };
    for (let i = 0; i < 300; i++) {
      const value = pieces(0);
      const max = 256 + Math.floor(rnd() * 4000);
      const copy = toPlainJson(value, { maxBytes: max });
      assert.ok(bytes(copy) <= max, `case ${i}: ${bytes(copy)} > ${max}`);
    }
  });

  test("describeThrown: Errors, strings, null, objects with cycles, hostile values; throwSite", () => {
    assert.deepEqual(describeThrown(new TypeError("t")), { type: "TypeError", message: "t" });
    assert.deepEqual(describeThrown("s"), { type: "NonError", message: "s" });
    assert.deepEqual(describeThrown(null), { type: "NonError", message: "null" });
    const cyc: Record<string, unknown> = { a: 1 };
    cyc.me = cyc;
    assert.deepEqual(describeThrown(cyc), { type: "NonError", message: '{"a":1,"me":"[cycle]"}' });
    const hostile = new Proxy({}, {
      get() {
        throw new Error("x");
      },
    });
    assert.equal(describeThrown(hostile).type, "NonError");
    assert.equal(describeThrown(new Error("m".repeat(100_000))).message.length < PLUGIN_LIMITS.adviceBytes, true);
    assert.equal(
      throwSite("Error: x\n    at advise (file:///p/a%20b/no-rm.ts:7:13)", "/p/a b/no-rm.ts"),
      "no-rm.ts:7:13",
    );
    assert.equal(throwSite("Error: x\n    at advise (/p/other.ts:7:13)", "/p/no-rm.ts"), null);
  });

  test("neutralize: ESC, CR, C1 controls and bidi overrides are escaped; newline and tab kept", () => {
    assert.equal(neutralize("a\x1b[31mb\rc\u009bd\u202ee\n\tf"), "a\\u001b[31mb\\u000dc\\u009bd\\u202ee\n\tf");
  });
});

// ---- Policies.

const POLICY_VERDICTS: Record<string, { body: string; check(direction: Record<string, unknown>): void }> = {
  "a verdict with a cycle": {
    body: 'const v = { kind: "hint", advice: "cyclic", meta: {} }; v.meta.back = v; return v;',
    check: (d) => assert.equal(d.advice, "cyclic"),
  },
  "a verdict whose getter throws": {
    body: 'return { kind: "hint", get advice() { throw new Error("getter"); } };',
    check: (d) => assert.equal(d.advice, "[unreadable: getter]"),
  },
  "a BigInt confidence": {
    body: 'return { kind: "veto", advice: "no", confidence: 1n };',
    check: (d) => {
      assert.equal(d.status, "blocked");
      assert.equal((d.error as { type: string }).type, "InvalidVerdict");
    },
  },
  "megabytes of advice": {
    body: 'return { kind: "hint", advice: "a".repeat(3_000_000) };',
    check: (d) => {
      assert.match(d.advice as string, /^a+…\[truncated: \d+ bytes\]$/);
      assert.ok(Buffer.byteLength(d.advice as string) <= PLUGIN_LIMITS.adviceBytes);
    },
  },
  "a patch with a function and a symbol": {
    body: 'return { kind: "intervention", advice: "p", patch: { f() {}, s: Symbol("q") } };',
    check: (d) => assert.deepEqual(d.patch, { f: "[function f]", s: "[symbol q]" }),
  },
  "throws a string": {
    body: 'throw "policy string";',
    check: (d) => assert.deepEqual(d.error, { type: "NonError", message: "policy string" }),
  },
  "throws null": {
    body: "throw null;",
    check: (d) => assert.deepEqual(d.error, { type: "NonError", message: "null" }),
  },
};

function policyFile(name: string, body: string): string {
  return `export default {
  name: ${JSON.stringify(name)},
  version: "1.0",
  advise(state) {
    ${body}
  },
};
`;
}

// deno-lint-ignore no-explicit-any
function events(dir: string): Record<string, any>[] {
  return readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
}

function assertSealed(dir: string): void {
  assert.ok(existsSync(join(dir, "summary.json")), "summary.json written");
  assert.ok(existsSync(join(dir, "manifest.json")), "manifest.json written");
  const report = validateEpisodeDir(dir);
  assert.equal(report.valid, true, JSON.stringify(report.problems.slice(0, 3)));
}

/**
 * Runs with the policy file in a worker (a path, the default), or in this thread (its default export passed
 * in-process: the same path through `consultPolicy`). No environment is changed: test files run in parallel.
 */
async function runWith(isolation: "worker" | "thread", task: string, options: RunOptions & { policies: string[] }) {
  if (isolation === "worker") return await run(task, options);
  const objects = [];
  for (const path of options.policies) objects.push((await import(pathToFileURL(path).href)).default);
  return await run(task, { ...options, policies: objects });
}

describe("policy verdicts are copied before anything touches them", () => {
  const tmp = tempDir("noema-plugin-values-");
  const root = join(tmp.path, "root");
  after(() => tmp.cleanup());

  // One policy file answering each step with one case (one worker start per runtime, not one per case), under
  // `audit` so every step runs; each step's direction event is checked.
  const names = Object.keys(POLICY_VERDICTS);
  const cases = names.map((name, i) => `    if (state.step.id === "step-${i + 1}") { ${POLICY_VERDICTS[name].body} }`);
  for (const isolation of ["worker", "thread"] as const) {
    test(`${isolation}: ${names.join("; ")}`, async () => {
      const path = tmp.file(`verdicts-${isolation}.ts`, policyFile(`Verdicts${isolation}`, `\n${cases.join("\n")}`));
      const r = await runWith(isolation, "verdicts", {
        root,
        policies: [path],
        governance: "audit",
        steps: names.map((name) => ({ kind: "act" as const, description: name })),
      });
      assertSealed(r.episode_dir);
      const directions = events(r.episode_dir).filter((e) => e.phase === "direction");
      assert.equal(directions.length, names.length);
      names.forEach((name, i) => {
        assert.equal(directions[i].payload.step_id, `step-${i + 1}`);
        try {
          POLICY_VERDICTS[name].check(directions[i].payload);
        } catch (e) {
          throw new Error(`${name}: ${(e as Error).message}`);
        }
      });
    });
  }

  test("in-process policy objects too: a cyclic verdict no longer overflows the stack", async () => {
    const r = await run("object", {
      root,
      policies: [{
        name: "Cyclic",
        version: "1.0",
        advise() {
          const v: Record<string, unknown> = { kind: "veto", advice: "stop" };
          v.self = v;
          return v as never;
        },
      }],
      steps: [{ kind: "act", description: "go" }],
    });
    assertSealed(r.episode_dir);
    assert.equal(r.status, "vetoed");
  });

  for (const isolation of ["worker", "thread"] as const) {
    test(`${isolation}: a policy that throws records where (error.at, in its own file)`, () => {
      const path = tmp.file(
        `thrower-${isolation}.ts`,
        `export default {
  name: "Thrower",
  version: "1.0",
  advise(state) {
    const input = state.action.input;
    throw new Error("cannot judge " + typeof input);
  },
};
`,
      );
      // In this thread, only a policy loaded from its file knows the file: the CLI with NOEMA_POLICY_ISOLATION.
      const c = cli(["run", "throw", "--root", root, "--policy", path, "--json"], {
        cwd: tmp.path,
        env: { NOEMA_POLICY_ISOLATION: isolation === "thread" ? "thread" : undefined },
      });
      assert.equal(c.code, 3, c.stderr); // fail_closed: vetoed
      const r = JSON.parse(c.stdout);
      assertSealed(r.episode_dir);
      const d = events(r.episode_dir).find((e) => e.phase === "direction")!.payload;
      assert.equal(d.error.type, "Error");
      assert.equal(d.error.message, "cannot judge object");
      assert.match(d.error.at, new RegExp(`^thrower-${isolation}\\.ts:6:\\d+$`));
    });
  }
});

describe("what policies print never reaches stdout", () => {
  const tmp = tempDir("noema-policy-output-");
  after(() => tmp.cleanup());
  const loud = `console.log("top-level load line");
export default {
  name: "Loud",
  version: "1.0",
  advise(state) {
    console.log("log \\x1b[31mred\\x1b[0m \\x1b]0;title\\x07");
    console.error("err line");
    console.info({ nested: { deep: 1 } });
    process.stdout.write("raw write\\r\\n");
    return { kind: "hint", advice: "ok" };
  },
};
`;
  for (const isolation of ["worker", "thread"] as const) {
    test(`${isolation}: --json stdout stays one JSON document; the lines go to stderr, prefixed and neutralised`, () => {
      tmp.file("loud.ts", loud);
      const r = cli(["run", "talk", "--root", join(tmp.path, "root"), "--policy", "loud.ts", "--json"], {
        cwd: tmp.path,
        env: { NOEMA_POLICY_ISOLATION: isolation === "thread" ? "thread" : undefined },
      });
      assert.equal(r.code, 0, r.stderr);
      const doc = JSON.parse(r.stdout);
      assert.equal(doc.status, "ok");
      assert.doesNotMatch(r.stdout, /log|err line|raw write|top-level/);
      assert.match(r.stderr, /^\[policy Loud@1\.0\] log \\u001b\[31mred\\u001b\[0m \\u001b\]0;title\\u0007$/m);
      assert.match(r.stderr, /^\[policy Loud@1\.0\] err line$/m);
      assert.match(r.stderr, /^\[policy Loud@1\.0\] raw write\\u000d$/m);
      assert.match(r.stderr, /^\[policy Loud@1\.0\] \{ nested: \{ deep: 1 \} \}$/m);
      assert.match(r.stderr, /^\[policy loud\.ts\] top-level load line$/m);
      assert.ok(!r.stderr.includes("\x1b"), "no raw ESC on stderr");
      assertSealed(doc.episode_dir);
    });
  }
});

/** Runs the CLI without blocking, sampling the child's peak resident memory (Linux `/proc`; 0 elsewhere). */
function cliPeak(args: string[], cwd: string, env: Record<string, string>) {
  const [cmd, ...argv] = [...cliCommand(), ...args];
  const child = spawn(cmd, argv, { cwd, env: { ...process.env, NO_COLOR: "1", ...env } });
  let stdout = "", stderr = "", peakKb = 0;
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  const sample = setInterval(() => {
    try {
      const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"));
      if (hwm) peakKb = Math.max(peakKb, Number(hwm[1]));
    } catch {
      // gone, or no /proc
    }
  }, 20);
  return new Promise<{ code: number | null; stdout: string; stderr: string; peakMb: number }>((resolve) => {
    child.on("close", (code) => {
      clearInterval(sample);
      resolve({ code, stdout, stderr, peakMb: Math.round(peakKb / 1024) });
    });
  });
}

describe("policy workers have a memory cap", () => {
  const tmp = tempDir("noema-policy-memory-");
  after(() => tmp.cleanup());

  test("a policy allocating without bound is stopped, handled by the failure policy, and the run seals", async () => {
    tmp.file("hog.ts", policyFile("Hog", "const a = []; for (;;) a.push(new Array(1e5).fill(Math.random()));"));
    const r = await cliPeak(
      ["run", "hog", "--root", join(tmp.path, "root"), "--policy", "hog.ts", "--policy-timeout", "4000", "--json"],
      tmp.path,
      { NOEMA_POLICY_MEMORY_MB: "128" },
    );
    assert.equal(r.code, 3, r.stderr); // enforce + fail_closed: vetoed
    const doc = JSON.parse(r.stdout);
    assertSealed(doc.episode_dir);
    const d = events(doc.episode_dir).find((e) => e.phase === "direction")!.payload;
    // Bun: the watchdog terminates the worker (resourceLimits is ignored there). Deno: resourceLimits holds
    // the heap, the worker stalls at the cap and the policy timeout stops it.
    assert.ok(["PolicyMemoryLimit", "PolicyTimeout"].includes(d.error.type), d.error.type);
    if (!CLI_ON_DENO) assert.equal(d.error.type, "PolicyMemoryLimit");
    // Unbounded, this policy passes 2.5 GB in 8 s (measured under Bun).
    assert.ok(r.peakMb < 900, `peak ${r.peakMb} MiB`);
  });
});

describe("a policy that hangs while loading exits 2 naming the file", () => {
  const tmp = tempDir("noema-policy-load-hang-");
  after(() => tmp.cleanup());
  const cases = [
    ["worker", "tla.ts", "await new Promise(() => {});\nexport default { name: 'H', advise() {} };\n"],
    ["worker", "loop.ts", "while (true) {}\nexport default { name: 'L', advise() {} };\n"],
    ["thread", "tla-thread.ts", "await new Promise(() => {});\nexport default { name: 'H', advise() {} };\n"],
  ] as const;
  for (const [isolation, file, text] of cases) {
    test(`${isolation}: ${file}`, () => {
      tmp.file(file, text);
      const r = cli(["run", "hang", "--root", join(tmp.path, "root"), "--policy", file], {
        cwd: tmp.path,
        env: {
          NOEMA_POLICY_LOAD_TIMEOUT_MS: "1500",
          NOEMA_POLICY_ISOLATION: isolation === "thread" ? "thread" : undefined,
        },
      });
      assertOneLineError(r, file, /did not finish loading within 1500 ms \(NOEMA_POLICY_LOAD_TIMEOUT_MS\)/);
      assert.equal(existsSync(join(tmp.path, "root", "episodes")), false, "nothing written");
    });
  }
});
