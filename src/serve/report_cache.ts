/**
 * The report model of an episode, built once per version of its files: a
 * page opened again (or by another person) while nothing was written costs no
 * second pass over a long events.jsonl. A version is the size and
 * modification time of events.jsonl, state.json and summary.json.
 *
 * @module
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { buildReport, type ReportModel } from "../report/model.ts";

/** Models kept (the most recently used). */
const KEEP = 8;
const cache = new Map<string, { version: string; model: ReportModel }>();

function version(dir: string): string {
  return ["events.jsonl", "state.json", "summary.json", "manifest.json"].map((f) => {
    try {
      const s = statSync(join(dir, f));
      return `${s.size}:${s.mtimeMs}`;
    } catch {
      return "-";
    }
  }).join("|");
}

/**
 * The report model of episode `id` in `dir`, from the cache when its files have not changed.
 *
 * @example
 * ```ts
 * import { cachedReport } from "./report_cache.ts";
 * cachedReport("ep_1", ".noema/episodes/ep_1").steps.length;
 * ```
 */
export function cachedReport(id: string, dir: string, excerptChars = 2000): ReportModel {
  const key = `${dir}\u0000${excerptChars}`;
  const v = version(dir);
  const hit = cache.get(key);
  if (hit && hit.version === v) {
    cache.delete(key);
    cache.set(key, hit);
    return hit.model;
  }
  const model = buildReport({ id, dir }, { excerptChars });
  cache.set(key, { version: v, model });
  while (cache.size > KEEP) cache.delete(cache.keys().next().value!);
  return model;
}
