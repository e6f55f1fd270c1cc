/**
 * Small pieces of report markup shared by the page's sections: status
 * badges coloured by a fixed list of tones, and excerpts in `<pre>` blocks.
 *
 * @module
 */
import { classFor, markup, raw, type SafeHtml } from "./escape.ts";
import type { Excerpt } from "./excerpt.ts";
import { ownEntry } from "../json.ts";

const TONES: Record<string, string> = {
  ok: "good",
  done: "good",
  success: "good",
  allow: "good",
  passed: "good",
  vetoed: "veto",
  veto: "veto",
  error: "bad",
  failed: "bad",
  goal_not_achieved: "bad",
  aborted: "bad",
  blocked: "fail",
  policy_failure: "fail",
  pending: "warn",
  running: "warn",
  partial: "warn",
  audit: "warn",
  success_unverified: "warn",
  waiting: "warn",
};

/**
 * The colour class (`t-good`, `t-bad`, `t-veto`, `t-fail`, `t-warn`, `t-muted`) for a status-like value.
 *
 * @example
 * ```ts
 * import { tone } from "./parts.ts";
 * tone("vetoed"); // "t-veto"
 * ```
 */
export function tone(value: string | null | undefined): string {
  const t = value === null || value === undefined ? undefined : ownEntry(TONES, value);
  return `t-${classFor(t, ["good", "bad", "veto", "fail", "warn"], "muted")}`;
}

/**
 * A badge: the value as text (escaped), coloured by {@link tone} or by `as`.
 *
 * @example
 * ```ts
 * import { badge } from "./parts.ts";
 * badge("vetoed").value; // '<span class="badge t-veto">vetoed</span>'
 * ```
 */
export function badge(value: string | null, as?: string | null, extra = ""): SafeHtml {
  return markup`<span class="badge ${raw(tone(as ?? value))}${raw(extra)}">${value ?? "-"}</span>`;
}

/**
 * An excerpt in a `<pre>`: beginning, a note saying how much was cut, end.
 *
 * @example
 * ```ts
 * import { excerptHtml } from "./parts.ts";
 * excerptHtml({ head: "ab", tail: "yz", cut: 22 }).value; // "<pre>ab<span class=\"cut\">… 22 characters cut …</span>yz</pre>"
 * ```
 */
export function excerptHtml(e: Excerpt, cls = ""): SafeHtml {
  const c = cls ? raw(` class="${cls}"`) : "";
  if (e.cut === 0) return markup`<pre${c}>${e.head}</pre>`;
  return markup`<pre${c}>${e.head}<span class="cut">… ${
    e.cut.toLocaleString("en-US")
  } characters cut …</span>${e.tail}</pre>`;
}
