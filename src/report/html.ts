/**
 * Renders a {@link ReportModel} as one self-contained HTML page: inline CSS,
 * no scripts, a Content Security Policy that forbids every request, and every
 * value from the artifacts escaped (see `escape.ts`). Long sections are
 * `<details>` elements, closed when big: steps come in chunks of 100, so an
 * episode of 10,000 steps renders quickly and stays readable.
 *
 * @module
 */
import { formatMs } from "../cli/format.ts";
import { classFor, type HtmlValue, markup, raw, type SafeHtml } from "./escape.ts";
import type { ReportModel, ReportStep, TimelineRow } from "./model.ts";
import { badge, excerptHtml } from "./parts.ts";
import { tailHeading } from "../read/stderr_tail.ts";
import { decisionText } from "../read/step_decisions.ts";
import { stepsSection } from "./steps_html.ts";
import { formatMetric } from "./metric_format.ts";
import { REPORT_CSP, REPORT_CSS } from "./style.ts";

function ms(x: number | null): string {
  return x === null ? "-" : formatMs(x);
}

function header(m: ReportModel): SafeHtml {
  const waiting = m.lifecycle === "non-terminal" ? markup` ${badge("waiting")} (no summary.json yet)` : "";
  const facts: [string, HtmlValue][] = [
    ["status", markup`${badge(m.status)}${waiting}`],
    ["outcome", m.outcome === null ? "-" : badge(m.outcome)],
    ["adapter result", m.adapter_result ?? "-"],
    ["started", m.started_at ?? "-"],
    ["duration", ms(m.duration_ms)],
    ...m.facts,
  ];
  const outcome = m.outcome !== null ? markup` ${badge(m.outcome, undefined, " big")}` : "";
  return markup`<header>
<h1>Episode <code>${m.episode_id}</code> ${badge(m.status, undefined, " big")}${outcome}</h1>
<h3>Task</h3>${excerptHtml(m.task, "task")}
${m.answer !== null ? markup`<h3>Answer</h3>${excerptHtml(m.answer)}` : ""}
<dl class="facts">${facts.map(([k, v]) => markup`<dt>${k}</dt><dd>${v}</dd>`)}</dl>
${m.error !== null ? markup`<div class="panel t-bad"><b>error</b> ${m.error}</div>` : ""}
${m.waiting !== null ? markup`<div class="panel t-warn"><b>waiting</b> ${m.waiting}</div>` : ""}
</header>`;
}

/** Whether a step may be listed under "Needs attention" (a verdict that vetoed or failed, an action in error). */
function needsAttention(s: ReportStep): boolean {
  return s.verdicts.some((v) => v.failure || v.veto) || s.actions.some((a) => a.result_status === "error");
}

function attentionItems(steps: readonly ReportStep[]): SafeHtml[] {
  const items: SafeHtml[] = [];
  for (const s of steps) {
    // Made only for a step listed (a long run lists few of its steps): not once per step.
    if (s.decision === null && s.status !== "failed" && !needsAttention(s)) continue;
    const link = markup`<a href="#s-${s.index}">#${s.index} <code>${s.id}</code></a>`;
    const gov = s.verdicts.some((x) => x.faculty === "governance");
    // A human decided on the step: "rejected by WHO: note" is what blocked it; an approved step ran (not listed).
    if (s.decision?.decision === "rejected") {
      items.push(markup`<li class="veto">${link} ${badge("rejected", "veto")} ${decisionText(s.decision)}</li>`);
    }
    for (const v of s.verdicts) {
      if (gov && v.faculty !== "governance") continue;
      const source = markup`<code>${v.source ?? "-"}</code>`;
      if (v.failure) {
        items.push(
          markup`<li class="fail">${link} ${badge("policy failure", "policy_failure")} ${source} ${v.message}</li>`,
        );
      } else if (v.veto && s.decision !== null && v.enforced !== false) {
        continue; // the veto asked for the human's decision, shown instead
      } else if (v.veto) {
        const label = v.enforced === false ? "would veto (audit)" : "VETO";
        items.push(markup`<li class="veto">${link} ${badge(label, "veto")} ${source} ${v.message}</li>`);
      }
    }
    if (s.status === "failed" || s.actions.some((a) => a.result_status === "error")) {
      const a = s.actions.findLast((x) => x.result_status === "error");
      const tail = a?.stderr_tail
        ? markup`<div class="stderr-tail"><span class="muted">${tailHeading(a.stderr_tail)}</span><pre>${
          a.stderr_tail.lines.join("\n")
        }</pre></div>`
        : "";
      items.push(
        markup`<li class="err">${link} ${badge("failed", "failed")} ${a?.error ?? a?.outcome ?? ""}${tail}</li>`,
      );
    }
  }
  return items;
}

function attention(m: ReportModel): SafeHtml {
  const items = attentionItems(m.steps);
  const problems = m.problems.map((p) => markup`<li class="err">${badge("problem", "error")} ${p}</li>`);
  if (items.length === 0 && problems.length === 0) return markup``;
  const shown = items.slice(0, 200);
  const c = m.counts;
  const vetoes = badge(`${c.vetoes} ${c.vetoes === 1 ? "veto" : "vetoes"}`, c.vetoes ? "veto" : "none");
  const would = c.would_vetoes ? markup` ${badge(`${c.would_vetoes} would veto (audit)`, "audit")}` : "";
  const rejected = c.rejected ? markup` ${badge(`${c.rejected} rejected`, "veto")}` : "";
  const failures = badge(
    `${c.policy_failures} policy ${c.policy_failures === 1 ? "failure" : "failures"}`,
    c.policy_failures ? "policy_failure" : "none",
  );
  const more = items.length > shown.length
    ? markup`<p class="muted">… ${items.length - shown.length} more (see the steps below)</p>`
    : "";
  return markup`<section id="attention"><h2>Needs attention</h2>
<p class="tally">${vetoes}${rejected}${would} ${failures}</p>
<div class="attention panel"><ul>${problems}${shown}</ul>${more}</div></section>`;
}

function cutListHtml(label: string, mark: string, l: { items: string[]; total: number }): SafeHtml {
  const more = l.total > l.items.length ? markup`<span class="cut">… ${l.total - l.items.length} more</span>` : "";
  return markup`<details${l.total <= 50 ? raw(" open") : ""}><summary>${mark} ${label}: ${l.total}</summary><pre>${
    l.items.join("\n")
  }${more}</pre></details>`;
}

function verification(m: ReportModel): SafeHtml {
  const v = m.verification;
  if (v === null) {
    return markup`<section id="verification"><h2>Verification</h2>
<p class="muted">Not available: the run has not finished (no summary.json).</p></section>`;
  }
  const result = (p: boolean | null) => (p === null ? badge("n/a") : p ? badge("passed") : badge("failed"));
  const rows = v.assertions.map((a) =>
    markup`<tr><td>${a.name}</td><td><code>${a.target}</code></td><td>${result(a.passed)}</td><td>${a.reason}</td></tr>`
  );
  const table = rows.length
    ? markup`<table><tr><th>assertion</th><th>target</th><th>result</th><th>reason</th></tr>${rows}</table>`
    : "";
  const diff = v.diff === null
    ? markup`<p class="muted">No diff: snapshots are taken only when the run has assertions.</p>`
    : [
      cutListHtml("added", "A", v.diff.added),
      cutListHtml("modified", "M", v.diff.modified),
      cutListHtml("deleted", "D", v.diff.deleted),
    ];
  return markup`<section id="verification"><h2>Verification</h2>
<dl class="facts"><dt>outcome</dt><dd>${m.outcome === null ? "-" : badge(m.outcome)}</dd>
<dt>assertions</dt><dd>${v.provided ? `${v.assertions.length} provided` : "none provided"} · ${result(v.passed)}</dd>
${v.error !== null ? markup`<dt>error</dt><dd class="t-bad">${v.error}</dd>` : ""}</dl>
${table}<h3>Workspace diff</h3>${diff}</section>`;
}

function metrics(m: ReportModel): SafeHtml {
  const c = m.counts;
  const phases = Object.entries(c.by_phase).map(([k, n]) => `${k} ${n}`).join(" · ");
  const rows: [string, string][] = [
    ...m.metrics.map(([k, v]) => formatMetric(k, v)),
    ["events", `${c.events}${phases ? ` (${phases})` : ""}`],
    ["vetoes / would veto / policy failures", `${c.vetoes} / ${c.would_vetoes} / ${c.policy_failures}`],
  ];
  if (c.damaged_lines) rows.push(["damaged event lines", String(c.damaged_lines)]);
  return markup`<section id="metrics"><h2>Metrics</h2>
<table>${rows.map(([k, v]) => markup`<tr><th>${k}</th><td class="mono">${v}</td></tr>`)}</table>${
    m.metrics.length
      ? markup`<p class="muted">Times are wall-clock; costs are estimates at the prices recorded.</p>`
      : ""
  }</section>`;
}

function timelineRow(r: TimelineRow): SafeHtml {
  const mark = r.mark === null
    ? ""
    : raw(` class="m-${classFor(r.mark, ["veto", "policy_failure", "error"], "error")}"`);
  const dt = r.delta_ms === null ? "?" : `+${formatMs(r.delta_ms)}`;
  return markup`<tr${mark}><td class="mono">${r.n}</td><td class="mono">${dt}</td><td>${r.phase}</td><td class="mono">${r.summary}</td></tr>
`;
}

function timeline(m: ReportModel): SafeHtml {
  const t = m.timeline;
  const gap = t.omitted > 0
    ? markup`<tr><td colspan="4" class="muted">… ${
      t.omitted.toLocaleString("en-US")
    } events not shown (all of them: <code>noema events ${m.episode_id}</code>)</td></tr>`
    : "";
  const shown = t.omitted > 0 ? ` (first ${t.head.length} and last ${t.tail.length} shown)` : "";
  return markup`<section id="timeline"><h2>Timeline</h2>
<details${m.counts.events <= 60 ? raw(" open") : ""}><summary>${
    m.counts.events.toLocaleString("en-US")
  } events${shown}</summary>
<table><tr><th>#</th><th>time</th><th>phase</th><th>summary</th></tr>
${t.head.map(timelineRow)}${gap}${t.tail.map(timelineRow)}</table></details></section>`;
}

/**
 * The sections of one episode's page, as `noema report` and `noema serve`
 * show them: header, navigation, what needs attention, plan and actions,
 * verification, metrics and the timeline. `options.steps` shows only the
 * steps from index `[0]` up to `[1]` (a page of a long plan, `options.stepsNav`
 * before it); what needs attention still covers every step. `options.overview`
 * comes before the steps (the served page's waterfall and model turns).
 *
 * @example
 * ```ts
 * import { locateEpisode } from "../store/layout.ts";
 * import { buildReport } from "./model.ts";
 * import { reportSections } from "./html.ts";
 * const body = reportSections(buildReport(locateEpisode("ep_01K9RBBMXXRSFWR49SXFGF4SPR"))).value;
 * ```
 */
export function reportSections(
  m: ReportModel,
  options: { steps?: readonly [number, number]; stepsNav?: SafeHtml; overview?: SafeHtml } = {},
): SafeHtml {
  const shown = options.steps ? { ...m, steps: m.steps.slice(options.steps[0], options.steps[1]) } : m;
  return markup`${header(m)}
<nav class="muted"><a href="#steps">Plan &amp; actions</a> <a href="#verification">Verification</a> <a href="#metrics">Metrics</a> <a href="#timeline">Timeline</a></nav>
${attention(m)}
${options.overview ?? ""}${options.stepsNav ?? ""}${stepsSection(shown)}
${verification(m)}
${metrics(m)}
${timeline(m)}`;
}

/**
 * Renders the whole report page.
 *
 * @example
 * ```ts
 * import { locateEpisode } from "../store/layout.ts";
 * import { buildReport } from "./model.ts";
 * import { renderReport } from "./html.ts";
 * const page = renderReport(buildReport(locateEpisode("ep_01K9RBBMXXRSFWR49SXFGF4SPR")));
 * ```
 */
export function renderReport(m: ReportModel): string {
  const title = `noema report · ${m.episode_id} · ${m.status}${m.outcome ? ` · ${m.outcome}` : ""}`;
  return markup`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${REPORT_CSP}">
<meta name="referrer" content="no-referrer">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="noema ${m.noema_version}">
<title>${title}</title>
<style>${raw(REPORT_CSS)}</style></head>
<body><main>
${reportSections(m)}
<footer>Generated by noema ${m.noema_version} at ${m.generated_at} from the artifacts of episode ${m.episode_id}.
A self-contained page: no scripts, no requests. Excerpts of inputs and outputs are cut to ${m.excerpt_chars} characters.</footer>
</main></body></html>
`.value;
}
