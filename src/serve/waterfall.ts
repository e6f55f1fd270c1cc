/**
 * An episode's timeline as a waterfall: an inline SVG (`data-timeline`) with
 * one row per step (`data-step`: the step's span from its first verdict to
 * its last action's end, its tool calls inside it), the model turns on a lane
 * of their own, and markers where a policy vetoed or failed and where a human
 * approved or rejected; all on one time axis. Server-rendered (no script, no
 * CDN); every text escaped. Each step's row links to the step below.
 *
 * @module
 */
import { formatMs } from "../report/metric_format.ts";
import { classFor, markup, type SafeHtml } from "../report/escape.ts";
import type { ReportModel, ReportStep } from "../report/model.ts";
import type { ModelTurnRow } from "./model_turns.ts";

/** Tool calls drawn in one step's row (the first and last half). */
const MAX_CALLS = 200;

const W = 1000, LABEL = 230, PLOT = W - LABEL - 10, ROW = 16, AXIS = 22;

/** A time span in epoch milliseconds. */
interface Span {
  from: number;
  to: number;
}

const ms = (ts: string | null | undefined): number | null => {
  if (!ts) return null;
  const t = Date.parse(ts);
  return Number.isNaN(t) ? null : t;
};

/** The span of a step: its verdicts, its actions (each from its start to its end), its decision. */
function stepSpan(s: ReportStep): Span | null {
  let from = Infinity, to = -Infinity;
  const see = (a: number | null, b: number | null = a) => {
    if (a === null || b === null) return;
    from = Math.min(from, a);
    to = Math.max(to, b);
  };
  for (const v of s.verdicts) see(ms(v.timestamp));
  for (const a of s.actions) {
    const end = ms(a.timestamp);
    see(end === null ? null : end - (a.duration_ms ?? 0), end);
  }
  return from === Infinity ? null : { from, to };
}

function turnSpan(t: ModelTurnRow): Span | null {
  const from = ms(t.started_at);
  return from === null ? null : { from, to: from + (t.duration_ms ?? 0) };
}

/** The axis: the run's start to its end (or its last thing seen); a page of a long run: that page's steps. */
function axisOf(m: ReportModel, spans: (Span | null)[], paged: boolean): Span | null {
  const seen = spans.filter((s): s is Span => s !== null);
  if (seen.length === 0) return null;
  let from = Math.min(...seen.map((s) => s.from)), to = Math.max(...seen.map((s) => s.to));
  const start = ms(m.started_at);
  if (!paged && start !== null) {
    from = Math.min(from, start);
    if (m.duration_ms !== null) to = Math.max(to, start + m.duration_ms);
  }
  return { from, to: Math.max(to, from + 1) };
}

function ticks(axis: Span): SafeHtml[] {
  const out: SafeHtml[] = [];
  for (let i = 0; i <= 4; i++) {
    const x = LABEL + (PLOT * i) / 4;
    out.push(
      markup`<line class="tick" x1="${x}" y1="${
        AXIS - 4
      }" x2="${x}" y2="100%"></line><text class="tick" x="${x}" y="12" text-anchor="${
        i === 0 ? "start" : i === 4 ? "end" : "middle"
      }">+${formatMs(((axis.to - axis.from) * i) / 4)}</text>`,
    );
  }
  return out;
}

function marker(x: number, y: number, kind: string, title: string): SafeHtml {
  const k = classFor(kind, ["veto", "fail", "approved", "rejected"], "veto");
  return markup`<path class="mk mk-${k}" d="M${x} ${y - 6}l4 6l-4 6l-4-6z"><title>${title}</title></path>`;
}

function stepRow(s: ReportStep, y: number, x: (t: number) => number): SafeHtml {
  const span = stepSpan(s);
  const status = classFor(s.status, ["done", "failed", "vetoed", "running", "pending", "skipped"], "pending");
  const label = `#${s.index} ${s.kind} ${s.description || s.id}`;
  const took = span === null ? "not run" : formatMs(span.to - span.from);
  const bar = span === null
    ? ""
    : markup`<rect class="span" x="${x(span.from)}" y="${y + 3}" width="${
      Math.max(2, x(span.to) - x(span.from))
    }" height="${ROW - 6}"></rect>`;
  // Bounded: a step of 100,000 tool calls drew 100,000 rects (11 MB). The step's bar still spans them all.
  const shownCalls = s.actions.length <= MAX_CALLS
    ? s.actions
    : [...s.actions.slice(0, MAX_CALLS / 2), ...s.actions.slice(-MAX_CALLS / 2)];
  const calls = shownCalls.map((a) => {
    const end = ms(a.timestamp);
    if (end === null) return "";
    const from = x(end - (a.duration_ms ?? 0));
    return markup`<rect class="call${a.result_status === "error" ? " call-error" : ""}" x="${from}" y="${
      y + 5
    }" width="${Math.max(2, x(end) - from)}" height="${ROW - 10}"><title>${a.tool ?? "action"} · ${
      a.duration_ms === null ? "-" : formatMs(a.duration_ms)
    } · ${a.result_status ?? "-"}</title></rect>`;
  });
  const marks = s.verdicts.filter((v) => (v.veto || v.failure) && ms(v.timestamp) !== null).map((v) =>
    marker(x(ms(v.timestamp)!), y + ROW / 2, v.failure ? "fail" : "veto", `${v.source ?? "policy"}: ${v.message}`)
  );
  const d = s.decision;
  if (d !== null && ms(d.at) !== null) {
    marks.push(marker(x(ms(d.at)!), y + ROW / 2, d.decision, `${d.decision} by ${d.by}${d.note ? `: ${d.note}` : ""}`));
  }
  return markup`<g data-step="${s.id}" class="st-${status}"><title>${label} · ${s.status} · ${took}</title><a href="#s-${s.index}"><text x="4" y="${
    y + 12
  }">${label.length > 34 ? `${label.slice(0, 33)}…` : label}</text>${bar}${calls}${marks}</a></g>`;
}

/**
 * The waterfall of `steps` (a page of the episode's steps) and the model turns in their time.
 *
 * @example
 * ```ts
 * import { buildReport } from "../report/model.ts";
 * import { waterfall } from "./waterfall.ts";
 * const m = buildReport({ id: "ep_1", dir: ".noema/episodes/ep_1" });
 * waterfall(m, m.steps, [], false).value; // <svg data-timeline …
 * ```
 */
export function waterfall(
  m: ReportModel,
  steps: readonly ReportStep[],
  turns: readonly ModelTurnRow[],
  paged: boolean,
): SafeHtml {
  const stepSpans = steps.map(stepSpan);
  const axis = axisOf(m, [...stepSpans, ...turns.map(turnSpan)], paged) ?? { from: 0, to: 1 };
  const shownTurns = turns.filter((t) => {
    const s = turnSpan(t);
    return s !== null && s.to >= axis.from && s.from <= axis.to;
  });
  const x = (t: number) => Math.round((LABEL + ((t - axis.from) / (axis.to - axis.from)) * PLOT) * 10) / 10;
  const rows = steps.map((s, i) => stepRow(s, AXIS + i * ROW, x));
  const lane = AXIS + steps.length * ROW;
  const turnRects = shownTurns.map((t) => {
    const s = turnSpan(t)!;
    return markup`<rect class="turn" x="${x(s.from)}" y="${lane + 3}" width="${
      Math.max(2, x(s.to) - x(s.from))
    }" height="${ROW - 6}"><title>turn ${t.turn} · ${t.model} · ${
      t.duration_ms === null ? "-" : formatMs(t.duration_ms)
    } · ${t.input + t.output} tokens</title></rect>`;
  });
  const modelLane = shownTurns.length
    ? markup`<g data-lane="model"><text x="4" y="${
      lane + 12
    }">model turns (${shownTurns.length})</text>${turnRects}</g>`
    : "";
  const height = lane + (shownTurns.length ? ROW : 0) + 4;
  return markup`<svg data-timeline class="waterfall" viewBox="0 0 ${W} ${height}" width="100%" role="img" aria-label="timeline of ${steps.length} steps">${
    ticks(axis)
  }${rows}${modelLane}</svg>`;
}
