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
  /** Keys seen so far (objects only). */
  keys: Set<string> | null;
  /** The key or index under which this container sits in its parent. */
  label: string;
  /** Inside an object: the next string is a key. */
  expectKey: boolean;
  /** Inside an array: the index of the current element. */
  index: number;
  /** The last key read in this object. */
  lastKey: string;
}

function pathOf(stack: Frame[]): string {
  let out = "";
  for (let i = 2; i < stack.length; i++) { // [0] is a sentinel, [1] the top-level value
    const l = stack[i].label;
    out += l.startsWith("[") ? l : out === "" ? l : `.${l}`;
  }
  return out;
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
  const stack: Frame[] = [{ keys: null, label: "", expectKey: false, index: 0, lastKey: "" }];
  const duplicates: DuplicateKey[] = [];
  let line = 1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) line++;
    else if (c === 34) {
      const end = stringEnd(text, i);
      const top = stack[stack.length - 1];
      if (top.keys && top.expectKey) {
        const key = decodeKey(text.slice(i, end));
        if (top.keys.has(key) && duplicates.length < 100) duplicates.push({ path: pathOf(stack), key, line });
        top.keys.add(key);
        top.lastKey = key;
        top.expectKey = false;
      }
      i = end - 1;
    } else if (c === 123 || c === 91) { // { [
      const parent = stack[stack.length - 1];
      const label = parent.keys ? parent.lastKey : `[${parent.index}]`;
      stack.push({ keys: c === 123 ? new Set() : null, label, expectKey: c === 123, index: 0, lastKey: "" });
      if (stack.length - 1 > maxDepth) return { tooDeep: { line, depth: stack.length - 1 }, duplicates };
    } else if (c === 125 || c === 93) { // } ]
      if (stack.length > 1) stack.pop();
    } else if (c === 44) { // ,
      const top = stack[stack.length - 1];
      if (top.keys) top.expectKey = true;
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
