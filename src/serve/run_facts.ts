/**
 * What the runs table shows of a run beyond its list entry: how long it ran,
 * its adapter, the models it called, what they cost, and what the policies
 * and the humans decided (vetoes, approvals, rejections). Read from
 * `summary.json`, the start event (the first line of `events.jsonl`) and
 * `approvals/`; a sealed run's facts (terminal, with its manifest: its
 * files no longer change) are kept in memory, so sorting the runs by a column
 * reads each run once per server.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { closeSync, existsSync, openSync, readdirSync, readSync } from "node:fs";
import { join } from "node:path";
import type { EpisodeEntry } from "../read/list.ts";
import { readJsonFile } from "../store/json_file.ts";
import { asRecord, textOf } from "../json.ts";

export { formatUsd } from "../report/metric_format.ts";

/** The facts of one run. */
export interface RunFacts {
  /** Milliseconds it ran (`summary.json` `duration_sec`), or since it started while it runs; null unknown. */
  duration_ms: number | null;
  /** The adapter (`using` of the start event). */
  adapter: string | null;
  /** The policies it ran under (the start event's). */
  policies: string[];
  /** The models its turns called (`metrics.tokens.models`), sorted. */
  models: string[];
  /** The estimated cost in US dollars (`metrics.cost.usd`); null when unknown or unpriced. */
  cost_usd: number | null;
  /** Why the cost is null while there were model calls (an unpriced model), else null. */
  cost_note: string | null;
  /** Vetoes enforced that no human decided over (`metrics.veto_count` less the decisions). */
  vetoes: number;
  /** Vetoes recorded in audit mode (not enforced). */
  would_vetoes: number;
  /** Checkpoints a human approved. */
  approved: number;
  /** Checkpoints a human rejected. */
  rejected: number;
}

/** What a shared store's catalog row says of a run (for a run not pulled here). */
export interface CatalogFacts {
  adapter: string | null;
  duration_ms: number | null;
  veto_count: number;
  policies: string[];
}

const cache = new Map<string, RunFacts>();
/** Catalog facts of a store's entries, beside them (the entries stay as `noema list --json` prints them). */
const fromCatalog = new WeakMap<EpisodeEntry, CatalogFacts>();
/** Finished runs kept (a root of 100,000 runs fits). */
const KEEP = 250_000;

/** The buffer start events are read into (one for the process: the reads are synchronous). */
const HEAD = Buffer.allocUnsafe(64 * 1024);

/**
 * The adapter, policies and workspace of a run, from its start event (the first line of events.jsonl).
 *
 * @example
 * ```ts
 * import { startFacts } from "./run_facts.ts";
 * startFacts(".noema/episodes/ep_1").adapter; // "shell"
 * ```
 */
export function startFacts(dir: string): { adapter: string | null; policies: string[]; workspace: string | null } {
  try {
    const fd = openSync(join(dir, "events.jsonl"), "r");
    const buf = HEAD;
    let n = 0;
    try {
      n = readSync(fd, buf, 0, buf.length, 0);
    } finally {
      closeSync(fd);
    }
    const first = buf.subarray(0, n).toString("utf8").split("\n")[0];
    const p = asRecord(asRecord(JSON.parse(first)).payload);
    return {
      adapter: typeof p.using === "string" ? p.using : null,
      policies: Array.isArray(p.policies) ? p.policies.map(textOf) : [],
      workspace: typeof p.workspace === "string" ? p.workspace : null,
    };
  } catch {
    return { adapter: null, policies: [], workspace: null };
  }
}

/** The decisions recorded in `approvals/`: how many approved, how many rejected. */
function decisionCounts(dir: string): { approved: number; rejected: number } {
  const out = { approved: 0, rejected: 0 };
  let names: string[] = [];
  try {
    names = readdirSync(join(dir, "approvals")).filter((n) => n.endsWith(".json"));
  } catch {
    return out;
  }
  for (const name of names) {
    try {
      const d = readJsonFile(join(dir, "approvals", name), join(dir, "approvals", name), { noFollow: true }).decision;
      if (d === "approved") out.approved++;
      else if (d === "rejected") out.rejected++;
    } catch { /* an unreadable decision: validate reports it */ }
  }
  return out;
}

function summaryFacts(dir: string): Pick<RunFacts, "duration_ms" | "models" | "cost_usd" | "cost_note"> & {
  veto_count: number;
  would: number;
} {
  const s = readJsonFile(join(dir, "summary.json"), join(dir, "summary.json"), { noFollow: true });
  const m = asRecord(s.metrics);
  const tokens = asRecord(m.tokens), cost = asRecord(m.cost);
  const models = Object.keys(asRecord(tokens.models)).sort();
  const usd = typeof cost.usd === "number" ? cost.usd : null;
  return {
    duration_ms: typeof s.duration_sec === "number" ? Math.round(s.duration_sec * 1000) : null,
    models,
    cost_usd: usd,
    cost_note: usd === null && typeof cost.reason === "string" ? cost.reason : null,
    veto_count: typeof m.veto_count === "number" ? m.veto_count : 0,
    would: typeof m.would_veto_count === "number" ? m.would_veto_count : 0,
  };
}

function readFacts(e: EpisodeEntry): RunFacts {
  const here = Boolean(e.episode_dir); // a shared store's row not pulled here has no directory
  const start = here ? startFacts(e.episode_dir) : { adapter: null, policies: [] };
  const decided = here ? decisionCounts(e.episode_dir) : { approved: 0, rejected: 0 };
  const facts: RunFacts = {
    duration_ms: e.run_state === "running" ? e.elapsed_ms ?? null : null,
    adapter: start.adapter,
    policies: start.policies,
    models: [],
    cost_usd: null,
    cost_note: null,
    vetoes: 0,
    would_vetoes: e.would_veto_count ?? 0,
    ...decided,
  };
  if (e.lifecycle !== "terminal" || !here) return facts;
  try {
    const { veto_count, would, ...s } = summaryFacts(e.episode_dir);
    Object.assign(facts, s, { would_vetoes: would });
    facts.vetoes = Math.max(0, veto_count - decided.approved - decided.rejected);
  } catch { /* an unreadable summary: the entry says so */ }
  return facts;
}

/**
 * The facts of a listed run (see {@link RunFacts}); none for an entry without
 * a local directory (a shared store's row not pulled here).
 *
 * @example
 * ```ts
 * import { listEpisodes } from "../read/list.ts";
 * import { runFacts } from "./run_facts.ts";
 * for (const e of listEpisodes({ limit: 5 })) console.log(runFacts(e).cost_usd);
 * ```
 */
export function runFacts(e: EpisodeEntry): RunFacts {
  if (!e.episode_dir) {
    const c = fromCatalog.get(e);
    const none = readFacts(e);
    return c
      ? { ...none, adapter: c.adapter, policies: c.policies, duration_ms: c.duration_ms, vetoes: c.veto_count }
      : none;
  }
  const hit = cache.get(e.episode_dir);
  if (hit) return hit;
  const facts = readFacts(e);
  // A sealed run (terminal, with its manifest) no longer changes: its facts are kept.
  if (e.run_state === "terminal" && existsSync(join(e.episode_dir, "manifest.json"))) {
    cache.set(e.episode_dir, facts);
    if (cache.size > KEEP) cache.delete(cache.keys().next().value!);
  }
  return facts;
}

/**
 * Keeps the facts of a sealed run read elsewhere (the runs cache, see `runs_cache.ts`), as {@link runFacts} keeps
 * those it reads.
 *
 * @example
 * ```ts
 * import { keepFacts, runFacts } from "./run_facts.ts";
 * // keepFacts(dir, cached.facts); runFacts(entry) then reads nothing
 * ```
 */
export function keepFacts(dir: string, facts: RunFacts): void {
  cache.set(dir, facts);
  if (cache.size > KEEP) cache.delete(cache.keys().next().value!);
}

/**
 * The facts kept for the run in `dir`, if any (nothing is read).
 *
 * @example
 * ```ts
 * import { keptFacts } from "./run_facts.ts";
 * keptFacts(".noema/episodes/ep_1"); // undefined until read or kept
 * ```
 */
export function keptFacts(dir: string): RunFacts | undefined {
  return cache.get(dir);
}

/**
 * The verdicts of a run in a few words: `2 vetoes · 1 approved`, or `-`.
 *
 * @example
 * ```ts
 * import { verdictSummary } from "./run_facts.ts";
 * verdictSummary({ vetoes: 2, would_vetoes: 0, approved: 1, rejected: 0 }); // "2 vetoes · 1 approved"
 * ```
 */
export function verdictSummary(f: Pick<RunFacts, "vetoes" | "would_vetoes" | "approved" | "rejected">): string {
  const parts: string[] = [];
  if (f.vetoes) parts.push(`${f.vetoes} ${f.vetoes === 1 ? "veto" : "vetoes"}`);
  if (f.approved) parts.push(`${f.approved} approved`);
  if (f.rejected) parts.push(`${f.rejected} rejected`);
  if (f.would_vetoes) parts.push(`${f.would_vetoes} would veto`);
  return parts.length ? parts.join(" · ") : "-";
}

/**
 * Keeps what a shared store's catalog row says of a run (adapter, duration, vetoes) beside its entry, for the runs
 * table; returns the entry.
 *
 * @example
 * ```ts
 * import { withCatalogFacts } from "./run_facts.ts";
 * // storeRows.map((r) => withCatalogFacts(entryOfRow(r, root), r))
 * ```
 */
export function withCatalogFacts<E extends EpisodeEntry>(
  e: E,
  r: {
    adapter?: string | null;
    started_at?: string | null;
    ended_at?: string | null;
    veto_count?: number;
    policy_ids?: string[];
  },
): E {
  const from = Date.parse(r.started_at ?? ""), to = Date.parse(r.ended_at ?? "");
  fromCatalog.set(e, {
    adapter: r.adapter ?? null,
    duration_ms: Number.isNaN(from) || Number.isNaN(to) ? null : to - from,
    veto_count: r.veto_count ?? 0,
    policies: r.policy_ids ?? [],
  });
  return e;
}
