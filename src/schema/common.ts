/**
 * Building blocks shared by every artifact schema.
 *
 * All object schemas are *loose*: unknown fields are accepted and kept in the
 * parsed output, so a reader never drops data written by a newer writer.
 *
 * @module
 */
import * as v from "valibot";

const MONTHS = [
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
] as const;

/**
 * Why the date of an ISO 8601 timestamp (`YYYY-MM-DD…`) is not on the
 * calendar (Feb 30, Apr 31, Feb 29 of a common year), or null when it is
 * (or when the text does not start with such a date: the format rule says so).
 *
 * @example
 * ```ts
 * import { calendarProblem } from "./common.ts";
 * calendarProblem("2025-02-29T00:00:00Z"); // "2025-02-29 is not a calendar date (February 2025 has 28 days)"
 * calendarProblem("2024-02-29T00:00:00Z"); // null
 * ```
 */
export function calendarProblem(text: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})/.exec(text);
  if (!m) return null;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1) return null;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
  if (day <= days) return null;
  return `${m[0]} is not a calendar date (${MONTHS[month - 1]} ${m[1]} has ${days} days)`;
}

/**
 * An RFC 3339 / ISO 8601 timestamp with a time zone (`Z` or `±hh:mm`),
 * seconds and an optional fraction of up to 9 digits, on a real calendar
 * date (JSON Schema's `format: "date-time"` says so too; the pattern alone
 * cannot: it lets through `2026-02-30`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Timestamp } from "./common.ts";
 * v.parse(Timestamp, "2026-11-23T09:51:54.123Z");
 * v.is(Timestamp, "2026-04-31T00:00:00Z"); // false
 * ```
 */
export const Timestamp = v.pipe(
  v.string(),
  v.isoTimestamp("must be an ISO 8601 date-time with a time zone"),
  v.check(
    (text) => calendarProblem(text) === null,
    (issue) => `must be a real date: ${calendarProblem(String(issue.input))}`,
  ),
  v.metadata({ format: "date-time" }),
);

/**
 * A `sha256:<64 lowercase hex>` digest, as used in manifests, snapshots and
 * `state_hash`.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Sha256Digest } from "./common.ts";
 * v.parse(Sha256Digest, "sha256:" + "0".repeat(64));
 * ```
 */
export const Sha256Digest = v.pipe(
  v.string(),
  v.regex(/^sha256:[0-9a-f]{64}$/, 'must be "sha256:" followed by 64 lowercase hex digits'),
);

/**
 * An integer that is zero or more.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Count } from "./common.ts";
 * v.parse(Count, 3);
 * ```
 */
export const Count = v.pipe(v.number(), v.integer("must be an integer"), v.minValue(0, "must be >= 0"));

/**
 * A number of milliseconds or seconds (zero or more, fractions allowed).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Duration } from "./common.ts";
 * v.parse(Duration, 12.5);
 * ```
 */
export const Duration = v.pipe(v.number(), v.minValue(0, "must be >= 0"));

/**
 * A number between 0 and 1 inclusive.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { Unit } from "./common.ts";
 * v.parse(Unit, 0.5);
 * ```
 */
export const Unit = v.pipe(v.number(), v.minValue(0, "must be >= 0"), v.maxValue(1, "must be <= 1"));

/**
 * Any JSON object (string keys, any values). Not an array: valibot's `record`
 * accepts arrays, JSON Schema's `"type": "object"` does not.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { JsonObject } from "./common.ts";
 * v.parse(JsonObject, { a: 1 });
 * ```
 */
export const JsonObject = v.pipe(
  v.custom<unknown>((value) => !Array.isArray(value), "must be a JSON object, not an array"),
  v.record(v.string(), v.unknown()),
);

/** A JSON object as a TypeScript type. */
export type JsonObject = v.InferOutput<typeof JsonObject>;

/**
 * Any JSON value.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { JsonValue } from "./common.ts";
 * v.parse(JsonValue, [1, "a", null]);
 * ```
 */
export const JsonValue = v.pipe(v.unknown(), v.metadata({}));

const NotArray = v.custom<unknown>((value) => !Array.isArray(value), "must be a JSON object, not an array");

/**
 * `v.looseObject` that also refuses arrays (valibot's object schemas accept
 * an array and read its indices as keys). Unknown keys are kept. The result
 * is still a `loose_object` schema, so its `entries` and JSON Schema
 * conversion work as usual.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { looseObject } from "./common.ts";
 * v.safeParse(looseObject({ a: v.optional(v.string()) }), []).success; // false
 * ```
 */
export function looseObject<const E extends v.ObjectEntries>(
  entries: E,
): ReturnType<typeof v.looseObject<E, undefined>> {
  const base = v.looseObject(entries);
  return {
    ...base,
    "~run"(dataset, config) {
      if (Array.isArray(dataset.value)) return NotArray["~run"](dataset, config) as never;
      return base["~run"](dataset, config);
    },
  };
}
