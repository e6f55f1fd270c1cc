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
 * The text is a string ({@link splitJson}) or a byte range of a file read a
 * window at a time ({@link splitFile}, `json_source.ts`): then no string of
 * the whole is ever built, and every piece parsed is first scanned for
 * duplicate keys and depth (`scanJson`), so that text a whole-text reader
 * would report on is refused here and read whole by the caller.
 *
 * @module
 */
import process from "node:process";
import { collectYoungGarbage } from "../store/gc.ts";
import { MAX_JSON_DEPTH, scanJson } from "../store/json_scan.ts";
import { FileSource, type JsonSource, StringSource } from "./json_source.ts";

/**
 * Called before the walk enters an object on a target's way (at path `at`), with the short scalar members
 * (their JSON text) seen so far in the object holding it; throwing stops the walk (then the text is read whole).
 */
export type EnterCheck = (at: readonly string[], scalars: ReadonlyMap<string, string>) => void;

/** Scalar members at most this long are kept for an {@link EnterCheck}. */
const SCALAR_CHARS = 256;

/** One array to cut out: its path of object keys from the root, and what to do with each element. */
export interface SplitTarget {
  readonly path: readonly string[];
  each(value: unknown, index: number): void;
}

const QUOTE = 34, BACKSLASH = 92, OPEN_OBJ = 123, CLOSE_OBJ = 125, OPEN_ARR = 91, CLOSE_ARR = 93, COMMA = 44;
const COLON = 58;
/**
 * Garbage is collected after each 128 Ki characters of elements parsed, or a 32nd of the live heap when that is
 * more, up to {@link GC_MOST_CHARS}: each collection costs about what is kept, so a large list waits longer between
 * them (100,000 steps: 49 s every 128 Ki, 13 s every 1 Mi, at the same peak; a sixteenth uncapped: 193 MiB). A 32nd,
 * not a sixteenth: a mid-sized episode (30,000 actions, a 10 MB line) peaked at 86-93 MiB, now 83-85 (its goal: 95),
 * a 34 MB state.json at 66-70, now 64-65; the 100,000-step episode takes about 6% longer (14.2 s, now 15.1).
 */
const GC_CHARS = 1 << 17;
/** The most characters of elements parsed between two collections. */
const GC_MOST_CHARS = 1 << 20;

class Walk {
  pieces: string[] = [];
  last = 0;
  readonly split = new Set<SplitTarget>();
  /** Characters of elements parsed since garbage was last collected. */
  since = 0;
  /** Characters of elements parsed before the next collection. */
  gcAfter = GC_CHARS;
  /**
   * @param strict every piece parsed is first scanned (`scanJson`): a duplicate key or nesting past
   *   {@link MAX_JSON_DEPTH} throws (the whole-text reader reports them).
   */
  constructor(
    readonly text: JsonSource,
    readonly targets: readonly SplitTarget[],
    readonly strict = false,
    readonly enter?: EnterCheck,
  ) {}

  /** `JSON.parse` of `text[a, b)`, whose containers start at depth `depth` (0: the root). */
  parse(a: number, b: number, depth: number): unknown {
    const piece = this.text.slice(a, b);
    if (this.strict) {
      const scan = scanJson(piece, { maxDepth: MAX_JSON_DEPTH - depth });
      if (scan.tooDeep || scan.duplicates.length > 0) this.fail(a);
    }
    return JSON.parse(piece);
  }

  /** Moves the skeleton up to `i` into its pieces: what the source holds before `i` can go. */
  flush(i: number): void {
    if (i > this.last) this.pieces.push(this.text.slice(this.last, i));
    this.last = i;
    this.text.release(i);
  }

  fail(at: number): never {
    throw new SyntaxError(`unexpected text at offset ${at}`);
  }

  ws(i: number): number {
    const t = this.text;
    for (let c = t.at(i); c === 32 || c === 10 || c === 13 || c === 9; c = t.at(++i));
    return i;
  }

  /** `i` at an opening quote; returns the index after the closing one. */
  string(i: number): number {
    const t = this.text;
    let j = i + 1;
    for (;;) {
      const k = t.indexOf(QUOTE, j);
      if (k < 0) this.fail(i);
      let back = 0;
      while (t.at(k - 1 - back) === BACKSLASH) back++;
      if (back % 2 === 0) return k + 1;
      j = k + 1;
    }
  }

  /** `i` at the start of a value; returns the index after it. */
  skip(i: number): number {
    const t = this.text;
    const c = t.at(i);
    if (c === QUOTE) return this.string(i);
    if (c === OPEN_OBJ || c === OPEN_ARR) {
      let depth = 0;
      for (let j = i; j < t.length; j++) {
        const d = t.at(j);
        if (d === QUOTE) j = this.string(j) - 1;
        else if (d === OPEN_OBJ || d === OPEN_ARR) depth++;
        else if ((d === CLOSE_OBJ || d === CLOSE_ARR) && --depth === 0) return j + 1;
      }
      this.fail(i);
    }
    let j = i;
    for (
      let d = t.at(j);
      j < t.length && d !== COMMA && d !== CLOSE_OBJ && d !== CLOSE_ARR;
      d = t.at(++j)
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
    if (t.at(i) === CLOSE_OBJ) return i + 1;
    const seen = new Set<string>();
    const scalars = new Map<string, string>();
    for (;;) {
      if (t.at(i) !== QUOTE) this.fail(i);
      const end = this.string(i);
      const key = JSON.parse(t.slice(i, end)) as string; // a string: no scan needed
      i = this.ws(end);
      if (t.at(i) !== COLON) this.fail(i);
      i = this.ws(i + 1);
      const at = [...path, key];
      const target = this.targets.find((x) => same(x.path, at));
      const onTheWay = this.targets.some((x) => x.path.length > at.length && same(x.path.slice(0, at.length), at));
      if ((target || onTheWay) && seen.has(key)) this.fail(i); // a duplicate key on the way: parse it whole
      seen.add(key);
      const c = t.at(i);
      if (target && c === OPEN_ARR) i = this.array(i, target);
      else if (onTheWay && c === OPEN_OBJ) {
        this.enter?.(at, scalars);
        i = this.object(i, at);
      } else {
        const start = i;
        i = this.skip(i);
        if (this.enter && c !== OPEN_OBJ && c !== OPEN_ARR && i - start <= SCALAR_CHARS) {
          scalars.set(key, t.slice(start, i));
        }
      }
      i = this.ws(i);
      const d = t.at(i);
      if (d === CLOSE_OBJ) return i + 1;
      if (d !== COMMA) this.fail(i);
      this.flush(i); // the members so far: into the skeleton (a file source lets their bytes go)
      i = this.ws(i + 1);
    }
  }

  /** The target array at `i`: each element parsed and handed over, the array left empty in the skeleton. */
  array(i: number, target: SplitTarget): number {
    const t = this.text;
    this.flush(i + 1);
    this.split.add(target);
    let j = this.ws(i + 1);
    let index = 0;
    if (t.at(j) !== CLOSE_ARR) {
      for (;;) {
        const end = this.skip(j);
        target.each(this.parse(j, end, target.path.length + 2), index++);
        t.release(end);
        this.since += end - j;
        if (this.since > this.gcAfter) {
          this.since = 0;
          collectYoungGarbage(); // the elements handed over so far, each let go: else the heap grows with them
          this.gcAfter = Math.min(GC_MOST_CHARS, Math.max(GC_CHARS, process.memoryUsage().heapUsed / 32));
        }
        j = this.ws(end);
        const d = t.at(j);
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
  return walk(new Walk(new StringSource(text), targets));
}

function walk(w: Walk): { value: Record<string, unknown>; split: ReadonlySet<SplitTarget> } {
  const t = w.text;
  const start = w.ws(0);
  if (t.at(start) !== OPEN_OBJ) w.fail(start);
  const end = w.ws(w.object(start, []));
  if (end !== t.length) w.fail(end);
  w.flush(t.length);
  const skeleton = w.pieces.join("");
  w.pieces = [];
  if (w.strict) {
    const scan = scanJson(skeleton);
    if (scan.tooDeep || scan.duplicates.length > 0) w.fail(0);
  }
  return { value: JSON.parse(skeleton), split: w.split };
}

/**
 * {@link splitJson} of the bytes `[start, start + length)` of the file open at
 * `fd`, read a window at a time (see the module doc): what stays in memory is
 * the skeleton and what the targets keep. `enter` may stop the walk early
 * (see {@link EnterCheck}). Throws a `SyntaxError` (or a
 * `TypeError` for invalid UTF-8) on anything a whole-text reader would report
 * (a syntax error, a duplicate key, nesting too deep, a byte order mark):
 * read such text whole.
 *
 * @example
 * ```ts
 * import { openSync, writeFileSync } from "node:fs";
 * import { splitFile } from "./json_split.ts";
 * writeFileSync("/tmp/split.json", '{"a":{"list":[1,2]}}');
 * const seen: unknown[] = [];
 * const fd = openSync("/tmp/split.json", "r");
 * splitFile(fd, 0, 20, [{ path: ["a", "list"], each: (x) => seen.push(x) }]).value; // { a: { list: [] } }
 * ```
 */
export function splitFile(
  fd: number,
  start: number,
  length: number,
  targets: readonly SplitTarget[],
  enter?: EnterCheck,
): { value: Record<string, unknown>; split: ReadonlySet<SplitTarget> } {
  return walk(new Walk(new FileSource(fd, start, length), targets, true, enter));
}
