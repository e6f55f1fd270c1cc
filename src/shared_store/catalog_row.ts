/**
 * Reading a catalog row at the store's boundary: what a backend read (a
 * `catalog.json`, a `noema_episodes` row) is checked against
 * {@link CatalogRowSchema} and becomes either a valid {@link CatalogRow} or
 * an {@link UnreadableCatalogRow} naming what is wrong. A row is written by
 * any machine of the fleet (or by hand, or copied from elsewhere): a bad one
 * is shown as unreadable under its id and never stops the others.
 *
 * @module
 */
import * as v from "valibot";
import { Count, looseObject } from "../schema/common.ts";
import { toProblems } from "../schema/problems.ts";
import { episodeIdProblem } from "../store/ids.ts";
import type { CatalogEntry, CatalogRow, CatalogRunState, UnreadableCatalogRow } from "./shared_store.ts";

/** Every run state a catalog row may hold. */
export const CATALOG_RUN_STATES = [
  "terminal",
  "running",
  "idle",
  "waiting_for_approval",
  "paused",
  "crashed",
  "crashed_while_sealing",
] as const satisfies readonly CatalogRunState[];

// Compile-time check: a run state added to RunState must be added above.
const _everyRunState: Exclude<CatalogRunState, (typeof CATALOG_RUN_STATES)[number]> extends never ? true : never = true;

/** A JSON object of strings (not an array: valibot's `record` would take one). */
const StringRecord = v.pipe(
  v.custom<unknown>((value) => !Array.isArray(value), "must be a JSON object, not an array"),
  v.record(v.string(), v.string()),
);

/**
 * The call a paused run waits on (`CatalogRow.pending`).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { PendingCallSchema } from "./catalog_row.ts";
 * v.is(PendingCallSchema, "str"); // false
 * ```
 */
export const PendingCallSchema = looseObject({
  checkpoint_id: v.string(),
  state_hash: v.string(),
  kind: v.string(),
  step_id: v.string(),
  reason: v.string(),
  policy_id: v.nullable(v.string()),
  action: looseObject({ tool: v.nullable(v.string()), input_excerpt: v.string() }),
  created_at: v.string(),
});

/**
 * One catalog row ({@link CatalogRow}), as every backend must give it back.
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { CatalogRowSchema } from "./catalog_row.ts";
 * v.is(CatalogRowSchema, { episode_id: "ep_1", task: 123 }); // false
 * ```
 */
export const CatalogRowSchema = looseObject({
  episode_id: v.pipe(v.string(), v.check((id) => episodeIdProblem(id) === null, "must be a valid episode id")),
  task: v.nullable(v.string()),
  run_state: v.picklist(CATALOG_RUN_STATES),
  status: v.string(),
  outcome: v.nullable(v.string()),
  started_at: v.nullable(v.string()),
  ended_at: v.nullable(v.string()),
  host: v.string(),
  adapter: v.nullable(v.string()),
  policy_ids: v.array(v.string()),
  tags: StringRecord,
  step_count: Count,
  veto_count: Count,
  pending: v.optional(v.nullable(PendingCallSchema)),
  stored_at: v.optional(v.nullable(v.string())),
  project: v.optional(v.nullable(v.string())),
});

/**
 * The marker of a row that cannot be read: its id and what is wrong, and
 * nothing of what it says but its start time (for its place in the order).
 *
 * @example
 * ```ts
 * import { unreadableRow } from "./catalog_row.ts";
 * unreadableRow("ep_1", "catalog.json: not valid UTF-8").status; // "unreadable"
 * ```
 */
export function unreadableRow(episodeId: string, error: string, startedAt: string | null = null): UnreadableCatalogRow {
  return {
    episode_id: episodeId,
    task: null,
    run_state: "unreadable",
    status: "unreadable",
    outcome: null,
    started_at: startedAt,
    ended_at: null,
    host: null,
    adapter: null,
    policy_ids: [],
    tags: {},
    step_count: 0,
    veto_count: 0,
    pending: null,
    error,
  };
}

/**
 * A row as read (`value`) checked: the valid {@link CatalogRow}, or the
 * marker of an unreadable one under `episodeId`, its error starting with
 * `where` (the file or table it came from). A row that names another episode
 * than `episodeId` (one copied from another episode's folder) is unreadable.
 *
 * @example
 * ```ts
 * import { catalogEntry } from "./catalog_row.ts";
 * catalogEntry({ episode_id: "ep_1", tags: null }, "ep_1", "ep_1/catalog.json").run_state; // "unreadable"
 * ```
 */
export function catalogEntry(value: unknown, episodeId: string, where: string): CatalogEntry {
  const o = typeof value === "object" && value !== null ? value as Record<string, unknown> : {};
  const started = typeof o.started_at === "string" ? o.started_at : null;
  const r = v.safeParse(CatalogRowSchema, value);
  if (!r.success) {
    const problems = toProblems(r.issues).slice(0, 3).map((p) => (p.path ? `${p.path}: ${p.message}` : p.message));
    return unreadableRow(episodeId, `${where}: ${problems.join("; ")}`, started);
  }
  if (r.output.episode_id !== episodeId) {
    return unreadableRow(
      episodeId,
      `${where}: names episode ${r.output.episode_id}, not ${episodeId} (a row copied from another episode?)`,
      started,
    );
  }
  return r.output as CatalogRow;
}

/**
 * The fields of a row as read that are valid, for filtering an unreadable
 * row as PostgreSQL filters its columns: a field that cannot be read matches
 * no filter on it (its run state and status match no status word).
 *
 * @example
 * ```ts
 * import { readableFields } from "./catalog_row.ts";
 * readableFields({ run_state: "waiting_for_approval", pending: "str" }, "ep_1").run_state; // "waiting_for_approval"
 * ```
 */
export function readableFields(value: unknown, episodeId: string): CatalogRow {
  const o = typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {};
  const e = CatalogRowSchema.entries;
  const ok = <K extends keyof typeof e>(k: K, fallback: unknown) => (v.is(e[k], o[k]) ? o[k] : fallback);
  return {
    episode_id: episodeId,
    task: ok("task", null),
    run_state: ok("run_state", "") as CatalogRunState,
    status: ok("status", ""),
    outcome: ok("outcome", null),
    started_at: ok("started_at", null),
    ended_at: ok("ended_at", null),
    host: ok("host", ""),
    adapter: ok("adapter", null),
    policy_ids: ok("policy_ids", []),
    tags: ok("tags", {}),
    step_count: ok("step_count", 0),
    veto_count: ok("veto_count", 0),
    pending: null,
    project: ok("project", null),
  } as CatalogRow;
}
