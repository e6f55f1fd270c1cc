/**
 * The "Plan & actions" section of the report: every step with its status,
 * its policy verdicts and its actions (input, output, exit code). Each step is
 * a `<details>`; more than {@link CHUNK} steps are grouped in closed chunks so
 * a 10,000-step episode stays quick to render and to scan (a chunk's summary
 * says how many steps in it were vetoed or hit a policy failure).
 *
 * @module
 */
import { formatMs } from "../cli/format.ts";
import { markup, raw, type SafeHtml } from "./escape.ts";
import type { ReportModel, ReportStep } from "./model.ts";
import type { ReportAction, ReportVerdict } from "./steps.ts";
import type { Excerpt } from "./excerpt.ts";
import { badge, excerptHtml } from "./parts.ts";
import { decisionText } from "../read/step_decisions.ts";

/** Steps per collapsed chunk. */
export const CHUNK = 100;
/** Episodes with at most this many steps show every step open. */
const OPEN_ALL = 10;

/**
 * The verdicts that decided about a step: its governance decisions, or
 * without governance (`--governance off`) its direction verdicts.
 */
function deciding(s: ReportStep): ReportVerdict[] {
  const gov = s.verdicts.filter((v) => v.faculty === "governance");
  return gov.length ? gov : s.verdicts;
}

/** The step's kind of trouble: a policy failure, a veto, a would-veto (audit), an error, or none. */
function trouble(s: ReportStep): "fail" | "veto" | "warn" | "bad" | "good" | "" {
  const d = deciding(s);
  if (d.some((v) => v.failure)) return "fail";
  // A veto that asked for a human's approval, given: the step ran.
  const approved = s.decision?.decision === "approved";
  if (s.status === "vetoed" || (!approved && d.some((v) => v.veto && v.enforced !== false))) return "veto";
  if (s.status === "failed" || s.actions.some((a) => a.result_status === "error")) return "bad";
  if (d.some((v) => v.veto)) return "warn";
  return s.status === "done" ? "good" : "";
}

function verdictRow(v: ReportVerdict): SafeHtml {
  let verdict: SafeHtml;
  if (v.failure) verdict = badge("policy failure", "policy_failure");
  else if (v.veto) verdict = badge(v.enforced === false ? "veto (audit: not enforced)" : "VETO", "veto");
  else verdict = badge(v.verdict, v.verdict === "none" ? "skipped" : v.verdict);
  const status = `${v.status ?? "-"}${v.confidence !== null ? ` · ${v.confidence}` : ""}`;
  return markup`<tr><td>${v.stage === "review" ? `${v.faculty} (review)` : v.faculty}</td><td><code>${
    v.source ?? "-"
  }</code></td><td>${verdict}</td><td>${status}</td><td>${v.message}</td></tr>
`;
}

/**
 * One action: result, exit code, duration, error, input and output excerpts.
 *
 * @example
 * ```ts
 * // actionHtml(model.steps[0].actions[0]).value
 * ```
 */
export function actionHtml(a: ReportAction): SafeHtml {
  const bits = [
    a.tool !== null ? markup`<code>${a.tool}</code>` : "",
    badge(a.result_status ?? "?"),
    a.exit_code !== null ? markup`exit code <b>${a.exit_code}</b>` : "",
    a.duration_ms !== null ? formatMs(a.duration_ms) : "",
    a.outcome,
  ].filter((x) => x !== "");
  const id = a.id !== null ? markup`<code class="muted">${a.id}</code> ` : "";
  return markup`<div class="action"><div>${id}${bits.map((b, i) => markup`${i ? " · " : ""}${b}`)}</div>
${a.error !== null ? markup`<div class="t-bad">${a.error}</div>` : ""}
<h3>input</h3>${excerptHtml(a.input)}
${a.output !== null ? markup`<h3>output</h3>${excerptHtml(a.output)}` : ""}
${a.stdout !== null ? markup`<h3>stdout</h3>${excerptHtml(a.stdout)}` : ""}
${a.stderr !== null ? markup`<h3>stderr</h3>${excerptHtml(a.stderr)}` : ""}</div>`;
}

function stepFlags(s: ReportStep): SafeHtml[] {
  const flags: SafeHtml[] = [];
  // A human's decision replaces the veto that asked for it.
  if (s.decision) flags.push(badge(decisionText(s.decision), s.decision.decision === "approved" ? "ok" : "veto"));
  for (const v of deciding(s)) {
    if (v.failure) flags.push(badge(`policy failure ${v.source ?? ""}`.trim(), "policy_failure"));
    else if (v.veto && s.decision !== null && v.enforced !== false) continue;
    else if (v.veto) {
      flags.push(badge(`${v.enforced === false ? "would veto" : "VETO"} ${v.source ?? ""}`.trim(), "veto"));
    }
  }
  const exit = s.actions.findLast((a) => a.exit_code !== null)?.exit_code;
  if (exit !== undefined && exit !== null) flags.push(markup`<span class="muted">exit ${exit}</span>`);
  return flags;
}

/** Actions (and verdicts) listed one by one per step: the first and last half; the rest are in the events. */
const PER_STEP_SHOWN = 200;

/** The first and last {@link PER_STEP_SHOWN}/2 of `xs`, and how many were left out between them. */
function bounded<T>(xs: readonly T[]): { head: readonly T[]; tail: readonly T[]; left: number } {
  if (xs.length <= PER_STEP_SHOWN) return { head: xs, tail: [], left: 0 };
  const half = PER_STEP_SHOWN / 2;
  return { head: xs.slice(0, half), tail: xs.slice(-half), left: xs.length - PER_STEP_SHOWN };
}

const leftOut = (n: number, what: string) => `… ${n.toLocaleString("en")} more ${what} (every one is in the events)`;

/** The body of a step as tables and blocks (small episodes). */
function richBody(s: ReportStep, t: string): SafeHtml {
  const verdicts = s.verdicts.length
    ? markup`<table><tr><th>faculty</th><th>policy / rule</th><th>verdict</th><th>status</th><th>message</th></tr>${
      s.verdicts.map(verdictRow)
    }</table>`
    : markup`<p class="muted">No policy verdicts.</p>`;
  const decided = s.decision
    ? markup`<p class="decision"><b>${decisionText(s.decision)}</b>${
      s.decision.at !== null ? markup` <span class="muted">at ${s.decision.at}</span>` : ""
    } <span class="muted">checkpoint <code>${s.decision.checkpoint_id}</code></span></p>`
    : "";
  const shown = bounded(s.actions);
  const actions = s.actions.length
    ? markup`${shown.head.map(actionHtml)}${
      shown.left ? markup`<p class="muted">${leftOut(shown.left, "actions")}</p>` : ""
    }${shown.tail.map(actionHtml)}`
    : markup`<p class="muted">${t === "veto" || t === "fail" ? "Blocked: no action ran." : "No action recorded."}</p>`;
  return markup`${verdicts}${decided}${actions}`;
}

function excerptText(e: Excerpt): string {
  return e.cut === 0 ? e.head : `${e.head}\n… ${e.cut} characters cut …\n${e.tail}`;
}

/** The body of a step as one block of text (big episodes: few elements per step, quick to render). */
function compactBody(s: ReportStep): SafeHtml {
  const lines: string[] = [];
  const silent = s.verdicts.filter((v) => v.faculty === "direction" && v.verdict === "none" && !v.failure);
  if (silent.length) lines.push(`no verdict from ${silent.map((v) => v.source ?? "?").join(", ")}`);
  for (const v of s.verdicts) {
    if (silent.includes(v)) continue;
    const what = v.failure
      ? "POLICY FAILURE"
      : v.veto
      ? (v.enforced === false ? "VETO (audit)" : "VETO")
      : v.verdict ?? "-";
    lines.push(
      `${(v.stage === "review" ? `${v.faculty} (review)` : v.faculty).padEnd(10)}  ${(v.source ?? "-").padEnd(28)}  ${
        what.padEnd(12)
      }  ${v.status ?? "-"}  ${v.message}`,
    );
  }
  if (s.verdicts.length === 0) lines.push("no policy verdicts");
  if (s.decision) lines.push(decisionText(s.decision));
  const shown = bounded(s.actions);
  for (const a of [...shown.head, ...shown.tail]) {
    if (shown.left && a === shown.tail[0]) lines.push("", leftOut(shown.left, "actions"));
    const head = [
      a.id,
      a.tool,
      a.result_status,
      a.exit_code !== null ? `exit code ${a.exit_code}` : null,
      a.duration_ms !== null ? formatMs(a.duration_ms) : null,
      a.outcome,
    ].filter((x) => x !== null && x !== "");
    lines.push("", `action ${head.join(" · ")}`);
    if (a.error !== null) lines.push(`error: ${a.error}`);
    lines.push(`input: ${excerptText(a.input)}`);
    if (a.output !== null) lines.push(`output: ${excerptText(a.output)}`);
    if (a.stdout !== null) lines.push(`stdout: ${excerptText(a.stdout)}`);
    if (a.stderr !== null) lines.push(`stderr: ${excerptText(a.stderr)}`);
  }
  if (s.actions.length === 0) lines.push("", "no action ran");
  return markup`<pre>${lines.join("\n")}</pre>`;
}

function stepHtml(s: ReportStep, open: boolean, rich: boolean): SafeHtml {
  const t = trouble(s);
  const risk = s.risk_tags.length ? markup` <span class="muted">risk: ${s.risk_tags.join(", ")}</span>` : "";
  const attrs = markup` class="step k-${raw(t || "none")}" id="s-${s.index}"${open ? raw(" open") : ""}`;
  const what = markup`${badge(s.status)} ${s.description.slice(0, 300)} ${stepFlags(s)}${risk}`;
  // Big episodes: as few elements per step as possible (no spans in the summary, the body is one <pre>).
  if (!rich) {
    return markup`<details${attrs}><summary>#${s.index} ${s.id} ${s.kind} ${what}</summary>${compactBody(s)}</details>
`;
  }
  return markup`<details${attrs}><summary><span class="n">#${s.index}</span> <code>${s.id}</code> <span class="muted">${s.kind}</span> ${what}</summary>
<div class="body">${richBody(s, t)}</div></details>
`;
}

function tally(steps: readonly ReportStep[]): string {
  const t: Record<string, number> = {};
  for (const s of steps) t[s.status] = (t[s.status] ?? 0) + 1;
  return Object.entries(t).map(([k, n]) => `${n} ${k}`).join(" · ");
}

function chunkHtml(steps: readonly ReportStep[]): SafeHtml {
  const vetoes = steps.filter((s) => trouble(s) === "veto").length;
  const fails = steps.filter((s) => trouble(s) === "fail").length;
  const errors = steps.filter((s) => trouble(s) === "bad").length;
  const would = steps.filter((s) => trouble(s) === "warn").length;
  const flags = [
    vetoes ? badge(`${vetoes} vetoed`, "veto") : "",
    fails ? badge(`${fails} with a policy failure`, "policy_failure") : "",
    errors ? badge(`${errors} failed`, "error") : "",
    would ? badge(`${would} would veto (audit)`, "audit") : "",
  ];
  const range = `Steps ${steps[0].index}–${steps[steps.length - 1].index}`;
  return markup`<details class="chunk"><summary>${range} · ${tally(steps)} ${flags}</summary>
${steps.map((s) => stepHtml(s, false, false))}</details>
`;
}

/**
 * The "Plan & actions" section.
 *
 * @example
 * ```ts
 * // stepsSection(buildReport(loc)).value
 * ```
 */
export function stepsSection(m: ReportModel): SafeHtml {
  const steps = m.steps;
  let body: SafeHtml | SafeHtml[];
  if (steps.length === 0) body = markup`<p class="muted">No plan event and no step in events.jsonl.</p>`;
  else if (steps.length <= CHUNK) {
    body = steps.map((s) =>
      stepHtml(s, steps.length <= OPEN_ALL || ["veto", "fail", "bad", "warn"].includes(trouble(s)), true)
    );
  } else {
    body = [];
    for (let i = 0; i < steps.length; i += CHUNK) body.push(chunkHtml(steps.slice(i, i + CHUNK)));
  }
  const source = m.plan_source !== null ? markup` · plan from <code>${m.plan_source}</code>` : "";
  return markup`<section id="steps"><h2>Plan &amp; actions</h2>
<p>${steps.length} steps: ${tally(steps) || "none"} · ${m.counts.actions} ${
    m.counts.actions === 1 ? "action" : "actions"
  }${source}</p>
${body}</section>`;
}
