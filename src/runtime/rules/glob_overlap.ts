/**
 * Whether two path globs could both match one path: used for a path argument
 * that is itself a glob (`cat *.env`, `Glob(**\/*.ts)`) or a directory read
 * whole (`grep -r x dir`, `tar c dir`), against the glob of a file rule.
 *
 * The answer errs towards "yes": `[…]` classes (POSIX `[[:alpha:]]` ones
 * too) count as any one character, extended globs (`@(a|b)`, `!(x)`, `+(x)`:
 * node-glob's, which Gemini CLI expands, and bash's `extglob`) as `*`, `*` may
 * match a dotfile, and a brace expansion with too many alternatives counts as
 * `**`. It is linear in the product of the two patterns' lengths.
 *
 * @module
 */

type Token = { k: "char"; c: string } | { k: "one" } | { k: "star" } | { k: "globstar" };

const MAX_ALTERNATIVES = 64;

/** The alternatives of a glob's brace expansions (`{a,b}`), or null when there are too many. */
function expandBraces(glob: string, budget = { left: MAX_ALTERNATIVES }): string[] | null {
  let depth = 0, open = -1, comma = false;
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "\\") i++;
    else if (c === "{") {
      if (depth++ === 0) [open, comma] = [i, false];
    } else if (c === "," && depth === 1) comma = true;
    else if (c === "}" && depth > 0 && --depth === 0 && comma) {
      const parts: string[] = [];
      let d = 0, from = open + 1;
      for (let j = open + 1; j < i; j++) {
        if (glob[j] === "\\") j++;
        else if (glob[j] === "{") d++;
        else if (glob[j] === "}") d--;
        else if (glob[j] === "," && d === 0) {
          parts.push(glob.slice(from, j));
          from = j + 1;
        }
      }
      parts.push(glob.slice(from, i));
      budget.left -= parts.length;
      if (budget.left < 0) return null;
      const out: string[] = [];
      for (const p of parts) {
        const rest = expandBraces(glob.slice(0, open) + p + glob.slice(i + 1), budget);
        if (rest === null) return null;
        out.push(...rest);
      }
      return out;
    }
  }
  return [glob];
}

/**
 * Where the bracket expression opened at `i` ends (its `]`), or -1: a `]` first in it is one of its characters, and
 * so is any `]` of a `[:alpha:]`, `[=a=]` or `[.a.]` inside it.
 */
function bracketEnd(glob: string, i: number): number {
  let j = i + 1;
  if (glob[j] === "!" || glob[j] === "^") j++;
  if (glob[j] === "]") j++;
  while (j < glob.length) {
    const c = glob[j];
    if (c === "/") return -1;
    if (c === "[" && (glob[j + 1] === ":" || glob[j + 1] === "=" || glob[j + 1] === ".")) {
      const close = glob.indexOf(`${glob[j + 1]}]`, j + 2);
      if (close === -1) return -1;
      j = close + 2;
    } else if (c === "]") return j;
    else j++;
  }
  return -1;
}

/** Extended globs (`@(a|b)`, `!(x)`, `*(x)`, `+(x)`, `?(x)`, nested too) as `*`, which matches all they do. */
function broadenExtglobs(glob: string): string {
  let prev;
  do {
    prev = glob;
    glob = glob.replace(/[@!?+*]\([^()]*\)/g, "*");
  } while (glob !== prev);
  return glob;
}

function tokens(glob: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === "\\" && i + 1 < glob.length) out.push({ k: "char", c: glob[++i] });
    else if (c === "*" && glob[i + 1] === "*") {
      while (glob[i + 1] === "*") i++;
      out.push({ k: "globstar" });
    } else if (c === "*") out.push({ k: "star" });
    else if (c === "?") out.push({ k: "one" });
    else if (c === "[" && bracketEnd(glob, i) !== -1) {
      out.push({ k: "one" });
      i = bracketEnd(glob, i);
    } else out.push({ k: "char", c });
  }
  return out;
}

/** A glob's alternatives as token lists; `/**\/` may match a single `/`, a trailing `/**` the folder itself. */
function alternatives(glob: string): Token[][] {
  const broad = broadenExtglobs(glob);
  const spread = broad.replace(/\/\*\*\//g, "{/,/**/}").replace(/^\*\*\//, "{,**/}").replace(/\/\*\*$/, "{,/**}");
  const alts = expandBraces(spread) ?? [spread.replace(/\{[^]*\}/g, "**")];
  return alts.map(tokens);
}

const isStar = (t: Token | undefined) => t !== undefined && (t.k === "star" || t.k === "globstar");

/** Whether some one character is accepted by both tokens. */
function meet(a: Token, b: Token): boolean {
  if (a.k === "char" && b.k === "char") return a.c === b.c;
  const [c, other] = a.k === "char" ? [a.c, b] : b.k === "char" ? [b.c, a] : [null, a];
  if (c === null) return true; // two wildcards share some character other than "/"
  return other.k === "globstar" || c !== "/";
}

function intersects(a: Token[], b: Token[]): boolean {
  const seen = new Set<number>();
  const stack: [number, number][] = [[0, 0]];
  const width = b.length + 1;
  while (stack.length > 0) {
    const [i, j] = stack.pop()!;
    if (seen.has(i * width + j)) continue;
    seen.add(i * width + j);
    if (i === a.length && j === b.length) return true;
    if (isStar(a[i])) stack.push([i + 1, j]);
    if (isStar(b[j])) stack.push([i, j + 1]);
    if (i < a.length && j < b.length && meet(a[i], b[j])) {
      stack.push([isStar(a[i]) ? i : i + 1, isStar(b[j]) ? j : j + 1]);
    }
  }
  return false;
}

/**
 * Whether some path could match both globs.
 *
 * @example
 * ```ts
 * import { globsOverlap } from "./glob_overlap.ts";
 * globsOverlap("/w/*.env", "/w/**\/.env"); // true
 * globsOverlap("/w/**\/*.ts", "/w/**\/.env"); // false
 * ```
 */
export function globsOverlap(a: string, b: string): boolean {
  const as = alternatives(a), bs = alternatives(b);
  return as.some((x) => bs.some((y) => intersects(x, y)));
}

/**
 * A literal path as a glob that matches only it (its glob characters escaped).
 *
 * @example
 * ```ts
 * import { escapeGlob } from "./glob_overlap.ts";
 * escapeGlob("/w/a*b"); // "/w/a\\*b"
 * ```
 */
export function escapeGlob(path: string): string {
  return path.replace(/[\\*?[\]{}()!+@]/g, (c) => `\\${c}`);
}
