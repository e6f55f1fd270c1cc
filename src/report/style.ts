/**
 * The report's stylesheet, inlined in the page (the page's Content Security
 * Policy allows inline styles and nothing else: no scripts, fonts, images or
 * requests). System fonts only; a dark scheme follows the viewer's setting.
 * Vetoes (purple, "VETO") and policy failures (orange, dashed) look different
 * from each other and from errors (red).
 *
 * @module
 */

/** The Content-Security-Policy of the report page. */
export const REPORT_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; font-src 'none'; connect-src 'none'; " +
  "script-src 'none'; base-uri 'none'; form-action 'none'";

/** The report's CSS. */
export const REPORT_CSS = `
:root{--fg:#1b1f24;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;--line:#d1d9e0;--good:#1a7f37;--bad:#cf222e;
--veto:#8250df;--fail:#bc4c00;--warn:#9a6700;--code:#eff2f5}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--panel:#151b23;--line:#3d444d;
--good:#3fb950;--bad:#f85149;--veto:#ab7df8;--fail:#db6d28;--warn:#d29922;--code:#1f2630}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:14px;margin:12px 0 4px}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
pre{background:var(--code);padding:8px 10px;border-radius:6px;overflow:auto;max-height:24em;white-space:pre-wrap;
overflow-wrap:anywhere;margin:4px 0}
.task{font-size:15px;max-height:12em}
nav a{margin-right:14px}a{color:inherit}
.muted{color:var(--muted)}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:8px 0}
.facts dt{color:var(--muted)}.facts dd{margin:0;overflow-wrap:anywhere}
.badge{display:inline-block;padding:0 7px;border-radius:10px;border:1px solid currentColor;font-size:12px;
line-height:18px;font-weight:600;white-space:nowrap;vertical-align:1px}
.t-good{color:var(--good)}.t-bad{color:var(--bad)}.t-veto{color:var(--veto)}.t-warn{color:var(--warn)}
.t-muted{color:var(--muted)}.t-fail{color:var(--fail);border-style:dashed}
.badge.t-veto{background:color-mix(in srgb,var(--veto) 14%,transparent)}
.badge.t-bad{background:color-mix(in srgb,var(--bad) 12%,transparent)}
.badge.t-fail{background:color-mix(in srgb,var(--fail) 12%,transparent)}
.big{font-size:14px;padding:1px 10px}
.panel{background:var(--panel);border:1px solid var(--line);border-radius:8px;padding:10px 14px;margin:8px 0}
.attention li{margin:2px 0}
.attention .veto{border-left:4px solid var(--veto);padding-left:8px;list-style:none}
.attention .fail{border-left:4px dashed var(--fail);padding-left:8px;list-style:none}
.attention .err{border-left:4px solid var(--bad);padding-left:8px;list-style:none}
.attention ul{padding-left:0}
details{margin:3px 0}
summary{cursor:pointer}
details.chunk{border:1px solid var(--line);border-radius:8px;padding:4px 10px}
details.chunk>summary{font-weight:600}
details.step{border-left:3px solid var(--line);padding:1px 0 1px 8px}
details.step.k-veto{border-left-color:var(--veto)}details.step.k-fail{border-left:3px dashed var(--fail)}
details.step.k-bad{border-left-color:var(--bad)}details.step.k-warn{border-left-color:var(--warn)}details.step.k-good{border-left-color:var(--good)}
.step>summary .n{color:var(--muted);display:inline-block;min-width:4.5em}
.step .body{padding:4px 0 8px 8px}.step>pre{margin:4px 0 8px 8px}
table{border-collapse:collapse;width:100%;margin:4px 0}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);vertical-align:top;overflow-wrap:anywhere}
th{color:var(--muted);font-weight:600;font-size:12px}
tr.m-veto td:first-child{box-shadow:inset 4px 0 var(--veto)}tr.m-policy_failure td:first-child{box-shadow:inset 4px 0 var(--fail)}
tr.m-error td:first-child{box-shadow:inset 4px 0 var(--bad)}
.action{border:1px solid var(--line);border-radius:6px;padding:6px 10px;margin:6px 0}
.cut{display:block;color:var(--muted);font-style:italic;margin:4px 0}
.tally .badge{margin-right:6px}
footer{margin-top:32px;color:var(--muted);font-size:12px}
`;
