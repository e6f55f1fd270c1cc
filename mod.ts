/**
 * noema: run AI-agent episodes and record each one as plain JSON artifacts
 * (`events.jsonl`, `learn.jsonl`, `state.json`, `summary.json`,
 * `manifest.json`) that any tool can read.
 *
 * This module is the public API: the artifact schemas (valibot, with types
 * inferred from them), the episode store, the read operations and
 * validation.
 *
 * @example
 * ```ts
 * import { listEpisodes, readSummary, validate } from "noema";
 * for (const e of listEpisodes({ limit: 5 })) {
 *   console.log(e.episode_id, e.status, validate(e.episode_dir).valid);
 * }
 * ```
 *
 * @module
 */
export * from "./src/public_api.ts";
