/**
 * Read-only views of growing lists, for the state snapshot policies get.
 *
 * A real frozen array would have to be copied and frozen again each time the
 * list grows; freezing a 10,000-entry array costs about 17 ms under Bun (JSC
 * moves it to slow storage) and 25 µs under Deno. A view instead shows a
 * snapshot of a {@link SharedList} (which never changes once taken): it is an `Array`
 * (`Array.isArray` is true; `map`, `some`, `for…of`, `JSON.stringify` work),
 * its entries are deeply frozen, and every change (assigning, `push`,
 * `delete`, defining a property) throws a `TypeError`, as on a frozen array.
 * `Object.isFrozen` reports false for the list itself (a proxy cannot claim
 * to be frozen over a target that is not).
 *
 * @module
 */
import { entryAt, type ListSnapshot } from "./shared_list.ts";

function isIndex(prop: string | symbol): boolean {
  if (typeof prop !== "string" || prop.length === 0 || prop.length > 10) return false;
  const c = prop.charCodeAt(0);
  if (c < 48 || c > 57 || (c === 48 && prop.length > 1)) return false;
  for (let i = 1; i < prop.length; i++) {
    const d = prop.charCodeAt(i);
    if (d < 48 || d > 57) return false;
  }
  return true;
}

/** What each view shows (for senders that diff views without the proxy's cost). */
const sources = new WeakMap<object, ListSnapshot<unknown>>();

/**
 * The snapshot a view made by {@link listView} shows, or undefined for any
 * other value. Reading entries through it skips the proxy (each proxied
 * read costs far more than an array read).
 *
 * @example
 * ```ts
 * import { listView, viewSource } from "./list_view.ts";
 * import { SharedList } from "./shared_list.ts";
 * const list = new SharedList<number>();
 * list.push(1);
 * viewSource(listView(list.snapshot()))?.length; // 1
 * ```
 */
export function viewSource(list: unknown): ListSnapshot<unknown> | undefined {
  return typeof list === "object" && list !== null ? sources.get(list) : undefined;
}

function refuse(what: string): never {
  throw new TypeError(`Cannot ${what}: the state given to advise is read-only`);
}

/**
 * A read-only array view of a list snapshot (entries must already be deeply
 * frozen; the list may change afterwards, the view does not).
 *
 * @example
 * ```ts
 * import { listView } from "./list_view.ts";
 * import { SharedList } from "./shared_list.ts";
 * const list = new SharedList<object>();
 * list.push(Object.freeze({ id: 1 }));
 * const view = listView(list.snapshot());
 * list.push(Object.freeze({ id: 2 }));
 * view.length; // 1
 * ```
 */
export function listView<T>(snapshot: ListSnapshot<T>): readonly T[] {
  const target: unknown[] = [];
  shown.set(target, snapshot);
  const view = new Proxy(target, HANDLER) as readonly T[];
  sources.set(view, snapshot);
  return view;
}

/** The snapshot behind each view's proxy target (one handler serves every view). */
const shown = new WeakMap<object, ListSnapshot<unknown>>();

const HANDLER: ProxyHandler<unknown[]> = {
  get(t, prop, receiver) {
    if (prop === "length") return shown.get(t)!.length;
    if (isIndex(prop)) return entryAt(shown.get(t)!, Number(prop));
    return Reflect.get(t, prop, receiver);
  },
  has(t, prop) {
    if (isIndex(prop)) return Number(prop) < shown.get(t)!.length;
    return Reflect.has(t, prop);
  },
  ownKeys(t) {
    const { length } = shown.get(t)!;
    const keys: string[] = [];
    for (let i = 0; i < length; i++) keys.push(String(i));
    keys.push("length");
    return keys;
  },
  getOwnPropertyDescriptor(t, prop) {
    const snapshot = shown.get(t)!;
    if (isIndex(prop)) {
      const i = Number(prop);
      return i < snapshot.length
        ? { value: entryAt(snapshot, i), writable: false, enumerable: true, configurable: true }
        : undefined;
    }
    if (prop === "length") return { value: snapshot.length, writable: true, enumerable: false, configurable: false };
    return Reflect.getOwnPropertyDescriptor(t, prop);
  },
  set: () => refuse("assign to a list"),
  defineProperty: () => refuse("define a property on a list"),
  deleteProperty: () => refuse("delete from a list"),
  setPrototypeOf: () => refuse("change a list's prototype"),
  preventExtensions: () => refuse("freeze a list again"),
};
