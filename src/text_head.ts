/**
 * Cutting text to a length without breaking it: a cut never falls between
 * the two halves of a surrogate pair (which would leave a lone `\ud83d`, not
 * text: canonical JSON refuses it and strict JSON readers reject its escape),
 * and a lone surrogate already in the text becomes U+FFFD. Every excerpt,
 * summary or description noema cuts from longer text goes through here.
 *
 * @module
 */

/**
 * At most the first `units` UTF-16 units of `text`, one fewer when the cut would split a surrogate pair; the
 * result is well-formed (a lone surrogate becomes U+FFFD).
 *
 * @example
 * ```ts
 * import { textHead } from "./text_head.ts";
 * textHead("ab\ud83d\ude00", 3); // "ab"
 * textHead("ab\ud83d\ude00", 4); // "ab\ud83d\ude00"
 * ```
 */
export function textHead(text: string, units: number): string {
  const n = Math.max(0, Math.floor(units));
  let head = text;
  if (text.length > n) {
    const c = text.charCodeAt(n - 1);
    head = text.slice(0, n > 0 && c >= 0xd800 && c <= 0xdbff ? n - 1 : n);
  }
  return head.isWellFormed() ? head : head.toWellFormed();
}

/**
 * `text` when it has at most `max` UTF-16 units, else its {@link textHead} of `max - 1` units and `…`.
 *
 * @example
 * ```ts
 * import { clipText } from "./text_head.ts";
 * clipText("abcdef", 4); // "abc…"
 * clipText("ab\ud83d\ude00", 4); // "ab\ud83d\ude00"
 * clipText("abc\ud83d\ude00", 4); // "abc…"
 * ```
 */
export function clipText(text: string, max: number): string {
  return text.length > max ? `${textHead(text, max - 1)}…` : textHead(text, max);
}
