/**
 * What `noema run`'s LLM flags do to the run options: `--model
 * PROVIDER:MODEL` and `--base-url URL` fill the `llm` adapter's config (and
 * imply `--using llm`); a run using `llm` passes its policy files to the
 * adapter, which governs each tool call with them; `--replay EPISODE` sets
 * up an exact replay of a recorded LLM episode (its task, adapter config and
 * workspace, the model played back from its `model.jsonl`, the tag
 * `replay_of`), with the current policies, or the recorded ones when none are
 * given.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { EXIT, NoemaError } from "../errors.ts";
import { readEvents } from "../read/episode.ts";
import type { RunOptions } from "../runtime/run.ts";
import { locateEpisode } from "../store/layout.ts";
import { modelFlag } from "./config.ts";
import { MODEL_LOG } from "./model_log.ts";

/** The LLM flags of `noema run`. */
export interface LlmRunFlags {
  model?: string;
  baseUrl?: string;
  replay?: string;
}

function usage(message: string): NoemaError {
  return new NoemaError("usage", message, { exitCode: EXIT.USAGE });
}

/** The task and options of a replay of `ref`. */
function replaySettings(ref: string, options: RunOptions): { task: string; options: RunOptions } {
  const loc = locateEpisode(ref, options);
  const log = join(loc.dir, MODEL_LOG);
  if (!existsSync(log)) throw usage(`--replay ${ref}: ${log} not found (only llm episodes can be replayed)`);
  let start: Record<string, unknown> | undefined;
  for (const e of readEvents(loc, options)) {
    if (e.phase === "start") {
      start = e.payload as Record<string, unknown>;
      break;
    }
  }
  const settings = start?.settings as
    | {
      using?: string;
      adapter?: Record<string, unknown>;
      policies?: { path: string | null }[];
      workspace?: string | null;
    }
    | undefined;
  if (!start || settings?.using !== "llm") {
    throw usage(`--replay ${ref}: not an llm episode (no start event using llm)`);
  }
  const recordedPolicies = (settings.policies ?? []).map((p) => p.path).filter((p): p is string => p !== null);
  return {
    task: String(start.task),
    options: {
      ...options,
      using: "llm",
      adapter: { ...(settings.adapter ?? {}), replay: log },
      policies: options.policies?.length ? options.policies : recordedPolicies,
      workspace: options.workspace ?? settings.workspace ?? undefined,
      tags: { ...(options.tags ?? {}), replay_of: String(start.episode_id) },
    },
  };
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
  if (flags.replay !== undefined) {
    const r = replaySettings(flags.replay, o);
    o = r.options;
    t ??= r.task;
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
  if (t === undefined) throw usage("missing the task (or give --replay EPISODE)");
  if (o.using === "llm") {
    const files = (o.policies ?? []).filter((p): p is string => typeof p === "string");
    o.adapter = { ...(o.adapter ?? {}), policies: files };
  }
  return { task: t, options: o };
}
