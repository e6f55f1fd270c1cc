/**
 * The tail of a failed program's stderr, as `noema view`, `noema report` and
 * `noema serve` show it under a failed step: its last lines (at most
 * {@link TAIL_LINES}), each cut to {@link TAIL_LINE_CHARS} characters, so
 * what a user meets first says why the program failed, in bounded space.
 *
 * @module
 */

/** Most lines of stderr shown. */
export const TAIL_LINES = 10;
/** Longest line shown, in characters (a longer one keeps its end, after `…`). */
export const TAIL_LINE_CHARS = 300;

/** The last lines of a stderr text and how many lines it had. */
export interface StderrTail {
  /** The last lines (at most {@link TAIL_LINES}), trailing blank lines dropped. */
  lines: string[];
  /** How many lines the recorded text has (the recorded text may itself be the end of a longer stderr). */
  total: number;
}

/**
 * The tail of `stderr`, or null when it is empty or only blank.
 *
 * @example
 * ```ts
 * import { stderrTail } from "./stderr_tail.ts";
 * stderrTail("a\nb\nc\n", 2); // { lines: ["b", "c"], total: 3 }
 * ```
 */
export function stderrTail(stderr: unknown, max: number = TAIL_LINES): StderrTail | null {
  if (typeof stderr !== "string") return null;
  const all = stderr.replace(/\r\n/g, "\n").split("\n");
  while (all.length > 0 && all[all.length - 1].trim() === "") all.pop();
  if (all.length === 0) return null;
  const lines = all.slice(-max).map((l) => (l.length > TAIL_LINE_CHARS ? `…${l.slice(-(TAIL_LINE_CHARS - 1))}` : l));
  return { lines, total: all.length };
}

/**
 * The heading of a tail: `stderr (last 10 of 30 lines)`, or `stderr` when it is whole.
 *
 * @example
 * ```ts
 * import { stderrTail, tailHeading } from "./stderr_tail.ts";
 * tailHeading(stderrTail("a\nb\nc\n", 2)!); // "stderr (last 2 of 3 lines)"
 * ```
 */
export function tailHeading(tail: StderrTail): string {
  return tail.total > tail.lines.length ? `stderr (last ${tail.lines.length} of ${tail.total} lines)` : "stderr";
}
