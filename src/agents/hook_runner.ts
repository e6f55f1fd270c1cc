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
import type { Outside } from "./server/lane.ts";
import { existsSync } from "node:fs";
import process from "node:process";
import { newEpisodeId } from "../store/ids.ts";
import { episodeDirFor } from "../store/layout.ts";
import { limits, refuseOversize } from "../store/limits.ts";
import { EXIT, NoemaError } from "../errors.ts";
import { loneSurrogatePath, loneSurrogateProblem } from "../plugins/plain_json.ts";
import { heldCallReason } from "../runtime/core/held_call.ts";
import { checkTask } from "../runtime/core/prepare.ts";
import type { Decision, EpisodeHandle, ProposedAction, RecordedResult } from "./core.ts";
import type { AnswerContext, Dialect } from "./dialect.ts";
import { commandOf } from "./display.ts";
import { type DriverOptions, isSealed } from "./episodes.ts";
import { DIRECT, type EpisodeSource } from "./server/episodes.ts";
import { type EndEvent, type HookAnswer, type HookEvent, NO_OPINION, type PreToolEvent } from "./event.ts";
import {
  claimantAlive,
  claimSession,
  maskSessionId,
  noteHolder,
  type SessionEntry,
  sessionEpisode,
  storedSession,
} from "../store/session_index.ts";
import { crashPoint } from "./crash_point.ts";
import { abortEnd } from "./driver.ts";
import { toRecordedResult } from "./tool_result.ts";
import { usageMetrics } from "../runtime/cost/metrics.ts";
import type { ModelUsage } from "../schema/summary.ts";
import { textHead } from "../text_head.ts";

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
  /**
   * Waits for the decision on a call the episode paused for, made anywhere
   * (`noema hook --wait` with a shared store): `"decided"` once it is the
   * episode's approval record, `"abort"` when the episode must end aborted,
   * `"none"` when nothing was decided (the call stays asked). With it, a call
   * that needs approval pauses the episode whatever the agent's own way of asking. `signal` (given by the MCP
   * gateway: its client left) ends the wait with nothing decided.
   */
  awaitDecision?: (
    episodeId: string,
    checkpointId: string,
    signal?: AbortSignal,
  ) => Promise<"decided" | "abort" | "none">;
  /**
   * Brings a decision made elsewhere into the episode (a shared store's, while no hook waits for it): true when it did.
   * Asked when a call is held back, so that a decision made after the waiting hook was killed is applied at the next
   * call, as a local one is.
   */
  pullDecision?: (episodeId: string) => Promise<boolean>;
  /**
   * Runs a long wait that uses no episode out of the resident server's lane, the session's other calls served
   * meanwhile (the server's; a hook process needs none: it lets the episode's lock go for the wait).
   */
  outside?: Outside;
  /**
   * Aborted when whoever asked for this call is gone (the resident server's client closed its connection: the agent
   * killed the hook): a wait for a decision ends with nothing decided, as if no hook had waited.
   */
  signal?: AbortSignal;
}

const APPEAR_WAIT_MS = 5000;

/** Waits (up to 5 s) for a claimed episode's directory while its claimant may still be creating it. */
async function waitForDir(dir: string, entry: SessionEntry | null): Promise<void> {
  const until = Date.now() + APPEAR_WAIT_MS;
  while (!existsSync(dir) && Date.now() < until && (entry === null || claimantAlive(entry))) {
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The session's episode as claimed: its id, and whether it exists. A claim
 * whose process died before creating its episode (or that did not appear
 * within 5 s) names an episode that does not exist: the caller creates it
 * under that id, so a crash at any point leaves the next call working.
 */
async function claimedEpisode(
  dialect: Dialect,
  event: HookEvent,
  s: HookSettings,
): Promise<{ id: string | null; exists: boolean } | null> {
  let entry: SessionEntry | null = null;
  try {
    entry = s.episode === undefined ? sessionEpisode(s.root, dialect.name, event.session_id) : null;
  } catch (e) {
    if (!(e instanceof NoemaError && ["bad_json", "bad_session", "not_regular"].includes(e.code))) throw e;
    return { id: null, exists: false }; // a damaged entry (not noema's write: those are atomic; a FIFO) is claimed anew
  }
  const id = s.episode ?? entry?.episode_id;
  if (id === undefined) return null;
  const dir = episodeDirFor(id, s.root);
  await waitForDir(dir, entry);
  // Between calls the agent holds the session (its episode is idle, not crashed): noted by each call in its own
  // process (a resident server is not started by the agent).
  if (entry !== null && s.episodes === undefined) noteHolder(s.root, dialect.name, event.session_id, entry);
  return { id, exists: existsSync(dir) };
}

/** The session's open episode, or null (none yet, the last one ended, or its creation never finished). */
async function currentEpisode(dialect: Dialect, event: HookEvent, s: HookSettings): Promise<EpisodeHandle | null> {
  const claimed = await claimedEpisode(dialect, event, s);
  if (claimed === null || claimed.id === null) return null;
  const dir = episodeDirFor(claimed.id, s.root);
  if (s.episode === undefined && (!claimed.exists || isSealed(dir))) return null;
  return await (s.episodes ?? DIRECT).attach(claimed.id, s.root);
}

/** Creates the claimed episode `id`; when another process created it meanwhile, joins it. */
async function openClaimed(
  dialect: Dialect,
  event: HookEvent,
  s: HookSettings,
  id: string,
  task: string,
): Promise<EpisodeHandle> {
  const source = s.episodes ?? DIRECT;
  if (existsSync(episodeDirFor(id, s.root))) return await source.attach(id, s.root);
  try {
    return await source.open(task, {
      ...s.options,
      root: s.root,
      using: dialect.name,
      episode_id: id,
      // The session id may carry a token: stored masked, with its digest.
      adapter: { ...(s.options.adapter ?? {}), ...storedSession(event.session_id) },
    });
  } catch (e) {
    if (!(e instanceof NoemaError && e.code === "exists" && existsSync(episodeDirFor(id, s.root)))) throw e;
    return await source.attach(id, s.root);
  }
}

/** The session's open episode; a new one toward `task` when there is none. */
async function episodeFor(
  dialect: Dialect,
  event: HookEvent,
  s: HookSettings,
  task: string,
): Promise<EpisodeHandle> {
  if (s.episode !== undefined) return await (s.episodes ?? DIRECT).attach(s.episode, s.root);
  const claimed = await claimedEpisode(dialect, event, s);
  if (claimed !== null && claimed.id !== null) {
    const dir = episodeDirFor(claimed.id, s.root);
    if (claimed.exists && !isSealed(dir)) return await (s.episodes ?? DIRECT).attach(claimed.id, s.root);
  }
  checkTask(task); // before the session is claimed: a refused task must not leave it pointing at no episode
  if (claimed !== null && claimed.id !== null) {
    // Claimed, but its process died before creating it: create it now, under the claimed id.
    if (!claimed.exists) return await openClaimed(dialect, event, s, claimed.id, task);
  }
  const id = newEpisodeId();
  const entry = claimSession(s.root, dialect.name, event.session_id, id, { replace: claimed !== null });
  crashPoint("claimed");
  if (entry.episode_id !== id) {
    // Another hook process of this session claimed it first: join its episode (or create it, if that one died).
    await waitForDir(episodeDirFor(entry.episode_id, s.root), entry);
    return await openClaimed(dialect, event, s, entry.episode_id, task);
  }
  return await openClaimed(dialect, event, s, id, task);
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
  if (s.awaitDecision) return "pause"; // decided through the shared store, by anyone, while the hook waits
  const mode = dialect.onAsk?.(s) ?? "pause";
  return mode === "defer" && s.finish ? "pause" : mode;
}

/**
 * A call the episode paused for, while the hook waits for its decision
 * (`awaitDecision`): once decided, the call is proposed again and gets the
 * decision's verdict, the approval consumed and recorded as a local
 * `noema approve` would be; an abort ends the episode aborted and denies
 * the call; nothing decided leaves it asked. The episode is let go during the
 * wait (its lock, and the resident server's lane: `s.outside`), so the
 * session's other calls are answered and their results recorded meanwhile;
 * the episode it ends with is returned (another handle when others wrote it).
 */
async function awaitDecided(
  episode: EpisodeHandle,
  proposed: ProposedAction,
  asked: Decision,
  s: HookSettings,
): Promise<{ decision: Decision; episode: EpisodeHandle }> {
  episode.flush(); // the pause is on disk (published for the approvers) before the wait
  episode.suspend();
  let got: "decided" | "abort" | "none";
  try {
    const wait = () => s.awaitDecision!(episode.episodeId, asked.checkpoint_id!, s.signal);
    got = s.outside ? await s.outside(wait) : await wait();
  } finally {
    episode = await heldAgain(episode, s);
  }
  if (got === "none") return { decision: asked, episode };
  if (got === "abort") {
    const end = abortEnd(episode.dir);
    await episode.finish(end);
    return {
      decision: { ...asked, verdict: "deny", reason: end.message ?? "aborted", checkpoint_id: undefined },
      episode,
    };
  }
  const decision = await proposeOrHold(episode, proposed, asked.input, asked);
  episode.flush();
  return { decision, episode };
}

/** The episode held again after a wait: the same one when nobody else wrote it meanwhile, else attached anew. */
async function heldAgain(episode: EpisodeHandle, s: HookSettings): Promise<EpisodeHandle> {
  if (!episode.closed && episode.resume()) return episode;
  return await (s.episodes ?? DIRECT).attach(episode.episodeId, s.root);
}

/**
 * The answer to a call made while the episode waits for a human about
 * another one (a later call of the same turn): it is neither proposed nor
 * run, and the agent reads why and that it may call it again once that is
 * decided (the checkpoint stays the episode's last event).
 */
function heldBack(call: { tool: string; step_id: string } | null, input: Record<string, unknown>): Decision {
  return {
    verdict: "deny",
    step_id: "",
    action_candidate_id: "",
    input,
    reason: heldCallReason(call),
    policy_id: null,
    hints: [],
  };
}

/** Proposes the call, or answers it held back while the episode still waits for a decision on another. */
async function proposeOrHold(
  episode: EpisodeHandle,
  proposed: ProposedAction,
  input: Record<string, unknown>,
  asked: Decision | null = null,
): Promise<Decision> {
  try {
    return await episode.propose(proposed);
  } catch (e) {
    if (!(e instanceof NoemaError && e.code === "paused")) throw e;
    return asked ?? heldBack(episode.waitingFor(), input);
  }
}

/** The result of a call that did not run: skipped, with who stopped it. */
function notRun(reason: string): RecordedResult {
  return { status: "skipped", outcome: textHead(reason, 200), error: { type: "NotRun", message: reason } };
}

/**
 * At the end of a turn, the calls noema let through whose result never
 * came did not run (the agent's own permission prompt said no, or the user
 * interrupted): each is recorded as a step that did not run, with what the
 * agent's transcript says about it.
 */
async function recordNotRun(dialect: Dialect, event: EndEvent, episode: EpisodeHandle): Promise<void> {
  // Twice at most: recording one may apply a decision made meanwhile on a held call, which then awaits its result too.
  for (let pass = 0; pass < 2; pass++) await recordNotRunOnce(dialect, event, episode);
}

async function recordNotRunOnce(dialect: Dialect, event: EndEvent, episode: EpisodeHandle): Promise<void> {
  const pending = episode.unrecordedCalls();
  if (pending.length === 0) return;
  const said = dialect.notRunReasons?.(event, pending) ?? new Map<string, string>();
  for (const id of pending) {
    const why = said.get(id);
    await episode.record(
      id,
      notRun(
        why
          ? `not run: ${dialect.name} said: ${why}`
          : `not run: no result came before ${event.name} (denied by ${dialect.name}'s own permission check, or interrupted)`,
      ),
    );
  }
}

/**
 * Refuses (a usage error: the hook exits 2) a call whose input is over noema's tool input limit or holds a lone
 * UTF-16 surrogate, as the episode would (see `EpisodeCore.propose`), before anything is created or claimed.
 */
function refuseOversizeInput(event: PreToolEvent): void {
  let text = "";
  try {
    text = JSON.stringify(event.input) ?? "";
  } catch {
    return; // no JSON form: the episode reports it as it records the call
  }
  refuseOversize(`the ${event.tool} call's input`, text, limits().toolInputBytes);
  const lone = loneSurrogatePath(event.input, text);
  if (lone !== null) {
    throw new NoemaError("bad_input", `the ${event.tool} call's ${loneSurrogateProblem(`input.${lone}`)}`, {
      exitCode: EXIT.USAGE,
    });
  }
}

/**
 * Reads the model turns the agent recorded since the last hook call into the
 * episode (see {@link Dialect.modelTurns}). Token accounting never fails a
 * hook call: an error is a note under `NOEMA_DEBUG`, and the next call reads
 * on from where this one could not.
 */
function readModelTurns(
  dialect: Dialect,
  s: HookSettings,
  event: HookEvent,
  episode: EpisodeHandle,
  final: boolean,
): Record<string, ModelUsage> | null {
  if (!dialect.modelTurns) return null;
  try {
    return dialect.modelTurns(s.root, event, { episodeId: episode.episodeId, dir: episode.dir }, final);
  } catch (e) {
    if (process.env.NOEMA_DEBUG) {
      process.stderr.write(`noema: ${dialect.name}: model turns not read: ${(e as Error).message}\n`);
    }
    return null;
  }
}

/** A tool call event as the action noema proposes (or records unreviewed). */
function proposedOf(event: Pick<PreToolEvent, "tool" | "input" | "call_id" | "repeatable" | "cwd">): ProposedAction {
  return {
    kind: "tool",
    tool: event.tool,
    input: event.input,
    command: commandOf(event.input),
    // Where the agent's shell is now: a relative path in the call is read against it, not against the project.
    ...(event.cwd ? { cwd: event.cwd } : {}),
    ...(typeof event.input.description === "string" ? { description: event.input.description } : {}),
    call_id: event.call_id,
    ...(event.repeatable ? { repeatable: true } : {}),
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
  const fallbackTask = `${dialect.name} session ${maskSessionId(event.session_id)}`;
  switch (event.kind) {
    case "session_start":
      return NO_OPINION;
    case "prompt":
      if (s.episode === undefined && event.prompt.trim() !== "") {
        await withEpisode(s, await episodeFor(dialect, event, s, event.prompt), async () => {}, undefined);
      }
      return NO_OPINION;
    case "pre_tool":
      // Refused before the session's episode is looked up: a session's first call must not leave an episode behind.
      refuseOversizeInput(event);
      return await withEpisode(s, await episodeFor(dialect, event, s, fallbackTask), async (episode) => {
        crashPoint("opened");
        let decision: Decision;
        const proposed: ProposedAction = { ...proposedOf(event), on_ask: onAsk(dialect, s) };
        try {
          decision = await episode.propose(proposed);
        } catch (e) {
          if (!(e instanceof NoemaError && e.code === "paused")) throw e;
          // Held back: unless a decision made in the store meanwhile, brought in now, ends the wait.
          const pulled = s.pullDecision ? await s.pullDecision(episode.episodeId) : false;
          decision = pulled
            ? await proposeOrHold(episode, proposed, event.input)
            : heldBack(episode.waitingFor(), event.input);
        }
        const waits = decision.verdict === "ask" && decision.checkpoint_id !== undefined && s.awaitDecision;
        // Waited for: written by the wait (or ended, when the wait ran out with --approval-timeout abort).
        if (waits) {
          const waited = await awaitDecided(episode, proposed, decision, s);
          decision = waited.decision;
          // Held anew after the wait (others wrote the episode meanwhile): that handle is let go here.
          if (waited.episode !== episode) (s.episodes ?? DIRECT).release(waited.episode);
        } // One process per call: the state and the call's record are written before the answer (they would be at
        // exit anyway), so a hook killed after deciding leaves the call known to the next one.
        else if (s.episodes === undefined) episode.flush();
        // A person approved it through noema: the agent is told allow, not asked its own user again.
        const approved = waits && (decision.verdict === "allow" || decision.verdict === "patch");
        crashPoint("decided");
        return dialect.answer(event, decision, approved ? { ...s, grant: true } : s);
      }, NO_OPINION);
    case "post_tool":
      // A result is never dropped: one whose call noema did not see proposed (out of order, or its hook killed)
      // is recorded as unreviewed, in the session's episode (a new one if none is open).
      return await withEpisode(s, await episodeFor(dialect, event, s, fallbackTask), async (episode) => {
        const callId = event.repeatable ? episode.openCall(event.call_id) : event.call_id;
        const result = toRecordedResult(event);
        // A call named by its content whose every occurrence has its result: this one was not seen proposed.
        const awaited = !event.repeatable || episode.unrecordedCalls().includes(callId);
        // What the agent can be shown instead (the policies' `review` of the result), answered in its dialect.
        const delivery = dialect.resultDelivery?.(event) ?? { replace: false };
        const review = episode.knowsCall(callId) && awaited
          ? await episode.record(callId, result, delivery)
          : await episode.recordUnreviewed(proposedOf(event), result, delivery);
        crashPoint("recorded");
        readModelTurns(dialect, s, event, episode, false);
        return review && dialect.answerResult ? dialect.answerResult(event, review) : NO_OPINION;
      }, NO_OPINION);
    case "denied":
      // The agent refused the call itself: a step that did not run, saying who refused it.
      return await withEpisode(s, await episodeFor(dialect, event, s, fallbackTask), async (episode) => {
        const result = notRun(event.reason);
        if (episode.knowsCall(event.call_id)) await episode.record(event.call_id, result);
        else await episode.recordUnreviewed(proposedOf(event), result);
        readModelTurns(dialect, s, event, episode, false);
        return NO_OPINION;
      }, NO_OPINION);
    case "permission":
      // Answered from the decision on the call its PreToolUse proposed (a permission request names no call id).
      if (!dialect.answerPermission) return NO_OPINION;
      return await withEpisode(s, await currentEpisode(dialect, event, s), (episode) => {
        return Promise.resolve(dialect.answerPermission!(event, episode.decisionFor(event.tool, event.input), s));
      }, NO_OPINION);
    case "stop":
    case "session_end":
      if (!s.finish) {
        // The driver finishes the episode (noema run): the turns so far are read now, the rest at its end.
        if (!dialect.modelTurns) return NO_OPINION;
        return await withEpisode(s, await currentEpisode(dialect, event, s), (episode) => {
          readModelTurns(dialect, s, event, episode, false);
          return Promise.resolve(NO_OPINION);
        }, NO_OPINION);
      }
      return await withEpisode(s, await currentEpisode(dialect, event, s), async (episode) => {
        crashPoint("finishing");
        await recordNotRun(dialect, event, episode);
        const models = readModelTurns(dialect, s, event, episode, true);
        await episode.finish({
          adapter_result: "success",
          message: event.message ? `${event.name}: ${textHead(event.message, 500)}` : `${event.name}`,
          ...(models ? { metrics: usageMetrics(models, s.options.prices) } : {}),
        });
        return NO_OPINION;
      }, NO_OPINION);
  }
}
