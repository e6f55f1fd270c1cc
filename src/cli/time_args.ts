/**
 * Time arguments of the CLI: durations (`30d`, `12h`, `90m`, `45s`, `2w`) and
 * points in time (`--since 2025-11-01`, `--since 2h` meaning two hours ago).
 *
 * @module
 */
import { usageError } from "./errors.ts";

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parses a duration like `30d`, `12h`, `90m`, `45s` or `2w` into
 * milliseconds; anything else is a usage error naming the flag.
 *
 * @example
 * ```ts
 * import { parseDuration } from "./time_args.ts";
 * parseDuration("2h", "--older-than"); // 7200000
 * ```
 */
export function parseDuration(value: string, flag: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$/i.exec(value);
  if (!m) throw usageError(`${flag} must be a duration like 30d, 12h, 90m, 45s or 2w, got ${JSON.stringify(value)}`);
  return Number(m[1]) * UNIT_MS[m[2].toLowerCase()];
}

/**
 * Whether a `--since` value is a duration ago (`2h`, `7d`) rather than a date.
 *
 * @example
 * ```ts
 * import { isDuration } from "./time_args.ts";
 * isDuration("2h"); // true
 * ```
 */
export function isDuration(value: string): boolean {
  return /^\s*\d+(?:\.\d+)?\s*[smhdw]\s*$/i.test(value);
}

/**
 * Parses a point in time: an ISO date or date-time (`2025-11-01`,
 * `2025-11-01T10:00Z`), or a duration meaning that long ago (`2h`, `7d`).
 * Returns epoch milliseconds.
 *
 * @example
 * ```ts
 * import { parseSince } from "./time_args.ts";
 * parseSince("2025-11-01", "--since"); // 1761955200000
 * ```
 */
export function parseSince(value: string, flag: string, now: number = Date.now()): number {
  if (isDuration(value)) return now - parseDuration(value, flag);
  const t = /^\d{4}-\d{2}-\d{2}/.test(value.trim()) ? Date.parse(value.trim()) : NaN;
  if (Number.isNaN(t)) {
    throw usageError(
      `${flag} must be a date (2025-11-01, 2025-11-01T10:00:00Z) or a duration ago (2h, 7d), got ${
        JSON.stringify(value)
      }`,
    );
  }
  return t;
}
