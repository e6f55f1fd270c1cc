/**
 * Values for the shared-store tests: catalog rows with defaults, bytes, and
 * rows spoiled behind noema's back.
 *
 * @module
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FileStore } from "../../src/shared_store/files/file_store.ts";
import type { PostgresStore } from "../../src/shared_store/postgres/postgres_store.ts";
import type { CatalogRow, SharedStore } from "../../src/shared_store/shared_store.ts";
import { MIGRATIONS } from "../../src/shared_store/postgres/migrations.ts";

const enc = new TextEncoder();

/** The UTF-8 bytes of a string. */
export const bytes = (s: string): Uint8Array => enc.encode(s);

/**
 * A catalog row with defaults (a finished, ok run of host "a").
 *
 * @example
 * ```ts
 * import { row } from "./helpers/store_rows.ts";
 * row("ep_1", { status: "vetoed" });
 * ```
 */
export function row(id: string, over: Partial<CatalogRow> = {}): CatalogRow {
  return {
    episode_id: id,
    task: `task of ${id}`,
    run_state: "terminal",
    status: "ok",
    outcome: "success",
    started_at: "2026-11-01T00:00:00.000Z",
    ended_at: null,
    host: "a",
    adapter: "shell",
    policy_ids: [],
    tags: {},
    step_count: 1,
    veto_count: 0,
    pending: null,
    ...over,
  };
}

/**
 * Sets one field of an episode's stored catalog row to `value` behind noema's
 * back, as a hand edit or another program would: in `catalog.json` (files),
 * or in its column (PostgreSQL; `tags` and `pending` as jsonb, where null is
 * JSON's null).
 *
 * @example
 * ```ts
 * import { spoilCatalog } from "./helpers/store_rows.ts";
 * await spoilCatalog(store, "ep_1", "pending", "str");
 * ```
 */
export async function spoilCatalog(store: SharedStore, id: string, field: string, value: unknown): Promise<void> {
  if (store.kind === "files") {
    const path = join((store as FileStore).dir, "episodes", id, "catalog.json");
    writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), [field]: value }));
    return;
  }
  const sql = (store as PostgresStore).sql;
  const json = field === "tags" || field === "pending";
  const stored = json ? sql`${JSON.stringify(value)}::jsonb` : sql`${value as string}`;
  await sql`UPDATE noema_episodes SET ${sql(field)} = ${stored} WHERE episode_id = ${id}`;
}

/**
 * Stores a waiting run's catalog row together with the checkpoint it names (`checkpoints/<id>.json`, as a run
 * publishes it): what approvers are shown is read from that checkpoint, never from the row alone.
 *
 * @example
 * ```ts
 * import { putWaiting, row } from "./helpers/store_rows.ts";
 * await putWaiting(store, row("ep_1", { run_state: "waiting_for_approval", status: "pending", pending }));
 * ```
 */
export async function putWaiting(store: SharedStore, r: CatalogRow): Promise<void> {
  const p = r.pending!;
  const checkpoint = {
    schema_version: "checkpoint/1.0",
    episode_id: r.episode_id,
    checkpoint_id: p.checkpoint_id,
    state_hash: p.state_hash,
    created_at: p.created_at,
    pending: {
      kind: p.kind,
      step_id: p.step_id,
      reason: p.reason,
      policy_id: p.policy_id,
      action: { tool: p.action.tool, command: p.action.input_excerpt },
    },
  };
  await store.putFile(r.episode_id, `checkpoints/${p.checkpoint_id}.json`, bytes(JSON.stringify(checkpoint)));
  await store.upsertCatalog(r);
}

/**
 * Brings an empty PostgreSQL store's schema to `version` exactly, as a noema of that version left it (its
 * migrations, each recorded), for tests of what a later migration does to it.
 *
 * @example
 * ```ts
 * import { schemaAt } from "./helpers/store_rows.ts";
 * // await schemaAt(new PostgresStore(url), 4); // then migrate() runs 5 onwards
 * ```
 */
export async function schemaAt(store: PostgresStore, version: number): Promise<void> {
  await store.sql.begin(async (tx) => {
    await tx`CREATE TABLE noema_schema_version (version integer PRIMARY KEY, description text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`;
    for (const m of MIGRATIONS.filter((m) => m.version <= version)) {
      for (const s of m.statements) await tx.unsafe(s);
      await tx`INSERT INTO noema_schema_version (version, description) VALUES (${m.version}, ${m.description})`;
    }
  });
}
