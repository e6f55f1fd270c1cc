/**
 * The runs view: its filters read from a URL's query (run state, status,
 * outcome, tag, task text, since, adapter, policy, host; order; page), the
 * listing (the same entries as `noema list --json`), and the table rows.
 *
 * @module
 */
import { textOf } from "../json.ts";
import { hostname } from "node:os";
import { type EpisodeEntry, listEpisodes, type ListOptions, statusWord } from "../read/list.ts";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { publishingHost } from "../shared_store/host.ts";
import { markup, type SafeHtml } from "../report/escape.ts";
import { badge } from "../report/parts.ts";
import { isDuration, parseSince } from "../cli/time_args.ts";
import { HttpError } from "./paths.ts";
import { formatMs } from "../report/metric_format.ts";
import { formatUsd, type RunFacts, runFacts, verdictSummary } from "./run_facts.ts";
import { allRuns } from "./runs_index.ts";
import { SORT_COLUMNS, type SortColumn, sortRuns } from "./runs_sort.ts";

/** The run states the `state` filter takes. */
const RUN_STATES = ["terminal", "running", "waiting_for_approval", "paused", "crashed", "crashed_while_sealing"];
/** The statuses the `status` filter takes. */
const STATUSES = ["ok", "error", "vetoed", "aborted", "partial", "unreadable"];

/** The filters of the runs view, as given in the query. */
export interface RunsQuery {
  state: string[];
  status: string[];
  outcome: string | null;
  tags: Record<string, string>;
  task: string | null;
  since: string | null;
  adapter: string | null;
  policy: string | null;
  host: string | null;
  order: "newest" | "oldest";
  /** The column sorted by (`sort=`), null for the start time in `order`. */
  sort: SortColumn | null;
  /** The sort direction (`dir=`). */
  dir: "asc" | "desc";
  page: number;
  size: number;
}

function list(q: URLSearchParams, name: string, allowed: readonly string[]): string[] {
  const out = q.getAll(name).flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
  for (const v of out) {
    if (!allowed.includes(v)) {
      throw new HttpError(
        400,
        "bad_filter",
        `${name}: unknown value ${JSON.stringify(v)} (known: ${allowed.join(", ")})`,
      );
    }
  }
  return out;
}

function int(q: URLSearchParams, name: string, fallback: number, max: number): number {
  const v = q.get(name);
  if (v === null || v === "") return fallback;
  if (!/^\d{1,9}$/.test(v) || Number(v) < 1 || Number(v) > max) {
    throw new HttpError(400, "bad_filter", `${name} must be an integer from 1 to ${max}, got ${JSON.stringify(v)}`);
  }
  return Number(v);
}

/**
 * The filters in a URL query; an unknown value is an {@link HttpError} 400 naming it.
 *
 * @example
 * ```ts
 * import { parseRunsQuery } from "./runs.ts";
 * parseRunsQuery(new URLSearchParams("status=vetoed&tag=team=infra")).tags; // { team: "infra" }
 * ```
 */
export function parseRunsQuery(q: URLSearchParams): RunsQuery {
  const tags: Record<string, string> = {};
  for (const t of q.getAll("tag").filter(Boolean)) {
    const eq = t.indexOf("=");
    if (eq < 1) throw new HttpError(400, "bad_filter", `tag must be key=value, got ${JSON.stringify(t)}`);
    tags[t.slice(0, eq)] = t.slice(eq + 1);
  }
  const text = (name: string) => (q.get(name) ?? "").trim() || null;
  const order = text("order") ?? "newest";
  if (order !== "newest" && order !== "oldest") {
    throw new HttpError(400, "bad_filter", `order must be newest or oldest, got ${JSON.stringify(order)}`);
  }
  const sort = text("sort"), dir = text("dir") ?? "desc";
  if (sort !== null && !(SORT_COLUMNS as readonly string[]).includes(sort)) {
    throw new HttpError(
      400,
      "bad_filter",
      `sort: unknown column ${JSON.stringify(sort)} (known: ${SORT_COLUMNS.join(", ")})`,
    );
  }
  if (dir !== "asc" && dir !== "desc") {
    throw new HttpError(400, "bad_filter", `dir must be asc or desc, got ${JSON.stringify(dir)}`);
  }
  return {
    state: list(q, "state", RUN_STATES),
    status: list(q, "status", STATUSES),
    outcome: text("outcome"),
    tags,
    task: text("task"),
    since: text("since"),
    adapter: text("adapter"),
    policy: text("policy"),
    host: text("host"),
    order: sort === "started" ? (dir === "asc" ? "oldest" : "newest") : order,
    sort: sort === "started" ? null : sort as SortColumn | null,
    dir,
    page: int(q, "page", 1, 1_000_000),
    size: int(q, "size", 50, 500),
  };
}

/** The last full list computed over sealed runs only: the same view again (another page, a reload) costs no scan. */
let memo: { key: string; entries: EpisodeEntry[] } | null = null;

function dirStamp(root: string): string {
  try {
    const st = statSync(join(root, "episodes"));
    return `${st.mtimeMs}:${st.ino}`;
  } catch {
    return "-";
  }
}

/** Every run of the view, filtered and sorted (a page is a slice of it). */
function fullList(root: string, q: RunsQuery, base: ListOptions): EpisodeEntry[] {
  const key = JSON.stringify([root, dirStamp(root), base.since ?? null, { ...q, page: 0, size: 0 }]);
  if (memo?.key === key) return memo.entries;
  const got = allRuns(root, base);
  let all = got.entries.filter((e) => {
    if (q.outcome !== null && e.outcome !== q.outcome) return false;
    if (q.adapter === null && q.policy === null) return true;
    const f = runFacts(e);
    if (q.adapter !== null && f.adapter !== q.adapter) return false;
    return q.policy === null || f.policies.includes(q.policy);
  });
  if (q.sort !== null) all = sortRuns(all, q.sort, q.dir, hostOf);
  memo = got.sealed ? { key, entries: all } : null;
  return all;
}

/**
 * Whether the view must see every run (sorted by a column, filtered by outcome, adapter, policy or host), not only
 * the newest until a page is full.
 *
 * @example
 * ```ts
 * import { parseRunsQuery, seesEveryRun } from "./runs.ts";
 * seesEveryRun(parseRunsQuery(new URLSearchParams("sort=cost"))); // true
 * ```
 */
export function seesEveryRun(q: RunsQuery): boolean {
  return q.outcome !== null || q.adapter !== null || q.policy !== null || q.host !== null || q.sort !== null;
}

/**
 * One page of runs over local files, as `noema list --json` entries, and
 * whether there is a next page. Status and run state, tags, task and since
 * filter as `noema list` does; outcome, adapter, policy and host are applied
 * after (host is this machine's name for local files).
 *
 * @example
 * ```ts
 * import { listRuns, parseRunsQuery } from "./runs.ts";
 * listRuns(".noema", parseRunsQuery(new URLSearchParams())).entries.length; // at most 50
 * ```
 */
export function listRuns(root: string, q: RunsQuery): { entries: EpisodeEntry[]; more: boolean } {
  const status = [...q.state.filter((s) => s !== "terminal"), ...q.status];
  if (q.state.includes("terminal") && q.status.length === 0) status.push(...STATUSES.filter((s) => s !== "unreadable"));
  const base: ListOptions = {
    root,
    status: status.length ? status : undefined,
    since: q.since === null ? undefined : sinceMs(q.since),
    tags: Object.keys(q.tags).length ? q.tags : undefined,
    task: q.task ?? undefined,
    order: q.order,
  };
  const offset = (q.page - 1) * q.size;
  if (!seesEveryRun(q)) {
    const got = listEpisodes({ ...base, offset, limit: q.size + 1 });
    return { entries: got.slice(0, q.size), more: got.length > q.size };
  }
  if (q.host !== null && q.host !== hostname()) return { entries: [], more: false };
  const all = fullList(root, q, base);
  return { entries: all.slice(offset, offset + q.size), more: all.length > offset + q.size };
}

/**
 * Whether a since filter is a duration ago (`7d`): over a shared store it is counted on the store's clock.
 *
 * @example
 * ```ts
 * import { sinceIsDuration } from "./runs.ts";
 * sinceIsDuration("7d"); // true
 * ```
 */
export function sinceIsDuration(text: string): boolean {
  return isDuration(text);
}

/**
 * A since filter (`2h`, `7d`, a date) as epoch milliseconds; a bad one is a 400.
 *
 * @example
 * ```ts
 * import { sinceMs } from "./runs.ts";
 * sinceMs("2026-01-01"); // 1767225600000
 * ```
 */
export function sinceMs(text: string): number {
  try {
    return parseSince(text, "since");
  } catch (e) {
    throw new HttpError(400, "bad_filter", (e as Error).message);
  }
}

/**
 * The colour key of an entry's status: its run state while unfinished, else its status.
 *
 * @example
 * ```ts
 * import { statusKey } from "./runs.ts";
 * statusKey({ run_state: "running", status: "pending" }); // "running"
 * ```
 */
export function statusKey(e: Pick<EpisodeEntry, "run_state" | "status">): string {
  if (e.run_state === "terminal" || e.run_state === "unreadable") return e.status;
  return e.run_state === "waiting_for_approval" ? "waiting" : e.run_state === "running" ? "running" : "pending";
}

/**
 * The host a listed run ran on: the catalog's (an entry of a shared store),
 * else this machine's for a run of its root, or null for a copy pulled from a
 * store (`<root>/state/pulled/<id>`: the catalog has its host, the copy not).
 *
 * @example
 * ```ts
 * import { hostOf } from "./runs.ts";
 * hostOf({ episode_id: "ep_1", episode_dir: ".noema/episodes/ep_1", host: "ci-7" }); // "ci-7"
 * ```
 */
export function hostOf(e: Pick<EpisodeEntry, "episode_id" | "episode_dir"> & { host?: string }): string | null {
  if (typeof e.host === "string") return e.host;
  if (!e.episode_dir) return null;
  return existsSync(join(dirname(dirname(e.episode_dir)), "state", "pulled", e.episode_id)) ? null : publishingHost();
}

/**
 * What happened to a run, for its row's colour: `blocked` (a policy vetoed
 * it), `crashed` (its process died), `failed` (it ended in an error), or
 * its status key otherwise.
 *
 * @example
 * ```ts
 * import { runKind } from "./runs.ts";
 * runKind({ run_state: "terminal", status: "vetoed" }); // "blocked"
 * ```
 */
export function runKind(e: Pick<EpisodeEntry, "run_state" | "status">): string {
  if (e.run_state === "crashed" || e.run_state === "crashed_while_sealing") return "crashed";
  if (e.run_state !== "terminal") return statusKey(e);
  return e.status === "vetoed" ? "blocked" : e.status === "error" ? "failed" : e.status;
}

/** The outcome cell: a run a policy blocked reads `blocked` (not a red `error`). */
function outcomeCell(e: EpisodeEntry): SafeHtml {
  if (!e.outcome) return markup`-`;
  if (e.status === "vetoed") {
    return markup`<span class="badge t-veto" title="outcome ${e.outcome}: a policy blocked the run">blocked</span>`;
  }
  return badge(e.outcome);
}

function factCells(f: RunFacts): SafeHtml {
  const models = f.models.length ? f.models.join(", ") : "-";
  const cost = f.cost_usd === null && f.cost_note !== null
    ? markup`<span class="muted" title="${f.cost_note}">unpriced</span>`
    : formatUsd(f.cost_usd);
  const verdicts = verdictSummary(f);
  return markup`<td class="adapter">${f.adapter ?? "-"}</td><td class="models">${models}</td><td class="num duration">${
    f.duration_ms === null ? "-" : formatMs(f.duration_ms)
  }</td><td class="num cost">${cost}</td><td class="verdicts${
    verdicts === "-" ? "" : (f.vetoes || f.rejected ? " has-veto" : "")
  }">${verdicts}</td>`;
}

/** The columns of the runs table: (sort column or null, header text, class). */
const COLUMNS: [SortColumn | "started" | null, string][] = [
  ["started", "Started (UTC, host's clock)"],
  [null, "Episode"],
  ["host", "Host"],
  ["adapter", "Adapter"],
  ["model", "Model(s)"],
  ["duration", "Duration"],
  ["cost", "Cost"],
  [null, "Verdicts"],
  ["status", "Status"],
  [null, "Outcome"],
  ["task", "Task"],
  [null, "Tags"],
];

/**
 * The header row of the runs table: each sortable column a link to the same
 * view sorted by it (again: the other way), the current one marked `aria-sort`.
 *
 * @example
 * ```ts
 * import { parseRunsQuery, runsHeader } from "./runs.ts";
 * const q = new URLSearchParams("sort=cost");
 * runsHeader(parseRunsQuery(q), q).value; // <tr><th …
 * ```
 */
export function runsHeader(q: RunsQuery, search: URLSearchParams): SafeHtml {
  const current: string = q.sort ?? "started";
  const currentDir = q.sort === null ? (q.order === "oldest" ? "asc" : "desc") : q.dir;
  return markup`<tr>${
    COLUMNS.map(([col, label]) => {
      if (col === null) return markup`<th>${label}</th>`;
      const link = new URLSearchParams(search);
      link.delete("page");
      link.delete("order");
      link.set("sort", col);
      const on = current === col;
      const dir = on && currentDir === "desc" ? "asc" : on ? "desc" : (col === "started" || col === "duration" ||
          col === "cost")
        ? "desc"
        : "asc";
      link.set("dir", dir);
      const aria = on ? markup` aria-sort="${currentDir === "asc" ? "ascending" : "descending"}"` : "";
      return markup`<th${aria}><a href="?${link.toString()}">${label}</a></th>`;
    })
  }</tr>`;
}

/**
 * The table rows of entries (every value escaped).
 *
 * @example
 * ```ts
 * import { runRows } from "./runs.ts";
 * runRows([]).value; // a row saying there is nothing to show
 * ```
 */
export function runRows(entries: readonly EpisodeEntry[]): SafeHtml {
  if (entries.length === 0) {
    return markup`<tr><td colspan="${COLUMNS.length}" class="muted">No runs match.</td></tr>`;
  }
  return markup`${
    entries.map((e) => {
      const href = `/episodes/${encodeURIComponent(e.episode_id)}`;
      const tags = Object.entries(e.tags).map(([k, v]) => markup`<code>${k}=${textOf(v)}</code>`);
      const pending = e.pending ? markup` <span class="muted">· ${e.pending.reason}</span>` : "";
      const task = e.task ?? (e.error ? `(${e.error})` : "-");
      const kind = runKind(e);
      return markup`<tr class="k-${kind}" data-href="${href}" data-id="${e.episode_id}"><td class="mono">${
        e.started_at?.replace("T", " ").slice(0, 19) ?? "-"
      }</td><td><a href="${href}"><code>${e.episode_id}</code></a></td><td class="host">${hostOf(e) ?? "-"}</td>${
        factCells(runFacts(e))
      }<td>${badge(statusWord(e), kind === "crashed" ? "error" : statusKey(e))}</td><td>${
        outcomeCell(e)
      }</td><td class="task" title="${task}">${task}${pending}</td><td class="tags">${tags}</td></tr>
`;
    })
  }`;
}
