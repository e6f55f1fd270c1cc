/**
 * Values for the shared-store tests: catalog rows with defaults, and bytes.
 *
 * @module
 */
import type { CatalogRow } from "../../src/shared_store/shared_store.ts";

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
