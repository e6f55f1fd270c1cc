/**
 * Metrics as people read them: a key such as `latencies.total_ms` becomes
 * `total time` with `13.79s`, token counts get separators and the word
 * `tokens`, dollars a `$`, shares a `%`; anything unknown is shown as it is.
 *
 * @module
 */
import { formatMs } from "../cli/format.ts";

export { formatMs };

/**
 * Dollars as people read them: `$0.0123`, `$1.24`, or `-` when unknown.
 *
 * @example
 * ```ts
 * import { formatUsd } from "./metric_format.ts";
 * formatUsd(0.001234); // "$0.00123"
 * ```
 */
export function formatUsd(usd: number | null): string {
  if (usd === null) return "-";
  if (usd === 0) return "$0";
  if (usd >= 1) return `$${usd.toFixed(2)}`;
  if (usd < 0.0001) return "<$0.0001";
  return `$${Number(usd.toPrecision(3))}`;
}

/**
 * A count with thousands separators.
 *
 * @example
 * ```ts
 * import { formatCount } from "./metric_format.ts";
 * formatCount(13792); // "13,792"
 * ```
 */
export function formatCount(n: number): string {
  return n.toLocaleString("en-US", { maximumFractionDigits: 4 });
}

const SHARES = new Set(["insight.plan_adherence", "insight.tool_coverage"]);
const FLAGS = new Set(["success"]);

/** The label of a metric key: dots and underscores as spaces, `latencies.` and `_ms` as a `time`. */
function label(key: string): string {
  let k = key.replace(/^latencies\./, "");
  if (k.endsWith("_ms")) k = `${k.slice(0, -3)} time`;
  return k.replaceAll("_", " ").replaceAll(".", " · ");
}

/**
 * One metric row (label, value with its unit) from a flattened key and its JSON text.
 *
 * @example
 * ```ts
 * import { formatMetric } from "./metric_format.ts";
 * formatMetric("latencies.total_ms", "13792"); // ["total time", "13.79s"]
 * ```
 */
export function formatMetric(key: string, text: string): [string, string] {
  const n = Number(text);
  if (text === "" || text === "null" || Number.isNaN(n)) return [label(key), text === "null" ? "-" : text];
  if (key.endsWith("_ms")) return [label(key), formatMs(n)];
  if (/(^|\.)usd$/.test(key)) return [label(key.replace(/\.usd$/, "")), formatUsd(n)];
  if (/^cost\.models\..*\.prices\./.test(key)) return [label(key), `$${formatCount(n)} per million tokens`];
  if (key.startsWith("tokens.") && !key.endsWith("model_calls")) return [label(key), `${formatCount(n)} tokens`];
  if (SHARES.has(key)) return [label(key), `${Math.round(n * 1000) / 10}%`];
  if (FLAGS.has(key)) return [label(key), n === 1 ? "yes" : "no"];
  return [label(key), formatCount(n)];
}
