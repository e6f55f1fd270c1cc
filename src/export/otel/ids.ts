/**
 * The ids and times of an episode's trace, derived from the record alone, so
 * that exporting an episode twice (live, then again with `noema export otel`)
 * gives the same trace: the trace id is the first 16 bytes of the SHA-256 of
 * the episode id, a span id the first 8 bytes of the SHA-256 of the episode id
 * and the span's key (an event id, a model turn, `root`). Times are the
 * events' own timestamps.
 *
 * @module
 */
import { nodeCrypto } from "../../builtins.ts";
import type { HrTime } from "@opentelemetry/api";

function sha256Hex(text: string): string {
  return nodeCrypto().createHash("sha256").update(text).digest("hex");
}

/**
 * The trace id of an episode (32 hex digits, never all zeros).
 *
 * @example
 * ```ts
 * traceIdOf("ep_01J9ZZ"); // "…32 hex digits…"
 * ```
 */
export function traceIdOf(episodeId: string): string {
  const id = sha256Hex(`noema.trace\0${episodeId}`).slice(0, 32);
  return /^0+$/.test(id) ? "1".padStart(32, "0") : id;
}

/**
 * The span id of `key` (an event id, `root`, `turn:3`) in an episode (16 hex digits, never all zeros).
 *
 * @example
 * ```ts
 * spanIdOf("ep_01J9ZZ", "ev_01J9ZZ…"); // "…16 hex digits…"
 * ```
 */
export function spanIdOf(episodeId: string, key: string): string {
  const id = sha256Hex(`noema.span\0${episodeId}\0${key}`).slice(0, 16);
  return /^0+$/.test(id) ? "1".padStart(16, "0") : id;
}

/**
 * An ISO 8601 timestamp as OpenTelemetry's `[seconds, nanoseconds]`, or null when it is not one.
 *
 * @example
 * ```ts
 * hrTimeOf("2026-11-26T19:21:00.320Z"); // [1795720860, 320000000]
 * ```
 */
export function hrTimeOf(iso: unknown): HrTime | null {
  if (typeof iso !== "string") return null;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? msToHrTime(ms) : null;
}

/**
 * Milliseconds since the epoch as `[seconds, nanoseconds]`.
 *
 * @example
 * ```ts
 * msToHrTime(1500); // [1, 500000000]
 * ```
 */
export function msToHrTime(ms: number): HrTime {
  const s = Math.floor(ms / 1000);
  return [s, Math.round((ms - s * 1000) * 1e6)];
}

/**
 * `end - start` as HrTime (zero when `end` is before `start`).
 *
 * @example
 * ```ts
 * hrDuration([1, 0], [2, 500]); // [1, 500]
 * ```
 */
export function hrDuration(start: HrTime, end: HrTime): HrTime {
  const ns = (end[0] - start[0]) * 1e9 + (end[1] - start[1]);
  if (ns <= 0) return [0, 0];
  return [Math.floor(ns / 1e9), ns % 1e9];
}
