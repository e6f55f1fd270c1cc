/**
 * The episode core: the per-action pipeline that the plan-driven run and
 * external drivers (an agent's hooks) both go through — the policies
 * consulted with the state snapshot → action candidate → governance → act
 * record → state persisted → learning → terminal artifacts and verification.
 *
 * An agent episode's plan grows as the agent works: each proposed call
 * becomes an `act` step in `state.json`, announced by a `plan` event carrying
 * every step record: at once while the plan is short (8 steps), then in
 * batches growing with the plan, so that the log grows linearly; the last
 * plan event (at `finish` or a pause) carries every step, so the contract's
 * plan rules rebuild the final plan from the events. Many
 * processes may drive one episode: each holds the episode lock (waiting
 * briefly for it) from `open`/`attach` to `close`/`finish`, so appends stay
 * whole lines in order and `state.json`, its projection and `core.json` stay
 * consistent.
 *
 * @module
 */
import { EXIT, NoemaError } from "../../errors.ts";
import type { PendingAction } from "../../plugins/api.ts";
import { loneSurrogatePath, loneSurrogateProblem } from "../../plugins/plain_json.ts";
import type { PlanStep } from "../../schema/plan.ts";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { ARTIFACTS } from "../../store/layout.ts";
import { canonicalJson } from "../../store/canonical_json.ts";
import { limits, refuseOversize, valueDepthProblem } from "../../store/limits.ts";
import { acquireLock, type EpisodeLock } from "../../store/lock.ts";
import type { AssertionSpec } from "../../verify/assertions.ts";
import { startVerification } from "../../verify/outcome.ts";
import { snapshotPolicy } from "../../verify/snapshot.ts";
import { checkAdapterResult } from "../adapter_result.ts";
import {
  type ApprovalRecord,
  approvalSummary,
  consumeApproval,
  deciderOf,
  decisionBindingProblem,
  readApproval,
  readCheckpoint,
} from "../checkpoint.ts";
import { Engine, type RunResult, type StepDecision } from "../engine.ts";
import type { ExtraMetrics } from "../summary_builder.ts";
import { ATTACH_WAIT_MS, attachEpisode, type AttachOptions } from "./attach.ts";
import { displayCommand } from "./command.ts";
import { createEpisode } from "./create.ts";
import type { RunOptions, RunSettingsRecord } from "./options.ts";
import { prepareEpisode } from "./prepare.ts";
import { type RecordedReview, type ReviewDelivery, reviewResult } from "../review_record.ts";
import { type CallRecord, type CoreProgress, writeCoreProgress } from "./progress_file.ts";
import { proposalDigest, reusedReason, sameCall } from "./call_reuse.ts";
import { clipText } from "../../text_head.ts";

export type { AttachOptions } from "./attach.ts";

/** Why a step waits for approval (a decision's `pause`). */
type StepPause = NonNullable<StepDecision["pause"]>;

/** Why a pause ended for a moment (`run.resume`'s reason) when another call's result was recorded beside it. */
const OTHER_RESULT = "another call's result came while it waited for a decision: recorded, and the call waits again " +
  "at a new checkpoint";
/** The same, for a call refused because it reused another call's id. */
const REUSED_ID = "a call reusing another call's id was refused while it waited for a decision: recorded, and the " +
  "call waits again at a new checkpoint";

/** An action proposed from outside (an agent's tool call). */
export interface ProposedAction {
  /** `"tool"` for agent tool calls. */
  kind: string;
  /** `Bash`, `Edit`, `mcp__srv__tool`, `read_file`… */
  tool: string;
  /** The real input (artifacts mask secrets). */
  input: Record<string, unknown>;
  /** Display string; derived from `input.command` / `argv` when absent. */
  command?: string;
  /** The directory the call runs in, when the agent says (see `PendingAction.cwd`). */
  cwd?: string;
  /** Step description. @default {`${tool}: ${command}`} */
  description?: string;
  /** The agent's id for the call (`tool_use_id` / `toolCallId`); `propose` is idempotent per `call_id`. */
  call_id?: string;
  /**
   * `call_id` names the call's content, not one call (an agent that sends no
   * ids): once a call with this id was recorded or denied, the same id names
   * a new call (`<id>#2`, `#3`…). See {@link EpisodeCore.openCall}.
   */
  repeatable?: boolean;
  /**
   * What an `ask` (a policy requires approval) does. `"pause"`: the episode
   * pauses at a checkpoint for `noema approve|reject`. `"agent"`: the agent
   * asks its own user (an interactive agent's prompt): the episode goes on,
   * the call is recorded if it runs. `"deny"`: the agent cannot ask (Codex's
   * hooks, a headless CLI), so the call is refused: its step is vetoed with
   * the reason, and the episode goes on. `"defer"`: the agent stops and
   * waits (Claude Code `-p` defers the call), but the calls it decided
   * before may still end and be recorded: the episode pauses when the driver
   * calls {@link EpisodeCore.pauseDeferred}, so that the checkpoint is the
   * last event; until then no other call can be proposed. @default {"pause"}
   */
  on_ask?: "pause" | "agent" | "deny" | "defer";
}

/** What the policies and governance decided about a proposed action. */
export interface Decision {
  verdict: "allow" | "patch" | "deny" | "ask";
  step_id: string;
  action_candidate_id: string;
  /** The input after interventions. */
  input: Record<string, unknown>;
  /** Deny / ask reason (masked). */
  reason: string | null;
  policy_id: string | null;
  /** Advice of applied hints. */
  hints: string[];
  /** `"ask"`: the episode paused with this checkpoint. */
  checkpoint_id?: string;
}

/** An action's result, recorded from outside: the same shape as an adapter's `ActResult`. */
export interface RecordedResult {
  status: "ok" | "error" | "skipped";
  outcome?: string;
  output?: unknown;
  error?: { type: string; message: string };
  duration_ms?: number;
  artifacts?: Record<string, unknown>[];
  facts?: { key: string; value: unknown }[];
}

/** Options of {@link EpisodeCore.open}: the run settings (no adapter acts, no planner plans). */
export interface CoreOptions extends Omit<RunOptions, "using" | "args" | "steps" | "planner"> {
  /** The label of the agent driving the episode, recorded as `episode.using`. @default {"external"} */
  using?: string;
  /** Settings of the driver, recorded in the start event (e.g. the agent's session id). */
  adapter?: Record<string, unknown>;
}

/** How an episode ends, from the driver's point of view. */
export interface CoreEnd {
  /** @default {"success" when an action ran, else "skipped"} */
  adapter_result?: "success" | "error" | "skipped";
  message?: string;
  error?: { type: string; message: string };
  /**
   * The agent's final answer (e.g. a model's last text): the `terminate` event's `answer`, kept whatever the
   * verification says (a failed verification replaces the message, not the answer). Secrets masked.
   */
  answer?: string;
  /** Extra summary metrics (e.g. `tokens`), merged into `summary.json` `metrics`; the built-in ones win. */
  metrics?: ExtraMetrics;
  /**
   * End the run as `aborted` (`resume --abort`), with `error` as its error
   * (default `{ type: "Aborted" }`); `adapter_result` is then `skipped`
   * unless it is `error`.
   */
  aborted?: boolean;
}

/**
 * One episode driven action by action.
 *
 * @example
 * ```ts
 * import { EpisodeCore } from "noema";
 * const core = await EpisodeCore.open("Fix the test", { using: "claude-code", policies: ["no-rm.ts"] });
 * const d = await core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "toolu_1" });
 * if (d.verdict === "allow") await core.record("toolu_1", { status: "ok", output: "a.txt" });
 * const result = await core.finish();
 * ```
 */
export class EpisodeCore {
  readonly episodeId: string;
  readonly dir: string;
  /**
   * `record` writes the state now and then by itself (at most a bounded share
   * of the time); a caller that calls {@link EpisodeCore.flush} after each call
   * turns this off. @default {true}
   */
  autoFlush = true;
  /**
   * `propose` and `record` leave their events in memory instead of writing
   * them before they return; {@link EpisodeCore.beforeExecute}, the next
   * state write or the next turn of the event loop writes them. For a driver
   * that calls `beforeExecute` before it runs each allowed call (the AI SDK
   * hooks do): parallel calls then share write calls. @default {false}
   */
  batchEvents = false;
  readonly #engine: Engine;
  #lock: EpisodeLock | null;
  readonly #record: RunSettingsRecord;
  readonly #calls: Record<string, CallRecord>;
  #pausedAt: string | null;
  /** Steps the last plan event carried. */
  #announced: number;
  /** Changed since `state.json` and `core.json` were last written. */
  #dirty = false;
  /** The event log's size when the lock was last released by {@link EpisodeCore.suspend}. */
  #logSize = -1;
  #flushedAt = performance.now();
  /** Size and mtime of each policy file as loaded, to notice an edit (see {@link EpisodeCore.resume}). */
  #policyStamps: string;
  #flushCostMs = 0;
  #closed = false;
  /** The call proposed with `on_ask: "defer"` whose pause is still to be made (see {@link EpisodeCore.pauseDeferred}). */
  #dueId: string | null;

  private constructor(
    engine: Engine,
    lock: EpisodeLock,
    record: RunSettingsRecord,
    calls: Record<string, CallRecord>,
    pausedAt: string | null,
    announced: number,
  ) {
    this.#announced = announced;
    this.#policyStamps = policyStamps(record);
    this.#engine = engine;
    this.#lock = lock;
    this.#record = record;
    this.#calls = calls;
    this.#pausedAt = pausedAt;
    this.#dueId = Object.keys(calls).find((id) => calls[id].pause_due) ?? null;
    this.episodeId = engine.s.episodeId;
    this.dir = engine.s.dir;
  }

  /**
   * A new episode (its id may be given): start, observe, interpret and an
   * empty plan, state persisted; holds the episode lock until
   * {@link EpisodeCore.close} or {@link EpisodeCore.finish}.
   */
  static async open(task: string, options: CoreOptions = {}): Promise<EpisodeCore> {
    const label = options.using ?? "external";
    const prepared = await prepareEpisode(task, { ...options, using: label }, label);
    const { engine, lock } = await createEpisode(prepared);
    const core = new EpisodeCore(engine, lock, prepared.record, {}, null, engine.p.steps.length);
    core.#save();
    return core;
  }

  /**
   * Joins an existing non-terminal episode from another process: takes the
   * lock (waiting up to `waitMs`), reloads the recorded settings (policies
   * from their recorded paths) and the progress.
   */
  static async attach(ref: string, options: AttachOptions = {}): Promise<EpisodeCore> {
    const a = await attachEpisode(ref, options);
    return new EpisodeCore(a.engine, a.lock, a.record, a.calls, a.pausedAt, a.announced);
  }

  #check(): void {
    if (this.#closed) {
      throw new NoemaError("closed", `episode ${this.episodeId}: this EpisodeCore was closed`, {
        exitCode: EXIT.USAGE,
      });
    }
  }

  /** Whether this object was closed (by `close`, `finish`, or a `resume` that found the episode changed). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Open and holding the lock (not suspended). */
  #checkHeld(): void {
    this.#check();
    if (!this.#lock) {
      throw new NoemaError("suspended", `episode ${this.episodeId}: suspended; call resume() first`, {
        exitCode: EXIT.USAGE,
      });
    }
  }

  /**
   * Appends an act step to the plan, consults the policies with the state
   * snapshot, emits direction → action_candidate → governance. A deny marks
   * the step vetoed (with its act evidence); an ask pauses the episode
   * (checkpoint, non-terminal state) unless the action's `on_ask` says
   * otherwise. Idempotent per `call_id`.
   */
  async propose(action: ProposedAction): Promise<Decision> {
    this.#checkHeld();
    if (action.repeatable && action.call_id !== undefined) {
      action = { ...action, call_id: this.#occurrence(action.call_id) };
    }
    const known = action.call_id !== undefined ? this.#calls[action.call_id] : undefined;
    const unmask = (v: Record<string, unknown>) => this.#engine.redactor.unmask(v).value;
    if (known && !sameCall(this.episodeId, known, { ...action, masked: this.#masked(action) }, unmask)) {
      // Its refusal is a step of its own: recorded beside the pause the episode may be in.
      return this.#held()
        ? this.#besidePause(REUSED_ID, () => this.#refuseReused(action, known))
        : this.#refuseReused(action, known);
    }
    if (known) return this.#again(known, action.on_ask ?? "pause");
    // The agent went on without calling the held call again: a decision recorded for it meanwhile is applied now.
    this.#applyHeldDecision();
    this.#heldOff();
    const e = this.#engine, p = e.p;
    this.#refuseOversize(action);
    const command = action.command ?? displayCommand(action.input);
    const description = e.redactor.redactString(cut(action.description ?? `${action.tool}: ${command}`, 200));
    const index = p.steps.length;
    // The step's tool is the call's (what its action records), so insight's tool_coverage compares like with like.
    const step: PlanStep = {
      id: `step-${index + 1}`,
      kind: "act",
      description,
      status: "pending",
      inputs: { tool: action.tool },
    };
    p.steps.push(step);
    p.inputs.set(step.id, action.input);
    if (announceDue(this.#announced, p.steps.length)) this.#announce();
    const pending: PendingAction = {
      kind: action.kind,
      tool: action.tool,
      input: action.input,
      command,
      ...(action.cwd ? { cwd: action.cwd } : {}),
    };
    e.candidateCallId = action.call_id ?? null;
    let decided: StepDecision;
    try {
      decided = await e.decideStep(index, pending);
    } finally {
      e.candidateCallId = null;
    }
    const callId = action.call_id ?? `step:${step.id}`;
    const onAsk = action.on_ask ?? "pause";
    const decision = this.#decision(index, decided, onAsk);
    this.#remember(callId, index, decision, decided.action);
    this.#calls[callId].proposed = proposalDigest(this.episodeId, this.#masked(action));
    // Refused (not waiting for anyone): asked again, it is a denied call.
    if (decision.verdict === "ask" && onAsk === "deny") this.#calls[callId].verdict = "deny";
    if (decision.verdict === "ask" && onAsk === "defer") {
      this.#calls[callId].pause_due = decided.pause!.kind;
      this.#dueId = callId;
    }
    // A pause persisted the state already; the checkpoint stays the last event (what approve checks).
    if (decision.checkpoint_id) this.#save();
    else this.#dirty = true;
    this.#written(); // the decision is on disk before the driver acts on it
    return decision;
  }

  /** A call's input nested past what the artifacts can carry (see `MAX_VALUE_DEPTH`) is a usage error. */
  #refuseTooDeep(action: ProposedAction): void {
    const deep = valueDepthProblem(action.input);
    if (deep !== null) {
      throw new NoemaError("too_large", `${this.episodeId}: the ${action.tool} call's input: ${deep}`, {
        field: "input",
        exitCode: EXIT.USAGE,
      });
    }
  }

  /**
   * A call whose input is over noema's tool input limit, nested too deep, holding a lone UTF-16 surrogate (not
   * text: no artifact can carry it, and a policy would judge another text than the one that runs), or one more step
   * than a plan may hold, is refused (a usage error naming where, nothing written): every event must stay readable,
   * and a policy must see the whole input.
   */
  #refuseOversize(action: ProposedAction): void {
    const { toolInputBytes, planSteps } = limits();
    let text = "";
    try {
      text = JSON.stringify(action.input) ?? "";
    } catch {
      // no JSON form (a cycle, a BigInt): the pipeline reports it as it records the call
    }
    refuseOversize(`${this.episodeId}: the ${action.tool} call's input`, text, toolInputBytes);
    this.#refuseTooDeep(action);
    const lone = loneSurrogatePath(action.input, text);
    if (lone !== null) {
      throw new NoemaError(
        "bad_input",
        `${this.episodeId}: the ${action.tool} call's ${loneSurrogateProblem(`input.${lone}`)}`,
        { exitCode: EXIT.USAGE },
      );
    }
    if (this.#engine.p.steps.length >= planSteps) {
      throw new NoemaError(
        "too_large",
        `${this.episodeId}: the plan holds ${planSteps} steps, noema's limit (NOEMA_MAX_PLAN_STEPS); no further call is recorded`,
        { exitCode: EXIT.USAGE },
      );
    }
  }

  /** Refuses (`paused`) a new call while the episode waits for a decision, or is about to (a deferred pause). */
  #heldOff(): void {
    if (this.#pausedAt !== null || this.#due()) {
      // The checkpoint stays the last event until a human decides (what approve checks): nothing new before that.
      throw new NoemaError(
        "paused",
        `episode ${this.episodeId}: paused, waiting for approval; no other call can be proposed until it is decided`,
        { exitCode: EXIT.USAGE },
      );
    }
  }

  /** Pauses the episode at a checkpoint for the step at `index`; returns the checkpoint id. */
  #pauseNow(index: number, candidateId: string, action: PendingAction, why: StepPause): string | undefined {
    const e = this.#engine;
    if (this.#announced < e.p.steps.length) this.#announce();
    const paused = e.pause(index, candidateId, action, why, false);
    this.#pausedAt = e.rec.now();
    return paused.checkpoint_id;
  }

  /** The call proposed with `on_ask: "defer"` whose pause is still to be made. */
  #due(): [string, CallRecord] | undefined {
    const call = this.#dueId === null ? undefined : this.#calls[this.#dueId];
    return call?.pause_due && !call.checkpoint_id && call.verdict === "ask" ? [this.#dueId!, call] : undefined;
  }

  /**
   * Pauses the episode for the call proposed with `on_ask: "defer"` (see
   * {@link ProposedAction.on_ask}), once the agent stopped: interrupt and
   * checkpoint, after the results recorded meanwhile. Returns the
   * checkpoint id, or null when no such call waits.
   *
   * @example
   * ```ts
   * import { EpisodeCore } from "noema";
   * // claude -p exited with terminal_reason "tool_deferred":
   * // const core = await EpisodeCore.attach(dir); core.pauseDeferred(); core.close();
   * ```
   */
  pauseDeferred(): string | null {
    this.#checkHeld();
    const due = this.#due();
    if (!due) return null;
    const [, call] = due;
    const recorded = this.#actionOf(call);
    const action: PendingAction = { ...recorded, command: displayCommand(recorded.input) };
    const pause: StepPause = {
      kind: call.pause_due!,
      reason: call.reason ?? "needs approval",
      policy_id: call.policy_id,
    };
    const checkpoint = this.#pauseNow(call.index, call.action_candidate_id, action, pause);
    if (checkpoint) call.checkpoint_id = checkpoint;
    delete call.pause_due;
    this.#dueId = null;
    this.#save();
    return checkpoint ?? null;
  }

  /**
   * The call the episode waits for a decision on (paused at its checkpoint,
   * or about to be), or null.
   *
   * @example
   * ```ts
   * import { EpisodeCore } from "noema";
   * // core.waitingFor(); // { tool: "Bash", step_id: "step-2" }
   * ```
   */
  waitingFor(): { tool: string; step_id: string } | null {
    const calls = Object.values(this.#calls).filter((c) => c.verdict === "ask" && (c.checkpoint_id || c.pause_due));
    const call = calls.at(-1);
    return call ? { tool: call.action.tool, step_id: call.step_id } : null;
  }

  /** A call's recorded action with its real input (the record keeps it masked). */
  #actionOf(call: CallRecord): PendingAction {
    return { ...call.action, input: this.#engine.redactor.unmask(call.action.input).value };
  }

  /** A `plan` event carrying every step so far. */
  #announce(): void {
    const e = this.#engine, p = e.p;
    const planEvent = e.emit("plan", Engine.planPayload(p.planSource, p.steps, String(p.state.plan?.rationale ?? "")));
    p.counters.plan++;
    p.lastStepEventId = planEvent.id;
    if (p.state.plan) p.state.plan.updated_at = planEvent.timestamp;
    this.#announced = p.steps.length;
  }

  #decision(index: number, d: StepDecision, onAsk: NonNullable<ProposedAction["on_ask"]>): Decision {
    const e = this.#engine;
    const step = e.p.steps[index];
    const base = {
      step_id: step.id,
      action_candidate_id: d.candidateId,
      input: d.action.input,
      policy_id: d.policy_id,
      hints: d.hints,
    };
    if (d.pause) {
      const ask = { ...base, verdict: "ask" as const, reason: d.pause.reason, policy_id: d.pause.policy_id };
      // Paused by pauseDeferred(), or the agent asks its user.
      if (onAsk === "agent" || onAsk === "defer") return ask;
      if (onAsk === "deny") {
        e.recordVeto(index, d.action, d.candidateId, d.pause.reason, false);
        return ask;
      }
      return { ...ask, checkpoint_id: this.#pauseNow(index, d.candidateId, d.action, d.pause) };
    }
    if (d.blocked) {
      e.recordVeto(index, d.action, d.candidateId, d.message, false);
      return { ...base, verdict: "deny", reason: d.message };
    }
    return { ...base, verdict: d.patched ? "patch" : "allow", reason: null };
  }

  #remember(
    callId: string,
    index: number,
    d: Omit<Decision, "verdict"> & { verdict: CallRecord["verdict"] },
    action: PendingAction,
  ): void {
    const r = this.#engine.redactor;
    this.#calls[callId] = {
      step_id: d.step_id,
      index,
      verdict: d.verdict,
      action_candidate_id: d.action_candidate_id,
      action: r.redact({ kind: action.kind, tool: action.tool, input: action.input }).value,
      reason: d.reason,
      policy_id: d.policy_id,
      hints: d.hints,
      ...(d.checkpoint_id ? { checkpoint_id: d.checkpoint_id } : {}),
      recorded: false,
    };
  }

  /**
   * A call's tool and input with its secrets masked: what its digest covers (a digest of the input itself, on disk,
   * would let a weak secret in it be guessed offline; the rest of the input is in the record anyway).
   */
  #masked(action: ProposedAction): { tool: string; input: Record<string, unknown> } {
    return { tool: action.tool, input: this.#engine.redactor.redact(action.input).value };
  }

  /** A new `act` step for a call proposed from outside (its description masked and cut), announced when due. */
  #appendStep(action: ProposedAction): { step: PlanStep; index: number } {
    const e = this.#engine, p = e.p;
    const command = action.command ?? displayCommand(action.input);
    const description = e.redactor.redactString(cut(action.description ?? `${action.tool}: ${command}`, 200));
    const index = p.steps.length;
    const step: PlanStep = { id: `step-${index + 1}`, kind: "act", description, status: "pending" };
    p.steps.push(step);
    p.inputs.set(step.id, action.input);
    if (announceDue(this.#announced, p.steps.length)) this.#announce();
    return { step, index };
  }

  /**
   * A call id already decided for another tool or input: a step of its own, vetoed with a governance event saying
   * why (no policy is consulted: the id is not this call's), and a deny. The id stays the first call's.
   */
  #refuseReused(action: ProposedAction, known: CallRecord): Promise<Decision> {
    const e = this.#engine, p = e.p;
    this.#refuseOversize(action);
    const { step, index } = this.#appendStep(action);
    const command = action.command ?? displayCommand(action.input);
    const reason = e.redactor.redactString(reusedReason(action.call_id!, known.step_id));
    const candidateId = `ac_${step.id}_${index + 1}`;
    e.emit("governance", {
      decision: "veto",
      rule: "call_id_reused",
      rule_id: "call_id_reused",
      message: reason,
      policy_id: null,
      enforced: true,
      action_candidate_id: null,
      step_id: step.id,
      call_id: action.call_id,
      first_step_id: known.step_id,
      error: null,
    }, { faculty: "governance" });
    p.counters.governance++;
    e.recordVeto(
      index,
      { kind: action.kind, tool: action.tool, input: action.input, command },
      candidateId,
      reason,
      false,
    );
    this.#dirty = true;
    this.#written();
    return Promise.resolve({
      verdict: "deny",
      step_id: step.id,
      action_candidate_id: candidateId,
      input: structuredClone(action.input),
      reason,
      policy_id: null,
      hints: [],
    });
  }

  /** A call proposed before: its decision again; an "ask" is answered by its approval record once there is one. */
  #again(known: CallRecord, onAsk: NonNullable<ProposedAction["on_ask"]> = "pause"): Promise<Decision> {
    const e = this.#engine;
    const input = structuredClone(e.redactor.unmask(known.action.input).value); // the driver's own copy
    if (known.verdict === "unreviewed") {
      // Its result came first: it ran unreviewed, and is not let through again.
      return Promise.resolve({
        verdict: "deny",
        step_id: known.step_id,
        action_candidate_id: known.action_candidate_id,
        input,
        reason: known.reason,
        policy_id: null,
        hints: [],
      });
    }
    const base: Decision = {
      verdict: known.verdict,
      step_id: known.step_id,
      action_candidate_id: known.action_candidate_id,
      input,
      reason: known.reason,
      policy_id: known.policy_id,
      hints: known.hints,
      ...(known.checkpoint_id ? { checkpoint_id: known.checkpoint_id } : {}),
    };
    // Asked to wait, and its pause ended with no decision (the process that was to pause it again was killed): it
    // waits at a new checkpoint, so that a decision can be made on it (while another call is held, it waits its turn).
    if (known.verdict === "ask" && !known.checkpoint_id && !known.pause_due && onAsk === "pause" && !known.recorded) {
      this.#heldOff();
      this.#askAgain(known, this.#askedOf(known));
      return Promise.resolve({ ...base, ...(known.checkpoint_id ? { checkpoint_id: known.checkpoint_id } : {}) });
    }
    if (known.verdict !== "ask" || !known.checkpoint_id) return Promise.resolve(base);
    const { approval, unbound } = this.#decisionOn(known);
    if (!approval) return Promise.resolve(base);
    // As a resume does: a decision not bound to this checkpoint is not acted on, and the call stays asked (saying why).
    if (unbound !== null) {
      return Promise.resolve({
        ...base,
        reason: `${known.reason ?? "held for approval"}; the decision recorded for it is not applied: ${unbound}`,
      });
    }
    this.#applyDecision(known, approval);
    return Promise.resolve({ ...base, verdict: known.verdict, reason: known.reason, checkpoint_id: undefined });
  }

  /**
   * The decision recorded for an asked call's checkpoint (null: none yet), why it is not bound to it (null: it is),
   * and the decision when it is bound (what may be applied).
   */
  #decisionOn(
    known: CallRecord,
  ): { approval: ApprovalRecord | null; unbound: string | null; bound: ApprovalRecord | null } {
    const approval = readApproval(this.dir, known.checkpoint_id!);
    if (!approval) return { approval: null, unbound: null, bound: null };
    const unbound = decisionBindingProblem(readCheckpoint(this.dir, known.checkpoint_id!), approval, this.episodeId);
    return { approval, unbound, bound: unbound === null ? approval : null };
  }

  /**
   * Ends the pause at `known`'s checkpoint: a `run.resume` event carrying the decision it applies (consumed by it), or
   * none with `reason` saying what ended the pause without one. Returns the decision as consumed.
   */
  #resumeAt(known: CallRecord, approval: ApprovalRecord | null, reason: string | null): ApprovalRecord | null {
    const e = this.#engine;
    const resumeEvent = e.emit("runtime", {
      kind: "run.resume",
      status: "resuming",
      checkpoint_id: known.checkpoint_id,
      resume_strategy: "same_run_id",
      recovered: false,
      approval: approval ? approvalSummary(approval) : null,
      ...(reason === null ? {} : { reason }),
    }, { event_type: "run.resume" });
    if (approval && !approval.consumed_at) {
      approval = consumeApproval(this.dir, approval, resumeEvent.id, resumeEvent.timestamp);
    }
    if (this.#pausedAt !== null) {
      e.p.waitingMs += Math.max(0, Date.parse(resumeEvent.timestamp) - Date.parse(this.#pausedAt));
      this.#pausedAt = null;
    }
    this.#dirty = true;
    return approval;
  }

  /** Applies a decision bound to `known`'s checkpoint: the call allowed, or vetoed with who rejected it. */
  #applyDecision(known: CallRecord, decided: ApprovalRecord): void {
    const approval = this.#resumeAt(known, decided, null)!;
    const e = this.#engine;
    const action = this.#actionOf(known);
    // Only "approved" lets the call through: any other decision (a misspelt or planted one) denies it.
    if (approval.decision !== "approved") {
      const reason = approval.decision === "rejected"
        ? `Rejected by ${deciderOf(approval)}${approval.note ? `: ${approval.note}` : ""}`
        : `Not approved: the decision on ${known.checkpoint_id} is ${
          JSON.stringify(approval.decision)
        }, neither "approved" nor "rejected"`;
      e.recordVeto(known.index, action, known.action_candidate_id, reason, false);
      Object.assign(known, { verdict: "deny", reason });
    } else Object.assign(known, { verdict: "allow", reason: null });
    this.#written();
  }

  /** Applies the decision recorded and bound to the held call's checkpoint, if there is one. */
  #applyHeldDecision(): void {
    const held = this.#held()?.[1];
    if (!held) return;
    const { bound } = this.#decisionOn(held);
    if (bound) this.#applyDecision(held, bound);
  }

  /**
   * Ends the pause for the held call whose own result came: the agent ran it (its own user let it) or refused it. The
   * decision recorded for it, if any, is applied by the `run.resume` (an approval lets it count as allowed; the result
   * is recorded whatever the decision says), else the resume says the agent went on without one.
   */
  #endPauseForResult(held: CallRecord): void {
    const { unbound, bound } = this.#decisionOn(held);
    const why = bound === null
      ? "the agent reported the call's result while it waited for a decision: it was let run or refused outside noema" +
        (unbound === null ? "" : ` (the decision recorded is not applied: ${unbound})`)
      : bound.decision === "approved"
      ? null
      : `the agent reported the call's result though it was ${bound.decision} (it was let run or refused outside noema)`;
    this.#resumeAt(held, bound, why);
    if (bound?.decision === "approved") Object.assign(held, { verdict: "allow", reason: null });
  }

  /**
   * Writes another call's events (`write`: a result, a refusal) while the episode waits on a held call. The checkpoint
   * must stay the last event for a decision to be made on it, so the pause ends before them (`why` says what came)
   * and the held call waits again at a new checkpoint after them, as it was asked; a decision already recorded for it
   * is applied instead, and ends the pause.
   */
  async #besidePause<T>(why: string, write: () => Promise<T> | T): Promise<T> {
    const held = this.#held()?.[1];
    if (!held) return await write();
    const { unbound, bound } = this.#decisionOn(held);
    if (bound) {
      this.#applyDecision(held, bound);
      return await write();
    }
    const asked = this.#askedOf(held);
    this.#resumeAt(held, null, unbound === null ? why : `${why} (the decision recorded is not applied: ${unbound})`);
    try {
      return await write();
    } finally {
      this.#askAgain(held, asked); // whatever the write did: the call is still held
    }
  }

  /** Pauses the episode again for an asked call, at a new checkpoint (its event written with its file). */
  #askAgain(call: CallRecord, why: StepPause): void {
    const action = this.#actionOf(call);
    const command = action.command ?? displayCommand(action.input);
    const checkpoint = this.#pauseNow(call.index, call.action_candidate_id, { ...action, command }, why);
    if (checkpoint) call.checkpoint_id = checkpoint;
    this.#dirty = true;
    this.#written();
  }

  /**
   * Why an asked call was paused for, to ask it again: as its checkpoint says (its kind, reason and policy), else (no
   * checkpoint left, or one that cannot be read) as its record says.
   */
  #askedOf(call: CallRecord): StepPause {
    try {
      if (call.checkpoint_id) {
        const pending = readCheckpoint(this.dir, call.checkpoint_id).pending;
        return { kind: pending.kind, reason: pending.reason, policy_id: pending.policy_id };
      }
    } catch {
      // unreadable: the record's words
    }
    return { kind: "approval", reason: call.reason ?? "needs approval", policy_id: call.policy_id };
  }

  /**
   * At the end of the episode, the call it was paused for is not waiting any more: the decision recorded for it, if
   * any, is applied (a rejection vetoes it), and a call not rejected is recorded as not run.
   */
  async #endHeld(): Promise<void> {
    const found = this.#held();
    if (!found) return;
    const [id, held] = found;
    const { bound } = this.#decisionOn(held);
    if (bound) this.#applyDecision(held, bound);
    else this.#resumeAt(held, null, "the episode ended while the call waited for a decision");
    if (held.verdict === "deny") return;
    const reason = "not run: the episode ended before the call was made";
    await this.record(id, { status: "skipped", outcome: reason, error: { type: "NotRun", message: reason } });
  }

  /** The call the episode is paused for (asked, at the latest checkpoint, no result yet) and its id, or undefined. */
  #held(): [string, CallRecord] | undefined {
    if (this.#pausedAt === null) return undefined;
    const ids = Object.keys(this.#calls);
    for (let i = ids.length - 1; i >= 0; i--) {
      const c = this.#calls[ids[i]];
      if (c.checkpoint_id && c.verdict === "ask" && !c.recorded) return [ids[i], c];
    }
    return undefined;
  }

  /** The id of a new occurrence of a repeatable call: the base id until a call with it ended, then `#2`, `#3`… */
  #occurrence(base: string): string {
    let id = base;
    for (let n = 2; this.#calls[id]?.recorded || this.#calls[id]?.verdict === "deny"; n++) id = `${base}#${n}`;
    return id;
  }

  /**
   * The occurrence of a repeatable call (see {@link ProposedAction.repeatable})
   * whose result is still to be recorded: the first one allowed and not yet
   * recorded, else `base`.
   *
   * @example
   * ```ts
   * import { EpisodeCore } from "noema";
   * // await core.record(core.openCall("gem_1a2b"), { status: "ok", output: "…" });
   * ```
   */
  openCall(base: string): string {
    for (let id = base, n = 2; this.#calls[id]; id = `${base}#${n++}`) {
      if (awaitsResult(this.#calls[id])) return id;
    }
    return base;
  }

  /**
   * The calls let through (allowed, patched, or asked about by the agent)
   * whose result is still to be recorded: what a driver stopped while they
   * ran records as failed.
   *
   * @example
   * ```ts
   * import { EpisodeCore } from "noema";
   * // for (const id of core.unrecordedCalls()) await core.record(id, { status: "error", error: { type: "Aborted", message: "interrupted" } });
   * ```
   */
  unrecordedCalls(): string[] {
    return Object.keys(this.#calls).filter((id) => awaitsResult(this.#calls[id]));
  }

  /**
   * The decision on the latest call of `tool` with this input (as decided:
   * after any rewrite) whose result is not recorded yet, or null: what an
   * agent's permission request for a call it names by content only (Claude
   * Code's `PermissionRequest`) is answered from.
   *
   * @example
   * ```ts
   * import { EpisodeCore } from "noema";
   * // core.decisionFor("Bash", { command: "touch a" })?.verdict; // "allow"
   * ```
   */
  decisionFor(tool: string, input: Record<string, unknown>): Decision | null {
    this.#checkHeld();
    const wanted = canonicalJson(input);
    const calls = Object.values(this.#calls).filter((c) => !c.recorded && c.action.tool === tool);
    for (const c of calls.reverse()) {
      const decided = this.#engine.redactor.unmask(c.action.input).value;
      if (c.verdict === "unreviewed" || canonicalJson(decided) !== wanted) continue;
      return {
        verdict: c.verdict,
        step_id: c.step_id,
        action_candidate_id: c.action_candidate_id,
        input: structuredClone(decided),
        reason: c.reason,
        policy_id: c.policy_id,
        hints: c.hints,
        ...(c.checkpoint_id ? { checkpoint_id: c.checkpoint_id } : {}),
      };
    }
    return null;
  }

  /**
   * Whether a call with this id was proposed (or recorded) in this episode.
   *
   * @example
   * ```ts
   * import { EpisodeCore } from "noema";
   * // core.knowsCall("toolu_1"); // false: record it with recordUnreviewed
   * ```
   */
  knowsCall(callId: string): boolean {
    return Object.hasOwn(this.#calls, callId);
  }

  /**
   * Writes the events still in memory (see {@link EpisodeCore.batchEvents}):
   * call it before running an allowed call, so the log holds the decision
   * before anything acts on it.
   *
   * @example
   * ```ts
   * import { EpisodeCore } from "noema";
   * // core.batchEvents = true;
   * // const d = await core.propose({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "c1" });
   * // if (d.verdict === "allow") { core.beforeExecute(); run(d.input); }
   * ```
   */
  beforeExecute(): void {
    this.#checkHeld();
    this.#engine.rec.flush();
  }

  /** At the end of `propose` and `record`: their events are written now, unless {@link EpisodeCore.batchEvents}. */
  #written(): void {
    if (!this.batchEvents) this.#engine.rec.flush();
  }

  /**
   * Records the act event for a proposed step (by step id or call id): state, facts, learning evidence; then
   * the result's review by the policies that have `review` (see `src/runtime/review_record.ts`). Returns what
   * the agent is to be shown (null when no policy reviews results, or the step was recorded before). `delivery`
   * says what the agent's integration can show instead of the result (recorded as `agent_saw`).
   */
  async record(
    stepOrCallId: string,
    result: RecordedResult,
    delivery?: ReviewDelivery,
  ): Promise<RecordedReview | null> {
    this.#checkHeld();
    const e = this.#engine, p = e.p;
    const call = this.#calls[stepOrCallId];
    const index = call ? call.index : p.steps.findIndex((s) => s.id === stepOrCallId);
    const step = p.steps[index];
    if (!step) {
      throw new NoemaError("unknown_call", `episode ${this.episodeId}: no proposed step or call ${stepOrCallId}`, {
        exitCode: EXIT.USAGE,
      });
    }
    if (step.status !== "pending" && step.status !== "running") return null; // recorded, or vetoed
    const held = this.#held()?.[1];
    // Another call's result while the episode waits (a call that ran beside the held one): recorded beside the pause.
    if (held && held !== call) {
      return await this.#besidePause(OTHER_RESULT, () => this.record(stepOrCallId, result, delivery));
    }
    // The held call's own result: the agent ran it (its own user let it) or refused it, so it waits no more.
    if (held) this.#endPauseForResult(held);
    let durationMs = 0;
    try {
      if (typeof result.duration_ms === "number" && result.duration_ms >= 0) durationMs = result.duration_ms;
    } catch {
      // a getter that throws: no duration
    }
    // What the agent reports is checked and copied like an adapter result (adapter_result.ts): a bad value is
    // an error result naming the field, never a crash or an invalid event.
    const checked = checkAdapterResult(result, { adapter: e.s.loadedAdapter.label });
    const action: PendingAction = call ? this.#actionOf(call) : {
      kind: "tool",
      tool: typeof step.inputs?.tool === "string" ? step.inputs.tool : e.s.loadedAdapter.label,
      input: p.inputs.get(step.id) ?? {},
    };
    const startedAt = new Date(Math.max(Date.parse(p.startedAt), Date.now() - durationMs)).toISOString();
    const candidateId = call?.action_candidate_id ?? `ac_${step.id}_${index + 1}`;
    e.actCallId = call?.agent_call_id ?? null;
    try {
      e.recordAct(
        index,
        action,
        candidateId,
        checked,
        { startedAt: startedAt < e.rec.now() ? startedAt : e.rec.now(), durationMs },
        null,
        false,
      );
    } finally {
      e.actCallId = null;
    }
    if (call) call.recorded = true;
    this.#dirty = true;
    const review = await reviewResult(e, index, action, candidateId, checked, e.p.lastStepEventId, delivery);
    this.#written(); // recorded means written
    // A long-running driver (the LLM loop) keeps state.json current, at a bounded share of its time.
    if (this.autoFlush && performance.now() - this.#flushedAt >= Math.max(250, this.#flushCostMs * 20)) this.flush();
    return review;
  }

  /**
   * The agent's own id of a call proposed under `key` (the llm agent decides
   * a call when the AI SDK refines its input, before the model's id is
   * known): kept in its `act` event as `provenance.call_id`, which the
   * OpenTelemetry export gives as `gen_ai.tool.call.id`. The call is still
   * recorded by `key`.
   *
   * @example
   * ```ts
   * // const d = await core.propose({ kind: "tool", tool: "read_file", input: { path: "a" }, call_id: "read_file:1f3…" });
   * // core.bindCall("read_file:1f3…", "call_abc123"); await core.record("read_file:1f3…", { status: "ok" });
   * ```
   */
  bindCall(key: string, callId: string): void {
    const call = this.#calls[key];
    if (call === undefined || key === callId) return;
    call.agent_call_id = callId;
    this.#dirty = true;
  }

  /**
   * Records the result of a call noema never saw proposed (its result came
   * first, or its proposal was lost with a killed hook): a new act step, a
   * `governance` event with the decision `unreviewed` (no policy was
   * consulted), then its act event. Nothing is dropped; the summary counts
   * it (`metrics.unreviewed_count`). A call known by `call_id` is recorded as
   * usual.
   *
   * @example
   * ```ts
   * import { EpisodeCore } from "noema";
   * // await core.recordUnreviewed({ kind: "tool", tool: "Bash", input: { command: "ls" }, call_id: "toolu_9" },
   * //   { status: "ok", output: "a.txt" });
   * ```
   */
  recordUnreviewed(
    action: ProposedAction,
    result: RecordedResult,
    delivery?: ReviewDelivery,
  ): Promise<RecordedReview | null> {
    this.#checkHeld();
    if (action.repeatable && action.call_id !== undefined) {
      action = { ...action, call_id: this.#occurrence(action.call_id) }; // a new occurrence of a content-named call
    }
    if (action.call_id !== undefined && this.#calls[action.call_id]) {
      return this.record(action.call_id, result, delivery);
    }
    this.#refuseTooDeep(action);
    // Recorded beside the pause the episode may be in (its events between a resume and a new checkpoint).
    if (this.#held()) return this.#besidePause(OTHER_RESULT, () => this.recordUnreviewed(action, result, delivery));
    const e = this.#engine, p = e.p;
    const { step, index } = this.#appendStep(action);
    const command = action.command ?? displayCommand(action.input);
    const reason = "its result arrived before its proposal: it ran, and no policy was consulted";
    e.emit("governance", {
      decision: "unreviewed",
      rule: "unreviewed",
      rule_id: "unreviewed",
      message: reason,
      policy_id: null,
      enforced: false,
      action_candidate_id: null,
      step_id: step.id,
      call_id: action.call_id ?? null,
      error: null,
    }, { faculty: "governance" });
    p.counters.governance++;
    p.counters.unreviewed = (p.counters.unreviewed ?? 0) + 1;
    const callId = action.call_id ?? `step:${step.id}`;
    const pending: PendingAction = { kind: action.kind, tool: action.tool, input: action.input, command };
    this.#remember(callId, index, {
      verdict: "unreviewed",
      step_id: step.id,
      action_candidate_id: `ac_${step.id}_${index + 1}`,
      input: action.input,
      reason,
      policy_id: null,
      hints: [],
    }, pending);
    return this.record(callId, result, delivery);
  }

  /** Verification, reflect, learn, terminate, insight, the final state, summary and manifest; then releases the lock. */
  async finish(end: CoreEnd = {}): Promise<RunResult> {
    this.#checkHeld();
    const e = this.#engine, rec = this.#record;
    await this.#endHeld();
    const acted = e.p.actions.some((a) => a.result_status === "ok" || a.result_status === "error");
    e.adapterResult = end.adapter_result ?? (acted ? "success" : "skipped");
    if (e.adapterResult === "error") {
      e.status = "error";
      e.p.state.outcomes!.error = e.redactor.redact(end.error ?? { type: "AgentError", message: end.message ?? "" })
        .value;
    }
    if (end.aborted) {
      e.status = "aborted";
      e.p.state.outcomes!.error = e.redactor.redact(end.error ?? { type: "Aborted", message: end.message ?? "aborted" })
        .value;
    }
    e.message = e.redactor.redactString(end.message ?? `Recorded ${e.p.actions.length} actions.`);
    if (typeof end.answer === "string") e.answer = e.redactor.redactString(end.answer);
    if (end.metrics) e.extraMetrics = end.metrics;
    // The last plan event carries every step, so the contract's rules rebuild the final plan exactly.
    if (this.#announced < e.p.steps.length) this.#announce();
    try {
      e.verifying ??= await startVerification({
        workspace: rec.workspace,
        specs: rec.verify as AssertionSpec[],
        policy: snapshotPolicy({ extra: rec.verify_ignore }),
        episodeDir: this.dir,
        baseDir: rec.base_dir,
        resume: true,
      });
      this.#dirty = false;
      return await e.finish();
    } finally {
      this.#release();
    }
  }

  /**
   * Writes `state.json` (with its projection event) and `core.json` when
   * something changed since they were last written. `propose` and `record`
   * append their events at once and leave these to `flush`, `suspend`,
   * `close` or `finish`, so a caller can answer the agent first.
   */
  flush(): void {
    this.#check();
    if (!this.#dirty) return;
    if (this.#removed()) return this.#drop();
    const t = performance.now();
    if (this.#pausedAt === null) this.#engine.persist();
    this.#save(false);
    this.#dirty = false;
    this.#flushedAt = performance.now();
    this.#flushCostMs = this.#flushedAt - t;
  }

  /** Persists state and releases the lock without finishing (the next process attaches). */
  close(): void {
    if (this.#closed) return;
    this.flush();
    this.#release();
  }

  /**
   * Flushes and releases the lock but keeps the episode loaded (policies
   * too), for a long-lived driver that serves calls one at a time:
   * {@link EpisodeCore.resume} takes the lock again.
   */
  suspend(): void {
    // Suspended already: nothing to let go, and the log's size it noted must stay what it was when it let go (read
    // again now, it would hide what another process wrote meanwhile, and resume() would trust a stale episode).
    if (!this.#closed && this.#lock === null) return;
    this.flush();
    if (this.#closed) return; // removed meanwhile
    this.#engine.rec.sync();
    this.#logSize = statSync(join(this.dir, ARTIFACTS.events)).size;
    this.#lock?.release();
    this.#lock = null;
  }

  /**
   * Takes the lock again after {@link EpisodeCore.suspend} (waiting up to
   * `waitMs`). True when nobody else wrote the episode meanwhile, so the
   * loaded state is current; false (lock released, this object closed) when
   * another process appended events or finished it, or a policy file was
   * edited: attach again.
   */
  resume(waitMs: number = ATTACH_WAIT_MS): boolean {
    this.#check();
    // An edited policy file: attach again, which reloads it and refuses a changed one (as a new process would).
    if (policyStamps(this.#record) !== this.#policyStamps) {
      if (this.#lock) this.flush();
      this.#dirty = false;
      this.#release();
      return false;
    }
    if (this.#lock) return true;
    if (this.#removed()) {
      this.#drop();
      return false;
    }
    this.#lock = acquireLock(this.dir, "core", { waitMs });
    const events = join(this.dir, ARTIFACTS.events);
    if (
      !existsSync(join(this.dir, ARTIFACTS.manifest)) && existsSync(events) && statSync(events).size === this.#logSize
    ) {
      return true;
    }
    this.#dirty = false;
    this.#release();
    return false;
  }

  /**
   * Whether the episode was removed from disk while it was open (its event
   * log is gone): nothing more is written, so no partial episode (a
   * `state.json` without its events) is made again where it was.
   */
  #removed(): boolean {
    return !existsSync(join(this.dir, ARTIFACTS.events));
  }

  /** Closes this object without writing anything (the episode was removed). */
  #drop(): void {
    this.#dirty = false;
    this.#release();
  }

  #release(): void {
    if (this.#closed) return;
    this.#closed = true;
    const e = this.#engine;
    e.rec.close();
    e.learnLog.close();
    for (const p of e.s.policies) p.close?.();
    this.#lock?.release();
    this.#lock = null;
  }

  /** Writes `core.json`; `durable`: the events and it are fsynced first (not for the state rewritten per call). */
  #save(durable = true): void {
    const e = this.#engine, p = e.p;
    const progress: CoreProgress = {
      schema_version: "core/1.0",
      events: {
        count: e.rec.count + e.rec.baseCount,
        last_event_id: e.rec.lastEventId!,
        last_timestamp: e.rec.now(),
      },
      counters: p.counters,
      evidence: [...p.evidence.values()],
      last_diff: p.lastDiff,
      last_directive_policy: p.lastDirectivePolicy,
      last_step_event_id: p.lastStepEventId,
      waiting_ms: p.waitingMs,
      paused_at: this.#pausedAt,
      announced_steps: this.#announced,
      projected_actions: e.rec.projectedActions,
      calls: this.#calls,
    };
    if (durable) e.rec.sync();
    writeCoreProgress(e.rec.sink, progress, durable);
  }
}

/** The size and mtime of the episode's policy files, as one string. */
function policyStamps(record: RunSettingsRecord): string {
  return record.policies.map((p) => {
    if (p.path === null) return "-";
    try {
      const st = statSync(p.path);
      return `${st.size}:${st.mtimeMs}`;
    } catch {
      return "gone";
    }
  }).join(",");
}

/**
 * A call let through (allowed, patched, or asked about by the agent, which asked its own user: no checkpoint, no
 * pause due) whose result is not recorded yet.
 */
function awaitsResult(call: CallRecord): boolean {
  const asked = call.verdict === "ask" && !call.checkpoint_id && !call.pause_due;
  return !call.recorded && (call.verdict === "allow" || call.verdict === "patch" || asked);
}

function cut(text: string, max: number): string {
  return clipText(text, max);
}

/**
 * Whether a proposed step is announced now by a `plan` event carrying the
 * whole plan: every step while the plan is short, then once the steps not yet
 * announced reach half of those announced. Each plan event repeats every
 * step, so announcing each of n steps would make the log grow with n²; this
 * keeps it linear (at most about three step records per step in all), and
 * `finish` (and a pause) announces the rest. Nothing depends on the batches:
 * `state.json` is flushed as the run goes, and after a crash the steps are
 * completed from the candidate and act events (`recover.ts`).
 */
function announceDue(announced: number, steps: number): boolean {
  return announced < ANNOUNCE_EVERY_STEP_UP_TO || steps - announced >= Math.ceil(announced / 2);
}

/** Plans up to this many steps are announced at every step. */
const ANNOUNCE_EVERY_STEP_UP_TO = 8;
