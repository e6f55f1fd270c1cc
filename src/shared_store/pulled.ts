/**
 * Which local episode directories are copies pulled from the shared store,
 * and what they held when pulled: `<root>/state/pulled/<episode_id>`, a small
 * JSON file written after the copy is in place. A copy of a run that was
 * still going (its catalog row not `terminal`) is pulled again when the store
 * has more of it; a directory without a marker is a run of this machine and
 * is never replaced.
 *
 * @module
 */
import { existsSync, lstatSync, readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { writeJsonAtomic } from "../store/atomic.ts";
import { assertEpisodeId, episodeIdProblem } from "../store/ids.ts";
import { episodesDir } from "../store/layout.ts";

/** What a pulled copy held when it was pulled. */
export interface PulledCopy {
  /** The catalog's run state when the pull began (`terminal`: the copy never changes). */
  run_state: string;
  /** Lines of `events.jsonl` pulled. */
  events_lines: number;
  /** Bytes of `events.jsonl` pulled: a copy written to since (resumed here) is no longer a copy. */
  events_bytes: number;
  /** The store it was pulled from (its location, a password masked); absent in markers written before it was. */
  store?: string;
}

const markerOf = (root: string, id: string) => join(root, "state", "pulled", id);

/**
 * Records that `<root>/episodes/<id>/` is a copy pulled from the store.
 *
 * @example
 * ```ts
 * import { markPulled } from "./pulled.ts";
 * markPulled(".noema", "ep_01J…", { run_state: "running", events_lines: 12, events_bytes: 4096 });
 * ```
 */
export function markPulled(root: string, id: string, copy: PulledCopy): void {
  assertEpisodeId(id);
  writeJsonAtomic(markerOf(root, id), copy, { durable: false, root });
}

/**
 * Forgets that `<root>/episodes/<id>/` was pulled (before it is replaced).
 *
 * @example
 * ```ts
 * import { clearPulled } from "./pulled.ts";
 * clearPulled(".noema", "ep_01J…");
 * ```
 */
export function clearPulled(root: string, id: string): void {
  assertEpisodeId(id);
  rmSync(markerOf(root, id), { force: true });
}

/**
 * Whether `<root>/episodes/<id>/` is a copy pulled from the store (the run is another machine's, or another root's):
 * what it held when pulled, or null for a run of this root. A pulled copy is never resumed, decided on or published
 * from here: the root that holds the run does that.
 *
 * @example
 * ```ts
 * import { pulledCopy } from "./pulled.ts";
 * if (pulledCopy(".noema", "ep_01J…")) console.log("a copy of another machine's run");
 * ```
 */
export function pulledCopy(root: string, id: string): PulledCopy | null {
  if (episodeIdProblem(id)) return null;
  const path = markerOf(root, id);
  try {
    if (!lstatSync(path).isFile()) return null;
    const copy = JSON.parse(readFileSync(path, "utf8")) as PulledCopy;
    return copy !== null && typeof copy === "object"
      ? copy
      : { run_state: "unknown", events_lines: 0, events_bytes: 0 };
  } catch (e) {
    // A marker that is there but cannot be read still says the copy was pulled.
    return (e as { code?: string }).code === "ENOENT"
      ? null
      : { run_state: "unknown", events_lines: 0, events_bytes: 0 };
  }
}

/** Bytes of the copy's `events.jsonl` now (0 when there is none). */
function eventsBytes(root: string, id: string): number {
  try {
    return statSync(join(episodesDir(root), id, "events.jsonl")).size;
  } catch {
    return 0;
  }
}

/**
 * The pulled copy `<root>/episodes/<id>/` that may be out of date: pulled
 * while its run was still going, and not written here since. Null for a
 * local run, a copy of a finished run, or a marker that cannot be read.
 *
 * @example
 * ```ts
 * import { refreshablePull } from "./pulled.ts";
 * refreshablePull(".noema", "ep_01J…"); // {run_state: "running", events_lines: 12, events_bytes: 4096} or null
 * ```
 */
export function refreshablePull(root: string, id: string): PulledCopy | null {
  const path = markerOf(root, id);
  try {
    if (!existsSync(path) || !lstatSync(path).isFile()) return null;
    const copy = JSON.parse(readFileSync(path, "utf8")) as PulledCopy;
    if (copy.run_state === "terminal" || typeof copy.events_bytes !== "number") return null;
    return eventsBytes(root, id) === copy.events_bytes ? copy : null;
  } catch {
    return null;
  }
}
