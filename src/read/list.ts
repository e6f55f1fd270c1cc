/**
 * Listing episodes newest first, reading only the episodes it returns.
 *
 * @module
 */
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { NoemaError } from "../errors.ts";
import { episodeIdProblem } from "../store/ids.ts";
import { readJsonFile } from "../store/json_file.ts";
import { ARTIFACTS, episodesDir, resolveRoot, type RootOptions } from "../store/layout.ts";

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
  /** The verification outcome from `summary.json`; terminal runs only. */
  outcome?: string;
  /** Why the episode could not be read, when `status` is `unreadable`. */
  error?: string;
  /** For a run paused for approval: its latest checkpoint's id, kind, step and reason. */
  pending?: { checkpoint_id: string; kind: string; step_id: string; reason: string };
}

/** Options for {@link listEpisodes}. */
export interface ListOptions extends RootOptions {
  /**
   * Most entries to return.
   * @default {20}
   */
  limit?: number;
}

const ULID_ID = /^ep_([0-9A-HJKMNP-TV-Z]{10})[0-9A-HJKMNP-TV-Z]{16}$/;
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** Milliseconds encoded in an `ep_<ULID>` id, or `null` for other ids. */
function ulidTime(id: string): number | null {
  const m = ULID_ID.exec(id);
  if (!m) return null;
  let t = 0;
  for (const ch of m[1]) t = t * 32 + CROCKFORD.indexOf(ch);
  return t;
}

/** The newest checkpoint of a paused run (by `created_at`), if any. */
function latestCheckpoint(dir: string): EpisodeEntry["pending"] | undefined {
  const cpDir = join(dir, "checkpoints");
  if (!existsSync(cpDir)) return undefined;
  let best: { created_at: string; value: NonNullable<EpisodeEntry["pending"]> } | undefined;
  for (const name of readdirSync(cpDir)) {
    if (!name.endsWith(".json")) continue;
    try {
      const c = readJsonFile(join(cpDir, name)) as {
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

function readEntry(id: string, dir: string): EpisodeEntry {
  const summaryPath = join(dir, ARTIFACTS.summary);
  const terminal = existsSync(summaryPath);
  const entry: EpisodeEntry = {
    episode_id: id,
    episode_dir: dir,
    lifecycle: terminal ? "terminal" : "non-terminal",
    status: "unreadable",
    task: null,
    started_at: null,
  };
  try {
    const state = readJsonFile(join(dir, ARTIFACTS.state), `${id}/${ARTIFACTS.state}`);
    const outcomes = state.outcomes as { status?: unknown } | undefined;
    const goal = state.goal as { task?: unknown } | undefined;
    const episode = state.episode as { started_at?: unknown } | undefined;
    entry.status = typeof outcomes?.status === "string" ? outcomes.status : "unknown";
    entry.task = typeof goal?.task === "string" ? goal.task : null;
    entry.started_at = typeof episode?.started_at === "string" ? episode.started_at : null;
    if (terminal) {
      const summary = readJsonFile(summaryPath, `${id}/${ARTIFACTS.summary}`);
      if (typeof summary.outcome === "string") entry.outcome = summary.outcome;
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
  return entry;
}

/**
 * Lists episodes newest first. Ids of the form `ep_<ULID>` are ordered by
 * the time in the id without touching the disk; other ids by the directory's
 * modification time. Only the returned episodes are read. An episode whose
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
    let t = ulidTime(d.name);
    if (t === null) t = statSync(join(parent, d.name)).mtimeMs;
    keyed.push({ name: d.name, t });
  }
  keyed.sort((a, b) => b.t - a.t || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0));
  return keyed.slice(0, Math.max(0, limit)).map((k) => readEntry(k.name, join(parent, k.name)));
}
