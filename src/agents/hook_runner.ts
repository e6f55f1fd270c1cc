/**
 * What `noema hook <agent>` does with one event: find (or create) the
 * session's episode, then propose the tool call (`pre_tool`), record its
 * result (`post_tool`), or finish the episode (`stop`, `session_end`).
 *
 * One session is one episode: created by the first prompt (its goal), or by
 * the first tool call when the hook was installed mid-session. After the
 * episode ended (interactive sessions end one at each `Stop`), the next
 * prompt starts a new one.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { newEpisodeId } from "../store/ids.ts";
import { episodeDirFor } from "../store/layout.ts";
import { NoemaError } from "../errors.ts";
import { heldCallReason } from "../runtime/core/held_call.ts";
import { checkTask } from "../runtime/core/prepare.ts";
import type { Decision, EpisodeHandle } from "./core.ts";
import type { AnswerContext, Dialect } from "./dialect.ts";
import { commandOf } from "./display.ts";
import { type DriverOptions, isSealed } from "./episodes.ts";
import { DIRECT, type EpisodeSource } from "./server/episodes.ts";
import { type HookAnswer, type HookEvent, NO_OPINION, type PreToolEvent } from "./event.ts";
import { claimSession, sessionEpisode } from "./session_index.ts";
import { toRecordedResult } from "./tool_result.ts";

/** How the hook runs. */
export interface HookSettings extends AnswerContext {
  /** The episodes root. */
  root: string;
  /** The run settings episodes are opened with (policies, governance, verification…). */
  options: Omit<DriverOptions, "using" | "root">;
  /** Record into this episode instead of the session's (what `noema run --using claude-code` passes). */
  episode?: string;
  /** Finish the episode at `Stop`/`SessionEnd`. @default {true} */
  finish: boolean;
  /** Where episodes come from and go back to. @default {DIRECT: attach, then close, per call} */
  episodes?: EpisodeSource;
}

const APPEAR_WAIT_MS = 5000;

async function waitForDir(dir: string): Promise<void> {
  const until = Date.now() + APPEAR_WAIT_MS;
  while (!existsSync(dir) && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
}

/** The session's open episode, or null (none yet, or the last one ended). */
async function currentEpisode(dialect: Dialect, event: HookEvent, s: HookSettings): Promise<EpisodeHandle | null> {
  const id = s.episode ?? sessionEpisode(s.root, dialect.name, event.session_id)?.episode_id;
  if (id === undefined) return null;
  const dir = episodeDirFor(id, s.root);
  await waitForDir(dir);
  if (s.episode === undefined && isSealed(dir)) return null;
  return await (s.episodes ?? DIRECT).attach(id, s.root);
}

/** The session's open episode; a new one toward `task` when there is none. */
async function episodeFor(
  dialect: Dialect,
  event: HookEvent,
  s: HookSettings,
  task: string,
): Promise<EpisodeHandle> {
  const current = await currentEpisode(dialect, event, s);
  if (current) return current;
  const previous = sessionEpisode(s.root, dialect.name, event.session_id);
  checkTask(task); // before the session is claimed: a refused task must not leave it pointing at no episode
  const id = newEpisodeId();
  const entry = claimSession(s.root, dialect.name, event.session_id, id, { replace: previous !== null });
  if (entry.episode_id !== id) {
    // Another hook process of this session created it first.
    await waitForDir(episodeDirFor(entry.episode_id, s.root));
    return await (s.episodes ?? DIRECT).attach(entry.episode_id, s.root);
  }
  return await (s.episodes ?? DIRECT).open(task, {
    ...s.options,
    root: s.root,
    using: dialect.name,
    episode_id: id,
    adapter: { ...(s.options.adapter ?? {}), session_id: event.session_id },
  });
}

async function withEpisode<T>(
  s: HookSettings,
  episode: EpisodeHandle | null,
  work: (e: EpisodeHandle) => Promise<T>,
  none: T,
) {
  if (!episode) return none;
  try {
    return await work(episode);
  } finally {
    (s.episodes ?? DIRECT).release(episode);
  }
}

/**
 * What an ask becomes (see {@link Dialect.onAsk}). A deferred call pauses the
 * episode once the driver saw the agent stop (`noema run`, `--no-finish`); a
 * hook with no driver behind it pauses the episode at once.
 */
function onAsk(dialect: Dialect, s: HookSettings): "pause" | "agent" | "deny" | "defer" {
  const mode = dialect.onAsk?.(s) ?? "pause";
  return mode === "defer" && s.finish ? "pause" : mode;
}

/**
 * The answer to a call made while the episode waits for a human about
 * another one (a later call of the same turn): it is neither proposed nor
 * run, and the agent reads why and that it may call it again once that is
 * decided (the checkpoint stays the episode's last event).
 */
function heldBack(call: { tool: string; step_id: string } | null, event: PreToolEvent): Decision {
  return {
    verdict: "deny",
    step_id: "",
    action_candidate_id: "",
    input: event.input,
    reason: heldCallReason(call),
    policy_id: null,
    hints: [],
  };
}

/**
 * Handles one hook event and returns the answer for the agent.
 *
 * @example
 * ```ts
 * import { claudeCode } from "./claude_code/dialect.ts";
 * import { handleHookEvent } from "./hook_runner.ts";
 * const event = claudeCode.parse(JSON.parse(stdin))!;
 * const answer = await handleHookEvent(claudeCode, event, { root: ".noema", options: {}, finish: true, print: false, grant: false });
 * ```
 */
export async function handleHookEvent(dialect: Dialect, event: HookEvent, s: HookSettings): Promise<HookAnswer> {
  const fallbackTask = `${dialect.name} session ${event.session_id}`;
  switch (event.kind) {
    case "session_start":
      return NO_OPINION;
    case "prompt":
      if (s.episode === undefined && event.prompt.trim() !== "") {
        await withEpisode(s, await episodeFor(dialect, event, s, event.prompt), async () => {}, undefined);
      }
      return NO_OPINION;
    case "pre_tool":
      return await withEpisode(s, await episodeFor(dialect, event, s, fallbackTask), async (episode) => {
        let decision: Decision;
        try {
          decision = await episode.propose({
            kind: "tool",
            tool: event.tool,
            input: event.input,
            command: commandOf(event.input),
            ...(typeof event.input.description === "string" ? { description: event.input.description } : {}),
            call_id: event.call_id,
            ...(event.repeatable ? { repeatable: true } : {}),
            on_ask: onAsk(dialect, s),
          });
        } catch (e) {
          if (!(e instanceof NoemaError && e.code === "paused")) throw e;
          decision = heldBack(episode.waitingFor(), event);
        }
        return dialect.answer(event, decision, s);
      }, NO_OPINION);
    case "post_tool":
      return await withEpisode(s, await currentEpisode(dialect, event, s), async (episode) => {
        await episode.record(
          event.repeatable ? episode.openCall(event.call_id) : event.call_id,
          toRecordedResult(event),
        );
        return NO_OPINION;
      }, NO_OPINION);
    case "stop":
    case "session_end":
      if (!s.finish) return NO_OPINION;
      return await withEpisode(s, await currentEpisode(dialect, event, s), async (episode) => {
        await episode.finish({
          adapter_result: "success",
          message: event.message ? `${event.name}: ${event.message.slice(0, 500)}` : `${event.name}`,
        });
        return NO_OPINION;
      }, NO_OPINION);
  }
}
