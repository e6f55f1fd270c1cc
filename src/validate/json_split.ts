/**
 * Parsing a large JSON text without building the whole tree at once: the
 * arrays at given paths (such as `state.json` `outcomes.actions`) are cut
 * out and handed over one element at a time, each parsed on its own and let
 * go, and the rest (the skeleton, those arrays left empty) is parsed whole.
 * What a caller keeps of each element is all that stays in memory besides
 * the text. For `noema validate`, whose memory goal is a constant plus 3× an
 * episode's longest line: a 100,000-action list parsed whole costs about
 * three times its text again.
 *
 * The walk trusts the text no further than it must: on anything it does not
 * expect it throws, and the caller parses the text whole instead (which
 * reports the syntax error as usual).
 *
 * @module
 */
import { collectGarbage } from "../store/gc.ts";

/** One array to cut out: its path of object keys from the root, and what to do with each element. */
export interface SplitTarget {
  readonly path: readonly string[];
  each(value: unknown, index: number): void;
}

const QUOTE = 34, BACKSLASH = 92, OPEN_OBJ = 123, CLOSE_OBJ = 125, OPEN_ARR = 91, CLOSE_ARR = 93, COMMA = 44;
const COLON = 58;
/** Garbage is collected after each 4 Mi characters of elements parsed. */
const GC_CHARS = 1 << 20;

class Walk {
  pieces: string[] = [];
  last = 0;
  readonly split = new Set<SplitTarget>();
  /** Characters of elements parsed since garbage was last collected. */
  since = 0;
  constructor(readonly text: string, readonly targets: readonly SplitTarget[]) {}

  fail(at: number): never {
    throw new SyntaxError(`unexpected text at offset ${at}`);
  }

  ws(i: number): number {
    const t = this.text;
    for (let c = t.charCodeAt(i); c === 32 || c === 10 || c === 13 || c === 9; c = t.charCodeAt(++i));
    return i;
  }

  /** `i` at an opening quote; returns the index after the closing one. */
  string(i: number): number {
    const t = this.text;
    let j = i + 1;
    for (;;) {
      const k = t.indexOf('"', j);
      if (k < 0) this.fail(i);
      let back = 0;
      while (t.charCodeAt(k - 1 - back) === BACKSLASH) back++;
      if (back % 2 === 0) return k + 1;
      j = k + 1;
    }
  }

  /** `i` at the start of a value; returns the index after it. */
  skip(i: number): number {
    const t = this.text;
    const c = t.charCodeAt(i);
    if (c === QUOTE) return this.string(i);
    if (c === OPEN_OBJ || c === OPEN_ARR) {
      let depth = 0;
      for (let j = i; j < t.length; j++) {
        const d = t.charCodeAt(j);
        if (d === QUOTE) j = this.string(j) - 1;
        else if (d === OPEN_OBJ || d === OPEN_ARR) depth++;
        else if ((d === CLOSE_OBJ || d === CLOSE_ARR) && --depth === 0) return j + 1;
      }
      this.fail(i);
    }
    let j = i;
    for (
      let d = t.charCodeAt(j);
      j < t.length && d !== COMMA && d !== CLOSE_OBJ && d !== CLOSE_ARR;
      d = t.charCodeAt(++j)
    ) {
      if (d === 32 || d === 10 || d === 13 || d === 9) break;
    }
    if (j === i) this.fail(i);
    return j;
  }

  /** The object at `i` (path `path`): members on a target's way are walked, the others skipped. */
  object(i: number, path: readonly string[]): number {
    const t = this.text;
    i = this.ws(i + 1);
    if (t.charCodeAt(i) === CLOSE_OBJ) return i + 1;
    const seen = new Set<string>();
    for (;;) {
      if (t.charCodeAt(i) !== QUOTE) this.fail(i);
      const end = this.string(i);
      const key = JSON.parse(t.slice(i, end)) as string;
      i = this.ws(end);
      if (t.charCodeAt(i) !== COLON) this.fail(i);
      i = this.ws(i + 1);
      const at = [...path, key];
      const target = this.targets.find((x) => same(x.path, at));
      const onTheWay = this.targets.some((x) => x.path.length > at.length && same(x.path.slice(0, at.length), at));
      if ((target || onTheWay) && seen.has(key)) this.fail(i); // a duplicate key on the way: parse it whole
      seen.add(key);
      const c = t.charCodeAt(i);
      if (target && c === OPEN_ARR) i = this.array(i, target);
      else if (onTheWay && c === OPEN_OBJ) i = this.object(i, at);
      else i = this.skip(i);
      i = this.ws(i);
      const d = t.charCodeAt(i);
      if (d === CLOSE_OBJ) return i + 1;
      if (d !== COMMA) this.fail(i);
      i = this.ws(i + 1);
    }
  }

  /** The target array at `i`: each element parsed and handed over, the array left empty in the skeleton. */
  array(i: number, target: SplitTarget): number {
    const t = this.text;
    this.pieces.push(t.slice(this.last, i + 1));
    this.split.add(target);
    let j = this.ws(i + 1);
    let index = 0;
    if (t.charCodeAt(j) !== CLOSE_ARR) {
      for (;;) {
        const end = this.skip(j);
        target.each(JSON.parse(t.slice(j, end)), index++);
        this.since += end - j;
        if (this.since > GC_CHARS) {
          this.since = 0;
          collectGarbage(); // the elements handed over so far, each let go: else the heap grows with them
        }
        j = this.ws(end);
        const d = t.charCodeAt(j);
        if (d === CLOSE_ARR) break;
        if (d !== COMMA) this.fail(j);
        j = this.ws(j + 1);
      }
    }
    this.last = j; // the closing bracket
    return j + 1;
  }
}

function same(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((k, i) => k === b[i]);
}

/**
 * Parses `text` (a JSON object) with the arrays at the targets' paths cut
 * out: each of their elements is parsed alone and passed to the target's
 * `each`, in order; the value returned has those arrays empty. `split` tells
 * which targets were found as arrays. Throws a `SyntaxError` on text it
 * does not expect (parse such text whole).
 *
 * @example
 * ```ts
 * import { splitJson } from "./json_split.ts";
 * const ids: unknown[] = [];
 * const { value } = splitJson('{"a":{"list":[{"id":1},{"id":2}]},"b":3}', [
 *   { path: ["a", "list"], each: (x) => ids.push((x as { id: number }).id) },
 * ]);
 * console.log(value, ids); // { a: { list: [] }, b: 3 } [ 1, 2 ]
 * ```
 */
export function splitJson(
  text: string,
  targets: readonly SplitTarget[],
): { value: Record<string, unknown>; split: ReadonlySet<SplitTarget> } {
  const w = new Walk(text, targets);
  const start = w.ws(0);
  if (text.charCodeAt(start) !== OPEN_OBJ) w.fail(start);
  const end = w.ws(w.object(start, []));
  if (end !== text.length) w.fail(end);
  w.pieces.push(text.slice(w.last));
  const value = JSON.parse(w.pieces.join(""));
  return { value, split: w.split };
}
