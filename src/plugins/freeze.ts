/**
 * Deep freezing, so policies get a state they cannot change.
 *
 * @module
 */

/**
 * A type whose every nested property is `readonly`.
 *
 * @example
 * ```ts
 * import type { DeepReadonly } from "noema";
 * type S = DeepReadonly<{ a: { b: number[] } }>;
 * // s.a.b.push(1) is a type error
 * ```
 */
export type DeepReadonly<T> = T extends (...args: never[]) => unknown ? T
  : T extends readonly (infer U)[] ? readonly DeepReadonly<U>[]
  : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> }
  : T;

/**
 * Freezes a value and everything reachable from it, in place, and returns it.
 * Already frozen objects are not walked again, so freezing a new object that
 * shares frozen parts costs only the new parts.
 *
 * @example
 * ```ts
 * import { deepFreeze } from "noema";
 * const s = deepFreeze({ a: { b: [1] } });
 * Object.isFrozen(s.a.b); // true
 * ```
 */
export function deepFreeze<T>(value: T): DeepReadonly<T> {
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return value as DeepReadonly<T>;
  Object.freeze(value);
  for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  return value as DeepReadonly<T>;
}
