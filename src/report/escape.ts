/**
 * HTML escaping for the episode report. Everything read from an episode's
 * artifacts (task text, outputs, policy messages, ids) is untrusted: it goes
 * into the page only through {@link markup}, which escapes every interpolated
 * value unless it is already {@link SafeHtml} (markup built by this module).
 *
 * @module
 */
import { BIDI_CHARS } from "../control_chars.ts";
import { textOf } from "../json.ts";

/** Markup that is already safe to insert as is (built by {@link markup} or {@link raw}). */
export class SafeHtml {
  /** The markup. */
  readonly value: string;
  constructor(value: string) {
    this.value = value;
  }
  /** The markup, so a `SafeHtml` can be written out directly. */
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/**
 * Escapes text for an HTML text node or a quoted attribute value: `& < > " '`
 * become entities; lone UTF-16 surrogates (invalid text) become U+FFFD; the
 * marks that reorder text (see `control_chars.ts`) are shown as `\u{202e}`,
 * as the CLI's `neutralize` shows them.
 *
 * @example
 * ```ts
 * import { escapeHtml } from "./escape.ts";
 * escapeHtml('<img src=x onerror="alert(1)">'); // "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
 * ```
 */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ENTITIES[c]).replace(
    BIDI_CHARS,
    (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`,
  )
    .toWellFormed();
}

/**
 * Marks trusted markup (written in this codebase, never from artifacts) as safe.
 *
 * @example
 * ```ts
 * import { markup, raw } from "./escape.ts";
 * markup`<p>${raw("&nbsp;")}</p>`.value; // "<p>&nbsp;</p>"
 * ```
 */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** What may be interpolated into {@link markup}. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

function part(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return "";
  if (value instanceof SafeHtml) return value.value;
  if (Array.isArray(value)) {
    let out = "";
    for (const v of value as readonly HtmlValue[]) out += part(v);
    return out;
  }
  return escapeHtml(textOf(value));
}

/**
 * A tagged template that escapes every interpolated value (strings, numbers,
 * arrays of values) except {@link SafeHtml}; `null`, `undefined` and `false`
 * render as nothing.
 *
 * @example
 * ```ts
 * import { markup } from "./escape.ts";
 * const task = "<script>alert(1)</script>";
 * markup`<h1>${task}</h1>`.value; // "<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>"
 * ```
 */
export function markup(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1];
  return new SafeHtml(out);
}

/**
 * A CSS class name from a fixed list, for a value read from the artifacts
 * (a status, a decision): values not in the list map to `fallback`, so no
 * artifact text ever reaches an attribute unescaped or picks an arbitrary class.
 *
 * @example
 * ```ts
 * import { classFor } from "./escape.ts";
 * classFor("vetoed", ["done", "vetoed"], "other"); // "vetoed"
 * classFor('x" onclick="y', ["done"], "other"); // "other"
 * ```
 */
export function classFor(value: string | null | undefined, allowed: readonly string[], fallback: string): string {
  return value !== null && value !== undefined && allowed.includes(value) ? value : fallback;
}
