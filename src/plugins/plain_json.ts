/**
 * Copying any value a plugin returns into plain JSON data, within depth and
 * size limits, without ever throwing. Everything a policy or an adapter hands
 * back goes through {@link toPlainJson} before the runtime looks at it, so
 * that no cycle, BigInt, getter that throws, proxy or gigabyte string can
 * crash the runtime, overflow the stack of a later pass (masking, hashing) or
 * reach an event.
 *
 * | input                           | copy                                              |
 * |---------------------------------|---------------------------------------------------|
 * | string, finite number, boolean, null | itself                                        |
 * | a string or key holding a lone UTF-16 surrogate (not text) | U+FFFD in place of each lone half (unless `loneSurrogates: "keep"`) |
 * | `NaN`, `Infinity`, `-Infinity`  | `"[NaN]"`, `"[Infinity]"`, `"[-Infinity]"`        |
 * | BigInt                          | its decimal digits, as a string                   |
 * | `undefined`                     | key left out (in an array: `null`; on its own: `null`) |
 * | function, symbol                | `"[function NAME]"`, `"[symbol DESC]"`; symbol keys are left out |
 * | an object met again on its own path | `"[cycle]"` (a shared, non-cyclic object is copied each time) |
 * | nesting deeper than `maxDepth`  | `"[depth limit]"`                                 |
 * | a getter or proxy trap that throws | `"[unreadable: MESSAGE]"`                       |
 * | `toJSON()` (Date…)              | what it returns, copied the same way              |
 * | Map, Set                        | an array of `[key, value]` pairs, an array        |
 * | typed array, ArrayBuffer        | `"[Uint8Array: N bytes]"`                         |
 * | Error                           | `{ name, message }` plus its own fields           |
 * | other class instances           | their own enumerable fields (as `JSON.stringify`) |
 *
 * Size: the copy's JSON text (UTF-8, as `JSON.stringify` writes it) is at
 * most `maxBytes`. The first value that does not fit is cut with a visible
 * marker and nothing after it is kept: a string keeps its head and ends in
 * `…[truncated: N bytes]` (cut back to a space when one is near, so a token
 * straddling the cut is dropped whole, and never inside a surrogate pair); an
 * array gets a last item `"…[truncated: N more items]"`; an object a last key
 * `"…": "[truncated: N more keys]"`.
 *
 * The limits used for plugin values are {@link PLUGIN_LIMITS}.
 *
 * Lone surrogates: noema records only well-formed strings (canonical JSON
 * refuses a lone surrogate, and strict JSON readers its `\ud800` escape).
 * {@link copyPlainJson} says where the first one was (`loneSurrogate`), so a
 * caller that must refuse it (a policy verdict: `InvalidVerdict`) can.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { clipText, textHead } from "../text_head.ts";

/** Plain JSON data. */
export type PlainJson = null | boolean | number | string | PlainJson[] | { [key: string]: PlainJson };

/**
 * The size limits applied to what plugins return (bytes of JSON text, UTF-8).
 *
 * - `adviceBytes`: a verdict's `advice` and `rationale`, each; an error message of a plugin.
 * - `verdictBytes`: a whole policy verdict.
 * - `adapterOutputBytes`: the default for an adapter result's `output` (and, separately, for the rest of the
 *   result); set another one with the adapter setting `output_limit_bytes`.
 * - `depth`: nesting of arrays and objects.
 *
 * @example
 * ```ts
 * import { PLUGIN_LIMITS } from "noema";
 * PLUGIN_LIMITS.verdictBytes; // 65536
 * ```
 */
export const PLUGIN_LIMITS = {
  adviceBytes: 8 * 1024,
  verdictBytes: 64 * 1024,
  adapterOutputBytes: 1024 * 1024,
  depth: 32,
} as const;

/** Options of {@link toPlainJson}. */
export interface PlainJsonOptions {
  /**
   * Most bytes of the copy's JSON text (UTF-8); at least 256.
   * @default {65536}
   */
  maxBytes?: number;
  /**
   * Deepest nesting of arrays and objects; deeper values become `"[depth limit]"`.
   * @default {32}
   */
  maxDepth?: number;
  /**
   * What becomes of a lone UTF-16 surrogate in a string or key: `"replace"` (U+FFFD, as a UTF-8 decoder does
   * with a broken sequence) or `"keep"` (only for a copy that is checked again before use, as a policy
   * worker's result is in the main thread).
   * @default {"replace"}
   */
  loneSurrogates?: "replace" | "keep";
}

/** Room kept for the one cut marker, so the copy never exceeds `maxBytes`. */
const RESERVE = 96;
/** How far back a string cut looks for a space. */
const WORD_BACKOFF = 256;
const OMIT = Symbol("omit");
const NO_FIT = Symbol("no-fit");
type Copied = PlainJson | typeof OMIT | typeof NO_FIT;

/** Bytes one UTF-16 unit at `i` takes in JSON text; a valid surrogate pair counts 4 on its high half, 0 on its low. */
function unitCost(s: string, i: number): number {
  const c = s.charCodeAt(i);
  if (c < 0x20) return c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 2 : 6;
  if (c === 0x22 || c === 0x5c) return 2;
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdbff) {
    const d = s.charCodeAt(i + 1);
    return d >= 0xdc00 && d <= 0xdfff ? 4 : 6;
  }
  if (c >= 0xdc00 && c <= 0xdfff) {
    const h = s.charCodeAt(i - 1);
    return i > 0 && h >= 0xd800 && h <= 0xdbff ? 0 : 6;
  }
  return 3;
}

/** Bytes of `JSON.stringify(s)` in UTF-8. */
function jsonStringBytes(s: string): number {
  let n = 2;
  for (let i = 0; i < s.length; i++) n += unitCost(s, i);
  return n;
}

/**
 * The head of `text` whose JSON string (quotes included) fits in `maxBytes`,
 * plus `…[truncated: N bytes]` when anything was cut (N: UTF-8 bytes left
 * out). The head never ends inside a surrogate pair, and ends at a space when
 * one is within 256 characters of the cut. A lone surrogate becomes U+FFFD:
 * the result is always well-formed text.
 *
 * @example
 * ```ts
 * import { cutString } from "noema";
 * cutString("x".repeat(10_000), 100); // "xxx…x…[truncated: 9934 bytes]"
 * cutString("short", 100); // "short"
 * cutString("bad \ud800", 100); // "bad \ufffd"
 * ```
 */
export function cutString(given: string, maxBytes: number): string {
  const text = given.isWellFormed() ? given : given.toWellFormed();
  // Every UTF-16 unit takes at least one byte: a string this short always fits.
  if (text.length + 2 <= maxBytes && jsonStringBytes(text) <= maxBytes) return text;
  const total = Buffer.byteLength(text);
  let room = Math.max(0, maxBytes - 2 - 40); // the marker, at most 40 bytes as JSON
  let end = 0;
  while (end < text.length) {
    const cost = unitCost(text, end);
    const width = cost === 4 ? 2 : 1;
    if (cost > room) break;
    room -= cost;
    end += width;
  }
  if (end < text.length) {
    const space = text.lastIndexOf(" ", end);
    if (space > 0 && end - space <= WORD_BACKOFF) end = space;
  }
  const head = text.slice(0, end);
  return `${head}…[truncated: ${total - Buffer.byteLength(head)} bytes]`;
}

/** A thrown value's message, for markers; never throws. */
function messageOf(e: unknown): string {
  try {
    if (typeof e === "string") return e;
    const m = (e as { message?: unknown } | null)?.message;
    return typeof m === "string" ? m : e === null ? "null" : typeof e;
  } catch {
    return "unreadable error";
  }
}

function unreadable(e: unknown): string {
  const m = messageOf(e);
  return `[unreadable: ${clipText(m, 120)}]`;
}

/** A path for messages: `patch.command`, `facts[0]."k\ud800"` (a key that is not a plain name is quoted). */
function formatPath(path: readonly (string | number)[]): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else {
      const name = /^[A-Za-z_$][\w$-]*$/.test(p) ? p : JSON.stringify(p);
      out += out === "" ? name : `.${name}`;
    }
  }
  return out;
}

class Copier {
  remaining: number;
  stopped = false;
  readonly maxDepth: number;
  readonly keepLone: boolean;
  readonly ancestors = new Set<object>();
  /** Keys and indexes from the top to the value being copied (for {@link loneSurrogate}). */
  readonly path: (string | number)[] = [];
  /** Where the first string or key holding a lone surrogate was, or null. */
  loneSurrogate: string | null = null;

  constructor(maxBytes: number, maxDepth: number, keepLone: boolean) {
    this.remaining = maxBytes - RESERVE;
    this.maxDepth = maxDepth;
    this.keepLone = keepLone;
  }

  /** The string itself when well-formed; else noted (its path) and, unless kept, with U+FFFD for each lone half. */
  text(s: string, key?: string): string {
    if (s.isWellFormed()) return s;
    if (this.loneSurrogate === null) {
      this.loneSurrogate = formatPath(key === undefined ? this.path : [...this.path, key]) || "(value)";
    }
    return this.keepLone ? s : s.toWellFormed();
  }

  /** A scalar JSON value if it fits, else NO_FIT (strings are cut instead). */
  scalar(v: PlainJson): Copied {
    if (typeof v === "string") {
      const bytes = v.length + 2 <= this.remaining ? jsonStringBytes(v) : Infinity;
      if (bytes <= this.remaining) {
        this.remaining -= bytes;
        return v;
      }
      this.stopped = true;
      return cutString(v, this.remaining + RESERVE);
    }
    const bytes = v === null ? 4 : String(v).length;
    if (bytes > this.remaining) return NO_FIT;
    this.remaining -= bytes;
    return v;
  }

  value(v: unknown, depth: number, inArray: boolean, viaToJson = false): Copied {
    if (this.stopped) return OMIT;
    try {
      switch (typeof v) {
        case "string":
          return this.scalar(this.text(v));
        case "boolean":
          return this.scalar(v);
        case "number":
          return this.scalar(Number.isFinite(v) ? (Object.is(v, -0) ? 0 : v) : `[${v}]`);
        case "bigint":
          return this.scalar(v.toString());
        case "undefined":
          return inArray ? this.scalar(null) : OMIT;
        case "function": {
          const name = functionName(v);
          return this.scalar(name ? `[function ${name}]` : "[function]");
        }
        case "symbol":
          return this.scalar(v.description ? `[symbol ${textHead(v.description, 80)}]` : "[symbol]");
        default:
          return v === null ? this.scalar(null) : this.object(v as object, depth, inArray, viaToJson);
      }
    } catch (e) {
      return this.scalar(unreadable(e));
    }
  }

  object(o: object, depth: number, inArray: boolean, viaToJson: boolean): Copied {
    if (this.ancestors.has(o)) return this.scalar("[cycle]");
    if (depth >= this.maxDepth) return this.scalar("[depth limit]");
    if (!viaToJson) {
      const toJSON = (o as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") {
        this.ancestors.add(o);
        try {
          return this.value(toJSON.call(o), depth, inArray, true);
        } finally {
          this.ancestors.delete(o);
        }
      }
    }
    if (ArrayBuffer.isView(o)) return this.scalar(`[${o.constructor?.name ?? "TypedArray"}: ${o.byteLength} bytes]`);
    if (o instanceof ArrayBuffer) return this.scalar(`[ArrayBuffer: ${o.byteLength} bytes]`);
    this.ancestors.add(o);
    try {
      if (Array.isArray(o)) return this.array(o.length, (i) => o[i], depth);
      if (o instanceof Map) {
        const entries = [...o.entries()];
        return this.array(entries.length, (i) => entries[i], depth);
      }
      if (o instanceof Set) {
        const items = [...o.values()];
        return this.array(items.length, (i) => items[i], depth);
      }
      const keys = Object.keys(o);
      if (o instanceof Error) {
        for (const k of ["message", "name"]) if (!keys.includes(k)) keys.unshift(k);
      }
      return this.record(o as Record<string, unknown>, keys, depth);
    } finally {
      this.ancestors.delete(o);
    }
  }

  array(length: number, at: (i: number) => unknown, depth: number): Copied {
    if (this.remaining < 2) return NO_FIT;
    this.remaining -= 2;
    const out: PlainJson[] = [];
    const n = Number.isSafeInteger(length) && length > 0 ? length : 0;
    for (let i = 0; i < n; i++) {
      const comma = i > 0 ? 1 : 0;
      let item: Copied = NO_FIT;
      if (this.remaining >= comma + 1) {
        this.remaining -= comma;
        let raw: unknown;
        try {
          raw = at(i);
        } catch (e) {
          raw = unreadable(e);
        }
        this.path.push(i);
        item = this.value(raw, depth + 1, true);
        this.path.pop();
        if (item === NO_FIT || item === OMIT) this.remaining += comma;
      }
      if (item === NO_FIT) {
        out.push(`…[truncated: ${n - i} more items]`);
        this.stopped = true;
      } else if (item !== OMIT) out.push(item);
      if (this.stopped) break;
    }
    return out;
  }

  record(o: Record<string, unknown>, keys: string[], depth: number): Copied {
    if (this.remaining < 2) return NO_FIT;
    this.remaining -= 2;
    const out: Record<string, PlainJson> = {};
    let count = 0;
    for (let i = 0; i < keys.length; i++) {
      const key = this.text(keys[i], keys[i]);
      const keyBytes = jsonStringBytes(key) + 1 + (count > 0 ? 1 : 0);
      let item: Copied = NO_FIT;
      if (keyBytes < this.remaining) {
        this.remaining -= keyBytes;
        let raw: unknown;
        try {
          raw = o[keys[i]];
        } catch (e) {
          raw = unreadable(e);
        }
        this.path.push(key);
        item = this.value(raw, depth + 1, false);
        this.path.pop();
        if (item === NO_FIT || item === OMIT) this.remaining += keyBytes;
      }
      if (item === NO_FIT) {
        setKey(out, "…", `[truncated: ${keys.length - i} more keys]`);
        this.stopped = true;
      } else if (item !== OMIT) {
        setKey(out, key, item);
        count++;
      }
      if (this.stopped) break;
    }
    return out;
  }
}

/** Sets a key as an own data property (a key `__proto__` stays a key). */
function setKey(out: Record<string, PlainJson>, key: string, value: PlainJson): void {
  if (key !== "__proto__") out[key] = value;
  else Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
}

function functionName(f: unknown): string {
  try {
    const n = (f as { name?: unknown }).name;
    return typeof n === "string" ? textHead(n, 80) : "";
  } catch {
    return "";
  }
}

/**
 * Copies any value into plain JSON data (see the module doc for what each
 * kind of value becomes). Never throws; the copy shares nothing with the
 * input, and its JSON text is at most `maxBytes` bytes.
 *
 * @example
 * ```ts
 * import { toPlainJson } from "noema";
 * const v: Record<string, unknown> = { n: 1n, f() {}, big: "x".repeat(1e6) };
 * v.self = v;
 * toPlainJson(v, { maxBytes: 1024 });
 * // { n: "1", f: "[function f]", big: "xxx…[truncated: 999 046 bytes]" }  (self is cut off after big)
 * ```
 */
export function toPlainJson(value: unknown, options: PlainJsonOptions = {}): PlainJson {
  return copyPlainJson(value, options).value;
}

/**
 * The problem to report for a plugin value that held a lone surrogate at `path` (from {@link copyPlainJson}), or
 * null when it held none.
 *
 * @example
 * ```ts
 * import { loneSurrogateProblem } from "./plain_json.ts";
 * loneSurrogateProblem("patch.command"); // "patch.command: a string holds a lone UTF-16 surrogate, which is not text"
 * ```
 */
export function loneSurrogateProblem(path: string | null): string | null {
  return path === null ? null : `${path}: a string holds a lone UTF-16 surrogate, which is not text`;
}

/**
 * Where the first string or key of a JSON value holds a lone UTF-16 surrogate (`command`, `edits[0].text`, `(value)`
 * for the value itself), or null when every one is well-formed (and for a value with no JSON form). `text` is the
 * value's `JSON.stringify` when the caller has it: a value whose text holds no surrogate escape is cleared by that
 * test alone.
 *
 * @example
 * ```ts
 * import { loneSurrogatePath } from "./plain_json.ts";
 * loneSurrogatePath({ command: "echo \ud800" }); // "command"
 * loneSurrogatePath({ command: "echo 😀" }); // null
 * ```
 */
export function loneSurrogatePath(value: unknown, text?: string): string | null {
  try {
    text ??= JSON.stringify(value) ?? "";
  } catch {
    return null; // no JSON form: reported as such where it is recorded
  }
  // JSON.stringify writes a lone surrogate as an escape (`\ud800`) and a well-formed pair as itself.
  if (!/\\ud[89a-f]/.test(text)) return null;
  return copyPlainJson(value, { maxBytes: Number.MAX_SAFE_INTEGER, maxDepth: Infinity, loneSurrogates: "keep" })
    .loneSurrogate;
}

/** What {@link copyPlainJson} returns. */
export interface PlainJsonCopy {
  /** The copy. */
  value: PlainJson;
  /** Whether anything was cut for size. */
  truncated: boolean;
  /**
   * The path (`patch.command`, `facts[0].key`, `(value)` for the value itself) of the first string or key
   * that held a lone UTF-16 surrogate, or null when every string was well-formed.
   */
  loneSurrogate: string | null;
}

/**
 * {@link toPlainJson}, also saying whether anything was cut for size and
 * where the first lone surrogate was.
 *
 * @example
 * ```ts
 * import { copyPlainJson } from "noema";
 * copyPlainJson(["a".repeat(1000)], { maxBytes: 256 }).truncated; // true
 * copyPlainJson({ patch: { command: "x\ud800" } }).loneSurrogate; // "patch.command"
 * ```
 */
export function copyPlainJson(value: unknown, options: PlainJsonOptions = {}): PlainJsonCopy {
  const maxBytes = Math.max(256, Math.floor(options.maxBytes ?? 65536));
  const maxDepth = Math.max(1, Math.floor(options.maxDepth ?? PLUGIN_LIMITS.depth));
  try {
    const copier = new Copier(maxBytes, maxDepth, options.loneSurrogates === "keep");
    const out = copier.value(value, 0, true);
    const { loneSurrogate } = copier;
    if (out === OMIT) return { value: null, truncated: false, loneSurrogate };
    if (out === NO_FIT) return { value: "…[truncated]", truncated: true, loneSurrogate };
    return { value: out, truncated: copier.stopped, loneSurrogate };
  } catch (e) {
    return { value: unreadable(e), truncated: false, loneSurrogate: null };
  }
}
