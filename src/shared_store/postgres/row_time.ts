/**
 * A `timestamptz` read from the database, as the text noema keeps: ISO 8601 in
 * UTC. PostgreSQL holds times JavaScript cannot (`infinity`, `-infinity`, a
 * year past 275760): the client gives them as an Invalid Date, whose
 * `toISOString()` throws. Any role that may write a catalog row can store one,
 * so such a value makes its row unreadable, never the whole read.
 *
 * @module
 */

/** What an unreadable row's error says of such a time. */
export const UNREADABLE_TIME = "not a time noema can read (infinity, or a year outside ±275760)";

/**
 * A time as the client gave it (a Date, or text from jsonb) as ISO 8601 in UTC, null for NULL, `undefined` for a
 * time JavaScript cannot hold. Text that is not a time is kept as it is (the row's checks judge it).
 *
 * @example
 * ```ts
 * import { isoTime } from "./row_time.ts";
 * isoTime(new Date(0)); // "1970-01-01T00:00:00.000Z"
 * isoTime(new Date("infinity")); // undefined
 * isoTime("2026-11-05T10:00:00+00:00"); // "2026-11-05T10:00:00.000Z"
 * ```
 */
export function isoTime(v: unknown): string | null | undefined {
  if (v == null) return null;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.toISOString();
  const text = String(v);
  if (/^-?infinity$/i.test(text.trim())) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? text : new Date(t).toISOString();
}

/**
 * The first of a row's time fields that cannot be read, or null: `fields` as read, by name.
 *
 * @example
 * ```ts
 * import { unreadableTime } from "./row_time.ts";
 * unreadableTime({ started_at: new Date("infinity"), ended_at: null }); // "started_at"
 * ```
 */
export function unreadableTime(fields: Record<string, unknown>): string | null {
  for (const [name, v] of Object.entries(fields)) if (isoTime(v) === undefined) return name;
  return null;
}
