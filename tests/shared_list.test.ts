/**
 * The shared list behind the state snapshot's big lists: a snapshot never
 * changes once taken, whatever the list does afterwards; a change copies one
 * chunk, not the list; the delta between two snapshots is exactly the
 * entries that differ.
 */
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { prng } from "./helpers/prng.ts";
import {
  appended,
  arraySnapshot,
  CHUNK,
  entryAt,
  listDelta,
  type ListSnapshot,
  SharedList,
} from "../src/runtime/core/shared_list.ts";
import { listView, viewSource } from "../src/runtime/core/list_view.ts";

function toArray<T>(s: ListSnapshot<T>): T[] {
  return Array.from({ length: s.length }, (_, i) => entryAt(s, i) as T);
}

describe("SharedList", () => {
  test("a snapshot keeps its entries when the list is changed, grown or cut afterwards", () => {
    const list = new SharedList<string>();
    for (let i = 0; i < CHUNK * 3 + 5; i++) list.push(`v${i}`);
    const before = list.snapshot();
    const copy = toArray(before);
    list.set(1, "changed");
    list.set(CHUNK * 2 + 1, "changed too");
    list.push("new");
    list.truncate(3);
    list.push("after cut");
    assert.deepEqual(toArray(before), copy);
    assert.deepEqual(toArray(list.snapshot()), ["v0", "changed", "v2", "after cut"]);
  });

  test("a change copies the chunk it is in and shares the others", () => {
    const list = new SharedList<number>();
    for (let i = 0; i < CHUNK * 4; i++) list.push(i);
    const a = list.snapshot();
    list.set(CHUNK + 3, -1);
    const b = list.snapshot();
    assert.notEqual(a.chunks, b.chunks);
    assert.equal(a.chunks[0], b.chunks[0]);
    assert.notEqual(a.chunks[1], b.chunks[1]);
    assert.equal(a.chunks[2], b.chunks[2]);
    assert.equal(entryAt(a, CHUNK + 3), CHUNK + 3);
    assert.equal(entryAt(b, CHUNK + 3), -1);
  });

  test("appending after a snapshot shares every chunk (nothing it shows is touched)", () => {
    const list = new SharedList<number>();
    for (let i = 0; i < 10; i++) list.push(i);
    const a = list.snapshot();
    list.push(10);
    const b = list.snapshot();
    assert.equal(a.chunks[0], b.chunks[0]);
    assert.equal(a.length, 10);
    assert.equal(entryAt(a, 10), undefined);
    assert.deepEqual(listDelta(a, b), [[10, 10]]);
  });

  test("set refuses an index past the end", () => {
    const list = new SharedList<number>();
    assert.throws(() => list.set(1, 1), RangeError);
    assert.throws(() => list.set(-1, 1), RangeError);
  });

  test("random edits: every snapshot equals the list at that moment; deltas rebuild the list", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rand = prng(seed);
      const list = new SharedList<object>();
      const model: object[] = [];
      const kept: { snap: ListSnapshot<object>; copy: object[] }[] = [];
      let mirror: object[] = [];
      let last: ListSnapshot<object> = { chunks: [], length: 0 };
      for (let op = 0; op < 400; op++) {
        const r = rand();
        if (r < 0.5) {
          const x = { op };
          list.push(x);
          model.push(x);
        } else if (r < 0.8 && model.length > 0) {
          const i = Math.floor(rand() * model.length), x = { op };
          list.set(i, x);
          model[i] = x;
        } else if (r < 0.85) {
          const n = Math.floor(rand() * (model.length + 1));
          list.truncate(n);
          model.length = Math.min(model.length, n);
        } else {
          const snap = list.snapshot();
          assert.deepEqual(toArray(snap), model, `seed ${seed}, op ${op}`);
          kept.push({ snap, copy: [...model] });
          // What the worker side does with a delta: cut to the new length, set the entries sent.
          mirror = mirror.slice(0, snap.length);
          for (const [i, x] of listDelta(last, snap)) mirror[i] = x;
          assert.deepEqual(mirror, model, `seed ${seed}, op ${op}: delta`);
          last = snap;
        }
      }
      for (const [k, { snap, copy }] of kept.entries()) {
        for (let i = 0; i < copy.length; i++) {
          assert.equal(entryAt(snap, i), copy[i], `seed ${seed}, snapshot ${k}, entry ${i}`);
        }
      }
    }
  });

  test("listDelta of an unchanged list is empty; of a new list, every entry", () => {
    const list = new SharedList<number>();
    for (let i = 0; i < 200; i++) list.push(i);
    const a = list.snapshot();
    assert.deepEqual(listDelta(a, list.snapshot()), []);
    assert.equal(listDelta({ chunks: [], length: 0 }, a).length, 200);
    assert.deepEqual(listDelta(a, arraySnapshot([0, 1, 99])), [[2, 99]]);
  });

  test("appended adds one entry without changing the snapshot it extends", () => {
    const list = new SharedList<number>();
    for (let i = 0; i < CHUNK; i++) list.push(i);
    const a = list.snapshot();
    const b = appended(a, -1);
    assert.equal(b.length, CHUNK + 1);
    assert.equal(entryAt(b, CHUNK), -1);
    assert.equal(a.length, CHUNK);
    const c = appended(appended(arraySnapshot([1, 2]), 3), 4);
    assert.deepEqual(toArray(c), [1, 2, 3, 4]);
  });

  test("a view reads the snapshot and tells its source", () => {
    const list = new SharedList<object>();
    const first = Object.freeze({ id: 1 });
    list.push(first);
    const snap = list.snapshot();
    const view = listView(snap);
    list.set(0, Object.freeze({ id: 2 }));
    assert.equal(view[0], first);
    assert.equal(view.length, 1);
    assert.deepEqual(JSON.parse(JSON.stringify(view)), [{ id: 1 }]);
    assert.equal(viewSource(view), snap);
    assert.throws(() => (view as object[]).push({}), TypeError);
  });

  test("a view is frozen (Object.isFrozen), and reflecting on it agrees, in any order", () => {
    const make = () => {
      const list = new SharedList<object>();
      for (let i = 0; i < 3 * CHUNK; i++) list.push(Object.freeze({ id: i }));
      const view = listView(list.snapshot());
      list.set(0, Object.freeze({ id: "changed later" }));
      return view as object[];
    };
    const first = make();
    assert.equal(Object.isFrozen(first), true);
    assert.equal(Object.isSealed(first), true);
    assert.equal(Object.isExtensible(first), false);
    assert.deepEqual(first[0], { id: 0 }, "the snapshot, not the list as it is now");
    const byKeys = make();
    assert.equal(Object.keys(byKeys).length, 3 * CHUNK);
    assert.equal(Object.isFrozen(byKeys), true);
    const byDescriptor = make();
    assert.deepEqual(Object.getOwnPropertyDescriptor(byDescriptor, "1"), {
      value: { id: 1 },
      writable: false,
      enumerable: true,
      configurable: false,
    });
    const byFreeze = make();
    assert.equal(Object.freeze(byFreeze), byFreeze, "freezing a frozen list is allowed");
    for (const view of [first, byKeys, byDescriptor, byFreeze]) {
      assert.equal(view.length, 3 * CHUNK);
      assert.throws(() => view.push({}), TypeError);
      assert.throws(() => (view[1] = {}), TypeError);
      assert.throws(() => Object.defineProperty(view, "0", { value: 1 }), TypeError);
      assert.throws(() => delete view[0], TypeError);
      assert.equal(Array.isArray(view), true);
      assert.deepEqual(view.map((x) => (x as { id: unknown }).id).slice(0, 2), [0, 1]);
    }
    const empty = listView(new SharedList<object>().snapshot());
    assert.equal(Object.isFrozen(empty), true);
  });
});
