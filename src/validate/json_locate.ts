/**
 * Locating things in the text of a JSON artifact: the line of a field path
 * (for schema problems) and duplicate keys (which `JSON.parse` silently
 * resolves by keeping the last value, while other readers may keep the first).
 *
 * Used by `validate` on the JSON artifacts (`state.json`, `summary.json`,
 * `manifest.json`), which are small; JSONL lines are not scanned for
 * duplicate keys (see docs/security.md).
 *
 * @module
 */
import { findNodeAtLocation, type Node, parseTree } from "jsonc-parser";

/** Line numbers (1-based) by character offset. */
function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** A parsed JSON text that can answer "which line?". */
export interface JsonLocator {
  /** The line of a dotted path like `plan.steps[0].kind` (the deepest existing node on it), or undefined. */
  lineOf(path: string): number | undefined;
  /** Every key that appears twice in one object: its object's path, the key, the line of the repeat. */
  duplicates(): { path: string; key: string; line: number }[];
}

/** `a.b[0].c` → `["a", "b", 0, "c"]`. */
function segments(path: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of path.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return out;
}

/**
 * Parses JSON text for locating fields and finding duplicate keys.
 *
 * @example
 * ```ts
 * import { jsonLocator } from "./json_locate.ts";
 * const loc = jsonLocator('{\n  "a": 1,\n  "a": 2\n}');
 * loc.duplicates(); // [{ path: "", key: "a", line: 3 }]
 * loc.lineOf("a"); // 2 (the first one)
 * ```
 */
export function jsonLocator(text: string): JsonLocator {
  const tree = parseTree(text, [], { allowTrailingComma: false, disallowComments: true });
  return {
    lineOf(path) {
      if (!tree) return undefined;
      const segs = segments(path);
      for (let n = segs.length; n >= 0; n--) {
        const node = findNodeAtLocation(tree, segs.slice(0, n));
        if (node) return lineAt(text, (node.parent?.type === "property" ? node.parent : node).offset);
      }
      return undefined;
    },
    duplicates() {
      const out: { path: string; key: string; line: number }[] = [];
      const walk = (node: Node | undefined, path: string) => {
        if (!node) return;
        if (node.type === "object") {
          const seen = new Set<string>();
          for (const prop of node.children ?? []) {
            const key = String(prop.children?.[0]?.value);
            if (seen.has(key)) out.push({ path, key, line: lineAt(text, prop.offset) });
            seen.add(key);
            walk(prop.children?.[1], path ? `${path}.${key}` : key);
          }
        } else if (node.type === "array") {
          (node.children ?? []).forEach((child, i) => walk(child, `${path}[${i}]`));
        }
      };
      walk(tree, "");
      return out;
    },
  };
}
