/**
 * Guarding noema's built-ins against a policy that runs in noema's own
 * thread (`NOEMA_POLICY_ISOLATION=thread`, or a policy object passed through
 * the library): one that adds to or replaces a member of a built-in
 * (`Object.prototype.x = …`, `Array.prototype.push = …`) would change how
 * noema itself decides and writes (a lost veto, a run left unsealed). After
 * each such call, the built-ins noema relies on are compared with what they
 * were when noema started; a change is put back and fails the call closed,
 * recorded as `PrototypePollution` naming what changed. (A policy file runs
 * in a worker by default: its changes stay in the worker.)
 *
 * @module
 */

// Taken before any policy runs: the guard itself must not call what a policy may have replaced.
const ownKeys = Reflect.ownKeys;
const describe = Object.getOwnPropertyDescriptor;
const define = Object.defineProperty;
const remove = Reflect.deleteProperty;

/** The built-ins checked (what noema's deciding and writing code calls): prototypes and static members. */
const TARGETS: ReadonlyArray<readonly [string, object]> = [
  ["Object.prototype", Object.prototype],
  ["Array.prototype", Array.prototype],
  ["Function.prototype", Function.prototype],
  ["String.prototype", String.prototype],
  ["Promise.prototype", Promise.prototype],
  ["Object", Object],
  ["Array", Array],
  ["JSON", JSON],
  // Masking (src/runtime/redact.ts) runs on regular expressions: a policy that replaces
  // RegExp.prototype[Symbol.replace] or .test would turn token masking off for the rest of the run.
  ["RegExp.prototype", RegExp.prototype],
  ["Map.prototype", Map.prototype],
  ["Set.prototype", Set.prototype],
];

interface Saved {
  name: string;
  target: Record<PropertyKey, unknown>;
  keys: PropertyKey[];
  descriptors: PropertyDescriptor[];
  /** For a data member, its value (checked by a plain read); accessors are checked by their descriptor. */
  values: unknown[];
  data: boolean[];
}

const saved: Saved[] = TARGETS.map(([name, target]) => {
  const keys = ownKeys(target);
  const descriptors = keys.map((k) => describe(target, k)!);
  return {
    name,
    target: target as Record<PropertyKey, unknown>,
    keys,
    descriptors,
    values: descriptors.map((d) => d.value),
    data: descriptors.map((d) => "value" in d),
  };
});

const same = (a: PropertyDescriptor | undefined, b: PropertyDescriptor) =>
  a !== undefined && a.value === b.value && a.get === b.get && a.set === b.set && a.writable === b.writable &&
  a.enumerable === b.enumerable && a.configurable === b.configurable;

const label = (name: string, key: PropertyKey) => `${name}.${typeof key === "symbol" ? String(key) : key}`;

/** Whether `s`'s target has its members as saved (a fast pass: key count, data values, accessors). */
function intact(s: Saved): boolean {
  if (ownKeys(s.target).length !== s.keys.length) return false;
  for (let i = 0; i < s.keys.length; i++) {
    if (s.data[i] ? s.target[s.keys[i]] !== s.values[i] : !same(describe(s.target, s.keys[i]), s.descriptors[i])) {
      return false;
    }
  }
  return true;
}

/** Puts `s`'s target back as saved; returns what changed. */
function restore(s: Saved, changed: string[]): void {
  const now = ownKeys(s.target);
  for (let j = 0; j < now.length; j++) {
    let known = false;
    for (let i = 0; i < s.keys.length && !known; i++) known = s.keys[i] === now[j];
    if (known) continue;
    changed[changed.length] = label(s.name, now[j]);
    remove(s.target, now[j]);
  }
  for (let i = 0; i < s.keys.length; i++) {
    if (same(describe(s.target, s.keys[i]), s.descriptors[i])) continue;
    changed[changed.length] = label(s.name, s.keys[i]);
    try {
      define(s.target, s.keys[i], s.descriptors[i]);
    } catch {
      // frozen or made non-configurable: named all the same
    }
  }
}

/**
 * Puts back every built-in member that was added, replaced or removed since
 * noema started, and names them (none: an empty list). What cannot be put
 * back (a frozen or non-configurable change) is named too.
 *
 * @example
 * ```ts
 * import { restorePrototypes } from "./prototype_guard.ts";
 * restorePrototypes(); // []: nothing changed
 * ```
 */
export function restorePrototypes(): string[] {
  const changed: string[] = [];
  for (let i = 0; i < saved.length; i++) if (!intact(saved[i])) restore(saved[i], changed);
  return changed;
}
