/**
 * The fleet at a glance (`/fleet`): the runs of the root (or of a shared
 * store's catalog, fleet-wide) counted per host and
 * per adapter (how many, how many ok, blocked by a policy, failed or crashed,
 * still going, and what they cost), and the cost per day over the last 30
 * days as a small server-rendered SVG bar chart (no script, no CDN).
 *
 * @module
 */
import type { EpisodeEntry } from "../read/list.ts";
import { markup, type SafeHtml } from "../report/escape.ts";
import { formatCount, formatUsd } from "../report/metric_format.ts";
import { page } from "./layout.ts";
import { runFacts } from "./run_facts.ts";
import { hostOf, runKind } from "./runs.ts";
import type { ServeConfig } from "./config.ts";
import { allRuns } from "./runs_index.ts";
import { storeFleet } from "./store_source.ts";

/** Runs counted by what happened to them, and their cost. */
export interface FleetCounts {
  runs: number;
  ok: number;
  blocked: number;
  failed: number;
  /** Running, waiting, paused: not finished. */
  going: number;
  usd: number;
}

/** The fleet's figures. */
export interface FleetStats {
  total: number;
  by_host: [string, FleetCounts][];
  by_adapter: [string, FleetCounts][];
  /** The last 30 days (UTC), oldest first: the day, its runs and their cost. */
  days: { day: string; runs: number; usd: number }[];
}

/** Where the fleet's runs came from. */
export interface FleetSource {
  /** From a shared store's catalog (else the local root). */
  store: boolean;
  /** The catalog has more runs than were counted. */
  more: boolean;
}

/** Runs of a shared store's catalog counted, newest first. */
export const FLEET_STORE_RUNS = 10_000;

/**
 * The fleet page of the server's runs: the root's, or (with a shared store) the newest
 * {@link FLEET_STORE_RUNS} of its catalog, fleet-wide.
 *
 * @example
 * ```ts
 * import { fleetView } from "./fleet.ts";
 * // c.html(await fleetView(config))
 * ```
 */
export async function fleetView(cfg: ServeConfig): Promise<string> {
  const approvals = !cfg.readOnly;
  if (!cfg.store) return fleetPage(fleetStats(allRuns(cfg.root, {}).entries, Date.now()), approvals);
  const got = await storeFleet(cfg.store, FLEET_STORE_RUNS);
  return fleetPage(fleetStats(got.entries, Date.now()), approvals, { store: true, more: got.more });
}

/** Days in the cost chart. */
export const CHART_DAYS = 30;

const empty = (): FleetCounts => ({ runs: 0, ok: 0, blocked: 0, failed: 0, going: 0, usd: 0 });

function count(to: FleetCounts, e: EpisodeEntry, usd: number): void {
  to.runs++;
  to.usd += usd;
  const k = runKind(e);
  if (k === "ok") to.ok++;
  else if (k === "blocked") to.blocked++;
  else if (k === "failed" || k === "crashed" || k === "aborted" || k === "unreadable") to.failed++;
  else if (e.run_state !== "terminal") to.going++;
}

/**
 * The figures of `entries` (the root's runs), the chart's days ending on the day of `now`.
 *
 * @example
 * ```ts
 * import { fleetStats } from "./fleet.ts";
 * fleetStats([], Date.now()).total; // 0
 * ```
 */
export function fleetStats(entries: readonly EpisodeEntry[], now: number): FleetStats {
  const hosts = new Map<string, FleetCounts>(), adapters = new Map<string, FleetCounts>();
  const today = Math.floor(now / 86_400_000);
  const days = Array.from({ length: CHART_DAYS }, (_, i) => ({
    day: new Date((today - CHART_DAYS + 1 + i) * 86_400_000).toISOString().slice(0, 10),
    runs: 0,
    usd: 0,
  }));
  for (const e of entries) {
    const f = runFacts(e), usd = f.cost_usd ?? 0;
    const host = hostOf(e) ?? "-", adapter = f.adapter ?? "-";
    if (!hosts.has(host)) hosts.set(host, empty());
    if (!adapters.has(adapter)) adapters.set(adapter, empty());
    count(hosts.get(host)!, e, usd);
    count(adapters.get(adapter)!, e, usd);
    const t = e.started_at ? Date.parse(e.started_at) : NaN;
    const i = Number.isNaN(t) ? -1 : Math.floor(t / 86_400_000) - (today - CHART_DAYS + 1);
    if (i >= 0 && i < CHART_DAYS) {
      days[i].runs++;
      days[i].usd += usd;
    }
  }
  const sorted = (m: Map<string, FleetCounts>) =>
    [...m].sort((a, b) => b[1].runs - a[1].runs || (a[0] < b[0] ? -1 : 1));
  return { total: entries.length, by_host: sorted(hosts), by_adapter: sorted(adapters), days };
}

function countsTable(id: string, label: string, rows: [string, FleetCounts][]): SafeHtml {
  const body = rows.map(([name, c]) =>
    markup`<tr data-key="${name}"><th>${name}</th><td class="num runs">${formatCount(c.runs)}</td><td class="num">${
      formatCount(c.ok)
    }</td><td class="num t-veto">${formatCount(c.blocked)}</td><td class="num t-bad">${
      formatCount(c.failed)
    }</td><td class="num">${formatCount(c.going)}</td><td class="num cost">${formatUsd(c.usd)}</td></tr>`
  );
  return markup`<table class="fleet" id="${id}"><tr><th>${label}</th><th>runs</th><th>ok</th><th>blocked</th><th>failed</th><th>going</th><th>cost</th></tr>${body}</table>`;
}

/**
 * The cost per day as an SVG bar chart (`data-chart="cost"`, one `data-day` bar a day).
 *
 * @example
 * ```ts
 * import { costChart, fleetStats } from "./fleet.ts";
 * costChart(fleetStats([], Date.now()).days).value; // <svg data-chart="cost" …
 * ```
 */
export function costChart(days: FleetStats["days"]): SafeHtml {
  const W = 760, H = 150, LEFT = 60, BOTTOM = 20, bw = (W - LEFT) / days.length;
  const max = Math.max(...days.map((d) => d.usd), 0);
  const bars = days.map((d, i) => {
    const h = max === 0 ? 0 : Math.max(d.usd > 0 ? 1 : 0, ((H - BOTTOM - 10) * d.usd) / max);
    return markup`<rect class="bar" data-day="${d.day}" data-usd="${Math.round(d.usd * 1e10) / 1e10}" x="${
      Math.round((LEFT + i * bw + 1) * 10) / 10
    }" y="${Math.round((H - BOTTOM - h) * 10) / 10}" width="${Math.max(1, Math.round((bw - 2) * 10) / 10)}" height="${
      Math.round(h * 10) / 10
    }"><title>${d.day}: ${formatUsd(d.usd)} over ${d.runs} ${d.runs === 1 ? "run" : "runs"}</title></rect>`;
  });
  const label = (i: number, anchor: string) =>
    markup`<text class="tick" x="${LEFT + i * bw + bw / 2}" y="${H - 5}" text-anchor="${anchor}">${
      days[i].day.slice(5)
    }</text>`;
  return markup`<svg data-chart="cost" class="chart" viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="cost per day, last ${days.length} days"><line class="tick" x1="${LEFT}" y1="${
    H - BOTTOM
  }" x2="${W}" y2="${H - BOTTOM}"></line><text class="tick" x="${LEFT - 6}" y="14" text-anchor="end">${
    formatUsd(max)
  }</text><text class="tick" x="${LEFT - 6}" y="${H - BOTTOM}" text-anchor="end">$0</text>${bars}${label(0, "start")}${
    label(days.length - 1, "end")
  }</svg>`;
}

/**
 * The fleet page.
 *
 * @example
 * ```ts
 * import { fleetPage, fleetStats } from "./fleet.ts";
 * fleetPage(fleetStats([], Date.now()), true);
 * ```
 */
export function fleetPage(
  s: FleetStats,
  approvals: boolean,
  from: FleetSource = { store: false, more: false },
): string {
  const what = from.store
    ? `The newest ${formatCount(s.total)} runs of the shared store${from.more ? " (it holds more)" : ""}.`
    : `${formatCount(s.total)} runs in this root.`;
  const body = markup`<h1>Fleet</h1>
<p class="muted">${what} Blocked: a policy vetoed the run; failed: it ended in an error or crashed; going: running, waiting or paused.</p>
<h2>Per host</h2>${countsTable("by-host", "host", s.by_host)}
<h2>Per adapter</h2>${countsTable("by-adapter", "adapter", s.by_adapter)}
<h2>Cost per day (UTC, last ${CHART_DAYS} days)</h2>${costChart(s.days)}
<p class="muted">Estimated from each run's summary.json (runs without a price count $0${
    from.store ? "; over a shared store, only the runs this machine holds or has pulled have a cost" : ""
  }).</p>`;
  return page({ title: "Fleet", current: "fleet", body, approvals });
}
