/**
 * One MCP client session of `noema mcp` as one episode (adapter `mcp`),
 * driven call by call through the episode core like the hook driver: each
 * `tools/call` is proposed (policies with the state snapshot, `Rules@1.0`,
 * the gateway's pin check; action tool `mcp__<server>__<tool>`, the call's
 * arguments as the input) and becomes an `act` step with its verdict; its
 * result is recorded (and reviewed by the policies that review results); the
 * episode is sealed when the session ends.
 *
 * Proposals go one at a time (the core decides one call after the other);
 * allowed calls then run at the same time on the server. An `ask` is refused
 * with the reason, or, with a wait, pauses the episode at its checkpoint
 * until a decision comes (later calls queue behind it).
 *
 * @module
 */
import { NoemaError } from "../../errors.ts";
import { limits } from "../../store/limits.ts";
import { reject } from "../../runtime/resume.ts";
import type { RunResult } from "../../runtime/engine.ts";
import type { RecordedReview } from "../../runtime/review_record.ts";
import type { Decision, EpisodeHandle, RecordedResult } from "../core.ts";
import { type DriverOptions, openEpisode } from "../episodes.ts";
import { abortEnd } from "../driver.ts";
import { clipText } from "../../text_head.ts";

/**
 * Waits for the decision on a paused call (see `HookSettings.awaitDecision`); `signal` aborted: the wait is given up
 * ("none": the call is then rejected, never made).
 */
export type AwaitDecision = (
  episodeId: string,
  checkpointId: string,
  signal?: AbortSignal,
) => Promise<"decided" | "abort" | "none">;

/** How the session's episode is run. */
export interface SessionSettings {
  /** The run settings (policies, rules, governance…), root included. */
  options: Omit<DriverOptions, "using">;
  /** Waits for decisions on calls that need approval; without it such a call is refused, saying why. */
  awaitDecision?: AwaitDecision;
}

/** A call as the gateway proposes it. */
export interface ProposedCall {
  /** `mcp__<server>__<tool>`. */
  tool: string;
  arguments: Record<string, unknown>;
}

/** The decision on one call, with the id its result is recorded under. */
export interface CallDecision {
  callId: string;
  decision: Decision;
}

/**
 * The episode of one client session.
 *
 * @example
 * ```ts
 * import { McpSession } from "./session.ts";
 * const s = new McpSession({ options: { root: ".noema" } });
 * await s.start("MCP session: fs");
 * const { callId, decision } = await s.decide({ tool: "mcp__fs__read_file", arguments: { path: "a" } });
 * if (decision.verdict === "allow") await s.record(callId, { status: "ok", output: "…" });
 * await s.end({ message: "client disconnected" });
 * ```
 */
export class McpSession {
  readonly #settings: SessionSettings;
  #core: Promise<EpisodeHandle> | null = null;
  /** Proposals and records, one after the other. */
  #queue: Promise<unknown> = Promise.resolve();
  #seq = 0;
  #ended = false;
  #task = "";
  /** Steps of the current episode. */
  #steps = 0;
  /** The episodes sealed so far, in order. */
  readonly #sealed: string[] = [];

  constructor(settings: SessionSettings) {
    this.#settings = settings;
  }

  /** Opens the episode (once); every later step waits for it. */
  start(task: string): Promise<EpisodeHandle> {
    this.#task ||= task;
    this.#core ??= openEpisode(task, { ...this.#settings.options, using: "mcp" });
    return this.#core;
  }

  /**
   * The episode the next call goes into: the current one, or, once it holds as many steps as a plan may
   * (`NOEMA_MAX_PLAN_STEPS`, 5,000), a new one that says which it continues (start event `settings.adapter.continues`),
   * the full one sealed first (its calls still running recorded as not answered there). A long session is thus a
   * chain of episodes, each within noema's limits, and the gateway's memory stays bounded.
   */
  async #roomFor(core: EpisodeHandle): Promise<EpisodeHandle> {
    if (this.#steps < limits().planSteps) return core;
    const message = `the episode holds ${this.#steps} steps, noema's limit: the session goes on in a new episode`;
    await this.#seal(core, { message });
    const options = this.#settings.options;
    this.#core = openEpisode(`${this.#task} (continued)`, {
      ...options,
      using: "mcp",
      adapter: { ...options.adapter, continues: core.episodeId },
    });
    this.#steps = 0;
    return await this.#core;
  }

  /** The ids of the episodes this session sealed, in order (more than one after a rollover). */
  sealed(): readonly string[] {
    return this.#sealed;
  }

  /** The open episode's id, once opened. */
  async episodeId(): Promise<string | null> {
    return this.#core ? (await this.#core).episodeId : null;
  }

  #serial<T>(work: (core: EpisodeHandle) => Promise<T>): Promise<T> {
    const run = this.#queue.then(async () => {
      if (!this.#core) throw new NoemaError("mcp_no_session", "the MCP session has no episode yet");
      const core = await this.#core;
      if (this.#ended || core.closed) throw new NoemaError("mcp_ended", `episode ${core.episodeId} has ended`);
      return await work(core);
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Proposes one call; an `ask` waits for its decision when the session may wait, else is refused. `abandoned`
   * aborted ends the wait: the call is rejected.
   */
  decide(call: ProposedCall, abandoned?: AbortSignal): Promise<CallDecision> {
    return this.#serial(async (current) => {
      const core = await this.#roomFor(current);
      this.#steps++;
      const callId = `mcp-${++this.#seq}`;
      const wait = this.#settings.awaitDecision;
      const proposed = {
        kind: "tool",
        tool: call.tool,
        input: call.arguments,
        command: `${call.tool} ${compact(call.arguments)}`,
        call_id: callId,
        on_ask: wait ? "pause" as const : "deny" as const,
      };
      let decision = await core.propose(proposed);
      if (decision.verdict === "ask" && decision.checkpoint_id !== undefined && wait) {
        core.flush(); // the pause is on disk before anyone is asked
        const got = abandoned?.aborted ? "none" : await wait(core.episodeId, decision.checkpoint_id, abandoned);
        if (got === "abort") {
          const end = abortEnd(core.dir);
          this.#ended = true;
          await core.finish(end);
          decision = { ...decision, verdict: "deny", reason: end.message ?? "aborted", checkpoint_id: undefined };
        } else {
          // Nothing decided (a store that could not be reached): rejected here, so the session is not left paused.
          if (got === "none") rejectUndecided(core.dir);
          decision = await core.propose(proposed);
        }
      }
      // The decision's events are on disk (propose writes them); state.json follows as autoFlush decides.
      return { callId, decision };
    });
  }

  /** Records the result of an allowed call; what the policies' review says the client is shown, or null. */
  record(callId: string, result: RecordedResult): Promise<RecordedReview | null> {
    return this.#serial(async (core) => {
      // A call of an episode sealed at its step limit while the call ran was recorded there as not answered.
      if (!core.knowsCall(callId)) return null;
      return await core.record(callId, result, { replace: true });
    });
  }

  /**
   * Seals the episode: the calls still running are recorded as not answered, then it finishes (aborted when the
   * server died). Idempotent; a session that never opened its episode has nothing to seal.
   */
  async end(how: { message: string; aborted?: boolean }): Promise<RunResult | null> {
    if (!this.#core || this.#ended) return null;
    await this.#queue; // a call being decided may have moved the session to a new episode
    const core = await this.#core;
    if (this.#ended || core.closed) return null;
    this.#ended = true;
    return await this.#seal(core, how);
  }

  /** Finishes `core`: the calls still running recorded as not answered (aborted when the server died). */
  async #seal(core: EpisodeHandle, how: { message: string; aborted?: boolean }): Promise<RunResult> {
    for (const id of core.unrecordedCalls()) {
      await core.record(id, {
        status: "error",
        error: { type: "NotAnswered", message: `no result came: ${how.message}` },
      });
    }
    this.#sealed.push(core.episodeId);
    return await core.finish(
      how.aborted
        ? { aborted: true, message: how.message, error: { type: "McpServerExited", message: how.message } }
        : { message: how.message },
    );
  }
}

/** Rejects the call an episode waits for, by `timeout`; a decision made meanwhile stands. */
function rejectUndecided(dir: string): void {
  try {
    reject(dir, { by: "timeout", note: "no decision reached noema mcp (noema mcp --wait)" });
  } catch {
    // decided meanwhile: that decision stands
  }
}

/** A call's arguments as one short display string. */
function compact(args: Record<string, unknown>): string {
  let text: string;
  try {
    text = JSON.stringify(args) ?? "{}";
  } catch {
    text = "{…}";
  }
  return clipText(text, 160);
}
