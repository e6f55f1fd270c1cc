/**
 * noema's RFC 8785 canonical JSON (src/store/canonical_json.ts) writes what
 * the `canonicalize` package writes, on the RFC's own examples and on random
 * values, and refuses what has no canonical form.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { prng } from "./helpers/prng.ts";
import canonicalize from "canonicalize";
import { canonicalJson, MAX_DEPTH } from "../src/store/canonical_json.ts";
import { canonicalHash, sha256 } from "../src/store/hash.ts";
import { createHash } from "node:crypto";
import { decisionStateHash } from "../src/runtime/core/state_hash.ts";

const CHARS = [
  "a",
  "Z",
  "0",
  " ",
  '"',
  "\\",
  "\n",
  "\t",
  "\u0001",
  "\u001f",
  "é",
  "€",
  "😀",
  "\u2028",
  "/",
  "<",
  "\u007f",
];

function randomString(rand: () => number): string {
  let s = "";
  const n = Math.floor(rand() * 8);
  for (let i = 0; i < n; i++) s += CHARS[Math.floor(rand() * CHARS.length)];
  return s;
}

function randomNumber(rand: () => number): number {
  const pick = [0, -0, 1, -1, 0.1, 1e21, 1e-7, 123456789012345680000, 5e-324, 1.7976931348623157e308, 2 ** 53, -1.5];
  return rand() < 0.5 ? pick[Math.floor(rand() * pick.length)] : (rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20);
}

function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 3 || r < 0.3) {
    const p = rand();
    if (p < 0.3) return randomString(rand);
    if (p < 0.6) return randomNumber(rand);
    if (p < 0.7) return rand() < 0.5;
    if (p < 0.8) return null;
    if (p < 0.9) return undefined;
    return () => 1;
  }
  if (r < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
  const obj: Record<string, unknown> = {};
  const n = Math.floor(rand() * 5);
  for (let i = 0; i < n; i++) obj[randomString(rand)] = randomValue(rand, depth + 1);
  return obj;
}

describe("canonical JSON", () => {
  test("the RFC 8785 examples", () => {
    const numbers = [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001];
    assert.equal(canonicalJson({ numbers }), '{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}');
    assert.equal(
      canonicalJson({
        "\u20ac": "Euro Sign",
        "\r": "Carriage Return",
        "\ufb33": "Hebrew",
        "1": "One",
        "\ud83d\ude00": "Emoji",
        "\u0080": "Control",
        "\u00f6": "Latin",
      }),
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u00f6":"Latin","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji","\ufb33":"Hebrew"}',
    );
    assert.equal(
      canonicalJson({ string: "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/" }),
      '{"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
    assert.equal(canonicalJson([56, { d: true, "10": null, "1": [] }]), '[56,{"1":[],"10":null,"d":true}]');
  });

  test("random values: the same text as the canonicalize package", () => {
    for (let seed = 1; seed <= 500; seed++) {
      const value = randomValue(prng(seed), 0);
      if (value === undefined || typeof value === "function") continue;
      assert.equal(canonicalJson(value), canonicalize(value), `seed ${seed}`);
    }
  });

  test("toJSON, boxed values, -0, and members with no JSON form", () => {
    const when = new Date(Date.UTC(2026, 10, 24));
    assert.equal(canonicalJson({ when }), `{"when":"2026-11-24T00:00:00.000Z"}`);
    assert.equal(canonicalJson([new Number(2), new String("s"), new Boolean(false)]), '[2,"s",false]');
    assert.equal(canonicalJson(-0), "0");
    assert.equal(canonicalJson({ a: undefined, b: () => 1, c: Symbol("x"), d: 1 }), '{"d":1}');
    assert.equal(canonicalJson([undefined, () => 1]), "[null,null]");
  });

  test("refuses NaN, Infinity, BigInt, a lone surrogate, a cycle, and a value with no JSON form", () => {
    assert.throws(() => canonicalJson({ n: NaN }), TypeError);
    assert.throws(() => canonicalJson([Infinity]), TypeError);
    assert.throws(() => canonicalJson({ n: 1n }), TypeError);
    assert.throws(() => canonicalJson({ s: "\ud800" }), /lone surrogate/);
    assert.throws(() => canonicalJson({ ["\udc00"]: 1 }), /lone surrogate/);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    assert.throws(() => canonicalJson(cycle), new RegExp(`deeper than ${MAX_DEPTH}`));
    assert.throws(() => canonicalJson(undefined), /no JSON form/);
  });

  test("canonicalHash is the same for equal values whatever their key order", () => {
    assert.equal(canonicalHash({ a: 1, b: { c: [1, 2], d: "x" } }), canonicalHash({ b: { d: "x", c: [1, 2] }, a: 1 }));
    assert.notEqual(canonicalHash({ a: 1 }), canonicalHash({ a: 2 }));
  });

  test("decisionStateHash equals canonicalHash of the same decision state, on random inputs and odd shapes", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const rand = prng(seed);
      const input = (randomValue(rand, 1) ?? {}) as Record<string, unknown>;
      const obj = typeof input === "object" && input !== null && !Array.isArray(input) ? input : { v: input };
      // The action's input: the step's inputs, a copy of them (as the engine makes), or a patched copy.
      const pick = rand();
      const patched = pick < 0.3 ? { ...obj, patched: randomString(rand) } : pick < 0.6 ? { ...obj } : obj;
      const state = {
        episode: "sha256:" + "a".repeat(64),
        facts: "sha256:" + "b".repeat(64),
        recent: Array.from(
          { length: Math.floor(rand() * 11) },
          (_, i) => (rand() < 0.1 ? undefined : rand() < 0.2 ? randomString(rand) : `act_step-${i}_${i}`),
        ),
        step: {
          id: `step-${seed}`,
          kind: "act",
          description: randomString(rand),
          index: seed - 1,
          total: seed,
          inputs: obj,
        },
        action: {
          kind: "tool",
          tool: randomString(rand),
          input: patched,
          ...(rand() < 0.5 ? { command: randomString(rand) } : {}),
        },
      };
      assert.equal(decisionStateHash(state), canonicalHash(state), `seed ${seed}`);
    }
    const step = { id: "s", kind: "act", description: "d", index: 0, total: 1, inputs: {} };
    const odd = [
      { action: { kind: "k", tool: "t", input: {}, extra: 1 }, step },
      { action: { kind: "k", tool: "t", input: {} }, step: { ...step, more: true } },
      { action: { kind: "k", tool: "t", input: {}, command: undefined }, step },
      { action: { kind: "k", tool: "t", input: { when: new Date(0) } }, step: { ...step, index: 1e21 } },
    ];
    for (const [i, parts] of odd.entries()) {
      const state = { episode: "e", facts: "f", recent: [], ...parts };
      assert.equal(decisionStateHash(state as never), canonicalHash(state), `odd shape ${i}`);
    }
    // Ids that JSON escapes: a control character, a quote, a backslash; a lone surrogate is refused, as canonicalJson does.
    const action = { kind: "k", tool: "t", input: {} };
    const escaped = { episode: "e", facts: "f", recent: ["a\u0001b", 'q"', "b\\u0041", undefined], step, action };
    assert.equal(decisionStateHash(escaped), canonicalHash(escaped));
    assert.throws(() => decisionStateHash({ ...escaped, recent: ["x\ud800"] }), /lone surrogate/);
    // The texts kept from call to call (tool, kind, episode…) and numbers written by `String`: still the same text.
    for (const [i, index] of [0, -0, 0.5, 1e-7, 1e21, 2 ** 53 + 2, 123456789].entries()) {
      const state = {
        ...escaped,
        recent: [],
        step: { ...step, index, total: index },
        action: { ...action, tool: `t${i % 2}` },
      };
      assert.equal(decisionStateHash(state), canonicalHash(state), `index ${index}`);
      assert.equal(decisionStateHash(state), canonicalHash(state), `index ${index}, again`);
    }
    assert.throws(() => decisionStateHash({ ...escaped, action: { ...action, tool: "t\ud800" } }), /lone surrogate/);
    assert.throws(() => decisionStateHash({ ...escaped, action: { ...action, tool: "t\ud800" } }), /lone surrogate/);
    assert.throws(() => decisionStateHash({ ...escaped, step: { ...step, index: NaN } }), /NaN is not a JSON number/);
  });

  test("sha256 is node:crypto's SHA-256 (Bun's own hash under Bun), for text and bytes", () => {
    const rand = prng(7);
    for (let i = 0; i < 200; i++) {
      const text = randomString(rand).repeat(Math.floor(rand() * 50));
      const bytes = new TextEncoder().encode(text);
      const want = "sha256:" + createHash("sha256").update(bytes).digest("hex");
      assert.equal(sha256(text), want);
      assert.equal(sha256(bytes), want);
    }
    assert.equal(sha256(""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  });
});
