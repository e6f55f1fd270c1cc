/**
 * The characters noema never shows as they are, in one place for every
 * reader of recorded text: the terminal's control characters, and the
 * Unicode marks that reorder the text around them.
 *
 * - C0 and C1 controls but tab and newline (ESC, BEL, CSI, CR…): in a
 *   terminal they retitle, recolour or clear it.
 * - The direction marks (U+061C, U+200E, U+200F), embeddings and overrides
 *   (U+202A–U+202E) and isolates (U+2066–U+2069): in a terminal or a page
 *   they reorder what follows them, so a pending command could be shown as
 *   another (Trojan Source).
 *
 * The CLI (`cli/output.ts`) and the plugins' output (`plugins/plugin_output.ts`)
 * escape both; the web pages (`report/escape.ts`) the marks (HTML escaping
 * takes care of the rest).
 *
 * @module
 */

/** The direction marks, embeddings, overrides and isolates, as a character class's body. */
const BIDI_CLASS = "\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069";

/**
 * Every character a terminal must not receive as it is (global: for `replace`).
 *
 * @example
 * ```ts
 * import { CONTROL_CHARS } from "./control_chars.ts";
 * "a\x1b[2Jb\u202e".replace(CONTROL_CHARS, "?"); // "a?[2Jb?"
 * ```
 */
export const CONTROL_CHARS: RegExp = new RegExp(`[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f${BIDI_CLASS}]`, "g");

/**
 * The characters that reorder text around them (global: for `replace`).
 *
 * @example
 * ```ts
 * import { BIDI_CHARS } from "./control_chars.ts";
 * "rm -rf /\u202e".replace(BIDI_CHARS, "?"); // "rm -rf /?"
 * ```
 */
export const BIDI_CHARS: RegExp = new RegExp(`[${BIDI_CLASS}]`, "g");
