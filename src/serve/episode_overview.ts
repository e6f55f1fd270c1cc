/**
 * The top of an episode's page, before its steps: the waterfall of the steps
 * shown (see `waterfall.ts`) and the model-turn table (model, tokens, cost
 * per turn, per model and in total).
 *
 * @module
 */
import { markup, type SafeHtml } from "../report/escape.ts";
import { formatCount, formatMs, formatUsd } from "../report/metric_format.ts";
import type { ReportModel, ReportStep } from "../report/model.ts";
import { type ModelTurns, readModelTurns, TURNS_SHOWN, type TurnTokens } from "./model_turns.ts";
import { cachedReport } from "./report_cache.ts";
import { statSync } from "node:fs";
import { join } from "node:path";
import { waterfall } from "./waterfall.ts";

function tokenCells(t: TurnTokens): SafeHtml {
  return markup`<td class="num">${formatCount(t.input)}</td><td class="num">${
    formatCount(t.output)
  }</td><td class="num">${formatCount(t.cache_write)}</td><td class="num">${formatCount(t.cache_read)}</td>`;
}

const cost = (usd: number | null) => usd === null ? markup`<span class="muted">no price</span>` : formatUsd(usd);

/**
 * The model-turn table (empty when the run made no model call).
 *
 * @example
 * ```ts
 * import { readModelTurns } from "./model_turns.ts";
 * import { turnsTable } from "./episode_overview.ts";
 * turnsTable(readModelTurns(".noema/episodes/ep_1")).value;
 * ```
 */
export function turnsTable(t: ModelTurns): SafeHtml {
  if (t.total_turns === 0) return markup``;
  const head =
    markup`<tr><th>turn</th><th>model</th><th>started</th><th>took</th><th>input</th><th>output</th><th>cache write</th><th>cache read</th><th>cost</th></tr>`;
  const rows = t.turns.map((r) =>
    markup`<tr data-turn="${r.turn}"${
      r.error ? markup` class="m-error" title="${r.error}"` : ""
    }><td class="num">${r.turn}</td><td>${r.model}</td><td class="mono">${
      r.started_at?.slice(11, 23) ?? "-"
    }</td><td class="num">${r.duration_ms === null ? "-" : formatMs(r.duration_ms)}</td>${
      tokenCells(r)
    }<td class="num">${cost(r.usd)}</td></tr>`
  );
  const more = t.total_turns > TURNS_SHOWN
    ? markup`<tr><td colspan="9" class="muted">… ${
      t.total_turns - TURNS_SHOWN
    } more turns (model.jsonl has them all; the sums below count every one)</td></tr>`
    : "";
  const models = t.by_model.map((m) =>
    markup`<tr class="per-model"><th colspan="2">${m.model}</th><td colspan="2" class="num">${m.calls} ${
      m.calls === 1 ? "call" : "calls"
    }</td>${tokenCells(m)}<td class="num">${cost(m.usd)}</td></tr>`
  );
  const total = markup`<tr class="total"><th colspan="2">total</th><td colspan="2" class="num">${t.total.calls} ${
    t.total.calls === 1 ? "call" : "calls"
  }</td>${tokenCells(t.total)}<td class="num" data-total-usd="${t.total.usd ?? ""}">${cost(t.total.usd)}</td></tr>`;
  return markup`<section id="model-turns"><h2>Model turns</h2>
<table class="turns">${head}${rows}${more}${models}${total}</table>
<p class="muted">Tokens as the model reported them (input includes the cached ones); cost at the prices summary.json recorded, else the built-in table.</p></section>`;
}

/**
 * The overview: the waterfall of the steps shown, then the model turns.
 *
 * @example
 * ```ts
 * import { buildReport } from "../report/model.ts";
 * import { readModelTurns } from "./model_turns.ts";
 * import { overview } from "./episode_overview.ts";
 * const m = buildReport({ id: "ep_1", dir: ".noema/episodes/ep_1" });
 * overview(m, m.steps, readModelTurns(".noema/episodes/ep_1"), false);
 * ```
 */
export function overview(
  m: ReportModel,
  steps: readonly ReportStep[],
  turns: ModelTurns,
  paged: boolean,
): SafeHtml {
  const note = paged ? " (the steps of this page, on their own time axis)" : "";
  return markup`<section id="waterfall"><h2>Timeline</h2>
<p class="muted legend">Each row is a step${note}: its bar runs from its first verdict to its last action's end, tool calls darker inside it; <span class="mk-veto">◆</span> a veto, <span class="mk-fail">◆</span> a policy failure, <span class="mk-approved">◆</span> approved, <span class="mk-rejected">◆</span> rejected. Hover for details; click a row for the step.</p>
<div id="waterfall-live">${waterfall(m, steps, turns.turns, paged)}</div></section>
${turnsTable(turns)}`;
}

/** Steps on an episode page's first page (as `episode.ts` pages them). */
const STEPS_PER_PAGE = 200;

/** Events files above this size are not redrawn live (each redraw reads the run again). */
const LIVE_REDRAW_BYTES = 32 * 1024 * 1024;

/**
 * The waterfall of a live episode's page of steps (`stepsPage`), drawn again (see
 * `episodeTicker`); null for a run too big to read again and again.
 *
 * @example
 * ```ts
 * import { liveWaterfall } from "./episode_overview.ts";
 * liveWaterfall("ep_1", ".noema/episodes/ep_1", 1);
 * ```
 */
export function liveWaterfall(id: string, dir: string, stepsPage = 1): string | null {
  try {
    if (statSync(join(dir, "events.jsonl")).size > LIVE_REDRAW_BYTES) return null;
  } catch {
    return null;
  }
  const m = cachedReport(id, dir);
  const pages = Math.max(1, Math.ceil(m.steps.length / STEPS_PER_PAGE)), at = Math.min(stepsPage, pages);
  const steps = m.steps.slice((at - 1) * STEPS_PER_PAGE, at * STEPS_PER_PAGE);
  return waterfall(m, steps, readModelTurns(dir).turns, pages > 1).value;
}
