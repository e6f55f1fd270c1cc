/**
 * Locating things in the text of a JSON artifact: the line of a field path
 * (for schema problems) and duplicate keys (which `JSON.parse` silently
 * resolves by keeping the last value, while other readers may keep the first).
 *
 * Used by `validate` on the JSON artifacts (`state.json`, `summary.json`,
 * `manifest.json`). Both are single iterative passes over the text that keep
 * no tree (a `state.json` of 100 MB costs no more than its text), and lines
 * are looked up in one pass for all the paths asked. JSONL lines are not
 * scanned for duplicate keys (see docs/security.md).
 *
 * @module
 */
import { type DuplicateKey, scanJson } from "../store/json_scan.ts";

/** A JSON text that can answer "which lines?". */
export interface JsonLocator {
  /**
   * The line of each dotted path like `plan.steps[0].kind` (of the deepest
   * existing node on it; a property's line is its key's), or undefined.
   */
  linesOf(paths: readonly string[]): Map<string, number | undefined>;
  /** Every key that appears twice in one object: its object's path, the key, the line of the repeat. */
  duplicates(): DuplicateKey[];
}

/** `a.b[0].c` → `["a", "a.b", "a.b[0]", "a.b[0].c"]`, and the empty path (the root). */
function prefixes(path: string): string[] {
  const out = [""];
  for (const m of path.matchAll(/\.?([^.[\]]+)|\[(\d+)\]/g)) {
    const prev = out[out.length - 1];
    out.push(m[2] !== undefined ? `${prev}[${m[2]}]` : prev === "" ? m[1] : `${prev}.${m[1]}`);
  }
  return out;
}

interface Frame {
  /** The container's own path. */
  path: string;
  /** An object (keys) or an array (indexes). */
  object: boolean;
  /** Object: the next string is a key. Array: the next value starts an element. */
  expect: boolean;
  index: number;
  /** Object: the path of the last key read. */
  child: string;
}

/** Index after the string that starts at `i` (a `"`). */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === 92) j++;
    else if (c === 34) return j + 1;
    else if (c === 10) return j;
  }
  return text.length;
}

function keyOf(raw: string): string {
  try {
    return JSON.parse(raw) as string;
  } catch {
    return raw.slice(1, -1);
  }
}

/** One pass over `text`: the first line of each wanted path. */
function findLines(text: string, wanted: Set<string>): Map<string, number> {
  const found = new Map<string, number>();
  const stack: Frame[] = [];
  const seen = (path: string, line: number) => {
    if (wanted.has(path) && !found.has(path)) found.set(path, line);
  };
  let line = 1;
  let pendingPath = ""; // the path of the value that starts next
  seen("", 1);
  for (let i = 0; i < text.length && found.size < wanted.size; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      line++;
      continue;
    }
    if (c === 32 || c === 9 || c === 13 || c === 58) continue; // whitespace, ':'
    const top = stack[stack.length - 1];
    if (c === 44) { // ,
      if (top) top.expect = true;
      if (top && !top.object) top.index++;
      continue;
    }
    if (c === 125 || c === 93) { // } ]
      stack.pop();
      continue;
    }
    if (top && !top.object && top.expect) {
      top.expect = false;
      pendingPath = `${top.path}[${top.index}]`;
      seen(pendingPath, line);
    }
    if (c === 34) {
      const end = stringEnd(text, i);
      if (top && top.object && top.expect) {
        const key = keyOf(text.slice(i, end));
        top.child = top.path === "" ? key : `${top.path}.${key}`;
        top.expect = false;
        pendingPath = top.child;
        seen(pendingPath, line);
      }
      i = end - 1;
    } else if (c === 123 || c === 91) { // { [
      stack.push({ path: pendingPath, object: c === 123, expect: true, index: 0, child: "" });
    }
  }
  return found;
}

/**
 * A locator over JSON text (already checked for depth by the reader).
 *
 * @example
 * ```ts
 * import { jsonLocator } from "./json_locate.ts";
 * const loc = jsonLocator('{\n  "a": 1,\n  "a": 2\n}');
 * loc.duplicates(); // [{ path: "", key: "a", line: 3 }]
 * loc.linesOf(["a"]).get("a"); // 2 (the first one)
 * ```
 */
export function jsonLocator(text: string): JsonLocator {
  return {
    linesOf(paths) {
      const wanted = new Set(paths.flatMap(prefixes));
      const found = findLines(text, wanted);
      return new Map(paths.map((path) => {
        const deepest = prefixes(path).reverse().find((p) => found.has(p));
        return [path, deepest === undefined ? undefined : found.get(deepest)];
      }));
    },
    duplicates: () => scanJson(text).duplicates,
  };
}
