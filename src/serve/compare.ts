/**
 * Two episodes side by side (a run and its replay, two attempts at one
 * task): their headers, then their steps aligned by position, each row
 * showing both steps' status, deciding verdicts and action results, rows and
 * cells that differ highlighted.
 *
 * @module
 */
import { markup, type SafeHtml } from "../report/escape.ts";
import type { ReportModel, ReportStep } from "../report/model.ts";
import { cachedReport } from "./report_cache.ts";
import { badge } from "../report/parts.ts";
import { page } from "./layout.ts";

/** Most aligned steps shown. */
const MAX_ROWS = 2000;

function verdictWord(s: ReportStep): string {
  const gov = s.verdicts.filter((v) => v.faculty === "governance");
  const d = gov.length ? gov : s.verdicts;
  if (d.some((v) => v.failure)) return "policy failure";
  if (d.some((v) => v.veto && v.enforced !== false)) return "veto";
  if (d.some((v) => v.veto)) return "would veto";
  return d.length ? "allow" : "-";
}

function resultWord(s: ReportStep): string {
  return s.actions.map((a) => a.result_status ?? "?").join(", ") || "-";
}

function cell(s: ReportStep | undefined, what: (s: ReportStep) => string, diff: boolean, asBadge = false): SafeHtml {
  const text = s === undefined ? "—" : what(s);
  const content = asBadge && s !== undefined ? badge(text, text === "veto" ? "veto" : text) : text;
  return markup`<td${diff ? markup` class="diff"` : ""}>${content}</td>`;
}

function stepRow(i: number, a: ReportStep | undefined, b: ReportStep | undefined): SafeHtml {
  const pick = [
    (s: ReportStep) => `${s.id} · ${s.kind}`,
    (s: ReportStep) => s.status,
    verdictWord,
    resultWord,
  ];
  const val = (s: ReportStep | undefined, f: (s: ReportStep) => string) => (s === undefined ? null : f(s));
  const diffs = pick.map((f) => val(a, f) !== val(b, f));
  const any = diffs.some(Boolean);
  return markup`<tr${any ? markup` class="diff"` : ""}><td class="mono">${i + 1}</td>${cell(a, pick[0], diffs[0])}${
    cell(a, pick[1], diffs[1], true)
  }${cell(a, pick[2], diffs[2], true)}${cell(a, pick[3], diffs[3])}${cell(b, pick[0], diffs[0])}${
    cell(b, pick[1], diffs[1], true)
  }${cell(b, pick[2], diffs[2], true)}${cell(b, pick[3], diffs[3])}</tr>
`;
}

function head(m: ReportModel, other: ReportModel): SafeHtml {
  const d = (x: unknown, y: unknown) => (x !== y ? markup` class="diff"` : "");
  return markup`<td><a href="/episodes/${encodeURIComponent(m.episode_id)}"><code>${m.episode_id}</code></a></td>
<td${d(m.status, other.status)}>${badge(m.status)}</td><td${d(m.outcome, other.outcome)}>${
    m.outcome === null ? "-" : badge(m.outcome)
  }</td><td>${m.task.head}</td><td${d(m.steps.length, other.steps.length)}>${m.steps.length}</td>`;
}

/**
 * The compare page of two episode directories (already checked to lie inside the root).
 *
 * @example
 * ```ts
 * import { comparePage } from "./compare.ts";
 * comparePage({ id: "ep_1", dir: ".noema/episodes/ep_1" }, { id: "ep_2", dir: ".noema/episodes/ep_2" }, true);
 * ```
 */
export function comparePage(
  a: { id: string; dir: string },
  b: { id: string; dir: string },
  approvals: boolean,
): string {
  const ma = cachedReport(a.id, a.dir, 200), mb = cachedReport(b.id, b.dir, 200);
  const n = Math.max(ma.steps.length, mb.steps.length);
  const rows: SafeHtml[] = [];
  let differing = 0;
  for (let i = 0; i < n; i++) {
    const row = stepRow(i, ma.steps[i], mb.steps[i]);
    if (row.value.startsWith('<tr class="diff"')) differing++;
    if (i < MAX_ROWS) rows.push(row);
  }
  const more = n > MAX_ROWS ? markup`<p class="muted">… ${n - MAX_ROWS} more steps not shown</p>` : "";
  const body = markup`<h1>Compare</h1>
<table class="cmp"><tr><th>episode</th><th>status</th><th>outcome</th><th>task</th><th>steps</th></tr>
<tr>${head(ma, mb)}</tr><tr>${head(mb, ma)}</tr></table>
<h2>Steps, aligned</h2><p>${
    differing === 0 ? "The steps agree." : `${differing} of ${n} steps differ (highlighted).`
  }</p>
<table class="cmp"><tr><th>#</th><th colspan="4">${ma.episode_id}</th><th colspan="4">${mb.episode_id}</th></tr>
<tr><th></th><th>step</th><th>status</th><th>verdict</th><th>result</th><th>step</th><th>status</th><th>verdict</th><th>result</th></tr>
${rows}</table>${more}`;
  return page({ title: `compare ${ma.episode_id} · ${mb.episode_id}`, current: "compare", body, approvals });
}
