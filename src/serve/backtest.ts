/**
 * The backtest page of `noema serve`: the NDJSON report of `noema policy
 * backtest --json`, sent with the page's form (a file or pasted text), shown
 * as its totals, then each flipped action linked to its episode with the
 * recorded and candidate verdicts and reasons, the policy errors, the
 * episodes not reached and those left out.
 *
 * The server runs no backtest itself: that would load policy files (code)
 * named by a web request. The report is only parsed and shown, every value
 * escaped.
 *
 * @module
 */
import { markup, type SafeHtml } from "../report/escape.ts";
import { badge } from "../report/parts.ts";
import { page } from "./layout.ts";
import { HttpError } from "./paths.ts";

/** The largest report the page takes, in characters. */
export const MAX_REPORT = 64 * 1024 * 1024;
/** Most flipped actions shown. */
const MAX_ROWS = 2000;

type Row = Record<string, unknown> & { type?: unknown };
type Decision = { verdict?: unknown; policy_id?: unknown; message?: unknown; errors?: unknown };

const FORM = markup`<form method="post" action="/backtest" enctype="multipart/form-data" class="filters">
<label>Report file<input type="file" name="report" accept=".ndjson,.jsonl,.json,.txt"></label>
<label>or pasted<textarea name="text" rows="4" cols="60" placeholder='{"type":"totals",…}'></textarea></label>
<button type="submit">Show</button></form>
<p class="muted">Make one with <code>noema policy backtest --rules FILE --policy FILE --json &gt; backtest.ndjson</code>.</p>`;

/**
 * The page with the form that takes a report.
 *
 * @example
 * ```ts
 * import { backtestFormPage } from "./backtest.ts";
 * backtestFormPage(true).includes('action="/backtest"'); // true
 * ```
 */
export function backtestFormPage(approvals: boolean): string {
  return page({ title: "Backtest", current: "backtest", body: markup`<h1>Backtest</h1>\n${FORM}`, approvals });
}

/**
 * The report a form sent: its `report` file, else its `text`; a missing, too large or unreadable one is a 400/413.
 *
 * @example
 * ```ts
 * import { backtestUpload } from "./backtest.ts";
 * // const text = await backtestUpload(await c.req.parseBody());
 * ```
 */
export async function backtestUpload(form: Record<string, unknown>): Promise<string> {
  const file = form.report;
  const text = typeof file === "object" && file !== null && "text" in file && (file as File).size > 0
    ? await (file as File).text()
    : typeof form.text === "string"
    ? form.text
    : "";
  if (text.length > MAX_REPORT) throw new HttpError(413, "too_large", `the report is larger than ${MAX_REPORT} bytes`);
  if (text.trim() === "") throw new HttpError(400, "bad_body", "no report: send the file or paste its text");
  return text;
}

/** The report's rows; a line that is not a JSON object, or no totals row, is a 400 naming the line. */
function parseReport(text: string): { rows: Row[]; totals: Row } {
  const rows: Row[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      throw new HttpError(400, "bad_report", `line ${i + 1}: not JSON (${(e as Error).message})`);
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new HttpError(400, "bad_report", `line ${i + 1}: not a JSON object`);
    }
    rows.push(value as Row);
  }
  const totals = rows.findLast((r) => r.type === "totals");
  if (!totals) {
    throw new HttpError(400, "bad_report", "no totals row: is it the output of noema policy backtest --json?");
  }
  return { rows, totals };
}

const str = (v: unknown) => (typeof v === "string" ? v : v === undefined || v === null ? "" : String(v));
const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
const episodeLink = (id: unknown) =>
  markup`<a href="/episodes/${encodeURIComponent(str(id))}"><code>${str(id)}</code></a>`;

function reason(d: Decision): SafeHtml {
  const who = str(d.policy_id);
  const errors = Array.isArray(d.errors) ? d.errors as Record<string, unknown>[] : [];
  const failed = errors.map((e) =>
    markup`<br><span class="t-fail">${str(e.policy_id)} failed: ${str(e.type)}: ${str(e.message)}</span>`
  );
  return markup`${
    badge(str(d.verdict), str(d.verdict) === "allow" ? "ok" : str(d.verdict) === "deny" ? "vetoed" : "pending")
  } ${who ? `${who}: ` : ""}${str(d.message)}${failed}`;
}

function actionRow(r: Row): SafeHtml {
  const kind = r.type === "flip" ? str(r.flip).replace("_to_", " → ") : "policy error";
  return markup`<tr><td>${kind}</td><td>${episodeLink(r.episode_id)}</td><td class="mono">${str(r.step_id)}</td>
<td class="mono">${str(r.tool)}</td><td><code>${str(r.input_excerpt)}</code></td><td>${
    reason((r.recorded ?? {}) as Decision)
  }</td><td>${reason((r.candidate ?? {}) as Decision)}</td></tr>
`;
}

function totalsTable(t: Row): SafeHtml {
  const flips = (typeof t.flips === "object" && t.flips !== null ? t.flips : {}) as Record<string, unknown>;
  const kinds = Object.entries(flips).filter(([, n]) => num(n) > 0);
  const line = (label: string, value: HtmlLike) => markup`<tr><th>${label}</th><td>${value}</td></tr>`;
  return markup`<table class="cmp">${line("episodes", num(t.episodes))}${line("actions", num(t.actions))}${
    line("unchanged", num(t.unchanged))
  }${line("flipped", num(t.flipped))}${kinds.map(([k, n]) => line(k.replace("_to_", " → "), num(n)))}${
    line("policy errors", num(t.policy_errors))
  }${line("not reached", num(t.not_reached))}${line("left out", num(t.skipped))}</table>`;
}

type HtmlLike = SafeHtml | string | number;

/**
 * The page of a backtest report (the NDJSON of `noema policy backtest --json`).
 *
 * @example
 * ```ts
 * import { backtestPage } from "./backtest.ts";
 * backtestPage('{"type":"totals","episodes":1,"actions":2,"flipped":0}', true).includes("The verdicts agree"); // true
 * ```
 */
export function backtestPage(text: string, approvals: boolean): string {
  const { rows, totals } = parseReport(text);
  const actions = rows.filter((r) => r.type === "flip" || r.type === "policy_error");
  const shown = actions.slice(0, MAX_ROWS).map(actionRow);
  const more = actions.length > MAX_ROWS
    ? markup`<p class="muted">… ${actions.length - MAX_ROWS} more actions not shown</p>`
    : "";
  const notReached = rows.filter((r) => r.type === "not_reached");
  const skipped = rows.filter((r) => r.type === "skipped");
  const body = markup`<h1>Backtest</h1>
<p>${num(totals.flipped) === 0 ? "The verdicts agree: nothing flips." : `${num(totals.flipped)} verdicts flip.`}</p>
${totalsTable(totals)}
${
    shown.length > 0
      ? markup`<h2>Actions</h2><table class="cmp"><tr><th>flip</th><th>episode</th><th>step</th><th>tool</th><th>input</th><th>recorded</th><th>candidate</th></tr>
${shown}</table>${more}`
      : ""
  }
${
    notReached.length > 0
      ? markup`<h2>Not reached</h2><p class="muted">These runs stopped at a block the candidate set lets through: what came after was never proposed.</p><ul>${
        notReached.map((r) => markup`<li>${episodeLink(r.episode_id)}</li>`)
      }</ul>`
      : ""
  }
${
    skipped.length > 0
      ? markup`<h2>Left out</h2><ul>${
        skipped.map((r) => markup`<li>${episodeLink(r.episode_id)}: ${str(r.reason)}</li>`)
      }</ul>`
      : ""
  }
<h2>Another report</h2>
${FORM}`;
  return page({ title: "Backtest", current: "backtest", body, approvals });
}
