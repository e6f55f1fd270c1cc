/**
 * Bounded excerpts of untrusted text for the report: the beginning and the
 * end of a long text, and how much was cut between them, so one huge output
 * never makes the page unreadable or slow.
 *
 * @module
 */

/** A text kept whole, or its beginning and end with `cut` characters left out between them. */
export interface Excerpt {
  /** The beginning (the whole text when nothing was cut). */
  head: string;
  /** The end ("" when nothing was cut). */
  tail: string;
  /** Characters left out between `head` and `tail`. */
  cut: number;
}

/**
 * Cuts a text to at most `max` characters, keeping its first and last halves.
 *
 * @example
 * ```ts
 * import { clip } from "./excerpt.ts";
 * clip("abcdefghij", 4); // { head: "ab", tail: "ij", cut: 6 }
 * clip("abc", 4); // { head: "abc", tail: "", cut: 0 }
 * ```
 */
export function clip(text: string, max: number): Excerpt {
  if (text.length <= max) return { head: text, tail: "", cut: 0 };
  const h = Math.ceil(max / 2), t = Math.floor(max / 2);
  return { head: text.slice(0, h), tail: t > 0 ? text.slice(text.length - t) : "", cut: text.length - h - t };
}

/**
 * A JSON value as readable text (strings as they are, anything else JSON,
 * indented unless `compact`), cut to `max` characters. Serializes at most once.
 *
 * @example
 * ```ts
 * import { clipValue } from "./excerpt.ts";
 * clipValue({ rows: 3 }, 100).head; // '{\n  "rows": 3\n}'
 * ```
 */
export function clipValue(value: unknown, max: number, compact = false): Excerpt {
  if (typeof value === "string") return clip(value, max);
  let text: string;
  try {
    text = JSON.stringify(value, null, compact ? undefined : 2) ?? String(value);
  } catch {
    text = String(value);
  }
  return clip(text, max);
}
