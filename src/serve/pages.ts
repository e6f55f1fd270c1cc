/**
 * The pages that are not an episode's: the runs (filters, sorting, paging,
 * live rows), the approvals, an episode's events page by page, the login
 * form, and error pages.
 *
 * @module
 */
import type { EpisodeEntry } from "../read/list.ts";
import { markup, raw, type SafeHtml } from "../report/escape.ts";
import type { Waiting } from "./approvals.ts";
import { approvalsQueue } from "./approvals_queue.ts";
import { EVENTS_PAGE, eventsPage } from "./events.ts";
import { page } from "./layout.ts";
import { runRows, runsHeader, type RunsQuery } from "./runs.ts";

/** The query string of a runs view with `page` changed. */
function withPage(search: URLSearchParams, pageNo: number): string {
  const q = new URLSearchParams(search);
  q.set("page", String(pageNo));
  return `?${q}`;
}

function select(name: string, label: string, options: string[], chosen: string[]): SafeHtml {
  return markup`<label>${label}<select name="${name}"><option value="">any</option>${
    options.map((o) => markup`<option${chosen.includes(o) ? raw(" selected") : ""}>${o}</option>`)
  }</select></label>`;
}

function filterForm(q: RunsQuery): SafeHtml {
  const text = (name: string, label: string, value: string | null, hint = "", id = "") =>
    markup`<label>${label}<input name="${name}"${id ? markup` id="${id}"` : ""} value="${
      value ?? ""
    }" placeholder="${hint}"></label>`;
  const tag = Object.entries(q.tags).map(([k, v]) => `${k}=${v}`)[0] ?? null;
  return markup`<form class="filters" method="get" action="/">
${text("task", "task contains", q.task, "text", "q-task")}
${select("state", "run state", ["running", "waiting_for_approval", "paused", "crashed", "terminal"], q.state)}
${select("status", "status", ["ok", "error", "vetoed", "aborted", "partial", "unreadable"], q.status)}
${text("outcome", "outcome", q.outcome, "success")}
${text("tag", "tag", tag, "key=value")}
${text("since", "since", q.since, "2h, 7d, 2026-01-01")}
${text("adapter", "adapter", q.adapter, "shell")}
${text("policy", "policy", q.policy, "NoPush@1.0")}
${text("host", "host", q.host, "")}
${select("order", "order", ["newest", "oldest"], [q.order])}${
    q.sort !== null
      ? markup`<input type="hidden" name="sort" value="${q.sort}"><input type="hidden" name="dir" value="${q.dir}">`
      : ""
  }
<button type="submit">Filter</button> <a href="/">clear</a></form>`;
}

/**
 * The runs page.
 *
 * @example
 * ```ts
 * import { runsPage } from "./pages.ts";
 * import { parseRunsQuery } from "./runs.ts";
 * const q = new URLSearchParams();
 * runsPage(parseRunsQuery(q), q, { entries: [], more: false }, true);
 * ```
 */
export function runsPage(
  q: RunsQuery,
  search: URLSearchParams,
  got: { entries: EpisodeEntry[]; more: boolean },
  approvals: boolean,
): string {
  const prev = q.page > 1 ? markup`<a href="${withPage(search, q.page - 1)}" rel="prev">← newer</a>` : "";
  const next = got.more ? markup`<a href="${withPage(search, q.page + 1)}" rel="next">older →</a>` : "";
  const first = (q.page - 1) * q.size;
  const shown = got.entries.length ? `${first + 1}–${first + got.entries.length}` : "none";
  const body = markup`<h1>Runs</h1>
${filterForm(q)}
<table class="runs"><thead>${runsHeader(q, search)}</thead>
<tbody id="runs">${runRows(got.entries)}</tbody></table>
<div class="pager">${prev}<span class="muted">${shown}${q.page > 1 ? ` · page ${q.page}` : ""}</span>${next}</div>`;
  const live = `/api/live/runs?${search}`;
  return page({ title: "Runs", current: "runs", body, live, approvals });
}

/**
 * The approvals page: every waiting run with its decision form.
 *
 * @example
 * ```ts
 * import { approvalsPage } from "./pages.ts";
 * approvalsPage([]);
 * ```
 */
export function approvalsPage(waiting: readonly Waiting[], notice: string | null = null): string {
  const body = markup`<h1>Approvals</h1>${notice ? markup`<p class="panel notice">${notice}</p>` : ""}
<div id="approvals">${approvalsQueue(waiting)}</div>`;
  return page({ title: "Approvals", current: "approvals", body, live: "/api/live/approvals", approvals: true });
}

/**
 * One page of an episode's events, each expanding to its payload.
 *
 * @example
 * ```ts
 * import { eventsListPage } from "./pages.ts";
 * eventsListPage("ep_1", ".noema/episodes/ep_1", 1, true);
 * ```
 */
export function eventsListPage(id: string, dir: string, pageNo: number, approvals: boolean): string {
  const { rows, total } = eventsPage(dir, pageNo);
  const pages = Math.max(1, Math.ceil(total / EVENTS_PAGE));
  const eid = encodeURIComponent(id);
  const link = (n: number, text: string, rel: string) =>
    n >= 1 && n <= pages ? markup`<a href="/episodes/${eid}/events?page=${n}" rel="${rel}">${text}</a>` : "";
  const pager = markup`<div class="pager">${
    link(pageNo - 1, "← earlier", "prev")
  }<span class="muted">page ${pageNo} of ${pages} · ${total} events</span>${link(pageNo + 1, "later →", "next")}</div>`;
  const body =
    markup`<p class="muted"><a href="/">Runs</a> / <a href="/episodes/${eid}"><code>${id}</code></a> / events</p>
<h1>Events</h1>${pager}<div id="events">${rows}</div>${pager}`;
  return page({ title: `${id} events`, current: "episode", body, approvals });
}

/**
 * The login form: a token kept in an HttpOnly cookie.
 *
 * @example
 * ```ts
 * import { loginPage } from "./pages.ts";
 * loginPage(null);
 * ```
 */
export function loginPage(problem: string | null): string {
  const body = markup`<h1>Sign in</h1>
${problem ? markup`<p class="panel t-bad">${problem}</p>` : ""}
<form method="post" action="/login" class="filters"><label>Token<input name="token" type="password" autocomplete="current-password" required autofocus size="40"></label>
<button type="submit">Sign in</button></form>
<p class="muted">The token was printed when <code>noema serve</code> started, or is one of NOEMA_SERVE_TOKEN.</p>`;
  return page({ title: "Sign in", current: "login", body, approvals: false });
}

/**
 * An error page: the status and a message, never a stack.
 *
 * @example
 * ```ts
 * import { errorPage } from "./pages.ts";
 * errorPage(404, "episode ep_1 not found");
 * ```
 */
export function errorPage(status: number, message: string): string {
  const body = markup`<h1>${status}</h1><p class="panel t-bad">${message}</p><p><a href="/">Back to the runs</a></p>`;
  return page({ title: String(status), current: "runs", body, approvals: false });
}
