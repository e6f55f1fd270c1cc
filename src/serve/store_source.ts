/**
 * `noema serve --store URL`: the runs of a shared store's catalog (its
 * filters run in the store), each episode read from a copy pulled into a
 * private cache (pulled again when the run is still going), the runs waiting
 * for approval fleet-wide, and decisions recorded in the store as
 * `noema approve --store` records them (the machine that holds the run
 * applies it; when it is this one, at once).
 *
 * @module
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { entryOfRow } from "../cli/commands/list_store.ts";
import { withCatalogFacts } from "./run_facts.ts";
import { decideInStore } from "../cli/store_approvals.ts";
import { pullEpisode } from "../shared_store/pull.ts";
import { storedPendingCall } from "../shared_store/pending_call.ts";
import { unreadableRow } from "../shared_store/catalog_row.ts";
import {
  type CatalogFilter,
  type CatalogRow,
  isUnreadable,
  type SharedStore,
  type StoredDecision,
  type UnreadableCatalogRow,
} from "../shared_store/shared_store.ts";
import type { EpisodeEntry } from "../read/list.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";
import { checkNote, type DecisionAsk, heldHere, type Waiting } from "./approvals.ts";
import { HttpError } from "./paths.ts";
import { type RunsQuery, sinceIsDuration, sinceMs } from "./runs.ts";

/** A shared store being served, and where its episodes are pulled to be read. */
export interface StoreSource {
  store: SharedStore;
  /** A private root the episodes are pulled into (removed when the server stops). */
  cache: string;
  /** The local root: decisions on runs held here are applied to them at once. */
  root: string;
}

/** How old a pulled copy of a run that is not terminal may be before it is pulled again. */
const FRESH_MS = 1000;
const pulled = new Map<string, { at: number; terminal: boolean }>();

function filterOf(q: RunsQuery, limit: number): CatalogFilter {
  const status = [...q.state.filter((s) => s !== "terminal"), ...q.status];
  return {
    ...(status.length ? { status } : {}),
    ...(q.state.includes("terminal") ? { run_state: ["terminal"] } : {}),
    ...(Object.keys(q.tags).length ? { tags: q.tags } : {}),
    ...(q.task !== null ? { task: q.task } : {}),
    ...(q.host !== null ? { host: q.host } : {}),
    ...(q.adapter !== null ? { adapter: q.adapter } : {}),
    ...(q.policy !== null ? { policy: q.policy } : {}),
    // A duration ago (`7d`) is counted on the store's clock, a date is a date.
    ...(q.since === null
      ? {}
      : sinceIsDuration(q.since)
      ? { within_ms: Date.now() - sinceMs(q.since) }
      : { since: new Date(sinceMs(q.since)).toISOString() }),
    limit,
  };
}

/**
 * The newest `limit` runs of the store's catalog, fleet-wide, as entries with their catalog facts (the fleet view),
 * and whether there are more.
 *
 * @example
 * ```ts
 * import { storeFleet } from "./store_source.ts";
 * // (await storeFleet(source, 10_000)).entries.length
 * ```
 */
export async function storeFleet(src: StoreSource, limit: number): Promise<{ entries: EpisodeEntry[]; more: boolean }> {
  const rows = await src.store.list({ limit: limit + 1 });
  const entries = rows.slice(0, limit).map((r) => withCatalogFacts(entryOfRow(r, src.root), r));
  return { entries, more: rows.length > limit };
}

/**
 * One page of the store's catalog as `noema list --store --json` entries (newest first).
 *
 * @example
 * ```ts
 * import { storeRuns } from "./store_source.ts";
 * // await storeRuns(source, parseRunsQuery(new URLSearchParams()))
 * ```
 */
export async function storeRuns(src: StoreSource, q: RunsQuery): Promise<{ entries: EpisodeEntry[]; more: boolean }> {
  if (q.order === "oldest") throw new HttpError(400, "bad_filter", "order=oldest is not offered over a shared store");
  const offset = (q.page - 1) * q.size;
  const rows = await src.store.list(filterOf(q, offset + q.size + 1));
  const all = rows.filter((r) => q.outcome === null || r.outcome === q.outcome).map((r) =>
    withCatalogFacts(entryOfRow(r, src.root), r)
  );
  return { entries: all.slice(offset, offset + q.size), more: all.length > offset + q.size };
}

/**
 * The directory of a pulled copy of episode `id`, pulled (again) when there is none or the run was still going.
 *
 * @example
 * ```ts
 * import { storeEpisodeDir } from "./store_source.ts";
 * // const dir = await storeEpisodeDir(source, "ep_01J…")
 * ```
 */
export async function storeEpisodeDir(src: StoreSource, id: string): Promise<string> {
  const problem = episodeIdProblem(id);
  if (problem !== null) throw new HttpError(400, "invalid_id", `invalid episode id ${JSON.stringify(id)}: ${problem}`);
  const dir = join(episodesDir(src.cache), id);
  const seen = pulled.get(dir);
  if (seen && (seen.terminal || Date.now() - seen.at < FRESH_MS)) return dir;
  const row = await src.store.get(id);
  if (row === null) throw new HttpError(404, "not_found", `episode ${id} is not in ${src.store.location}`);
  rmSync(dir, { recursive: true, force: true });
  await pullEpisode(src.store, id, src.cache);
  pulled.set(dir, { at: Date.now(), terminal: row.run_state === "terminal" });
  return dir;
}

/**
 * The runs of the fleet waiting for a decision, from the catalog, each with
 * the host that holds it and the decision already made on its checkpoint (the
 * holding machine has not applied it yet); after them, those whose row cannot
 * be read, shown as such (`unreadable`), without anything to decide.
 *
 * @example
 * ```ts
 * import { storeWaiting } from "./store_source.ts";
 * // (await storeWaiting(source)).length
 * ```
 */
export async function storeWaiting(src: StoreSource): Promise<Waiting[]> {
  const rows = await src.store.list({ run_state: ["waiting_for_approval"], limit: 500 });
  const readable = rows.filter((r): r is CatalogRow => !isUnreadable(r) && !!r.pending);
  const shown = await Promise.all(readable.map(async (r): Promise<Waiting> => {
    // What it waits on, as its own published checkpoint says (never the catalog row's words alone).
    const p = await storedPendingCall(src.store, r);
    if (p === null) {
      const why = `the checkpoint its catalog row names (${r.pending!.checkpoint_id}) is not in ${src.store.location}`;
      return unreadableWaiting({ ...unreadableRow(r.episode_id, why, r.started_at) });
    }
    return {
      episode_id: r.episode_id,
      task: r.task,
      started_at: r.started_at,
      checkpoint_id: p.checkpoint_id,
      kind: p.kind,
      step_id: p.step_id,
      policy_id: p.policy_id,
      reason: p.reason,
      action: p.action,
      host: r.host,
      waiting_since: p.created_at || null,
      held_here: heldHere(src.root, r.episode_id),
      decided: decidedOf(await src.store.decision(r.episode_id, p.checkpoint_id)),
    };
  }));
  const ok = shown.filter((w) => w.unreadable === undefined);
  return ok.concat(shown.filter((w) => w.unreadable !== undefined), rows.filter(isUnreadable).map(unreadableWaiting));
}

function unreadableWaiting(r: UnreadableCatalogRow): Waiting {
  const none = { task: null, checkpoint_id: "", kind: "", step_id: "", policy_id: null, reason: "", action: null };
  const where = { host: null, held_here: false, decided: null };
  return { episode_id: r.episode_id, started_at: r.started_at, ...none, ...where, unreadable: r.error };
}

function decidedOf(d: StoredDecision | null): Waiting["decided"] {
  return d && {
    decision: d.decision,
    by: d.by,
    note: d.note,
    at: d.at,
    host: d.host,
    authenticated_as: d.authenticated_as ?? null,
    claimed_by: d.claimed_by ?? null,
  };
}

/**
 * Records a decision in the store, as `noema approve --store` does; a
 * checkpoint already decided, or a run waiting on nothing or on another
 * checkpoint, is a 409.
 *
 * @example
 * ```ts
 * import { storeDecide } from "./store_source.ts";
 * // await storeDecide(source, "ep_01J…", { decision: "approved", note: null, by: "ana", checkpointId: null })
 * ```
 */
export async function storeDecide(src: StoreSource, id: string, ask: DecisionAsk): Promise<StoredDecision> {
  checkNote(ask.note);
  const row = await src.store.get(id);
  if (row === null) throw new HttpError(404, "not_found", `episode ${id} is not in ${src.store.location}`);
  if (ask.checkpointId !== null && row.pending && row.pending.checkpoint_id !== ask.checkpointId) {
    throw new HttpError(
      409,
      "stale",
      `episode ${id} now waits on ${row.pending.checkpoint_id}, not ${ask.checkpointId}`,
    );
  }
  try {
    return await decideInStore(src.store, id, {
      decision: ask.decision,
      note: ask.note ?? undefined,
      // The token's label is the decider the store records (beside the server's database role).
      servedBy: ask.by ?? undefined,
      checkpointId: ask.checkpointId ?? undefined,
    }, {
      root: src.root,
    });
  } catch (e) {
    const code = (e as { exitCode?: number }).exitCode;
    if (code === 6 || code === 7 || code === 8) throw new HttpError(409, "conflict", (e as Error).message);
    throw e;
  }
}
