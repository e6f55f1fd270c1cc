/**
 * Read-only, frozen views of growing lists, for the state snapshot policies
 * get.
 *
 * A real frozen array would have to be copied and frozen again each time the
 * list changes; freezing a 10,000-entry array costs milliseconds under Bun
 * (JSC moves its entries to slow dictionary storage, and even
 * `Object.isFrozen` on it then walks them all) and about 10 µs under Deno. A
 * view instead shows a snapshot of a {@link SharedList} (which never changes
 * once taken): it is an `Array` (`Array.isArray` is true; `map`, `some`,
 * `for…of`, `JSON.stringify` work, reading the snapshot), its entries are
 * deeply frozen, every change (assigning, `push`, `delete`, defining a
 * property) throws a `TypeError`, as on a frozen array, and it is frozen:
 * `Object.isFrozen` is true. What makes it frozen is paid only when asked:
 * the first reflective operation (`Object.isFrozen`, `isExtensible`,
 * `Object.keys`, `getOwnPropertyDescriptor`, `Object.freeze`…) copies the
 * entries into the proxy's target and freezes it (the proxy invariants then
 * hold against a frozen target), so a policy that only reads the list never
 * pays for a frozen copy; one that checks `Object.isFrozen` pays once per
 * view, as checking a real frozen array costs under Bun anyway.
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
  const view = new Proxy([], new ViewHandler(snapshot)) as readonly T[];
  sources.set(view, snapshot);
  return view;
}

/**
 * The traps a view drops once its target holds the entries, frozen: the
 * proxy then forwards these operations to the target natively (a JS trap per
 * entry would make `Object.isFrozen` cost a trap call per entry). Changes
 * keep their traps, for the message.
 */
const FORWARDED = ["get", "has", "ownKeys", "getOwnPropertyDescriptor", "isExtensible", "preventExtensions"] as const;

/**
 * The handler of one view (a proxy calls its traps with the handler as
 * `this`): reads come from the snapshot; the first reflective operation
 * fills the target with the snapshot's entries and freezes it (see the
 * module doc), so that what the view reports (non-extensible,
 * non-configurable, non-writable entries) holds against its target, as the
 * proxy invariants require; the view then drops its forwarding traps.
 */
class ViewHandler implements ProxyHandler<unknown[]> {
  constructor(readonly snapshot: ListSnapshot<unknown>) {}

  #frozen(t: unknown[]): readonly unknown[] {
    if (!Object.isExtensible(t)) return t;
    const snapshot = this.snapshot;
    t.length = snapshot.length;
    for (let i = 0; i < snapshot.length; i++) t[i] = entryAt(snapshot, i);
    Object.freeze(t);
    // Own properties set to undefined shadow the traps: the proxy forwards to the frozen target natively.
    for (const trap of FORWARDED) (this as ProxyHandler<unknown[]>)[trap] = undefined;
    return t;
  }

  get(t: unknown[], prop: string | symbol, receiver: unknown): unknown {
    if (prop === "length") return this.snapshot.length;
    if (isIndex(prop)) return entryAt(this.snapshot, Number(prop));
    return Reflect.get(t, prop, receiver);
  }

  has(t: unknown[], prop: string | symbol): boolean {
    if (isIndex(prop)) return Number(prop) < this.snapshot.length;
    return Reflect.has(t, prop);
  }

  ownKeys(t: unknown[]): (string | symbol)[] {
    return Reflect.ownKeys(this.#frozen(t));
  }

  getOwnPropertyDescriptor(t: unknown[], prop: string | symbol): PropertyDescriptor | undefined {
    return Reflect.getOwnPropertyDescriptor(this.#frozen(t), prop);
  }

  isExtensible(t: unknown[]): boolean {
    return Reflect.isExtensible(this.#frozen(t));
  }

  /** Freezing a frozen list is allowed and changes nothing. */
  preventExtensions(t: unknown[]): boolean {
    return Reflect.preventExtensions(this.#frozen(t));
  }

  /** Allowed only when it changes nothing (as on a frozen array); any real change is refused. */
  defineProperty(t: unknown[], prop: string | symbol, descriptor: PropertyDescriptor): boolean {
    if (Reflect.defineProperty(this.#frozen(t), prop, descriptor)) return true;
    return refuse("define a property on a list");
  }

  set(): boolean {
    return refuse("assign to a list");
  }

  deleteProperty(): boolean {
    return refuse("delete from a list");
  }

  setPrototypeOf(): boolean {
    return refuse("change a list's prototype");
  }
}
