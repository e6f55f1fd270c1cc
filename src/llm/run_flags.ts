/**
 * What `noema run`'s LLM flags do to the run options: `--model
 * PROVIDER:MODEL` and `--base-url URL` fill the `llm` adapter's config (and
 * imply `--using llm`); a run using `llm` passes its policy files to the
 * adapter, which governs each tool call with them; `--replay EPISODE` sets
 * up an exact replay of a recorded LLM episode (its task, adapter config and
 * workspace, the model played back from its `model.jsonl`, the tag
 * `replay_of`), with the current policies, or the recorded ones when none are
 * given; the tools run again for real, unless `--dry-run` (then each call
 * gets its recorded result and nothing acts on the workspace); `--continue EPISODE` picks up the conversation of an llm episode
 * that a failure stopped (the server unreachable, a rate limit, a timeout,
 * max_turns, Ctrl-C…) in a new episode (tag `continues`), with the same
 * task, adapter config and workspace.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import { readEvents } from "../read/episode.ts";
import type { RunOptions } from "../runtime/run.ts";
import { readJsonFile } from "../store/json_file.ts";
import { locateEpisode } from "../store/layout.ts";
import { modelFlag } from "./config.ts";
import { MODEL_LOG } from "./model_log.ts";
import { CONVERSATION_FILE } from "./conversation.ts";
import { calledAs } from "../called_as.ts";

/** The LLM flags of `noema run`. */
export interface LlmRunFlags {
  model?: string;
  baseUrl?: string;
  replay?: string;
  /** With `replay`: consult the policies, execute no tool (each call gets its recorded result). */
  dryRun?: boolean;
  continue?: string;
}

/** How a run may have ended for `--continue` to pick its conversation up: what another try can get past. */
const CONTINUABLE = new Set([
  "LlmUnreachable",
  "LlmAuthError",
  "LlmRateLimited",
  "LlmServerError",
  "LlmTimeout",
  "LlmMaxTurns",
  "McpUnreachable",
  "Aborted",
]);

/**
 * Whether `noema run --continue` can pick up a run that used `using` and ended with the error `type`.
 *
 * @example
 * ```ts
 * import { continuable } from "./run_flags.ts";
 * continuable("llm", "LlmUnreachable"); // true
 * continuable("llm", "LlmContextOverflow"); // false
 * ```
 */
export function continuable(using: unknown, type: string): boolean {
  return using === "llm" && CONTINUABLE.has(type);
}

function usage(message: string): NoemaError {
  return new NoemaError("usage", message, { exitCode: EXIT.USAGE });
}

/** What a new run takes from a recorded llm episode: its start event's task and settings. */
interface Recorded {
  dir: string;
  id: string;
  task: string;
  adapter: Record<string, unknown>;
  policies: string[];
  workspace: string | null;
}

/** The recorded llm episode `ref` (for `flag`'s errors). */
function recordedLlmEpisode(flag: string, ref: string, options: RunOptions): Recorded {
  const loc = locateEpisode(ref, options);
  let start: Record<string, unknown> | undefined;
  for (const e of readEvents(loc, options)) {
    if (e.phase === "start") {
      start = e.payload as Record<string, unknown>;
      break;
    }
  }
  const settings = start?.settings as
    | { using?: string; adapter?: Record<string, unknown>; policies?: { path: string | null }[]; workspace?: string }
    | undefined;
  if (!start || settings?.using !== "llm") throw usage(`${flag} ${ref}: not an llm episode (no start event using llm)`);
  const { replay: _r, replay_dry_run: _d, continue_from: _c, ...adapter } = settings.adapter ?? {};
  return {
    dir: loc.dir,
    id: String(start.episode_id),
    task: String(start.task),
    adapter,
    policies: (settings.policies ?? []).map((p) => p.path).filter((p): p is string => p !== null),
    workspace: settings.workspace ?? null,
  };
}

/** The options of a new run from a recorded episode: its task, adapter, workspace and (unless given) policies. */
function fromRecorded(r: Recorded, options: RunOptions, adapter: Record<string, unknown>, tag: string): RunOptions {
  return {
    ...options,
    using: "llm",
    adapter: { ...r.adapter, ...adapter },
    policies: options.policies?.length ? options.policies : r.policies,
    workspace: options.workspace ?? r.workspace ?? undefined,
    tags: { ...(options.tags ?? {}), [tag]: r.id },
  };
}

/** The task and options of a replay of `ref` (a dry run: tagged `replay_dry_run`, its tools not executed). */
function replaySettings(ref: string, options: RunOptions, dryRun: boolean): { task: string; options: RunOptions } {
  const r = recordedLlmEpisode("--replay", ref, options);
  const log = join(r.dir, MODEL_LOG);
  if (!existsSync(log)) throw usage(`--replay ${ref}: ${log} not found (only llm episodes can be replayed)`);
  if (!dryRun) return { task: r.task, options: fromRecorded(r, options, { replay: log }, "replay_of") };
  const o = fromRecorded(r, options, { replay: log, replay_dry_run: true }, "replay_of");
  return { task: r.task, options: { ...o, tags: { ...o.tags, replay_dry_run: "true" } } };
}

/** The task and options of a run that continues the conversation of `ref`, which a failure stopped. */
function continueSettings(ref: string, options: RunOptions): { task: string; options: RunOptions } {
  const r = recordedLlmEpisode("--continue", ref, options);
  const why = (text: string) => usage(`--continue ${ref}: ${text}`);
  const state = readJsonFile(join(r.dir, "state.json")); // a damaged one: an error naming it
  const outcomes = (state.outcomes ?? {}) as { status?: unknown; error?: { type?: unknown } | null };
  if (!existsSync(join(r.dir, "summary.json"))) {
    throw why(`the episode has not ended (paused for approval: ${calledAs()} approve|reject --resume)`);
  }
  const type = String(outcomes.error?.type ?? "");
  if (outcomes.status === "ok" || !continuable("llm", type)) {
    throw why(
      `it ended ${String(outcomes.status)}${type ? ` (${type})` : ""}; only a run that a failure stopped ` +
        `(${[...CONTINUABLE].join(", ")}) can be continued`,
    );
  }
  // No conversation: it stopped before its first model call (an MCP server down): the task starts it again.
  const conversation = join(r.dir, CONVERSATION_FILE);
  const from = existsSync(conversation) ? { continue_from: conversation } : {};
  return { task: r.task, options: fromRecorded(r, options, from, "continues") };
}

/**
 * Applies the LLM flags to resolved run settings.
 *
 * @example
 * ```ts
 * import { applyLlmFlags } from "noema";
 * const { options } = applyLlmFlags("fix it", {}, { model: "ollama:qwen2.5-coder" });
 * options.using; // "llm"
 * ```
 */
export function applyLlmFlags(
  task: string | undefined,
  options: RunOptions,
  flags: LlmRunFlags,
): { task: string; options: RunOptions } {
  let o: RunOptions = { ...options };
  let t = task;
  if (flags.replay !== undefined && flags.continue !== undefined) {
    throw usage("--replay and --continue exclude each other");
  }
  if (flags.dryRun && flags.replay === undefined) {
    throw usage("--dry-run goes with --replay EPISODE (a what-if replay that executes no tool)");
  }
  const from = flags.replay !== undefined
    ? replaySettings(flags.replay, o, flags.dryRun === true)
    : flags.continue !== undefined
    ? continueSettings(flags.continue, o)
    : null;
  if (from) {
    o = from.options;
    t ??= from.task;
  }
  if (flags.model !== undefined || flags.baseUrl !== undefined) {
    if (o.using !== undefined && o.using !== "llm") {
      throw usage(
        `--model and --base-url need --using llm (got --using ${
          String(typeof o.using === "string" ? o.using : o.using.name)
        })`,
      );
    }
    o.using = "llm";
    o.adapter = { ...(o.adapter ?? {}), ...modelFlag(flags.model, flags.baseUrl) };
  }
  if (t === undefined) {
    throw usage("missing the task (or give --replay or --continue EPISODE) (see 'noema run --help')");
  }
  if (o.using === "llm") {
    const files = (o.policies ?? []).filter((p): p is string => typeof p === "string");
    o.adapter = { ...(o.adapter ?? {}), policies: files };
  }
  return { task: t, options: o };
}
