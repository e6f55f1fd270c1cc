/**
 * The runs view: its filters read from a URL's query (run state, status,
 * outcome, tag, task text, since, adapter, policy, host; order; page), the
 * listing (the same entries as `noema list --json`), and the table rows.
 *
 * @module
 */
import { hostname } from "node:os";
import { type EpisodeEntry, listEpisodes, type ListOptions, statusWord } from "../read/list.ts";
import { Buffer } from "node:buffer";
import { closeSync, existsSync, openSync, readSync } from "node:fs";
import { dirname, join } from "node:path";
import { publishingHost } from "../shared_store/host.ts";
import { markup, type SafeHtml } from "../report/escape.ts";
import { badge } from "../report/parts.ts";
import { isDuration, parseSince } from "../cli/time_args.ts";
import { HttpError } from "./paths.ts";

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
    order,
    page: int(q, "page", 1, 1_000_000),
    size: int(q, "size", 50, 500),
  };
}

/** The adapter and policies of a run, from its start event (the first line of events.jsonl). */
function startFacts(e: EpisodeEntry): { adapter: string | null; policies: string[] } {
  try {
    const fd = openSync(join(e.episode_dir, "events.jsonl"), "r");
    const buf = Buffer.alloc(64 * 1024);
    const n = readSync(fd, buf, 0, buf.length, 0);
    closeSync(fd);
    const first = buf.subarray(0, n).toString("utf8").split("\n")[0];
    const p = (JSON.parse(first) as { payload?: { using?: unknown; policies?: unknown } }).payload ?? {};
    return {
      adapter: typeof p.using === "string" ? p.using : null,
      policies: Array.isArray(p.policies) ? p.policies.map(String) : [],
    };
  } catch {
    return { adapter: null, policies: [] };
  }
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
  const extra = q.outcome !== null || q.adapter !== null || q.policy !== null || q.host !== null;
  if (!extra) {
    const got = listEpisodes({ ...base, offset, limit: q.size + 1 });
    return { entries: got.slice(0, q.size), more: got.length > q.size };
  }
  if (q.host !== null && q.host !== hostname()) return { entries: [], more: false };
  const all = listEpisodes({ ...base, limit: Number.MAX_SAFE_INTEGER }).filter((e) => {
    if (q.outcome !== null && e.outcome !== q.outcome) return false;
    if (q.adapter === null && q.policy === null) return true;
    const f = startFacts(e);
    if (q.adapter !== null && f.adapter !== q.adapter) return false;
    return q.policy === null || f.policies.includes(q.policy);
  });
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
 * The table rows of entries (every value escaped).
 *
 * @example
 * ```ts
 * import { runRows } from "./runs.ts";
 * runRows([]).value; // a row saying there is nothing to show
 * ```
 */
export function runRows(entries: readonly EpisodeEntry[]): SafeHtml {
  if (entries.length === 0) return markup`<tr><td colspan="7" class="muted">No runs match.</td></tr>`;
  return markup`${
    entries.map((e) => {
      const href = `/episodes/${encodeURIComponent(e.episode_id)}`;
      const tags = Object.entries(e.tags).map(([k, v]) => markup`<code>${k}=${String(v)}</code>`);
      const pending = e.pending ? markup` <span class="muted">· ${e.pending.reason}</span>` : "";
      const task = e.task ?? (e.error ? `(${e.error})` : "-");
      return markup`<tr data-href="${href}" data-id="${e.episode_id}"><td class="mono">${
        e.started_at?.replace("T", " ").slice(0, 19) ?? "-"
      }</td><td><a href="${href}"><code>${e.episode_id}</code></a></td><td class="host">${hostOf(e) ?? "-"}</td><td>${
        badge(statusWord(e), statusKey(e))
      }</td><td>${
        e.outcome ? badge(e.outcome) : "-"
      }</td><td class="task" title="${task}">${task}${pending}</td><td class="tags">${tags}</td></tr>
`;
    })
  }`;
}
