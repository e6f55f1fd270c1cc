/**
 * The search view and its JSON twin: `/search?q=TEXT` (a page: a form, then
 * each place found with the text highlighted, linking to the run and its
 * step) and `/api/search?q=TEXT` (the same as JSON). Over the runs of the
 * server's root (see `search.ts`) and, with a shared store, fleet-wide over
 * the store: its catalog's tasks and its stored events.
 *
 * @module
 */
import type { Hono } from "hono";
import { markup, type SafeHtml } from "../report/escape.ts";
import type { ServeConfig, ServeEnv } from "./config.ts";
import { page } from "./layout.ts";
import { HttpError } from "./paths.ts";
import { hitIn, type SearchHit, type SearchResult, searchRoot } from "./search.ts";
import { hostOf, parseRunsQuery } from "./runs.ts";
import { storeRuns } from "./store_source.ts";

/** Longest query, in characters. */
const MAX_QUERY = 200;

function queryOf(raw: string | undefined, required: boolean): string | null {
  const q = (raw ?? "").trim();
  if (q === "") {
    if (required) throw new HttpError(400, "bad_parameter", "q must be the text to search for");
    return null;
  }
  if (q.length > MAX_QUERY) {
    throw new HttpError(400, "bad_parameter", `q must be at most ${MAX_QUERY} characters, got ${q.length}`);
  }
  return q;
}

function hitRow(h: SearchHit): SafeHtml {
  const href = `/episodes/${encodeURIComponent(h.episode_id)}`;
  const where = `${h.field}${h.source ? ` · ${h.source}` : ""}${h.host && h.host !== h.source ? ` · ${h.host}` : ""}`;
  const step = h.step_id ? markup` <span class="muted">step <code>${h.step_id}</code></span>` : "";
  return markup`<li class="hit" data-id="${h.episode_id}" data-field="${h.field}"><a href="${href}"><code>${h.episode_id}</code></a> <b>${where}</b>${step}
<pre class="snippet">${h.before}<mark>${h.match}</mark>${h.after}</pre></li>`;
}

/**
 * The search page: the form, then the hits.
 *
 * @example
 * ```ts
 * import { searchPage } from "./search_page.ts";
 * searchPage(null, true);
 * ```
 */
export function searchPage(r: SearchResult | null, approvals: boolean): string {
  const form =
    markup`<form class="filters" method="get" action="/search" role="search"><label>Search tasks, tool inputs and outputs, policy reasons<input name="q" id="q-search" size="50" value="${
      r?.query ?? ""
    }" autofocus></label><button type="submit">Search</button></form>`;
  let found: SafeHtml = markup``;
  if (r !== null) {
    const bound = r.truncated
      ? markup` It stopped early (the newest ${r.scanned} of ${r.total} runs read, or enough hits): narrow the text to see more.`
      : "";
    found = markup`<p class="muted" id="search-stats">${r.hits.length} ${
      r.hits.length === 1 ? "place" : "places"
    } found in ${r.scanned} of ${r.total} runs, newest first.${bound}</p>
<ol class="hits" id="hits">${r.hits.map(hitRow)}</ol>`;
  }
  const body = markup`<h1>Search</h1>${form}${found}`;
  return page({ title: r ? `Search: ${r.query}` : "Search", current: "search", body, approvals });
}

/** What makes two hits the same place (a run held here and found in the store too). */
const placeOf = (h: SearchHit) => JSON.stringify([h.episode_id, h.field, h.step_id, h.before, h.match, h.after]);

/**
 * The search over the root and, with a shared store, fleet-wide over the store (project-scoped as the runs view):
 * the tasks of its catalog (by its task index), and the tool inputs, outputs and reasons of its stored events (by the
 * store's own search, `SharedStore.searchEvents`). A hit from the store names the host that holds the run (`host`;
 * a task hit's `source` too); a place the root's search found as well is shown once.
 *
 * @example
 * ```ts
 * import { searchAll } from "./search_page.ts";
 * // (await searchAll(config, "deploy")).hits
 * ```
 */
export async function searchAll(cfg: ServeConfig, q: string): Promise<SearchResult> {
  const local = searchRoot(cfg.root, q);
  if (!cfg.store) return local;
  const [got, events] = await Promise.all([
    storeRuns(cfg.store, parseRunsQuery(new URLSearchParams({ task: q, size: "200" }))),
    cfg.store.store.searchEvents(q, { limit: 200 }),
  ]);
  const tasks = new Set(local.hits.filter((h) => h.field === "task").map((h) => h.episode_id));
  const places = new Set(local.hits.map(placeOf));
  const lower = q.toLowerCase();
  const fleet: SearchHit[] = [];
  for (const e of got.entries) {
    const h = e.task === null || tasks.has(e.episode_id) ? null : hitIn(e.task, lower);
    if (h) fleet.push({ episode_id: e.episode_id, field: "task", step_id: null, source: hostOf(e), ...h });
    if (h) tasks.add(e.episode_id);
  }
  for (const { seq: _seq, host, ...h } of events.hits) {
    if (h.field === "task" ? tasks.has(h.episode_id) : places.has(placeOf(h))) continue;
    if (h.field === "task") tasks.add(h.episode_id);
    fleet.push({ ...h, ...(h.field === "task" ? { source: host } : {}), host });
  }
  return { ...local, hits: [...fleet, ...local.hits], truncated: local.truncated || got.more || events.truncated };
}

/**
 * Adds `/search` and `/api/search` to the app.
 *
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { searchRoutes } from "./search_page.ts";
 * // searchRoutes(app, config);
 * ```
 */
export function searchRoutes(app: Hono<ServeEnv>, cfg: ServeConfig): void {
  app.get("/search", async (c) => {
    const q = queryOf(c.req.query("q"), false);
    return c.html(searchPage(q === null ? null : await searchAll(cfg, q), !cfg.readOnly));
  });
  app.get("/api/search", async (c) => c.json(await searchAll(cfg, queryOf(c.req.query("q"), true)!)));
}
