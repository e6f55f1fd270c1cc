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
