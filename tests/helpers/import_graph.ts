/**
 * The import graph of `src/`, read from the source text: every static,
 * type-only and dynamic (`import("…")`) import, every re-export, and every
 * worker entry (`new Worker(new URL("./x.ts", import.meta.url))`), resolved to
 * files. The
 * layering tests check it.
 *
 * @module
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (absolute, with a trailing slash). */
export const REPO: string = fileURLToPath(new URL("../..", import.meta.url));

/** One import of one file. */
export interface ImportEdge {
  /** The importing file, relative to the repository (`src/runtime/run.ts`). */
  from: string;
  /** The specifier as written. */
  spec: string;
  /** The imported file relative to the repository, or null for a package or `node:` module. */
  to: string | null;
  /** `static` (including `import type` and re-exports), `dynamic` or `worker`. */
  kind: "static" | "dynamic" | "worker";
  /** A static import or re-export of types only (`import type`, `{ type A, type B }`): erased, never loaded. */
  typeOnly: boolean;
}

/**
 * Every `.ts` file under a directory, recursively, relative to the repository.
 *
 * @example
 * ```ts
 * import { tsFiles } from "./helpers/import_graph.ts";
 * [...tsFiles("src/store")].includes("src/store/lock.ts"); // true
 * ```
 */
export function* tsFiles(dir: string): Generator<string> {
  for (const e of readdirSync(join(REPO, dir), { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* tsFiles(p);
    else if (e.name.endsWith(".ts")) yield p;
  }
}

/**
 * Every import specifier of a source text, with its kind. Comments (where
 * JSDoc examples import freely) are left out.
 *
 * @example
 * ```ts
 * import { specifiers } from "./helpers/import_graph.ts";
 * specifiers('const m = await import("./x.ts");'); // [{ spec: "./x.ts", kind: "dynamic", typeOnly: false }]
 * ```
 */
export function specifiers(text: string): Omit<ImportEdge, "from" | "to">[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/^\s*\/\/.*$/gm, "");
  const out: Omit<ImportEdge, "from" | "to">[] = [];
  const patterns: [RegExp, ImportEdge["kind"]][] = [
    [/^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm, "static"],
    [/^\s*import\s*["']([^"']+)["']/gm, "static"],
    [/\bimport\(\s*["']([^"']+)["']/g, "dynamic"],
    [/\bnew Worker\(\s*new URL\(\s*["'](\.[^"']+)["']\s*,\s*import\.meta\.url\s*\)/g, "worker"],
  ];
  for (const [re, kind] of patterns) {
    for (const m of code.matchAll(re)) out.push({ spec: m[1], kind, typeOnly: kind === "static" && typesOnly(m[0]) });
  }
  return out;
}

/** Whether a static import or export statement names types only. */
function typesOnly(statement: string): boolean {
  const clause = /^\s*(?:import|export)\s+([\s\S]*?)\s*\bfrom\s*["']/.exec(statement)?.[1];
  if (clause === undefined) return false; // `import "./x.ts"`: loaded for its effects
  if (/^type\b/.test(clause)) return true;
  const names = /^\{([^}]*)\}$/.exec(clause)?.[1];
  return names !== undefined && names.split(",").every((n) => n.trim() === "" || /^type\s/.test(n.trim()));
}

/**
 * Every import of every `.ts` file under `src/`, resolved. A relative
 * specifier that names no file is an error (the reader would be wrong).
 *
 * @example
 * ```ts
 * import { importEdges } from "./helpers/import_graph.ts";
 * importEdges().filter((e) => e.from === "src/runtime/run.ts").map((e) => e.to);
 * ```
 */
export function importEdges(): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const from of tsFiles("src")) {
    // The templates are the text of generated plugin files, not modules of noema.
    if (from.startsWith(join("src", "cli", "templates") + "/")) continue;
    for (const { spec, kind, typeOnly } of specifiers(readFileSync(join(REPO, from), "utf8"))) {
      if (!spec.startsWith(".")) {
        edges.push({ from, spec, to: null, kind, typeOnly });
        continue;
      }
      const abs = resolve(REPO, from, "..", spec);
      if (!existsSync(abs)) throw new Error(`${from}: import ${spec} names no file`);
      edges.push({ from, spec, to: relative(REPO, abs), kind, typeOnly });
    }
  }
  return edges;
}

/**
 * The unit a file belongs to for layering: its folder under `src/`
 * (`src/runtime`), or the file itself for a file directly in `src/` or at
 * the root (`src/errors.ts`, `mod.ts`).
 *
 * @example
 * ```ts
 * import { unitOf } from "./helpers/import_graph.ts";
 * unitOf("src/runtime/core/create.ts"); // "src/runtime"
 * unitOf("src/errors.ts"); // "src/errors.ts"
 * ```
 */
export function unitOf(file: string): string {
  const parts = file.split("/");
  return parts[0] === "src" && parts.length > 2 ? `src/${parts[1]}` : file;
}

/**
 * The strongly connected components with more than one member of a directed
 * graph (Tarjan): each is a set of nodes that import one another in a circle.
 *
 * @example
 * ```ts
 * import { cycles } from "./helpers/import_graph.ts";
 * cycles(new Map([["a", new Set(["b"])], ["b", new Set(["a"])]])); // [["a", "b"]]
 * ```
 */
export function cycles(graph: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}
