/**
 * The ULID generator behind episode and event ids: the spec's layout and
 * time encoding, strictly increasing ids within a millisecond and when the
 * clock steps back, the carry from the low to the high random half.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { monotonicUlid, ulidTime } from "../src/store/ulid.ts";

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;

describe("ULIDs", () => {
  test("26 Crockford base-32 characters whose first ten encode the time", () => {
    const next = monotonicUlid();
    const now = Date.UTC(2026, 10, 24, 3, 14, 15, 926);
    const id = next(now);
    assert.match(id, ULID);
    assert.equal(ulidTime(id), now);
    assert.equal(ulidTime("01ARYZ6S41TSV4RRFFQ69G5FAV"), 1469918176385, "the spec's example");
    assert.equal(next(0).slice(0, 10) <= "0000000000", false, "a later call never goes back in time");
    assert.equal(monotonicUlid()(0).slice(0, 10), "0000000000");
    assert.equal(monotonicUlid()(2 ** 48 - 1).slice(0, 10), "7ZZZZZZZZZ");
    assert.throws(() => monotonicUlid()(2 ** 48), RangeError);
    assert.equal(ulidTime("not a ulid"), null);
    assert.equal(ulidTime("81ARZ3NDEKTSV4RRFFQ69G5FAV"), null, "past 2^48 ms");
  });

  test("strictly increasing within one millisecond and when the clock steps back", () => {
    const next = monotonicUlid();
    const ids = [next(1000)];
    for (let i = 0; i < 5000; i++) ids.push(next(1000));
    ids.push(next(999), next(500), next(1001));
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1] < ids[i], `${ids[i - 1]} < ${ids[i]}`);
    assert.equal(new Set(ids).size, ids.length);
    assert.equal(ulidTime(ids.at(-2)!), 1000, "a step back keeps the last time");
    assert.equal(ulidTime(ids.at(-1)!), 1001);
  });

  test("the low random half carries into the high one; the whole random part overflowing throws", () => {
    const fill = (byte: number) => (b: Uint8Array) => b.fill(byte);
    const carry = monotonicUlid((b) => {
      b.fill(0);
      b.fill(0xff, 5); // low half at its maximum
      return b;
    });
    const a = carry(7), b = carry(7);
    assert.equal(a.slice(10), "00000000ZZZZZZZZ");
    assert.equal(b.slice(10), "0000000100000000");
    const full = monotonicUlid(fill(0xff));
    assert.equal(full(7).slice(10), "ZZZZZZZZZZZZZZZZ");
    assert.throws(() => full(7), /overflowed/);
  });
});
