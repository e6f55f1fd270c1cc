/**
 * The frame every page of `noema serve` shares: the head (the embedded
 * stylesheet and script, no inline code), the bar with the views and the
 * live indicator, and the page's own URL for server-sent events.
 *
 * @module
 */
import { markup, type SafeHtml } from "../report/escape.ts";

/** What a page puts in the frame. */
export interface PageFrame {
  /** The document title (escaped). */
  title: string;
  /** Which view of the bar is current. */
  current: "runs" | "approvals" | "episode" | "compare" | "backtest" | "login" | "search" | "fleet";
  /** The page's main content. */
  body: SafeHtml;
  /** The server-sent events URL the client script follows, if the page is live. */
  live?: string;
  /** Whether approval pages are served (not with `--read-only`). */
  approvals: boolean;
}

/**
 * A whole page.
 *
 * @example
 * ```ts
 * import { page } from "./layout.ts";
 * import { markup } from "../report/escape.ts";
 * page({ title: "Runs", current: "runs", body: markup`<p>none</p>`, approvals: true });
 * ```
 */
export function page(f: PageFrame): string {
  const nav = (key: PageFrame["current"], href: string, label: string) =>
    markup`<a href="${href}"${f.current === key ? markup` aria-current="page"` : ""}>${label}</a>`;
  const live = f.live !== undefined
    ? markup`<span id="live" class="muted" title="updates as runs write"><span class="live-dot"></span><span>connecting</span></span>`
    : "";
  return markup`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>${f.title} · noema</title>
<link rel="stylesheet" href="/assets/app.css">
<script src="/assets/app.js" defer></script></head>
<body${f.live !== undefined ? markup` data-live="${f.live}"` : ""}>
<div class="bar"><a class="brand" href="/">noema</a>${nav("runs", "/", "Runs")}${
    f.approvals ? nav("approvals", "/approvals", "Approvals") : ""
  }${nav("fleet", "/fleet", "Fleet")}${nav("search", "/search", "Search")}${nav("backtest", "/backtest", "Backtest")}
<span class="right">${live}<span class="kbd"><kbd>j</kbd>/<kbd>k</kbd> move · <kbd>/</kbd> filter</span></span></div>
<main>
${f.body}
</main></body></html>
`.value;
}
