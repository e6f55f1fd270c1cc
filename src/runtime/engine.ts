/**
 * The episode engine: executes plan steps (direction → action candidate →
 * governance → act), pauses for approval, and writes the terminal artifacts.
 * `run()` drives it from the start; `resume()` drives it from a checkpoint or
 * from what the event log says after a crash.
 *
 * @module
 */
import type { RuntimeNotices } from "./core/options.ts";
import { join } from "node:path";
import { EXIT, type ExitCode } from "../errors.ts";
import type {
  ActRequest,
  ActResult,
  AdapterInstance,
  PendingAction,
  PolicyState,
  PolicyStep,
  Verdict,
} from "../plugins/api.ts";
import { deepFreeze, frozenJsonCopy } from "../plugins/freeze.ts";
import type { LoadedAdapter, LoadedPolicy } from "../plugins/loader.ts";
import type { ManifestPlugin } from "../schema/manifest.ts";
import type { PlanStep } from "../schema/plan.ts";
import type { ActionRecord, IntuitionMode, OutcomeStatus, State } from "../schema/state.ts";
import type { AdapterResult, Mode, Outcome, Verification } from "../schema/summary.ts";
import { canonicalHash, sha256File } from "../store/hash.ts";
import type { JsonlAppender } from "../store/jsonl.ts";
import { ARTIFACTS, refuseSymlinkedArtifacts } from "../store/layout.ts";
import { boundedValue, jsonBytes, limits, utf8Bytes } from "../store/limits.ts";
import { stageManifest } from "../store/manifest.ts";
import { commitStaged, discardStaged } from "../store/atomic.ts";
import { CONTRACT_VERSIONS } from "../version.ts";
import type { VerificationSession } from "../verify/outcome.ts";
import { computeOutcome } from "../verify/outcome.ts";
import { StateSnapshot } from "./core/snapshot.ts";
import { displayCommand } from "./core/command.ts";
import { type Checkpoint, type PendingApproval, writeCheckpoint } from "./checkpoint.ts";
import { adapterDisplayName, callAdapter, NEVER_ABORTED } from "./adapter_result.ts";
import { applyPatch, consultPolicy, type DirectionOutcome } from "./direction.ts";
import { approvalAsked, decide } from "./governance.ts";
import { reviewResult } from "./review_record.ts";
import { learn, type PolicyEvidence } from "./learning.ts";
import { stepLabel } from "./planner.ts";
import { decisionStateHash } from "./core/state_hash.ts";
import type { EmitOptions, Recorder, WrittenEvent } from "./recorder.ts";
import { mergeRedaction, type RedactionReport, type Redactor } from "./redact.ts";
import type { FailurePolicy, GovernanceMode, LearnMode } from "./settings.ts";
import { buildSummary, type ExtraMetrics, type RunCounters } from "./summary_builder.ts";
import { processIdentity } from "./process_group.ts";
import type { SpawnedChild } from "../plugins/process.ts";
import { clipText } from "../text_head.ts";

/** What `run()` and `resume()` return. */
export interface RunResult {
  episode_id: string;
  episode_dir: string;
  /** `outcomes.status`: ok, error, vetoed, aborted, partial, or pending (paused for approval). */
  status: OutcomeStatus;
  /** The verification outcome; null while the run is paused. */
  outcome: Outcome | null;
  /** The adapter result; null while the run is paused. */
  adapter_result: AdapterResult | null;
  /** The exit code the CLI uses: 0 ok, 1 error or goal not achieved, 3 vetoed, 4 paused. */
  exit_code: ExitCode;
  /** The pending checkpoint, when the run paused. */
  checkpoint_id?: string;
  /** Why it paused. */
  pending?: PendingApproval;
  /** Absolute paths of the artifacts. */
  paths: { events: string; learn: string; state: string; summary: string; manifest: string };
}

/** The fixed settings of an episode. */
export interface EngineSettings {
  episodeId: string;
  dir: string;
  root: string;
  task: string;
  /** The task with secrets masked (what artifacts show). */
  redactedTask: string;
  mode: Mode;
  intuitionMode: IntuitionMode;
  governance: GovernanceMode;
  failurePolicy: FailurePolicy;
  threshold: number;
  timeoutMs: number;
  learnMode: LearnMode;
  learnMinSuccesses: number;
  learnMinConfidence: number;
  pauseOnVeto: boolean;
  seed: number;
  tags: Record<string, string | number | boolean>;
  workspace: string | null;
  loadedAdapter: LoadedAdapter;
  /** Arguments after `--`: the command of `act` steps that give none (recorded in the action input as `argv`). */
  args: readonly string[];
  policies: LoadedPolicy[];
  /** Learned thresholds per policy id. */
  thresholds: Map<string, number>;
  planner: { name: string; path: string | null; sha256: string | null };
  signal?: AbortSignal;
  onEvent?: (event: WrittenEvent) => void;
  /** Notices written as `runtime` events after the next event (see `RunOptions.notices`). */
  notices?: RuntimeNotices;
}

/** The mutable progress of an episode. */
export interface EngineProgress {
  state: State;
  steps: PlanStep[];
  planSource: string;
  actions: ActionRecord[];
  facts: { key: string; value: unknown; timestamp?: string; provenance?: string }[];
  counters: RunCounters;
  evidence: Map<string, PolicyEvidence>;
  lastDiff: string[];
  lastDirectivePolicy: string | null;
  lastStepEventId: string;
  startedAt: string;
  /** Milliseconds spent waiting for approval, across all pauses. */
  waitingMs: number;
  /** How each step's inputs were redacted at plan time. */
  stepRedaction: Map<string, RedactionReport>;
  /**
   * Each step's real inputs, secrets included: what policies see and adapters act on. `steps` (and so
   * every artifact) hold the masked inputs.
   */
  inputs: Map<string, Record<string, unknown>>;
}

/** What direction and governance decided for one step's action. */
export interface StepDecision {
  /** The action after applied interventions. */
  action: PendingAction;
  candidateId: string;
  /** Advice of applied hints. */
  hints: string[];
  /** An applied intervention changed the input. */
  patched: boolean;
  /** Governance blocks the action. */
  blocked: boolean;
  /** Governance's message (masked). */
  message: string;
  /** The block is a policy's failure under `fail_closed`, not a veto. */
  policyFailure: boolean;
  /** The policy behind the decision, if one. */
  policy_id: string | null;
  /** Set when the action needs approval: the episode pauses. */
  pause: { kind: PendingApproval["kind"]; reason: string; policy_id: string | null } | null;
}

/** What the policies said about one step: the action as patched, and the evidence for the candidate. */
interface Direction {
  action: PendingAction;
  hints: string[];
  /** Ids of the `direction` events, in policy order. */
  eventIds: string[];
  outcomes: DirectionOutcome[];
  riskTags: string[];
  interventions: { policy: string; diff: { key: string; before: unknown; after: unknown }[] }[];
}

/** The JSON texts of an `act` payload's input and output (undefined: not at hand), each written once. */
interface ActTexts {
  input: string;
  output: string | undefined;
}

/** An approved action to execute without consulting policies again. */
export interface ApprovedAction {
  stepIndex: number;
  action: PendingAction;
  candidateId: string;
  approval: Record<string, unknown>;
}

function excerpt(value: unknown, max = 200): string {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? "";
  return clipText(text, max);
}

/** `text`: the input's `JSON.stringify`, when the caller has it. */
function inputExcerpt(input: Record<string, unknown>, fallback: string, text?: string): string {
  if (typeof input.command === "string") return excerpt(input.command);
  if (Array.isArray(input.argv)) return excerpt(input.argv.join(" "));
  return Object.keys(input).length > 0 ? excerpt(text ?? input) : excerpt(fallback);
}

/**
 * One episode in progress. Create it with the settings, the recorder and the
 * progress (fresh or rebuilt), then call {@link Engine.execute} and
 * {@link Engine.finish} or {@link Engine.pause}.
 */
export class Engine {
  readonly s: EngineSettings;
  readonly p: EngineProgress;
  readonly rec: Recorder;
  readonly learnLog: JsonlAppender;
  readonly adapter: AdapterInstance;
  readonly redactor: Redactor;
  /** The verification in progress; set once the episode directory is in place. */
  verifying: VerificationSession | null;
  status: OutcomeStatus = "ok";
  adapterResult: AdapterResult = "skipped";
  message = "";
  /** An agent's final answer, for the `terminate` event (set by a driver that has one). */
  answer: string | null = null;
  /** Extra summary metrics a driver reports (e.g. `tokens`). */
  extraMetrics: ExtraMetrics | null = null;
  /**
   * The agent's id of the call being decided (set by `EpisodeCore.propose`), carried in its `action_candidate`
   * event so that a process that died before writing `core.json` leaves the call findable in the log.
   */
  candidateCallId: string | null = null;
  /**
   * The agent's own id of the call being recorded, when it was proposed under another key (the llm agent decides a
   * call before the model's id is known): kept in its `act` event's `provenance.call_id` (set by `EpisodeCore.record`).
   */
  actCallId: string | null = null;
  #persistCostMs = 0;
  #lastPersistAt = 0;
  #factsHash = canonicalHash([]);
  #factsDirty = true;
  /**
   * Bytes of inputs and outputs kept in `state.json`'s action records (see {@link Engine.#kept}); -1 until first
   * needed, then counted from the actions already recorded (a resumed or attached episode has some).
   */
  #keptBytes = -1;
  #episodeHash: string;
  /** The frozen state snapshot policies receive, kept up to date incrementally. */
  readonly snapshot: StateSnapshot;

  constructor(parts: {
    settings: EngineSettings;
    progress: EngineProgress;
    recorder: Recorder;
    learnLog: JsonlAppender;
    adapter: AdapterInstance;
    redactor: Redactor;
    /** The verification in progress; set once the episode directory is in place. */
    verifying: VerificationSession | null;
  }) {
    this.s = parts.settings;
    this.p = parts.progress;
    this.rec = parts.recorder;
    this.learnLog = parts.learnLog;
    this.adapter = parts.adapter;
    this.redactor = parts.redactor;
    this.verifying = parts.verifying;
    const s = this.s;
    this.message = this.p.steps.length === 0
      ? "The plan has no steps: nothing to do."
      : `Completed ${this.p.steps.length} steps.`;
    this.snapshot = new StateSnapshot(this.p.state);
    this.#episodeHash = canonicalHash({
      task: s.redactedTask,
      episode: {
        id: s.episodeId,
        seed: s.seed,
        tags: s.tags,
        mode: s.mode,
        intuition_mode: s.intuitionMode,
        using: s.loadedAdapter.label,
      },
      workspace: s.workspace,
    });
    for (const p of s.policies) {
      if (!this.p.evidence.has(p.id)) {
        this.p.evidence.set(p.id, {
          policyId: p.id,
          policyVersion: p.version,
          vetoes: 0,
          directionEvents: 0,
          confidence: 0,
          eventIds: [],
        });
      }
    }
  }

  /** Appends an event and reports it to `onEvent`. */
  emit(phase: string, payload: Record<string, unknown>, options?: EmitOptions): WrittenEvent {
    const e = this.rec.emit(phase, payload, options);
    this.s.onEvent?.(e);
    for (const n of this.s.notices?.take() ?? []) {
      const r = this.rec.emit("runtime", { kind: n.event_type, ...n.payload }, { event_type: n.event_type });
      this.s.onEvent?.(r);
    }
    return e;
  }

  /** Writes `state.json` (and its projection event; `terminal`: the final one, carrying every action). */
  persist(terminal = false): void {
    const t = performance.now();
    this.#stateMetrics();
    this.rec.persistState(this.p.state, terminal);
    this.#lastPersistAt = performance.now();
    this.#persistCostMs = this.#lastPersistAt - t;
  }

  /** `outcomes.metrics` from the steps: completed, total, task score, working time. */
  #stateMetrics(): void {
    const { state, steps } = this.p;
    const metrics = state.outcomes!.metrics!;
    metrics.steps_completed = steps.filter((s) => s.status === "done").length;
    metrics.steps_total = steps.length;
    metrics.task_score = steps.length === 0 ? 0 : Math.round((metrics.steps_completed / steps.length) * 10000) / 10000;
    (metrics as Record<string, unknown>).duration_ms = this.workingMs();
  }

  /** Milliseconds of work so far: wall time since start, minus time spent waiting for approval. */
  workingMs(): number {
    return Math.max(0, Date.parse(this.rec.now()) - Date.parse(this.p.startedAt) - this.p.waitingMs);
  }

  /** Sets a plan step's status (and tells the policy snapshot). */
  setStepStatus(index: number, status: PlanStep["status"]): void {
    this.p.steps[index].status = status;
    this.snapshot.markStep(index);
  }

  #maybePersist(): void {
    // Throttled: at most once a second, and a bounded share (1/20) of the run time (a long run's state is big).
    // The log is the record; state.json is its projection (docs/cli.md, `noema state`).
    if (performance.now() - this.#lastPersistAt >= Math.max(1000, this.#persistCostMs * 20)) this.persist();
  }

  /**
   * Executes steps from `from` on. Returns `"done"` when the plan ended
   * (completed, failed, vetoed, aborted) and a pause when a step needs
   * approval. `approved` runs that step's approved action without consulting
   * policies again.
   */
  async execute(from: number, approved?: ApprovedAction): Promise<"done" | RunResult> {
    const s = this.s, p = this.p;
    const steps = p.steps;
    const outcomes = p.state.outcomes!;
    const tool = `adapter:${s.loadedAdapter.label}`;
    const actionKind = s.loadedAdapter.plugin.kind ?? "adapter";
    for (let index = from; index < steps.length; index++) {
      const step = steps[index];
      if (s.signal?.aborted) {
        this.status = "aborted";
        this.message = `The run was interrupted before step ${step.id}`;
        outcomes.error = { type: "Aborted", message: this.message };
        break;
      }
      const stepView = this.stepView(index);
      let action: PendingAction;
      let candidateId: string;
      let hintsForAdapter: string[] = [];
      let approvalRecord: Record<string, unknown> | null = null;
      if (approved && approved.stepIndex === index) {
        action = approved.action;
        candidateId = approved.candidateId;
        approvalRecord = approved.approval;
      } else {
        const input: Record<string, unknown> = { ...stepView.inputs };
        // The command line's arguments are the action of act steps that name none, so policies,
        // approvals and the action candidate see what will run.
        if (step.kind === "act" && s.args.length > 0 && input.command === undefined && input.argv === undefined) {
          input.argv = [...s.args];
        }
        const decided = await this.decideStep(index, { kind: actionKind, tool, input }, stepView);
        action = decided.action;
        candidateId = decided.candidateId;
        hintsForAdapter = decided.hints;
        if (decided.pause) return this.pause(index, candidateId, action, decided.pause);
        if (decided.blocked) {
          this.recordVeto(index, action, candidateId, decided.message, true, decided.policyFailure);
          break;
        }
      }
      const result = await this.#act(index, step, stepView, action, candidateId, hintsForAdapter, approvalRecord);
      if (result === "stop") break;
      this.#maybePersist();
    }
    return "done";
  }

  /** The step about to run, as policies see it (frozen; its inputs are the real ones). */
  stepView(index: number): PolicyStep {
    const p = this.p;
    const step = p.steps[index];
    return Object.freeze({
      id: step.id,
      kind: step.kind,
      description: step.description,
      index,
      total: p.steps.length,
      inputs: deepFreeze(p.inputs.get(step.id) ?? step.inputs ?? {}),
    });
  }

  /**
   * Direction (policies consulted with the state snapshot), the action
   * candidate and governance for step `index` about to take `initial`
   * (`stepView`: the step as policies see it, when the caller has it).
   */
  decideStep(index: number, initial: PendingAction, stepView = this.stepView(index)): Promise<StepDecision> {
    if (this.#factsDirty) {
      this.#factsHash = canonicalHash(this.p.facts);
      this.#factsDirty = false;
    }
    return this.#decide(index, this.p.steps[index], stepView, initial);
  }

  /** Direction, action candidate and governance for one step. */
  async #decide(
    index: number,
    step: PlanStep,
    stepView: PolicyStep,
    initial: PendingAction,
  ): Promise<StepDecision> {
    const recentIds = this.p.actions.slice(-10).map((a) => a.id);
    const d = await this.#direct(step, stepView, initial);
    const candidate = this.#candidate(index, step, stepView, recentIds, d);
    const decision = this.#govern(step, candidate, d);
    return {
      action: d.action,
      candidateId: candidate.candidateId,
      hints: d.hints,
      patched: d.interventions.some((x) => x.diff.length > 0),
      blocked: decision.blocked,
      message: decision.message,
      policyFailure: decision.blocked && decision.failure,
      policy_id: decision.policy_id,
      pause: this.#pauseFor(step, decision, d),
    };
  }

  /** Consults each policy in turn with the state snapshot; interventions patch the action for the next ones. */
  async #direct(step: PlanStep, stepView: PolicyStep, initial: PendingAction): Promise<Direction> {
    const s = this.s, p = this.p;
    const d: Direction = { action: initial, hints: [], eventIds: [], outcomes: [], riskTags: [], interventions: [] };
    let view: PolicyState | undefined;
    const makeView = (): PolicyState =>
      view ??= this.snapshot.view(
        Object.freeze({
          kind: d.action.kind,
          tool: d.action.tool,
          input: frozenJsonCopy(d.action.input),
          command: d.action.command ?? displayCommand(d.action.input),
          ...(d.action.cwd ? { cwd: d.action.cwd } : {}),
        }),
        stepView,
        { workspace: s.workspace },
      );
    for (const policy of s.policies) {
      const o = await consultPolicy(policy, makeView(), {
        intuitionMode: s.intuitionMode,
        thresholds: s.thresholds,
        defaultThreshold: s.threshold,
        timeoutMs: s.timeoutMs,
        now: () => this.rec.now(),
      });
      if (o.status === "applied" && o.verdict?.kind === "intervention") {
        const patched = applyPatch(d.action.input, this.redactor.redact(o.verdict.patch!).value);
        // The display follows the input; the call still runs where it was to.
        d.action = {
          kind: d.action.kind,
          tool: d.action.tool,
          input: patched.input,
          ...(d.action.cwd ? { cwd: d.action.cwd } : {}),
        };
        view = undefined;
        o.diff = patched.diff;
        d.interventions.push({ policy: policy.id, diff: patched.diff });
        p.lastDiff = patched.diff.map((x) => x.key);
        p.lastDirectivePolicy = policy.id;
      }
      const verdict = o.verdict ? this.redactor.redact(o.verdict).value : null;
      if (o.status === "applied" && verdict?.kind === "hint") d.hints.push(verdict.advice);
      if (verdict?.risk_tags) d.riskTags = [...new Set([...d.riskTags, ...verdict.risk_tags])];
      d.eventIds.push(this.#directionEvent(policy, step, o, verdict));
      d.outcomes.push(o);
    }
    return d;
  }

  /** The `direction` event of one policy's outcome, and the counters and learning evidence it feeds. */
  #directionEvent(policy: LoadedPolicy, step: PlanStep, o: DirectionOutcome, verdict: Verdict | null): string {
    const p = this.p;
    const dirEvent = this.emit("direction", {
      policy: policy.id,
      policy_id: policy.id,
      policy_version: policy.version,
      step_id: step.id,
      kind: verdict?.kind ?? "none",
      advice: verdict?.advice ?? null,
      confidence: verdict?.confidence ?? null,
      threshold: o.threshold,
      status: o.status,
      reason: o.reason,
      diff: o.diff,
      patch: verdict?.patch ?? null,
      requires_approval: verdict?.requires_approval ?? false,
      error: o.error,
      advise_ms: o.duration_ms,
      // Why, in the policy's words (the rules: the file and field of the rule that matched), when it says.
      ...(typeof verdict?.rationale === "string" ? { rationale: verdict.rationale } : {}),
    }, {
      faculty: "direction",
      caused_by: p.lastStepEventId,
      metrics: { started_at: o.started_at, completed_at: o.completed_at, duration_ms: o.duration_ms },
    });
    p.counters.direction++;
    const ev = p.evidence.get(policy.id)!;
    ev.directionEvents++;
    if (o.status === "blocked") p.counters.direction_failed++;
    if (o.status === "applied") {
      p.counters.direction_applied++;
      p.lastDirectivePolicy = policy.id;
      if (o.verdict?.kind === "veto") {
        p.counters.direction_vetoed++;
        ev.vetoes++;
        ev.confidence = Math.max(ev.confidence, o.verdict.confidence ?? 0);
        ev.eventIds.push(dirEvent.id);
      }
    }
    return dirEvent.id;
  }

  /**
   * The `action_candidate` event, bound to the decision state: episode and
   * task, facts, recent actions, step, action (stable parts enter by their
   * own canonical hashes).
   */
  #candidate(
    index: number,
    step: PlanStep,
    stepView: PolicyStep,
    recentIds: (string | undefined)[],
    d: Direction,
  ): { candidateId: string; eventId: string } {
    const s = this.s, p = this.p;
    const stateHash = decisionStateHash({
      episode: this.#episodeHash,
      facts: this.#factsHash,
      recent: recentIds,
      step: stepView,
      action: d.action,
    });
    const candidateId = `ac_${step.id}_${index + 1}`;
    const redactedInput = this.redactor.redact(d.action.input, "payload.input");
    const proposal: Record<string, unknown> = {
      step_id: step.id,
      tool: d.action.tool,
      input: redactedInput.value,
      hints: d.hints,
    };
    if (this.candidateCallId !== null) proposal.call_id = this.candidateCallId;
    const candidate = this.emit("action_candidate", {
      schema_version: CONTRACT_VERSIONS.action_candidate,
      action_candidate_id: candidateId,
      kind: d.action.kind,
      payload: proposal,
      state_ref: ARTIFACTS.state,
      state_hash: stateHash,
      redaction: mergeRedaction([p.stepRedaction.get(step.id) ?? redactedInput.report, redactedInput.report]),
      provenance: {
        planner: p.planSource,
        step_id: step.id,
        policies: s.policies.map((x) => x.id),
        interventions: d.interventions,
        direction_event_ids: d.eventIds,
      },
      risk_tags: d.riskTags,
    }, { caused_by: d.eventIds.at(-1) ?? p.lastStepEventId, evidence_ids: d.eventIds });
    return { candidateId, eventId: candidate.id };
  }

  /** Governance over the policies' outcomes: its event (meta mode) and whether the action is blocked. */
  #govern(
    step: PlanStep,
    candidate: { candidateId: string; eventId: string },
    d: Direction,
  ): { blocked: boolean; message: string; policy_id: string | null; failure: boolean } {
    const s = this.s, p = this.p;
    const decided = decide(d.outcomes, s.governance, s.failurePolicy);
    // Policy advice and errors reach the governance message: mask secrets in them.
    const decision = {
      ...decided,
      message: this.redactor.redactString(decided.message),
      error: decided.error ? this.redactor.redact(decided.error).value : null,
    };
    if (s.mode === "minimal") {
      return { blocked: false, message: decision.message, policy_id: decision.policy_id, failure: false };
    }
    if (s.governance !== "off") {
      this.emit("governance", {
        decision: decision.decision,
        rule: decision.rule,
        rule_id: decision.rule,
        message: decision.message,
        policy_id: decision.policy_id,
        mode: decision.mode,
        failure_policy: decision.failure_policy,
        enforced: decision.enforced,
        action_candidate_id: candidate.candidateId,
        step_id: step.id,
        error: decision.error,
      }, { faculty: "governance", caused_by: candidate.eventId });
      p.counters.governance++;
      if (decision.decision === "veto" && !decision.enforced) p.counters.would_veto++;
    }
    const failure = decision.error !== null;
    return { blocked: decision.blocked, message: decision.message, policy_id: decision.policy_id, failure };
  }

  /** Why the run pauses before this step, if it does: a review step, an approval verdict, or a veto that pauses. */
  #pauseFor(
    step: PlanStep,
    decision: { blocked: boolean; message: string; policy_id: string | null },
    d: Direction,
  ): StepDecision["pause"] {
    if (step.kind === "review") {
      return { kind: "review", reason: `review step ${step.id}: ${step.description}`, policy_id: null };
    }
    if (!decision.blocked) return null;
    // Only when nothing else blocks it: a rule's deny or another policy's veto is no question for a human.
    const approval = approvalAsked(d.outcomes, this.s.failurePolicy);
    if (approval) {
      return {
        kind: "approval",
        reason: this.redactor.redactString(approval.verdict!.advice),
        policy_id: approval.policy.id,
      };
    }
    return this.s.pauseOnVeto ? { kind: "veto", reason: decision.message, policy_id: decision.policy_id } : null;
  }

  /** Executes one action through the adapter and records it. Returns "stop" when the run must end. */
  async #act(
    index: number,
    step: PlanStep,
    stepView: PolicyStep,
    action: PendingAction,
    candidateId: string,
    hints: string[],
    approval: Record<string, unknown> | null,
  ): Promise<"next" | "stop"> {
    const s = this.s;
    this.setStepStatus(index, "running");
    const actStarted = this.rec.now();
    const tAct = performance.now();
    const request: ActRequest = {
      episode_id: s.episodeId,
      task: s.task,
      step: Object.freeze({ id: step.id, kind: step.kind, description: step.description, inputs: stepView.inputs }),
      action: deepFreeze({ ...action, input: { ...action.input } }),
      hints: Object.freeze([...hints]),
      workspace: s.workspace,
      // The run's own signal: the adapter guard gives the adapter a signal of its own, aborted with it or on timeout.
      signal: s.signal ?? NEVER_ABORTED,
      onProcess: (child) => this.#recordProcess(step, action, candidateId, child),
    };
    this.rec.flush(); // the decision is on disk before the action runs
    // Checked, bounded by the act timeout, never throws (src/runtime/adapter_result.ts).
    const result = await callAdapter(this.adapter, request, {
      adapter: adapterDisplayName(s.loadedAdapter.path, s.loadedAdapter.label),
      file: s.loadedAdapter.path,
    });
    const durationMs = Math.round((performance.now() - tAct) * 1000) / 1000;
    const next = this.recordAct(index, action, candidateId, result, { startedAt: actStarted, durationMs }, approval);
    // The result's review (policies' `review`): no agent reads it here, so the verdicts are recorded, and a block
    // ends the plan (the rest would go on from a result a policy refused).
    const review = await reviewResult(this, index, action, candidateId, result, this.p.lastStepEventId, {
      agent: false,
    });
    if (next === "next" && review?.decision === "block" && review.enforced) {
      this.status = "vetoed";
      this.message = `Result blocked: ${this.redactor.redactString(review.reason ?? "")}`;
      this.p.state.outcomes!.error = null;
      return "stop";
    }
    return next;
  }

  /**
   * The `action.process` event: the process an action started, with its
   * process group and identity, written to the file before the program runs,
   * so that `resume` after a crash can stop it if it survived. Written, not
   * fsynced: the record has to outlive noema's process, which the kernel's
   * page cache does; a power loss or kernel crash, the only thing an fsync
   * adds, leaves no process to stop (an fsync here cost ~10 ms per action).
   */
  #recordProcess(step: PlanStep, action: PendingAction, candidateId: string, child: SpawnedChild): void {
    this.emit("runtime", {
      kind: "action.process",
      status: "started",
      step_id: step.id,
      action_candidate_id: candidateId,
      action_kind: action.kind,
      tool: action.tool,
      ...processIdentity(child.pid, child.pgid),
    }, { event_type: "action.process" });
    this.rec.flush();
  }

  /**
   * The `act` payload of a result (input, output and error masked; facts with a string key), in the contract's order,
   * and the JSON texts of its input and (when kept whole) its output, for {@link Engine.#kept}: each is written once.
   */
  #actPayload(
    step: PlanStep,
    stepStatus: PlanStep["status"],
    action: PendingAction,
    candidateId: string,
    result: ActResult,
    durationMs: number,
    approval: Record<string, unknown> | null,
  ): { payload: Record<string, unknown>; newFacts: { key: string; value: unknown }[]; texts: ActTexts } {
    const s = this.s;
    const redactedInput = this.redactor.redact(action.input, "payload.input").value;
    const inputText = JSON.stringify(redactedInput);
    const maskedOutput = result.output === undefined ? undefined : this.redactor.redact(result.output).value;
    const outputText = maskedOutput === undefined ? undefined : JSON.stringify(maskedOutput);
    // Masked, then bounded: an output over the limit is kept as its size, digest and an excerpt.
    const output = maskedOutput === undefined
      ? null
      : boundedValue(maskedOutput, limits().toolOutputBytes, 2000, outputText);
    const provenance: Record<string, unknown> = {
      adapter: s.loadedAdapter.label,
      adapter_version: s.loadedAdapter.plugin.version ?? "unspecified",
      planner: this.p.planSource,
    };
    if (approval) provenance.approval = approval;
    const newFacts = (Array.isArray(result.facts) ? result.facts : [])
      .filter((f) => typeof f?.key === "string")
      .map((f) => ({ key: f.key, value: structuredClone(this.redactor.redact(f.value).value) }));
    const payload: Record<string, unknown> = {
      input_excerpt: inputExcerpt(redactedInput, step.description, inputText),
      outcome: this.redactor.redactString(result.outcome ?? result.status),
      action_id: "",
      kind: action.kind,
      result_status: result.status,
      tool: action.tool,
      adapter: s.loadedAdapter.label,
      action_candidate_id: candidateId,
      step_id: step.id,
      step_status: stepStatus,
      provenance,
      result_artifacts: (result.artifacts ?? []).map((a) => ({ ...a })),
      input: redactedInput,
      output,
      error: result.error ? this.redactor.redact(result.error).value : null,
      duration_ms: durationMs,
    };
    if (newFacts.length > 0) payload.facts = newFacts;
    // The wrapped program's exit code (command and shell adapters), top-level so readers need not dig in output.
    if (typeof result.exit_code === "number" || result.exit_code === null) payload.exit_code = result.exit_code;
    return { payload, newFacts, texts: { input: inputText, output: output === maskedOutput ? outputText : undefined } };
  }

  /**
   * Records one action's result: the `act` event, the step status, the action
   * record, facts, counters. Returns `"stop"` when the result is an error and
   * `fatal` (the plan-driven run ends there); an episode driven from outside
   * goes on after an error.
   */
  recordAct(
    index: number,
    action: PendingAction,
    candidateId: string,
    result: ActResult,
    timing: { startedAt: string; durationMs: number },
    approval: Record<string, unknown> | null,
    fatal = true,
  ): "next" | "stop" {
    const s = this.s, p = this.p;
    const step = p.steps[index];
    const outcomes = p.state.outcomes!;
    const { startedAt: actStarted, durationMs } = timing;
    if (p.counters.first_action_ms === null) {
      p.counters.first_action_ms = Math.max(0, Date.parse(actStarted) - Date.parse(p.startedAt) - p.waitingMs);
    }
    p.counters.execution_ms += durationMs;
    const stepStatus = result.status === "ok" ? "done" : result.status === "skipped" ? "skipped" : "failed";
    this.setStepStatus(index, stepStatus);
    // A step run again right after its attempt was interrupted (resume after a crash) gets its own id: `<id>.2`, ….
    const base = `act_${step.id}_${index + 1}`, last = p.actions.at(-1)?.id ?? "";
    const attempt = last === base ? 2 : last.startsWith(`${base}.`) ? Number(last.slice(base.length + 1)) + 1 : 1;
    const actionId = attempt > 1 ? `${base}.${attempt}` : base;
    const { payload, newFacts, texts } = this.#actPayload(
      step,
      stepStatus,
      action,
      candidateId,
      result,
      durationMs,
      approval,
    );
    payload.action_id = actionId;
    const tool = action.tool, provenance = payload.provenance as Record<string, unknown>;
    if (this.actCallId !== null) provenance.call_id = this.actCallId;
    const redactedInput = payload.input as Record<string, unknown>;
    const output = payload.output, resultError = payload.error as { type: string; message: string } | null;
    const artifactsOut = payload.result_artifacts as Record<string, unknown>[];
    const actEvent = this.emit("act", payload, {
      caused_by: this.rec.lastEventId,
      metrics: { started_at: actStarted, completed_at: this.rec.now(), duration_ms: durationMs },
    });
    p.counters.act++;
    p.lastStepEventId = actEvent.id;
    const { actionBytes } = limits();
    p.actions.push({
      id: actionId,
      kind: action.kind,
      tool,
      input_excerpt: payload.input_excerpt as string,
      result_status: result.status,
      step_id: step.id,
      provenance,
      result_artifacts: artifactsOut,
      timestamp: actEvent.timestamp,
      input: this.#kept(redactedInput, texts.input, actionBytes),
      output: this.#kept(output, texts.output, actionBytes),
      duration_ms: durationMs,
    });
    for (const a of artifactsOut) if (typeof a.path === "string") outcomes.artifacts!.push(a.path);
    for (const f of newFacts) {
      p.facts.push({ ...f, timestamp: actEvent.timestamp, provenance: `${tool}:${step.id}` });
      this.#factsDirty = true;
    }
    if (!fatal) return "next";
    if (result.status !== "skipped") this.adapterResult = this.adapterResult === "error" ? "error" : "success";
    if (result.status === "error") {
      this.adapterResult = "error";
      this.status = s.signal?.aborted ? "aborted" : "error";
      outcomes.error = resultError ?? { type: "AdapterError", message: `step ${step.id} failed` };
      this.message = `Step ${step.id} failed: ${(outcomes.error as { message: string }).message}`;
      return "stop";
    }
    return "next";
  }

  /**
   * An action record's input or output as `state.json` keeps it: whole while all kept so far fit in
   * `limits().actionBytes`, then (beyond 128 bytes) as its size, digest and an excerpt. The terminal
   * `run.state_projection` carries every action record in one line, which must stay under the line limit;
   * the `act` event keeps the value (within the tool output limit). `text`: the value's JSON text when the caller
   * has it; `actionBytes`: `limits().actionBytes`.
   */
  #kept(value: unknown, text: string | undefined, actionBytes: number): unknown {
    if (this.#keptBytes < 0) {
      this.#keptBytes = this.p.actions.reduce((n, a) => n + jsonBytes(a.input) + jsonBytes(a.output), 0);
    }
    const bytes = text === undefined ? jsonBytes(value) : utf8Bytes(text);
    if (this.#keptBytes + bytes <= actionBytes) {
      this.#keptBytes += bytes;
      return value;
    }
    return boundedValue(value, 128, 64);
  }

  /**
   * Pauses before an action that needs approval: `run.interrupt`, a
   * non-terminal `state.json` (status pending, links events + learn), the
   * checkpoint file, then `run.checkpoint`. Nothing terminal is written.
   */
  pause(
    index: number,
    candidateId: string,
    action: PendingAction,
    why: { kind: PendingApproval["kind"]; reason: string; policy_id: string | null },
    close = true,
  ): RunResult {
    const s = this.s, p = this.p;
    const step = p.steps[index];
    this.emit("runtime", {
      kind: "run.interrupt",
      status: "interrupted",
      reason: why.reason,
      step_id: step.id,
      pause: why.kind,
    }, {
      event_type: "run.interrupt",
    });
    p.state.outcomes!.status = "pending";
    p.state.links = { events: ARTIFACTS.events, learn: ARTIFACTS.learn };
    this.persist();
    this.rec.sync();
    const checkpointId = `chk_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
    const log = sha256File(join(s.dir, ARTIFACTS.events)); // synced above: every event before run.checkpoint
    const pending: PendingApproval = {
      kind: why.kind,
      reason: why.reason,
      policy_id: why.policy_id,
      step_id: step.id,
      step_index: index,
      action_candidate_id: candidateId,
      action: this.redactor.redact(action).value,
    };
    const checkpoint: Checkpoint = {
      schema_version: "checkpoint/1.0",
      episode_id: s.episodeId,
      checkpoint_id: checkpointId,
      created_at: this.rec.now(),
      event_offset: this.rec.count + this.rec.baseCount,
      last_event_id: this.rec.lastEventId!,
      state_hash: sha256File(join(s.dir, ARTIFACTS.state)).sha256,
      adapter_label: s.loadedAdapter.label,
      events_bytes: log.size_bytes,
      events_sha256: log.sha256,
      policy_versions: s.policies.map((x) => ({ id: x.id, sha256: x.sha256 ?? null })),
      pending,
    };
    const path = writeCheckpoint(s.dir, checkpoint, this.rec.sink); // masked as its run.checkpoint event is
    this.emit("runtime", {
      kind: "run.checkpoint",
      status: "paused",
      checkpoint_id: checkpointId,
      event_offset: checkpoint.event_offset,
      checkpoint_path: path,
      pending: {
        kind: pending.kind,
        step_id: pending.step_id,
        reason: pending.reason,
        policy_id: pending.policy_id,
        action: pending.action,
      },
    }, { event_type: "run.checkpoint" });
    if (close) {
      this.rec.close();
      this.learnLog.close();
    }
    return {
      ...this.#resultBase(),
      status: "pending",
      outcome: null,
      adapter_result: null,
      exit_code: EXIT.PAUSED,
      checkpoint_id: checkpointId,
      pending,
    };
  }

  #resultBase() {
    const dir = this.s.dir;
    return {
      episode_id: this.s.episodeId,
      episode_dir: dir,
      paths: {
        events: join(dir, ARTIFACTS.events),
        learn: join(dir, ARTIFACTS.learn),
        state: join(dir, ARTIFACTS.state),
        summary: join(dir, ARTIFACTS.summary),
        manifest: join(dir, ARTIFACTS.manifest),
      },
    };
  }

  /**
   * Ends the run: verification, reflect, learn, terminate, insight, the final
   * state and its projection, `summary.json`, then `manifest.json` last.
   */
  async finish(): Promise<RunResult> {
    refuseSymlinkedArtifacts(this.s.dir); // a planted link is refused before anything terminal is written
    this.#settleStatus();
    this.rec.syncSoon(); // the log's bytes start for the disk while the workspace is verified: sealing waits less
    if (!this.verifying) throw new Error("internal: the engine finished before its verification started");
    const verification = await this.verifying.finish();
    await this.s.notices?.settle?.(); // e.g. the look at the OpenTelemetry collector: recorded before the end
    const outcome = this.outcomeOf(verification);
    if (verification.provided) this.#verifyEvent(verification, outcome);
    this.#reflect(outcome);
    this.#learn();
    this.p.state.outcomes!.status = this.status;
    this.emit("terminate", {
      status: this.status === "partial" ? "ok" : this.status,
      message: this.message,
      outcome,
      ...(this.answer !== null ? { answer: this.answer } : {}),
    });
    return this.seal(outcome, verification);
  }

  /**
   * The outcome of the run from what the adapter did and the verification. A run whose plan has no steps and that
   * ended ok gave the adapter nothing to do: it succeeded at nothing (`adapter_result` stays `skipped`, the adapter
   * never ran), so its outcome is the verification's, as after an adapter's success: `success_unverified` without
   * assertions (status ok, no error, exit 0). Every artifact then tells one story (docs/cli.md, "An empty plan").
   */
  outcomeOf(verification: Pick<Verification, "provided" | "passed" | "error">): Outcome {
    const nothingToDo = this.p.steps.length === 0 && this.adapterResult === "skipped" && this.status === "ok";
    return computeOutcome(nothingToDo ? "success" : this.adapterResult, verification);
  }

  /** The run's status before verification: interrupted, partial (a skipped step), and what the adapter achieved. */
  #settleStatus(): void {
    const outcomes = this.p.state.outcomes!;
    if (this.status === "ok" && this.s.signal?.aborted) {
      this.status = "aborted";
      this.message = "The run was interrupted.";
      outcomes.error = { type: "Aborted", message: this.message };
    }
    if (this.status === "ok" && this.p.steps.some((x) => x.status === "skipped")) this.status = "partial";
    // A vetoed or interrupted run did not let the adapter finish the plan.
    if ((this.status === "vetoed" || this.status === "aborted") && this.adapterResult !== "error") {
      this.adapterResult = "skipped";
    }
  }

  /** The `verify` event; a run whose goal was not verified did not end ok (outcomes.status agrees with the outcome). */
  #verifyEvent(verification: Verification, outcome: Outcome): void {
    const outcomes = this.p.state.outcomes!;
    const failed = verification.assertions.find((a) => !a.passed);
    const diff = verification.workspace_diff;
    this.emit("verify", {
      provided: true,
      passed: verification.passed,
      outcome,
      assertions: verification.assertions.length,
      failed: verification.assertions.filter((a) => !a.passed).length,
      first_failure: failed ? { name: failed.name, target: failed.target, reason: failed.reason } : null,
      workspace_diff: diff
        ? { added: diff.added.length, modified: diff.modified.length, deleted: diff.deleted.length }
        : null,
      snapshots: verification.snapshots,
      error: verification.error ?? null,
    }, { caused_by: this.p.lastStepEventId });
    if (
      (this.status !== "ok" && this.status !== "partial") || (outcome !== "goal_not_achieved" && outcome !== "error")
    ) {
      return;
    }
    this.status = "error";
    outcomes.error = verification.error
      ? { type: "WorkspaceUnavailable", message: `verification could not run: ${verification.error}` }
      : {
        type: "VerificationFailed",
        message: `${failed?.name ?? "assertion"} failed: ${failed?.reason ?? "unknown reason"}`,
      };
    this.message = `Verification failed: ${(outcomes.error as { message: string }).message}`;
  }

  /** The `reflect` event: the status and each step's. */
  #reflect(outcome: Outcome): void {
    const steps = this.p.steps;
    const reasons = steps.map((x) => `step:${x.id}:${x.kind}:${x.status}`);
    this.emit("reflect", {
      status: this.status,
      success: outcome === "success" || outcome === "success_unverified",
      reasons: reasons.length > 50 ? [...reasons.slice(0, 50), `…${reasons.length - 50} more`] : reasons,
      steps_completed: steps.filter((x) => x.status === "done").length,
      steps_total: steps.length,
    }, { caused_by: this.p.lastStepEventId });
    this.p.counters.reflect++;
  }

  /** Learning: proposals from the policies' evidence into learn.jsonl, and the `learn` event pointing at them. */
  #learn(): void {
    const s = this.s, counters = this.p.counters;
    const learned = learn([...this.p.evidence.values()], {
      root: s.root,
      episodeId: s.episodeId,
      mode: s.learnMode,
      thresholdOf: (id) => s.thresholds.get(id) ?? s.threshold,
      minSuccesses: s.learnMinSuccesses,
      minConfidence: s.learnMinConfidence,
      success: this.status === "ok",
      now: () => this.rec.now(),
    });
    for (const r of learned.records) this.learnLog.append(r);
    this.learnLog.close();
    const proposalIds = learned.records.flatMap((r) => r.payload.proposal.map((x) => x.proposal_id));
    counters.learn_proposals = proposalIds.length;
    counters.learn_applied = learned.applied;
    if (s.learnMode === "off") return;
    this.emit("learn", {
      learn_path: ARTIFACTS.learn,
      learn_schema: CONTRACT_VERSIONS.learn,
      proposal_count: proposalIds.length,
      proposal_ids: proposalIds,
      applied: learned.applied > 0,
      applied_count: learned.applied,
      mode: s.learnMode,
    });
  }

  /** Writes insight, the final state, summary and manifest (after `terminate`). */
  seal(outcome: Outcome, verification: Verification): RunResult {
    const s = this.s, p = this.p;
    refuseSymlinkedArtifacts(s.dir); // never sealed in: verify would call the episode tampered
    const { steps, counters, actions } = p;
    const tool = `adapter:${s.loadedAdapter.label}`;
    const done = steps.filter((x) => x.status === "done").length;
    const plannedTools = new Set(steps.map((x) => (typeof x.inputs?.tool === "string" ? x.inputs.tool : tool)));
    const usedTools = new Set(actions.map((a) => a.tool));
    const insight = s.mode === "meta"
      ? {
        plan_adherence: steps.length === 0 ? 0 : Math.round((done / steps.length) * 10000) / 10000,
        tool_coverage: Math.round(
          ([...plannedTools].filter((t) => usedTools.has(t)).length / Math.max(1, plannedTools.size)) * 10000,
        ) / 10000,
        branching_factor: counters.direction,
        plan_revisions: Math.max(0, counters.plan - 1),
      }
      : undefined;
    if (insight) this.emit("insight", { metrics: insight, summary_path: ARTIFACTS.summary }, { faculty: "insight" });

    // Terminal artifacts: state, its projection, summary, manifest. Nothing is appended after the manifest.
    p.state.links = {
      events: ARTIFACTS.events,
      learn: ARTIFACTS.learn,
      summary: ARTIFACTS.summary,
      manifest: ARTIFACTS.manifest,
    };
    this.#stateMetrics();
    const stagedState = this.rec.stageTerminalState(p.state);
    const summary = buildSummary({
      episodeId: s.episodeId,
      task: s.redactedTask,
      startedAt: p.startedAt,
      // One reading of the clock: working time is the total less the wait (two readings could differ on a busy machine).
      totalMs: Math.max(0, Date.parse(this.rec.now()) - Date.parse(p.startedAt)),
      waitingMs: p.waitingMs,
      adapterResult: this.adapterResult,
      outcome,
      verification,
      mode: s.mode,
      intuition: s.mode === "meta" && s.policies.length > 0,
      counters,
      direction: s.mode === "meta" ? this.#directionFlags() : undefined,
      insight,
      tags: s.tags,
      ...(this.extraMetrics ? { metrics: this.extraMetrics } : {}),
    });
    const staged = [this.rec.sink.stageJson(ARTIFACTS.summary, summary)]; // masked like every artifact
    const plugins: ManifestPlugin[] = [
      {
        id: `adapter:${s.loadedAdapter.label}`,
        kind: "adapter",
        path: s.loadedAdapter.path,
        sha256: s.loadedAdapter.sha256,
      },
      ...s.policies.map((x) => ({ id: x.id, kind: "policy", path: x.path, sha256: x.sha256 })),
      ...(s.planner.path
        ? [{ id: `planner:${s.planner.name}`, kind: "planner", path: s.planner.path, sha256: s.planner.sha256 }]
        : []),
    ];
    // The state goes into place first, then its projection (the manifest digests the log with it): the last
    // run.state_projection always describes a state.json that is in place, and a kill before this rename leaves a
    // valid episode. Then the summary and the manifest, last. A kill after the state's rename is "crashed while
    // sealing" to the readers (its links name a summary and a manifest not there yet); `noema resume` completes it.
    try {
      commitStaged([stagedState]);
    } catch (e) {
      discardStaged([stagedState, ...staged]);
      throw e;
    }
    this.rec.projectTerminal(p.state);
    this.rec.close(); // synced: the manifest's digest of the log is the log on disk
    // A long log was hashed as it was written (store/log_digest.ts): the manifest takes that digest.
    const logDigest = this.rec.eventsDigest();
    const known = new Map(logDigest ? [[ARTIFACTS.events as string, logDigest]] : []);
    try {
      staged.push(stageManifest(s.dir, s.episodeId, plugins, new Date().toISOString(), staged, undefined, known));
    } catch (e) {
      discardStaged(staged);
      throw e;
    }
    commitStaged(staged);
    const exit_code: ExitCode = this.status === "vetoed"
      ? EXIT.VETOED
      : (this.status === "ok" || this.status === "partial") &&
          (outcome === "success" || outcome === "success_unverified")
      ? EXIT.OK
      : EXIT.ERROR;
    return { ...this.#resultBase(), status: this.status, outcome, adapter_result: this.adapterResult, exit_code };
  }

  /**
   * `flags.direction`: the policy whose verdict was applied last (none when no
   * verdict was applied), the threshold actually used for it (learned per
   * policy, else the run's), and the count of policy failures.
   */
  #directionFlags(): NonNullable<Parameters<typeof buildSummary>[0]["direction"]> {
    const s = this.s, p = this.p;
    const thresholdOf = (id: string) => s.thresholds.get(id) ?? s.threshold;
    const policy = p.lastDirectivePolicy;
    const threshold = policy !== null
      ? thresholdOf(policy)
      : s.policies.length === 1
      ? thresholdOf(s.policies[0].id)
      : s.threshold;
    return { policy, threshold, last_diff: p.lastDiff, failed: p.counters.direction_failed };
  }

  /**
   * Ends the plan at a step whose action a veto blocked: the step is `vetoed`,
   * with an `act` event carrying the evidence the contract's plan rules read
   * (`step_id`, `step_status: "vetoed"`, `result_status: "skipped"`) and a
   * matching `outcomes.actions` record. It counts in `veto_count`, not in
   * `act_count` (no action was executed).
   */
  recordVeto(
    index: number,
    action: PendingAction,
    candidateId: string,
    message: string,
    ends = true,
    policyFailure = false,
  ): void {
    const s = this.s, p = this.p;
    const step = p.steps[index];
    this.setStepStatus(index, "vetoed");
    p.counters.veto++;
    if (ends) {
      this.status = "vetoed";
      // A policy that failed under fail_closed blocked it: said as such, never as a veto (the status is the contract's).
      this.message = `${policyFailure ? "Action blocked" : "Action vetoed"}: ${message}`;
      p.state.outcomes!.error = null;
    }
    const input = this.redactor.redact(action.input, "payload.input").value;
    // A step run again right after its attempt was interrupted (resume after a crash) gets its own id: `<id>.2`, ….
    const base = `act_${step.id}_${index + 1}`, last = p.actions.at(-1)?.id ?? "";
    const attempt = last === base ? 2 : last.startsWith(`${base}.`) ? Number(last.slice(base.length + 1)) + 1 : 1;
    const actionId = attempt > 1 ? `${base}.${attempt}` : base;
    const payload = {
      input_excerpt: inputExcerpt(input, step.description),
      outcome: `vetoed: ${message}`,
      action_id: actionId,
      kind: action.kind,
      result_status: "skipped",
      tool: action.tool,
      adapter: s.loadedAdapter.label,
      action_candidate_id: candidateId,
      step_id: step.id,
      step_status: "vetoed",
      provenance: { adapter: s.loadedAdapter.label, planner: p.planSource, vetoed: true },
      result_artifacts: [],
      input,
      output: null,
      error: null,
      duration_ms: 0,
    };
    const e = this.emit("act", payload, { caused_by: this.rec.lastEventId });
    p.lastStepEventId = e.id;
    p.actions.push({
      id: actionId,
      kind: action.kind,
      tool: action.tool,
      input_excerpt: payload.input_excerpt,
      result_status: "skipped",
      step_id: step.id,
      provenance: payload.provenance,
      result_artifacts: [],
      timestamp: e.timestamp,
      input,
      output: null,
      duration_ms: 0,
    });
  }

  /** Marks plan events with the legacy labels and structured records. */
  static planPayload(source: string, steps: PlanStep[], rationale: string): Record<string, unknown> {
    return { source, step_records: steps, steps: steps.map(stepLabel), rationale };
  }
}
