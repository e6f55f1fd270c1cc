/**
 * The episode core: the per-action pipeline that the plan-driven run and
 * external drivers (an agent's hooks) both go through — the policies
 * consulted with the state snapshot → action candidate → governance → act
 * record → state persisted → learning → terminal artifacts and verification.
 *
 * An agent episode's plan grows as the agent works: each proposed call
 * becomes an `act` step, announced by a `plan` event carrying every step
 * record, so the contract's plan rules rebuild it from the events. Many
 * processes may drive one episode: each holds the episode lock (waiting
 * briefly for it) from `open`/`attach` to `close`/`finish`, so appends stay
 * whole lines in order and `state.json`, its projection and `core.json` stay
 * consistent.
 *
 * @module
 */
import { EXIT, NoemaError } from "../../errors.ts";
import type { PendingAction } from "../../plugins/api.ts";
import type { PlanStep } from "../../schema/plan.ts";
import type { EpisodeLock } from "../../store/lock.ts";
import type { AssertionSpec } from "../../verify/assertions.ts";
import { startVerification } from "../../verify/outcome.ts";
import { snapshotPolicy } from "../../verify/snapshot.ts";
import { consumeApproval, readApproval } from "../checkpoint.ts";
import { Engine, type RunResult, type StepDecision } from "../engine.ts";
import { attachEpisode, type AttachOptions } from "./attach.ts";
import { displayCommand } from "./command.ts";
import { createEpisode } from "./create.ts";
import type { RunOptions, RunSettingsRecord } from "./options.ts";
import { prepareEpisode } from "./prepare.ts";
import { type CallRecord, type CoreProgress, writeCoreProgress } from "./progress_file.ts";

export type { AttachOptions } from "./attach.ts";

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
  /** Step description. @default {`${tool}: ${command}`} */
  description?: string;
  /** The agent's id for the call (`tool_use_id` / `toolCallId`); `propose` is idempotent per `call_id`. */
  call_id?: string;
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
  readonly #engine: Engine;
  readonly #lock: EpisodeLock;
  readonly #record: RunSettingsRecord;
  readonly #calls: Record<string, CallRecord>;
  #pausedAt: string | null;
  #closed = false;

  private constructor(
    engine: Engine,
    lock: EpisodeLock,
    record: RunSettingsRecord,
    calls: Record<string, CallRecord>,
    pausedAt: string | null,
  ) {
    this.#engine = engine;
    this.#lock = lock;
    this.#record = record;
    this.#calls = calls;
    this.#pausedAt = pausedAt;
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
    const core = new EpisodeCore(engine, lock, prepared.record, {}, null);
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
    return new EpisodeCore(a.engine, a.lock, a.record, a.calls, a.pausedAt);
  }

  #check(): void {
    if (this.#closed) {
      throw new NoemaError("closed", `episode ${this.episodeId}: this EpisodeCore was closed`, {
        exitCode: EXIT.USAGE,
      });
    }
  }

  /**
   * Appends an act step to the plan, consults the policies with the state
   * snapshot, emits direction → action_candidate → governance. A deny marks
   * the step vetoed (with its act evidence); an ask pauses the episode
   * (checkpoint, non-terminal state). Idempotent per `call_id`.
   */
  async propose(action: ProposedAction): Promise<Decision> {
    this.#check();
    const known = action.call_id !== undefined ? this.#calls[action.call_id] : undefined;
    if (known) return this.#again(known);
    const e = this.#engine, p = e.p;
    const command = action.command ?? displayCommand(action.input);
    const description = e.redactor.redactString(cut(action.description ?? `${action.tool}: ${command}`, 200));
    const index = p.steps.length;
    const step: PlanStep = { id: `step-${index + 1}`, kind: "act", description, status: "pending" };
    p.steps.push(step);
    p.inputs.set(step.id, action.input);
    const planEvent = e.emit("plan", Engine.planPayload(p.planSource, p.steps, String(p.state.plan?.rationale ?? "")));
    p.counters.plan++;
    p.lastStepEventId = planEvent.id;
    if (p.state.plan) p.state.plan.updated_at = planEvent.timestamp;
    const pending: PendingAction = { kind: action.kind, tool: action.tool, input: action.input, command };
    const decided = await e.decideStep(index, pending);
    const decision = this.#decision(index, decided);
    this.#remember(action.call_id ?? `step:${step.id}`, index, decision, decided.action);
    // A pause persisted the state already; the checkpoint stays the last event (what approve checks).
    if (decision.verdict !== "ask") e.persist();
    this.#save();
    return decision;
  }

  #decision(index: number, d: StepDecision): Decision {
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
      const paused = e.pause(index, d.candidateId, d.action, d.pause, false);
      this.#pausedAt = e.rec.now();
      return {
        ...base,
        verdict: "ask",
        reason: d.pause.reason,
        policy_id: d.pause.policy_id,
        checkpoint_id: paused.checkpoint_id,
      };
    }
    if (d.blocked) {
      e.recordVeto(index, d.action, d.candidateId, d.message, false);
      return { ...base, verdict: "deny", reason: d.message };
    }
    return { ...base, verdict: d.patched ? "patch" : "allow", reason: null };
  }

  #remember(callId: string, index: number, d: Decision, action: PendingAction): void {
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

  /** A call proposed before: its decision again; an "ask" is answered by its approval record once there is one. */
  #again(known: CallRecord): Promise<Decision> {
    const e = this.#engine;
    const input = e.redactor.unmask(known.action.input).value;
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
    if (known.verdict !== "ask" || !known.checkpoint_id) return Promise.resolve(base);
    let approval = readApproval(this.dir, known.checkpoint_id);
    if (!approval) return Promise.resolve(base);
    const resumeEvent = e.emit("runtime", {
      kind: "run.resume",
      status: "resuming",
      checkpoint_id: known.checkpoint_id,
      resume_strategy: "same_run_id",
      recovered: false,
      approval: { decision: approval.decision, by: approval.by, at: approval.at, note: approval.note },
    }, { event_type: "run.resume" });
    if (!approval.consumed_at) approval = consumeApproval(this.dir, approval, resumeEvent.id, resumeEvent.timestamp);
    if (this.#pausedAt !== null) {
      e.p.waitingMs += Math.max(0, Date.parse(resumeEvent.timestamp) - Date.parse(this.#pausedAt));
      this.#pausedAt = null;
    }
    const action = { ...known.action, input };
    if (approval.decision === "rejected") {
      const reason = `Rejected by ${approval.by}${approval.note ? `: ${approval.note}` : ""}`;
      e.recordVeto(known.index, action, known.action_candidate_id, reason, false);
      Object.assign(known, { verdict: "deny", reason });
    } else Object.assign(known, { verdict: "allow", reason: null });
    e.persist();
    this.#save();
    return Promise.resolve({ ...base, verdict: known.verdict, reason: known.reason, checkpoint_id: undefined });
  }

  /** Records the act event for a proposed step (by step id or call id): state, facts, learning evidence. */
  record(stepOrCallId: string, result: RecordedResult): Promise<void> {
    this.#check();
    const e = this.#engine, p = e.p;
    const call = this.#calls[stepOrCallId];
    const index = call ? call.index : p.steps.findIndex((s) => s.id === stepOrCallId);
    const step = p.steps[index];
    if (!step) {
      throw new NoemaError("unknown_call", `episode ${this.episodeId}: no proposed step or call ${stepOrCallId}`, {
        exitCode: EXIT.USAGE,
      });
    }
    if (step.status !== "pending" && step.status !== "running") return Promise.resolve(); // recorded, or vetoed
    const durationMs = typeof result.duration_ms === "number" && result.duration_ms >= 0 ? result.duration_ms : 0;
    const action: PendingAction = call
      ? { ...call.action, input: e.redactor.unmask(call.action.input).value }
      : { kind: "tool", tool: e.s.loadedAdapter.label, input: p.inputs.get(step.id) ?? {} };
    const startedAt = new Date(Math.max(Date.parse(p.startedAt), Date.now() - durationMs)).toISOString();
    e.recordAct(
      index,
      action,
      call?.action_candidate_id ?? `ac_${step.id}_${index + 1}`,
      result as Parameters<Engine["recordAct"]>[3],
      { startedAt: startedAt < e.rec.now() ? startedAt : e.rec.now(), durationMs },
      null,
      false,
    );
    if (call) call.recorded = true;
    e.persist();
    this.#save();
    return Promise.resolve();
  }

  /** Verification, reflect, learn, terminate, insight, the final state, summary and manifest; then releases the lock. */
  async finish(end: CoreEnd = {}): Promise<RunResult> {
    this.#check();
    const e = this.#engine, rec = this.#record;
    const acted = e.p.actions.some((a) => a.result_status === "ok" || a.result_status === "error");
    e.adapterResult = end.adapter_result ?? (acted ? "success" : "skipped");
    if (e.adapterResult === "error") {
      e.status = "error";
      e.p.state.outcomes!.error = e.redactor.redact(end.error ?? { type: "AgentError", message: end.message ?? "" })
        .value;
    }
    e.message = e.redactor.redactString(end.message ?? `Recorded ${e.p.actions.length} actions.`);
    try {
      e.verifying ??= await startVerification({
        workspace: rec.workspace,
        specs: rec.verify as AssertionSpec[],
        policy: snapshotPolicy({ extra: rec.verify_ignore }),
        episodeDir: this.dir,
        baseDir: rec.base_dir,
        resume: true,
      });
      return await e.finish();
    } finally {
      this.#release();
    }
  }

  /** Persists state and releases the lock without finishing (the next process attaches). */
  close(): void {
    if (this.#closed) return;
    if (this.#pausedAt === null) this.#engine.persist();
    this.#save();
    this.#release();
  }

  #release(): void {
    if (this.#closed) return;
    this.#closed = true;
    const e = this.#engine;
    e.rec.close();
    e.learnLog.close();
    for (const p of e.s.policies) p.close?.();
    this.#lock.release();
  }

  #save(): void {
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
      calls: this.#calls,
    };
    e.rec.sync();
    writeCoreProgress(this.dir, progress);
  }
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
