/**
 * A JSON artifact (state.json, summary.json) read for a report: the value
 * `readJsonFile` gives, sooner. `readJsonFile` checks the text's nesting
 * character by character before it parses (so no recursive reader ever
 * overflows its stack); for a long run's state.json (8.5 MB for 10,000 steps)
 * that check cost more than the parse. Here the text is parsed first
 * (`JSON.parse` itself does not recurse, in Bun or Deno) and the VALUE's
 * nesting is checked, without recursion. Anything unusual (not a regular
 * file, unreadable, not UTF-8, a byte order mark, invalid JSON, not an
 * object, too deep) is read again by `readJsonFile`, which throws its error
 * naming the file and the line: the same value or the same error (but for a
 * text nested too deep only in a member a later duplicate key replaces: the
 * parsed value is not too deep, and is read).
 *
 * @module
 */
import { closeSync, readFileSync } from "node:fs";
import { readJsonFile } from "../store/json_file.ts";
import { MAX_JSON_DEPTH } from "../store/json_scan.ts";
import { openRegularFile } from "../store/regular_file.ts";

/** Whether `value` nests containers deeper than `max` (the outermost one is at depth 1). */
function deeperThan(value: unknown, max: number): boolean {
  const values: unknown[] = [value], depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop() as object, d = depths.pop()!;
    if (d > max) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof x === "object" && x !== null) {
        values.push(x);
        depths.push(d + 1);
      }
    }
  }
  return false;
}

/** The parsed object when nothing is unusual about the file, else null. */
function quickly(path: string): Record<string, unknown> | null {
  let text: string;
  try {
    const fd = openRegularFile(path, path, { noFollow: true }); // an episode's file: a link planted there is not read
    try {
      text = readFileSync(fd, "utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
  // A replacement character: invalid UTF-8 or a real U+FFFD, which readJsonFile tells apart.
  if (text.includes("\uFFFD") || text.charCodeAt(0) === 0xfeff) return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  return deeperThan(value, MAX_JSON_DEPTH) ? null : value as Record<string, unknown>;
}

/**
 * Reads the JSON object in the file at `path`, as `readJsonFile(path, label)` does (the same value, or the same
 * `NoemaError`).
 *
 * @example
 * ```ts
 * import { readJsonArtifact } from "./json_artifact.ts";
 * const state = readJsonArtifact(".noema/episodes/ep_1/state.json");
 * ```
 */
export function readJsonArtifact(path: string, label: string = path): Record<string, unknown> {
  return quickly(path) ?? readJsonFile(path, label, { noFollow: true });
}
