/**
 * RFC 8785 (JSON Canonicalization Scheme) text of a JSON value: object keys
 * sorted by UTF-16 code units, no whitespace, strings and numbers written as
 * ECMAScript's `JSON.stringify` writes them.
 *
 * Hand-written rather than the `canonicalize` package: noema hashes a small
 * decision state at every governed call, and in that loop the package's
 * general walker (a `Set` of seen objects, a frame per container) cost about
 * 20 µs per call under Bun, this one a few. `tests/canonical_json.test.ts`
 * checks it against the package on random values.
 *
 * What has no JSON form is left out as `JSON.stringify` leaves it out
 * (`undefined`, functions and symbols as object members; `null` in arrays);
 * `toJSON` is honoured. Refused with a `TypeError`: `NaN` and infinite
 * numbers, `BigInt`, strings with a lone surrogate (not I-JSON), and values
 * nested deeper than {@link MAX_DEPTH} (which is how a cycle ends).
 *
 * @module
 */

/** Deepest nesting accepted; a cycle is reported when it is reached. */
export const MAX_DEPTH = 1000;

/** A character that keeps a string from being written as `"` + itself + `"`. */
// deno-lint-ignore no-control-regex -- control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * A string as canonical JSON text. Throws a `TypeError` for a lone surrogate.
 *
 * @example
 * ```ts
 * import { canonicalString } from "./canonical_json.ts";
 * canonicalString('say "hi"'); // '"say \\"hi\\""'
 * ```
 */
export function canonicalString(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return `"${s}"`;
  if (!s.isWellFormed()) throw new TypeError("canonical JSON: a string holds a lone surrogate");
  return JSON.stringify(s);
}

/**
 * A number as canonical JSON text. Throws a `TypeError` for `NaN` and infinities.
 *
 * @example
 * ```ts
 * import { canonicalNumber } from "./canonical_json.ts";
 * canonicalNumber(1e21); // "1e+21"
 * ```
 */
export function canonicalNumber(n: number): string {
  if (!Number.isFinite(n)) throw new TypeError(`canonical JSON: ${n} is not a JSON number`);
  return JSON.stringify(n);
}

function write(value: unknown, depth: number): string | undefined {
  let v = value;
  if (typeof v === "object" && v !== null && typeof (v as { toJSON?: unknown }).toJSON === "function") {
    v = (v as { toJSON(): unknown }).toJSON();
  }
  switch (typeof v) {
    case "string":
      return canonicalString(v);
    case "number":
      return canonicalNumber(v);
    case "boolean":
      return v ? "true" : "false";
    case "bigint":
      throw new TypeError("canonical JSON: a BigInt has no JSON form");
    case "object":
      break;
    default:
      return undefined; // undefined, function, symbol
  }
  if (v === null) return "null";
  if (v instanceof Number || v instanceof String || v instanceof Boolean) return write(v.valueOf(), depth);
  if (depth >= MAX_DEPTH) throw new TypeError(`canonical JSON: nested deeper than ${MAX_DEPTH} (or circular)`);
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) out += (i === 0 ? "" : ",") + (write(v[i], depth + 1) ?? "null");
    return out + "]";
  }
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj);
  if (keys.length > 1) keys.sort();
  let out = "{";
  let first = true;
  for (const k of keys) {
    const text = write(obj[k], depth + 1);
    if (text === undefined) continue;
    out += (first ? "" : ",") + canonicalString(k) + ":" + text;
    first = false;
  }
  return out + "}";
}

/**
 * RFC 8785 canonical JSON text of a value (sorted keys, no whitespace).
 * Throws a `TypeError` for a value with no JSON form.
 *
 * @example
 * ```ts
 * import { canonicalJson } from "./canonical_json.ts";
 * canonicalJson({ b: 1, a: [true, undefined] }); // '{"a":[true,null],"b":1}'
 * ```
 */
export function canonicalJson(value: unknown): string {
  const text = write(value, 0);
  if (text === undefined) throw new TypeError("canonical JSON: the value has no JSON form");
  return text;
}
