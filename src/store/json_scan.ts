/**
 * A structural pre-scan of JSON (or JSONC) text, without recursion: how deep
 * it nests and which keys repeat in one object. Run before anything
 * recursive (`JSON.parse`, a tree parser, a schema check, canonical JSON)
 * touches the text, so 100,000 nested brackets are a located error instead of
 * a stack overflow, and a duplicate key (which `JSON.parse` silently resolves
 * by keeping the last value, while other readers keep the first) is seen.
 *
 * The scan does not validate syntax; the parser that follows does.
 *
 * @module
 */

/** Deepest nesting accepted in noema's JSON artifacts and settings files. */
export const MAX_JSON_DEPTH = 256;

/** A key repeated in one object. */
export interface DuplicateKey {
  /** Dotted path of the object holding it (empty for the top level). */
  path: string;
  /** The key. */
  key: string;
  /** 1-based line of the repeat. */
  line: number;
}

/** What {@link scanJson} found. */
export interface JsonScan {
  /** Set when the text nests deeper than the limit: where it crossed it. */
  tooDeep: { line: number; depth: number } | null;
  /** Keys repeated within one object (up to 100). */
  duplicates: DuplicateKey[];
}

/** Options of {@link scanJson}. */
export interface ScanJsonOptions {
  /** Skip `//` and `/* *\/` comments (JSONC). @default {false} */
  comments?: boolean;
  /** Deepest nesting accepted. @default {MAX_JSON_DEPTH} */
  maxDepth?: number;
}

interface Frame {
  /** An object (else an array). */
  object: boolean;
  /**
   * Keys seen so far (objects only), as a 31-bit hash of each key and where the key starts in the text: no
   * string per key, and arrays reused at this depth (a `Map` only past {@link SMALL_OBJECT} keys), so a
   * 100 MB artifact leaves no garbage behind.
   */
  hashes: number[];
  starts: number[];
  count: number;
  big: Map<number, number> | null;
  /** Where the key under which this container sits in its parent starts, or -1 (an array element). */
  labelAt: number;
  /** The index under which this container sits in its parent array. */
  labelIndex: number;
  /** Inside an object: the next string is a key. */
  expectKey: boolean;
  /** Inside an array: the index of the current element. */
  index: number;
  /** Where the last key read in this object starts. */
  lastKeyAt: number;
}

/** Keys of an object looked up by a linear search; a larger object gets a `Map`. */
const SMALL_OBJECT = 32;

function newFrame(): Frame {
  return {
    object: false,
    hashes: [],
    starts: [],
    count: 0,
    big: null,
    labelAt: -1,
    labelIndex: 0,
    expectKey: false,
    index: 0,
    lastKeyAt: -1,
  };
}

/** Where the key with hash `h` first starts in this object, or -1; records `at` when it is new. */
function seenKey(f: Frame, h: number, at: number): number {
  if (f.big) {
    const first = f.big.get(h);
    if (first === undefined) f.big.set(h, at);
    return first ?? -1;
  }
  for (let k = 0; k < f.count; k++) if (f.hashes[k] === h) return f.starts[k];
  f.hashes[f.count] = h;
  f.starts[f.count] = at;
  if (++f.count > SMALL_OBJECT) f.big = new Map(f.hashes.slice(0, f.count).map((x, k) => [x, f.starts[k]]));
  return -1;
}

/** The key whose text starts at `at` (a `"`). */
function keyAt(text: string, at: number): string {
  return decodeKey(text.slice(at, stringEnd(text, at)));
}

function pathOf(text: string, stack: Frame[], depth: number): string {
  let out = "";
  for (let i = 2; i <= depth; i++) { // [0] is a sentinel, [1] the top-level value
    const f = stack[i];
    if (f.labelAt < 0) out += `[${f.labelIndex}]`;
    else out += out === "" ? keyAt(text, f.labelAt) : `.${keyAt(text, f.labelAt)}`;
  }
  return out;
}

/** A 31-bit FNV-1a hash of the key in `text[start, end)` (decoded first when it holds an escape). */
function keyHash(text: string, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let j = start + 1; j < end - 1; j++) {
    const c = text.charCodeAt(j);
    if (c === 92) return decodedKeyHash(decodeKey(text.slice(start, end))); // an escape: hash the key itself
    h = Math.imul(h ^ c, 0x01000193);
  }
  return h & 0x7fffffff;
}

function decodedKeyHash(key: string): number {
  let h = 0x811c9dc5;
  for (let j = 0; j < key.length; j++) h = Math.imul(h ^ key.charCodeAt(j), 0x01000193);
  return h & 0x7fffffff;
}

/** Index after the string that starts at `i` (a `"`), or the text length when it does not end. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 92) j++; // backslash: skip the escaped char
    else if (c === 34) return j + 1;
    else if (c === 10) return j; // a raw newline ends a broken string; the parser reports it
  }
  return text.length;
}

function decodeKey(raw: string): string {
  try {
    return JSON.parse(raw) as string;
  } catch {
    return raw.slice(1, -1);
  }
}

/**
 * Scans JSON text for nesting depth and duplicate keys, iteratively.
 *
 * @example
 * ```ts
 * import { scanJson } from "./json_scan.ts";
 * scanJson('{"a": 1, "a": 2}').duplicates; // [{ path: "", key: "a", line: 1 }]
 * scanJson("[".repeat(100_000)).tooDeep; // { line: 1, depth: 257 }
 * ```
 */
export function scanJson(text: string, options: ScanJsonOptions = {}): JsonScan {
  const maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  // Frames are reused by depth, so a large artifact leaves no garbage per container.
  const stack: Frame[] = [newFrame()];
  let depth = 0;
  const duplicates: DuplicateKey[] = [];
  let line = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) line++;
    else if (c === 34) {
      const end = stringEnd(text, i);
      const top = stack[depth];
      if (top.object && top.expectKey) {
        const first = seenKey(top, keyHash(text, i, end), i);
        if (first >= 0 && duplicates.length < 100) {
          const key = keyAt(text, i);
          if (keyAt(text, first) === key) duplicates.push({ path: pathOf(text, stack, depth), key, line });
        }
        top.lastKeyAt = i;
        top.expectKey = false;
      }
      i = end - 1;
    } else if (c === 123 || c === 91) { // { [
      const parent = stack[depth];
      if (++depth > maxDepth) return { tooDeep: { line, depth }, duplicates };
      const f = stack[depth] ??= newFrame();
      f.object = c === 123;
      f.count = 0;
      f.big = null;
      f.labelAt = parent.object ? parent.lastKeyAt : -1;
      f.labelIndex = parent.index;
      f.expectKey = f.object;
      f.index = 0;
      f.lastKeyAt = -1;
    } else if (c === 125 || c === 93) { // } ]
      if (depth > 0) depth--;
    } else if (c === 44) { // ,
      const top = stack[depth];
      if (top.object) top.expectKey = true;
      else top.index++;
    } else if (c === 47 && options.comments) { // / (comment)
      const next = text.charCodeAt(i + 1);
      if (next === 47) {
        const nl = text.indexOf("\n", i);
        i = (nl === -1 ? text.length : nl) - 1;
      } else if (next === 42) {
        const close = text.indexOf("*/", i + 2);
        const stop = close === -1 ? text.length : close + 2;
        for (let j = i; j < stop; j++) if (text.charCodeAt(j) === 10) line++;
        i = stop - 1;
      }
    }
  }
  return { tooDeep: null, duplicates };
}

/**
 * Where JSON text first nests deeper than `maxDepth`, or null: the depth
 * check of {@link scanJson} alone, without tracking keys, for hot paths that
 * read large artifacts (several times faster).
 *
 * @example
 * ```ts
 * import { tooDeep } from "./json_scan.ts";
 * tooDeep("[[[1]]]", 2); // { line: 1, depth: 3 }
 * tooDeep('{"a": "[[["}', 2); // null: brackets in strings do not count
 * ```
 */
export function tooDeep(text: string, maxDepth: number = MAX_JSON_DEPTH): { line: number; depth: number } | null {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) i = stringEnd(text, i) - 1;
    else if (c === 123 || c === 91) {
      if (++depth > maxDepth) return { line: text.slice(0, i).split("\n").length, depth };
    } else if (c === 125 || c === 93) {
      if (depth > 0) depth--;
    }
  }
  return null;
}
