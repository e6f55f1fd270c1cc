/**
 * Small helpers for looking at parsed JSON values.
 *
 * @module
 */

/**
 * The JSON type of a value as a word for messages: `null`, `array`,
 * `object`, `string`, `number`, `boolean` (or another `typeof`).
 *
 * @example
 * ```ts
 * import { jsonType } from "./json.ts";
 * jsonType([]); // "array"
 * ```
 */
export function jsonType(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "array" : typeof value;
}

/**
 * The value when it is a JSON object, else an empty object.
 *
 * @example
 * ```ts
 * import { asRecord } from "./json.ts";
 * asRecord("x"); // {}
 * ```
 */
export function asRecord(value: unknown): Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value as Record<string, unknown> : {};
}

/**
 * A value read from an artifact as text: a string as is, anything else as JSON. Never throws: `String(v)` throws on
 * a hand-edited `{"toString": 1}` (a TypeError that turned the runs list, the approvals queue, an episode into a 500).
 *
 * @example
 * ```ts
 * import { textOf } from "./json.ts";
 * textOf({ toString: 1 }); // '{"toString":1}'
 * ```
 */
export function textOf(value: unknown): string {
  if (typeof value === "string") return value;
  if (value === null || typeof value !== "object") return String(value);
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return "[unprintable]";
  }
}

/**
 * Parses a text that should hold one JSON object; anything else (invalid
 * JSON, an array, a scalar) gives null.
 *
 * @example
 * ```ts
 * import { parseObject } from "./json.ts";
 * parseObject('{"a":1}'); // { a: 1 }
 * parseObject("[1]"); // null
 * ```
 */
export function parseObject(text: string): Record<string, unknown> | null {
  try {
    const v = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : null;
  } catch {
    return null;
  }
}

/**
 * A table's entry for a key that comes from outside (a tool name, a status, a key of parsed JSON): its own property
 * only, so `toString`, `constructor` or `__proto__` find nothing rather than what every object inherits.
 *
 * @example
 * ```ts
 * import { ownEntry } from "./json.ts";
 * ownEntry({ ok: "✓" }, "ok"); // "✓"
 * ownEntry({ ok: "✓" }, "toString"); // undefined
 * ```
 */
export function ownEntry<T>(table: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}
