/**
 * Serialising a value that holds a long list of entries that never change
 * once written, such as the action records of `state.json` and of the
 * `run.state_projection` events: each entry's JSON text is made once, at its
 * first write, and reused by every later artifact that holds it, instead of
 * serialising the whole list again each time (a 10,000-step run writes its
 * action records into an intermediate `state.json`, the terminal one and the
 * terminal projection; the records are deeply frozen for policies, and a
 * frozen object takes about 2.5× longer to stringify under Bun).
 *
 * The text is the same as `JSON.stringify` of the whole value: the value is
 * serialised with a placeholder in place of the list, and the entries' texts
 * are put in its place. Masking is the caller's (`ArtifactSink`): the entries
 * are masked one by one as they are cached, the rest as a whole. The cost is
 * memory: the texts are kept as long as their entries live (about the size
 * of the list in `state.json`).
 *
 * @module
 */

/** Stands for the list while the rest of the value is serialised (a random part: no value can hold it by chance). */
const HOLE = `\u0000noema-list-${crypto.randomUUID()}`;
const HOLE_TEXT = JSON.stringify(HOLE);
/** How deep in the value the list may be (`outcomes.actions` of a state, `payload.outcomes.actions` of an event). */
const MAX_DEPTH = 4;

/**
 * `value` with `list` (found by identity, in objects only, at most
 * {@link MAX_DEPTH} levels down) replaced by a placeholder string; the
 * objects on the way are copied (their keys in the same order), nothing else
 * is. Undefined when the list is not there.
 */
function withHole(value: unknown, list: readonly unknown[], depth = 0): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value) || depth >= MAX_DEPTH) return undefined;
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return undefined;
  const obj = value as Record<string, unknown>;
  for (const k of Object.keys(obj)) {
    const v = obj[k];
    if (v === list) return { ...obj, [k]: HOLE };
    const inner = withHole(v, list, depth + 1);
    if (inner !== undefined) return { ...obj, [k]: inner };
  }
  return undefined;
}

/** The parts of a value to join into its text: the rest, serialised with the placeholder, and each entry's text. */
export interface ListParts {
  /** `JSON.stringify` of the value with a placeholder in place of the list. */
  rest: string;
  /** Where the placeholder is in `rest`. */
  at: number;
  /** The entries' texts, in order. */
  entries: readonly string[];
  /** The length of the text {@link joinListParts} makes. */
  length: number;
}

/**
 * Splits `value` for {@link joinListParts}: `entryText` gives the text of
 * each entry of `list` (cached by the caller). Null when the list is not in
 * the value, an entry is not an object, or `entryText` returns null (an
 * entry that cannot be cached): the caller then serialises the whole value.
 *
 * @example
 * ```ts
 * import { joinListParts, splitAtList } from "./shared_list_text.ts";
 * const list = [{ id: 1 }, { id: 2 }];
 * const parts = splitAtList({ a: 1, outcomes: { actions: list } }, list, (e) => JSON.stringify(e))!;
 * joinListParts(parts); // '{"a":1,"outcomes":{"actions":[{"id":1},{"id":2}]}}'
 * ```
 */
export function splitAtList(
  value: unknown,
  list: readonly unknown[],
  entryText: (entry: object) => string | null,
): ListParts | null {
  const holed = withHole(value, list);
  if (holed === undefined) return null;
  const entries: string[] = new Array(list.length);
  let length = 2 + Math.max(0, list.length - 1) - HOLE_TEXT.length;
  for (let i = 0; i < list.length; i++) {
    const entry = list[i];
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) return null;
    const text = entryText(entry);
    if (text === null) return null;
    entries[i] = text;
    length += text.length;
  }
  const rest = JSON.stringify(holed);
  const at = rest.indexOf(HOLE_TEXT);
  if (at < 0 || rest.indexOf(HOLE_TEXT, at + HOLE_TEXT.length) >= 0) return null;
  return { rest, at, entries, length: length + rest.length };
}

/**
 * The text of the value {@link splitAtList} split: the rest with the list's
 * entries in place of the placeholder.
 *
 * @example
 * ```ts
 * import { joinListParts } from "./shared_list_text.ts";
 * // joinListParts(splitAtList(state, state.outcomes.actions, textOf)!) === JSON.stringify(state)
 * ```
 */
export function joinListParts(parts: ListParts): string {
  const { rest, at } = parts;
  return `${rest.slice(0, at)}[${parts.entries.join(",")}]${rest.slice(at + HOLE_TEXT.length)}`;
}
