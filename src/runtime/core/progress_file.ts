/**
 * `core.json`: what an episode driven through `EpisodeCore` keeps between
 * processes besides `state.json` — the counters behind the summary, learning
 * evidence, the last event written (so the next process continues the log's
 * id chain and timestamps without reading it all), and each agent call's
 * decision by `call_id` (masked, like every artifact). Written atomically
 * after each change, while the episode lock is held.
 *
 * When its last event id is not the log's last event (a process died between
 * the two writes), `attach` rebuilds the progress from the events instead.
 *
 * @module
 */
import { join } from "node:path";
import type { ArtifactSink } from "../artifact_sink.ts";
import { readJsonFile } from "../../store/json_file.ts";
import type { PolicyEvidence } from "../learning.ts";
import type { RunCounters } from "../summary_builder.ts";

/** The file's name in the episode directory. */
export const CORE_FILE = "core.json";

/** One agent call, by its `call_id`. */
export interface CallRecord {
  step_id: string;
  index: number;
  /** `unreviewed`: a result arrived for a call noema never saw proposed (no policy was consulted). */
  verdict: "allow" | "patch" | "deny" | "ask" | "unreviewed";
  action_candidate_id: string;
  /** The action as decided (masked). */
  action: { kind: string; tool: string; input: Record<string, unknown>; command?: string };
  reason: string | null;
  policy_id: string | null;
  hints: string[];
  checkpoint_id?: string;
  /** An ask proposed with `on_ask: "defer"` whose pause is still to be made (the pause's kind). */
  pause_due?: "review" | "approval" | "veto";
  /**
   * The digest of the tool and input as proposed, before any patch (see `call_reuse.ts`): the same id sent with
   * another call is refused, not given this decision. Absent in older files.
   */
  proposed?: string;
  /** The agent's own id of a call proposed under another key (see `EpisodeCore.bindCall`). */
  agent_call_id?: string;
  recorded: boolean;
}

/** What `core.json` holds. */
export interface CoreProgress {
  schema_version: "core/1.0";
  events: { count: number; last_event_id: string; last_timestamp: string };
  counters: RunCounters;
  evidence: PolicyEvidence[];
  last_diff: string[];
  last_directive_policy: string | null;
  last_step_event_id: string;
  waiting_ms: number;
  /** When the current pause began (ISO time), or null. */
  paused_at: string | null;
  /** Steps the last `plan` event carried (absent in older files: all of them). */
  announced_steps?: number;
  /** Actions the state projections carried so far (absent or null: the next one carries all). */
  projected_actions?: number | null;
  calls: Record<string, CallRecord>;
}

/**
 * Writes `core.json` atomically through the episode's sink (secrets masked
 * like every artifact); `durable: false` skips the fsyncs.
 *
 * @example
 * ```ts
 * import { writeCoreProgress } from "./progress_file.ts";
 * // writeCoreProgress(engine.rec.sink, progress);
 * ```
 */
export function writeCoreProgress(sink: ArtifactSink, progress: CoreProgress, durable = true): void {
  sink.writeJson(CORE_FILE, progress, { durable });
}

/**
 * Reads `core.json`, or null when it is missing or not ours.
 *
 * @example
 * ```ts
 * import { readCoreProgress } from "./progress_file.ts";
 * readCoreProgress("/nonexistent"); // null
 * ```
 */
export function readCoreProgress(dir: string): CoreProgress | null {
  try {
    const value = readJsonFile(join(dir, CORE_FILE)) as unknown as CoreProgress;
    return value?.schema_version === "core/1.0" ? value : null;
  } catch {
    return null;
  }
}
