/**
 * Listing episodes newest first, reading only the episodes it returns.
 *
 * @module
 */
import { textOf } from "../json.ts";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { NoemaError } from "../errors.ts";
import { ulidTime } from "../store/ulid.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { readJsonFile } from "../store/json_file.ts";
import { ARTIFACTS, episodesDir, resolveRoot, type RootOptions } from "../store/layout.ts";
import { lockStatus } from "../store/lock.ts";
import { lastLine } from "../store/last_line.ts";

import { crashedWhileSealing } from "./sealing.ts";
import { sessionIdle } from "./session_idle.ts";
/** One row of {@link listEpisodes}. */
export interface EpisodeEntry {
  /** The episode id. */
  episode_id: string;
  /** Absolute path of the episode directory. */
  episode_dir: string;
  /** `terminal` when `summary.json` exists, else `non-terminal`. */
  lifecycle: "terminal" | "non-terminal";
  /** `outcomes.status` from `state.json` (`ok`, `error`, `vetoed`, `aborted`, `partial`, `pending`), or `unreadable`. */
  status: string;
  /** The task (`goal.task`). */
  task: string | null;
  /** `episode.started_at`. */
  started_at: string | null;
  /** `episode.tags` (user metadata given with `--tag`). */
  tags: Record<string, unknown>;
  /** The verification outcome from `summary.json`; terminal runs only. */
  outcome?: string;
  /**
   * Vetoes recorded but not enforced (`metrics.would_veto_count` of `summary.json`: `--governance audit`, or a rule
   * set in audit mode); terminal runs only.
   */
  would_veto_count?: number;
  /** Why the episode could not be read, when `status` is `unreadable`. */
  error?: string;
  /** For a run paused for approval: its latest checkpoint's id, kind, step and reason. */
  pending?: { checkpoint_id: string; kind: string; step_id: string; reason: string };
  /**
   * Where the run is now (see {@link RunState}); `unreadable` for a shared store's catalog row that cannot be read
   * (where the run is is not known then: a local episode always has a run state).
   */
  run_state: RunState | "unreadable";
  /** For a `running` run: milliseconds since it started (or since its lock was taken, without a start time). */
  elapsed_ms?: number;
}

/**
 * Where a run is now, from its artifacts and its lock:
 * - `terminal`: it has `summary.json` (its `status` says how it ended);
 * - `running`: not terminal, and the process holding its lock is alive;
 * - `waiting_for_approval`: paused at a checkpoint that waits for approve/reject;
 * - `paused`: not running, with a checkpoint to resume from (e.g. interrupted);
 * - `idle`: an agent session's episode between two hook calls (no noema process runs then): the session still
 *   points at it and the agent holding the session is alive (`session_idle.ts`); its next hook call continues it;
 * - `crashed`: not terminal, no live lock holder, no checkpoint, and not an idle session (`noema resume`
 *   recovers it; `noema resume --abort` ends an agent session's);
 * - `crashed_while_sealing`: killed while its terminal artifacts were put into place (`manifest.json` is
 *   missing, see `src/read/sealing.ts`); `noema resume` completes them.
 */
export type RunState =
  | "terminal"
  | "running"
  | "idle"
  | "waiting_for_approval"
  | "paused"
  | "crashed"
  | "crashed_while_sealing";

/** What {@link runState} found. */
export interface RunStateInfo {
  /** Where the run is. */
  run_state: RunState;
  /** Milliseconds since the run (or its lock) started, for a `running` run. */
  elapsed_ms?: number;
}

/** The longest last event read to tell a waiting run (a checkpoint event holds its call's input, bounded far below). */
const MAX_LAST_EVENT_BYTES = 8 << 20;

/**
 * Whether the run waits for a decision: its log ends with a `run.checkpoint` (what `approve` requires), its decision
 * made or not. A pause that ended (decided and resumed, or ended by what an agent did next) has a `run.resume` after
 * it, and an agent session's checkpoints stay after their pauses end: those do not make it wait.
 */
function hasOpenCheckpoint(dir: string): boolean {
  // A run that never paused has no checkpoints: its log is not read.
  if (!existsSync(join(dir, "checkpoints"))) return false;
  try {
    const last = lastLine(join(dir, ARTIFACTS.events), MAX_LAST_EVENT_BYTES);
    return last !== null && (JSON.parse(last) as { event_type?: unknown }).event_type === "run.checkpoint";
  } catch {
    return false; // no log to read, or not JSON: nothing says it waits
  }
}

/**
 * Where a run is now (see {@link RunState}), from its directory, whether it is
 * terminal, its `outcomes.status` and its start time.
 *
 * @example
 * ```ts
 * import { runState } from "./list.ts";
 * runState(".noema/episodes/ep_1", false, "pending", null).run_state; // "crashed" when nothing holds it
 * ```
 */
export function runState(
  dir: string,
  terminal: boolean,
  status: string,
  startedAt: string | null,
  now: number = Date.now(),
): RunStateInfo {
  if (crashedWhileSealing(dir)) return { run_state: "crashed_while_sealing" };
  if (terminal) return { run_state: "terminal" };
  const lock = lockStatus(dir);
  if (lock.state === "held") {
    const since = Date.parse(startedAt ?? lock.info?.started_at ?? "");
    return Number.isNaN(since) ? { run_state: "running" } : { run_state: "running", elapsed_ms: now - since };
  }
  if (hasOpenCheckpoint(dir)) return { run_state: status === "pending" ? "waiting_for_approval" : "paused" };
  if (sessionIdle(dir)) return { run_state: "idle" };
  return { run_state: "crashed" };
}

/**
 * The status word shown for an episode: the run state (`running 12s`,
 * `crashed`, `waiting for approval`, `paused`), or for a terminal run its
 * `outcomes.status` (`ok`, `vetoed`, `error`, …).
 *
 * @example
 * ```ts
 * import { statusWord } from "./list.ts";
 * statusWord({ run_state: "terminal", status: "ok" }); // "ok"
 * ```
 */
export function statusWord(e: { run_state: RunState | "unreadable"; status: string; elapsed_ms?: number }): string {
  switch (e.run_state) {
    case "terminal":
      return e.status;
    case "running":
      return e.elapsed_ms === undefined ? "running" : `running ${elapsedText(e.elapsed_ms)}`;
    case "waiting_for_approval":
      return "waiting for approval";
    case "crashed_while_sealing":
      return "crashed while sealing";
    default:
      return e.run_state;
  }
}

function elapsedText(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
}

/** Options for {@link listEpisodes}. */
export interface ListOptions extends RootOptions {
  /**
   * Most entries to return (after filtering).
   * @default {20}
   */
  limit?: number;
  /**
   * Only episodes whose status is one of these: a terminal `outcomes.status` (`ok`, `error`, `vetoed`,
   * `aborted`, `partial`), a run state (`running`, `crashed`, `waiting_for_approval`, `paused`), or `unreadable`.
   * @default {all}
   */
  status?: readonly string[];
  /** Only episodes started at or after this time (epoch milliseconds). @default {all} */
  since?: number;
  /** Only episodes whose tags hold every one of these key/value pairs. @default {all} */
  tags?: Readonly<Record<string, string>>;
  /** Only episodes whose task contains this text (case-insensitive). @default {all} */
  task?: string;
  /** Matching entries skipped before the first one returned (paging). @default {0} */
  offset?: number;
  /** `oldest` lists oldest first. @default {"newest"} */
  order?: "newest" | "oldest";
}

/**
 * Whether an entry passes the filters of {@link ListOptions}.
 *
 * @example
 * ```ts
 * import { matchesFilters } from "./list.ts";
 * // listEpisodes(...).filter((e) => matchesFilters(e, { status: ["ok"] }))
 * ```
 */
export function matchesFilters(e: EpisodeEntry, f: ListOptions, keyTime: number | null = null): boolean {
  if (f.status && f.status.length > 0) {
    const words = e.run_state === "terminal" ? [e.status] : [e.run_state];
    if (e.status === "unreadable") words.push("unreadable");
    if (!words.some((w) => f.status!.includes(w))) return false;
  }
  if (f.since !== undefined) {
    const t = e.started_at !== null ? Date.parse(e.started_at) : keyTime;
    if (t === null || Number.isNaN(t) || t < f.since) return false;
  }
  for (const [k, v] of Object.entries(f.tags ?? {})) {
    if (!(k in e.tags) || textOf(e.tags[k]) !== v) return false;
  }
  if (f.task !== undefined && !(e.task ?? "").toLowerCase().includes(f.task.toLowerCase())) return false;
  return true;
}

const hasFilters = (f: ListOptions) =>
  (f.status !== undefined && f.status.length > 0) || f.since !== undefined || f.tags !== undefined ||
  f.task !== undefined;

/** Milliseconds encoded in an `ep_<ULID>` id, or `null` for other ids. */
function episodeTime(id: string): number | null {
  return id.startsWith("ep_") ? ulidTime(id.slice(3)) : null;
}

/** The newest checkpoint of a paused run (by `created_at`), if any. */
function latestCheckpoint(dir: string): EpisodeEntry["pending"] | undefined {
  const cpDir = join(dir, "checkpoints");
  if (!existsSync(cpDir)) return undefined;
  let best: { created_at: string; value: NonNullable<EpisodeEntry["pending"]> } | undefined;
  for (const name of readdirSync(cpDir)) {
    if (!name.endsWith(".json")) continue;
    try {
      const c = readJsonFile(join(cpDir, name), join(cpDir, name), { noFollow: true }) as {
        checkpoint_id?: unknown;
        created_at?: unknown;
        pending?: Record<string, unknown>;
      };
      const created = String(c.created_at ?? "");
      if (best && best.created_at >= created) continue;
      best = {
        created_at: created,
        value: {
          checkpoint_id: String(c.checkpoint_id),
          kind: String(c.pending?.kind ?? "approval"),
          step_id: String(c.pending?.step_id ?? ""),
          reason: String(c.pending?.reason ?? ""),
        },
      };
    } catch {
      // an unreadable checkpoint is reported by validate/resume, not by list
    }
  }
  return best?.value;
}

/**
 * Reads one episode directory as a list entry (status, task, run state…); an
 * unreadable episode gives `status: "unreadable"` and an `error`. `onState`
 * sees the parsed `state.json` (for a caller that needs more of it).
 *
 * @example
 * ```ts
 * import { readEpisodeEntry } from "./list.ts";
 * readEpisodeEntry("ep_1", ".noema/episodes/ep_1").run_state;
 * ```
 */
export function readEpisodeEntry(
  id: string,
  dir: string,
  onState?: (state: Record<string, unknown>) => void,
): EpisodeEntry & { run_state: RunState } {
  const summaryPath = join(dir, ARTIFACTS.summary);
  const terminal = existsSync(summaryPath);
  const entry: EpisodeEntry & { run_state: RunState } = {
    episode_id: id,
    episode_dir: dir,
    lifecycle: terminal ? "terminal" : "non-terminal",
    status: "unreadable",
    task: null,
    started_at: null,
    tags: {},
    run_state: terminal ? "terminal" : "crashed",
  };
  try {
    const state = readJsonFile(join(dir, ARTIFACTS.state), `${id}/${ARTIFACTS.state}`, { noFollow: true });
    onState?.(state);
    const outcomes = state.outcomes as { status?: unknown } | undefined;
    const goal = state.goal as { task?: unknown } | undefined;
    const episode = state.episode as { started_at?: unknown; tags?: unknown } | undefined;
    if (typeof episode?.tags === "object" && episode.tags !== null) {
      entry.tags = episode.tags as Record<string, unknown>;
    }
    entry.status = typeof outcomes?.status === "string" ? outcomes.status : "unknown";
    entry.task = typeof goal?.task === "string" ? goal.task : null;
    entry.started_at = typeof episode?.started_at === "string" ? episode.started_at : null;
    if (terminal) {
      const summary = readJsonFile(summaryPath, `${id}/${ARTIFACTS.summary}`, { noFollow: true });
      if (typeof summary.outcome === "string") entry.outcome = summary.outcome;
      const would = (summary.metrics as { would_veto_count?: unknown } | undefined)?.would_veto_count;
      if (typeof would === "number") entry.would_veto_count = would;
      entry.task ??= typeof summary.task === "string" ? summary.task : null;
      entry.started_at ??= typeof summary.started_at === "string" ? summary.started_at : null;
    }
    if (!terminal && entry.status === "pending") {
      const pending = latestCheckpoint(dir);
      if (pending) entry.pending = pending;
    }
  } catch (e) {
    entry.status = "unreadable";
    entry.error = e instanceof NoemaError ? e.message : String(e);
  }
  Object.assign(entry, runState(dir, terminal, entry.status, entry.started_at));
  return entry;
}

/**
 * Lists episodes newest first. Ids of the form `ep_<ULID>` are ordered by
 * the time in the id without touching the disk; other ids by the directory's
 * modification time. Without filters only the returned episodes are read;
 * with filters (status, since, tags, task) episodes are read newest first
 * until `limit` match. An episode whose
 * files cannot be read is listed with `status: "unreadable"` and an `error`.
 *
 * @example
 * ```ts
 * import { listEpisodes } from "noema";
 * for (const e of listEpisodes({ limit: 5 })) console.log(e.episode_id, e.status);
 * ```
 */
export function listEpisodes(options: ListOptions = {}): EpisodeEntry[] {
  const limit = options.limit ?? 20;
  const parent = episodesDir(resolveRoot(options));
  if (!existsSync(parent)) return [];
  const keyed: { name: string; t: number }[] = [];
  for (const d of readdirSync(parent, { withFileTypes: true })) {
    if (!d.isDirectory() || episodeIdProblem(d.name)) continue;
    let t = episodeTime(d.name);
    if (t === null) t = statSync(join(parent, d.name)).mtimeMs;
    keyed.push({ name: d.name, t });
  }
  keyed.sort((a, b) => b.t - a.t || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  if (options.order === "oldest") keyed.reverse();
  const offset = Math.max(0, options.offset ?? 0);
  if (!hasFilters(options)) {
    return keyed.slice(offset, offset + Math.max(0, limit)).map((k) => readEpisodeEntry(k.name, join(parent, k.name)));
  }
  const out: EpisodeEntry[] = [];
  let skipped = 0;
  for (const k of keyed) {
    if (out.length >= limit) break;
    const e = readEpisodeEntry(k.name, join(parent, k.name));
    if (!matchesFilters(e, options, k.t)) continue;
    if (skipped < offset) skipped++;
    else out.push(e);
  }
  return out;
}
