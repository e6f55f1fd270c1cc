/**
 * Rules inside `summary.json` that tie one field to another:
 *
 * - `summary.success`: `metrics.success` is 1 when `outcome` is `success` or
 *   `success_unverified` (the adapter succeeded, with or without a passing
 *   verification), 0 when it is `goal_not_achieved` or `error`.
 * - `summary.duration`: `duration_sec` and `metrics.latencies.total_ms` (both
 *   "total episode duration") agree: they differ by no more than one unit of
 *   the last decimal `duration_sec` is written with, and at least 1 ms is
 *   allowed (`0.98` allows 970–990 ms, `0.104` allows 103–105 ms, `2` allows
 *   1000–3000 ms), so a writer that rounds or truncates either passes.
 *
 * @module
 */
import type { SectionProblem } from "./sections.ts";
import { ownEntry } from "../json.ts";

type Json = Record<string, unknown>;

const SUCCESS_OF: Readonly<Record<string, 0 | 1>> = {
  success: 1,
  success_unverified: 1,
  goal_not_achieved: 0,
  error: 0,
};

/** Decimals a number is written with (`0.98` → 2, `2` → 0, `1e-7` → 7). */
function decimals(n: number): number {
  const [mantissa, exponent] = String(n).split("e");
  const fraction = mantissa.split(".")[1]?.length ?? 0;
  return Math.max(0, fraction - Number(exponent ?? 0));
}

/**
 * The problems of `summary.success` and `summary.duration` in a parsed
 * `summary.json` (fields of the wrong type are the schema's to report).
 *
 * @example
 * ```ts
 * import { summaryConsistency } from "./summary_rules.ts";
 * summaryConsistency({ outcome: "error", duration_sec: 0.98, metrics: { success: 1, latencies: { total_ms: 980 } } });
 * // [{ rule: "summary.success", path: "metrics.success", message: "1, but outcome is \"error\" (…)" }]
 * ```
 */
export function summaryConsistency(summary: Json): SectionProblem[] {
  const out: SectionProblem[] = [];
  const metrics = typeof summary.metrics === "object" && summary.metrics !== null ? summary.metrics as Json : null;
  if (!metrics) return out;
  const outcome = summary.outcome;
  const expected = typeof outcome === "string" ? ownEntry(SUCCESS_OF, outcome) ?? null : null;
  if (expected !== null && (metrics.success === 0 || metrics.success === 1) && metrics.success !== expected) {
    out.push({
      rule: "summary.success",
      path: "metrics.success",
      message: `${metrics.success}, but outcome is ${JSON.stringify(outcome)} (success is ${expected} for it)`,
    });
  }
  const latencies = typeof metrics.latencies === "object" && metrics.latencies !== null
    ? metrics.latencies as Json
    : null;
  const totalMs = latencies?.total_ms, sec = summary.duration_sec;
  if (typeof totalMs === "number" && typeof sec === "number" && Number.isFinite(sec) && Number.isFinite(totalMs)) {
    const allowedMs = Math.max(1, 1000 * 10 ** -decimals(sec));
    if (Math.abs(sec * 1000 - totalMs) > allowedMs + 1e-6) {
      out.push({
        rule: "summary.duration",
        path: "duration_sec",
        message:
          `${sec} s, but metrics.latencies.total_ms is ${totalMs} ms (they may differ by ${allowedMs} ms at most)`,
      });
    }
  }
  return out;
}
