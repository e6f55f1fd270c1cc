/**
 * The web app's assets, embedded in the code (and so in the single binary):
 * the stylesheet (the report's, plus the app's bar, tables, forms and focus
 * rings) and the one small client script, which applies what the server
 * pushes over server-sent events and adds keyboard shortcuts. Nothing is read
 * from files at run time, nothing loads from elsewhere.
 *
 * @module
 */
import { REPORT_CSS } from "../report/style.ts";

/** The stylesheet, served at `/assets/app.css`. */
export const APP_CSS: string = REPORT_CSS + `
.bar{position:sticky;top:0;z-index:2;display:flex;gap:18px;align-items:center;padding:8px 24px;
background:var(--panel);border-bottom:1px solid var(--line)}
.bar .brand{font-weight:700;font-size:16px;text-decoration:none;letter-spacing:.3px}
.bar a{text-decoration:none;padding:4px 8px;border-radius:6px}.bar a[aria-current=page]{background:var(--code);font-weight:600}
.bar .right{margin-left:auto;display:flex;gap:12px;align-items:center}
.live-dot{display:inline-block;width:8px;height:8px;border-radius:50%;background:var(--muted);margin-right:6px}
.live-on .live-dot{background:var(--good)}
a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,summary:focus-visible,tr:focus-visible{
outline:2px solid #0969da;outline-offset:2px}
form.filters{display:flex;flex-wrap:wrap;gap:8px 12px;align-items:end;margin:12px 0}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:var(--muted);gap:2px}
input,select,textarea,button{font:inherit;color:inherit;background:var(--bg);border:1px solid var(--line);
border-radius:6px;padding:4px 8px}
button{cursor:pointer;background:var(--code);font-weight:600}
button.approve{background:var(--good);color:#fff;border-color:var(--good)}
button.reject{background:var(--bad);color:#fff;border-color:var(--bad)}
.approval .warn{color:var(--bad);font-weight:600}
table.runs td{vertical-align:middle}table.runs tr:hover td{background:var(--panel)}
table.runs tr.sel td{background:color-mix(in srgb,#0969da 10%,transparent)}
table.runs td:nth-child(-n+10){white-space:nowrap}
table.runs td.num{text-align:right;font-variant-numeric:tabular-nums}
main:has(table.runs){max-width:none}table.runs{font-size:13px}table.runs th{white-space:nowrap}table.runs td.task{max-width:260px}
table.runs tr.k-blocked td:first-child{box-shadow:inset 4px 0 var(--veto)}
table.runs tr.k-failed td:first-child,table.runs tr.k-crashed td:first-child{box-shadow:inset 4px 0 var(--bad)}
table.runs td.verdicts.has-veto{color:var(--veto)}
table.runs th a{text-decoration:none;color:inherit}
th[aria-sort=descending] a::after{content:" \\2193"}th[aria-sort=ascending] a::after{content:" \\2191"}
td.task{max-width:340px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
td.tags{max-width:180px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.tags code{background:var(--code);border-radius:4px;padding:0 4px;margin-right:4px}
.pager{display:flex;gap:12px;align-items:center;margin:10px 0}
.approval{border:1px solid var(--line);border-left:4px solid var(--warn);border-radius:8px;padding:10px 14px;margin:10px 0}
.approval textarea{width:100%;min-height:3em;margin:6px 0}
.approval .actions{display:flex;gap:10px;align-items:center;flex-wrap:wrap}
.ev summary{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.ev .ph{display:inline-block;min-width:9em;color:var(--muted)}
.cmp td.diff{background:color-mix(in srgb,var(--warn) 14%,transparent)}
.cmp tr.diff td:first-child{box-shadow:inset 4px 0 var(--warn)}
.notice{border-left:4px solid var(--good)}
svg.waterfall{display:block;max-width:1200px;font:11px system-ui,sans-serif;fill:var(--fg)}
svg.waterfall text{fill:var(--fg)}svg.waterfall text.tick{fill:var(--muted)}
svg.waterfall line.tick{stroke:var(--line);stroke-width:1}
svg.waterfall .span{fill:color-mix(in srgb,var(--good) 35%,transparent)}
svg.waterfall .st-failed .span{fill:color-mix(in srgb,var(--bad) 40%,transparent)}
svg.waterfall .st-vetoed .span{fill:color-mix(in srgb,var(--veto) 40%,transparent)}
svg.waterfall .st-running .span,svg.waterfall .st-pending .span{fill:color-mix(in srgb,var(--warn) 40%,transparent)}
svg.waterfall .call{fill:var(--good)}svg.waterfall .call-error{fill:var(--bad)}
svg.waterfall .turn{fill:#0969da}svg.waterfall g[data-step]:hover text{text-decoration:underline}
.mk-veto{fill:var(--veto);color:var(--veto)}.mk-fail{fill:var(--fail);color:var(--fail)}
.mk-approved{fill:var(--good);color:var(--good)}.mk-rejected{fill:var(--bad);color:var(--bad)}
table.turns td.num,table.turns th{font-variant-numeric:tabular-nums}table.turns td.num{text-align:right}
table.turns tr.total{font-weight:700}
table.fleet td.num{text-align:right;font-variant-numeric:tabular-nums}
svg.chart{display:block;max-width:900px;font:11px system-ui,sans-serif}svg.chart .bar{fill:#0969da}
svg.chart text.tick{fill:var(--muted)}svg.chart line.tick{stroke:var(--line)}
.kbd{font-size:12px;color:var(--muted)}kbd{border:1px solid var(--line);border-radius:4px;padding:0 4px;font-size:11px}
`;

/**
 * The client script, served at `/assets/app.js`. It listens to the
 * server-sent events of the URL in `<body data-live>` (messages
 * `{op: "html" | "append" | "reload", target, html}` whose markup the server
 * escaped), shows whether it is connected, and gives the runs table
 * `j`/`k`/Enter and `/` for the task filter (elsewhere: the search box, or the search page).
 */
export const APP_JS: string = `"use strict";
(function () {
  var body = document.body, url = body.getAttribute("data-live");
  var status = document.getElementById("live");
  if (url && window.EventSource) {
    var es = new EventSource(url);
    es.onopen = function () { if (status) { status.classList.add("live-on"); status.lastChild.textContent = "live"; } };
    es.onerror = function () { if (status) { status.classList.remove("live-on"); status.lastChild.textContent = "reconnecting"; } };
    es.onmessage = function (m) {
      var msg; try { msg = JSON.parse(m.data); } catch (e) { return; }
      if (msg.op === "reload") { es.close(); location.reload(); return; }
      var el = msg.target && document.getElementById(msg.target);
      if (!el) return;
      // A row picked with j/k keeps its focus when the table is drawn again (else Enter would open nothing).
      var picked = at >= 0 && el.contains(document.activeElement);
      if (msg.op === "html") el.innerHTML = msg.html;
      else if (msg.op === "append") el.insertAdjacentHTML("beforeend", msg.html);
      var count = msg.count && document.getElementById(msg.count.target);
      if (count) count.textContent = msg.count.text;
      if (picked) select(at);
    };
    window.addEventListener("pagehide", function () { es.close(); });
  }
  function rows() { return Array.prototype.slice.call(document.querySelectorAll("table.runs tbody tr[data-href]")); }
  var at = -1;
  function select(i) {
    var r = rows(); if (!r.length) return;
    at = Math.max(0, Math.min(r.length - 1, i));
    r.forEach(function (x, j) { x.classList.toggle("sel", j === at); });
    var a = r[at].querySelector("a"); if (a) a.focus();
  }
  document.addEventListener("keydown", function (e) {
    var t = e.target, typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT");
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "j") { select(at + 1); e.preventDefault(); }
    else if (e.key === "k") { select(at - 1); e.preventDefault(); }
    else if (e.key === "/") {
      // The runs' task filter, the search box, or (elsewhere) the search page.
      var q = document.getElementById("q-task") || document.getElementById("q-search");
      if (q) q.focus(); else location.href = "/search";
      e.preventDefault();
    }
  });
})();
`;
