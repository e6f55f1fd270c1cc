/**
 * A {@link Governor} backed by policies alone, with no episode on disk: each
 * proposed tool call is put through the policies (the same direction and
 * governance rules as a run) and every decision and result is kept in memory
 * in {@link PolicyGovernor.steps}. Tests and embedders use it; `noema run
 * --using llm` governs through the episode core instead.
 *
 * @module
 */
import type { PolicyObject, PolicyState, ReviewState } from "../plugins/api.ts";
import { outputExcerpt } from "../plugins/review.ts";
import { combineReviews, consultReview } from "../runtime/review.ts";
import { redactWithinBounds } from "../runtime/review_mask.ts";
import { agentSaw, type RecordedReview, type ReviewDelivery } from "../runtime/review_record.ts";
import { deepFreeze, frozenJsonCopy } from "../plugins/freeze.ts";
import { type LoadedPolicy, loadPolicyFile, toLoadedPolicy } from "../plugins/loader.ts";
import { applyPatch, consultPolicy } from "../runtime/direction.ts";
import { listView } from "../runtime/core/list_view.ts";
import { appended, SharedList } from "../runtime/core/shared_list.ts";
import { approvalAsked, decide } from "../runtime/governance.ts";
import type { FailurePolicy, GovernanceMode } from "../runtime/settings.ts";
import { CONTRACT_VERSIONS } from "../version.ts";
import type { Decision, Governor, ProposedAction, RecordedResult } from "./governor.ts";

/** One governed call as {@link PolicyGovernor} remembers it. */
export interface GovernedStep {
  step_id: string;
  action: ProposedAction;
  /** The model's id of the call, when it was proposed under another key. */
  call_id?: string;
  decision: Decision;
  result: RecordedResult | null;
  /** What the policies' `review` made of the result, once recorded (when a policy reviews results). */
  review?: RecordedReview;
}

/** A governed call as the state shows it: its plan step and (once it ran) its action record. */
interface StepView {
  status: string;
  plan: object;
  action: { id: string; step_id: string; kind: string; result_status: string; input_excerpt: string } | null;
  /** The action as `recent_actions` shows it. */
  recent: object | null;
}

/** Options of {@link PolicyGovernor}. */
export interface PolicyGovernorOptions {
  /** Policies: `.ts` paths, policy objects or classes. @default {[]} */
  policies?: readonly (string | PolicyObject | (new () => unknown))[];
  /** The task policies see. @default {"(library call)"} */
  task?: string;
  /** The workspace policies see. @default {null} */
  workspace?: string | null;
  /** @default {"enforce"} */
  governance?: GovernanceMode;
  /** @default {"fail_closed"} */
  failure_policy?: FailurePolicy;
  /** @default {0.5} */
  direction_min_confidence?: number;
  /** @default {5000} */
  policy_timeout_ms?: number;
}

/**
 * Policies as a governor, without an episode.
 *
 * @example
 * ```ts
 * import { PolicyGovernor } from "noema";
 * const gov = await PolicyGovernor.create({ policies: [{ name: "NoRm", advise: (s) => String(s.action.input.command).includes("rm ") ? { kind: "veto", advice: "no rm" } : undefined }] });
 * (await gov.propose({ kind: "tool", tool: "shell", input: { command: "rm -rf x" } })).verdict; // "deny"
 * ```
 */
export class PolicyGovernor implements Governor {
  /** Every governed call, in order. */
  readonly steps: GovernedStep[] = [];
  /** Call ids (the model's, or the keys calls were proposed under) a human approved: their next proposal is allowed without asking again. */
  readonly approved = new Set<string>();
  readonly #policies: LoadedPolicy[];
  readonly #o: Required<Omit<PolicyGovernorOptions, "policies">>;
  readonly #startedAt = new Date().toISOString();
  readonly #views = new Map<string, StepView>();
  /** The plan entry of every decided call, by position; its action (and recent-action) entries once recorded. */
  readonly #plans = new SharedList<object>();
  readonly #planAt = new Map<string, number>();
  readonly #actions = new SharedList<object>();
  #recents: object[] = [];
  readonly #actionAt = new Map<string, number>();
  readonly #byCall = new Map<string, GovernedStep>();
  #fixed: { episode: object; goal: object; empty: readonly never[]; memory: object; links: object } | null = null;

  private constructor(policies: LoadedPolicy[], options: PolicyGovernorOptions) {
    this.#policies = policies;
    this.#o = {
      task: options.task ?? "(library call)",
      workspace: options.workspace ?? null,
      governance: options.governance ?? "enforce",
      failure_policy: options.failure_policy ?? "fail_closed",
      direction_min_confidence: options.direction_min_confidence ?? 0.5,
      policy_timeout_ms: options.policy_timeout_ms ?? 5000,
    };
  }

  /** Loads the policies (files are imported as `run` does) and returns the governor. */
  static async create(options: PolicyGovernorOptions = {}): Promise<PolicyGovernor> {
    const loaded: LoadedPolicy[] = [];
    for (const [i, p] of (options.policies ?? []).entries()) {
      loaded.push(typeof p === "string" ? await loadPolicyFile(p) : toLoadedPolicy(p, `policies[${i}]`));
    }
    return new PolicyGovernor(loaded, options);
  }

  /**
   * The state policies see: the contract's state snapshot (`version`,
   * `episode`, `goal`, `beliefs`, `plan` with one `act` step per governed
   * call, `memory`, `outcomes` with the calls so far, `links`), the pending
   * `action` (with `command`) and `step`, the `workspace`, and the older
   * convenience fields (`task`, `facts`, `recent_actions`), deeply frozen.
   */
  #state(action: ProposedAction, index: number): PolicyState {
    // Built from frozen parts: the views of earlier calls are frozen once (per status), the fixed parts once,
    // so a call freezes only what is new (the arrays hold frozen items and are frozen without a walk).
    // The lists are kept up to date as calls are decided and recorded (#show), so a call copies them, no more.
    const recent = this.#recents.slice(-10);
    const stepId = `step-${index}`;
    const description = action.description ?? action.command ?? action.tool;
    const fixed = this.#fixed ??= deepFreeze({
      episode: {
        id: "library",
        seed: 0,
        tags: {},
        using: "llm",
        started_at: this.#startedAt,
        intuition_mode: "interventive",
        mode: "meta",
      },
      goal: { task: this.#o.task, type: "general" },
      empty: [],
      memory: { facts: [] },
      links: { events: "events.jsonl", learn: "learn.jsonl" },
    });
    const pending = deepFreeze({ id: stepId, kind: "act", description, status: "pending" });
    const plans = appended(this.#plans.snapshot(), pending);
    return Object.freeze({
      version: CONTRACT_VERSIONS.state,
      state_schema_version: CONTRACT_VERSIONS.state_schema,
      episode: fixed.episode,
      goal: fixed.goal,
      beliefs: fixed.empty,
      // Frozen views, not new frozen arrays: freezing a big array costs much under Bun (see list_view.ts).
      plan: Object.freeze({ steps: listView(plans), source: "agent" }),
      memory: fixed.memory,
      outcomes: Object.freeze({
        status: "pending",
        actions: listView(this.#actions.snapshot()),
        artifacts: fixed.empty,
        error: null,
      }),
      links: fixed.links,
      action: deepFreeze({
        kind: action.kind,
        tool: action.tool,
        input: deepFreeze(action.input),
        command: action.command ?? `${action.tool} ${JSON.stringify(action.input)}`.slice(0, 200),
      }),
      step: deepFreeze({ id: stepId, kind: "act", description, index: index - 1, total: index, inputs: action.input }),
      workspace: this.#o.workspace,
      task: this.#o.task,
      facts: fixed.empty,
      recent_actions: Object.freeze(recent.slice(-10)),
    }) as unknown as PolicyState;
  }

  /** Puts a call's current view in the lists the state shows (after its decision, after its result). */
  #show(s: GovernedStep): void {
    const v = this.#view(s);
    const i = this.#planAt.get(s.step_id);
    if (i === undefined) {
      this.#planAt.set(s.step_id, this.#plans.length);
      this.#plans.push(v.plan);
    } else this.#plans.set(i, v.plan);
    if (!v.action || !v.recent) return;
    const j = this.#actionAt.get(s.step_id);
    if (j === undefined) {
      this.#actionAt.set(s.step_id, this.#actions.length);
      this.#actions.push(v.action);
      this.#recents.push(v.recent);
    } else {
      this.#actions.set(j, v.action);
      this.#recents[j] = v.recent;
    }
  }

  /** A governed call's plan step and action record, frozen once per status (the state is rebuilt per call). */
  #view(s: GovernedStep): StepView {
    const status = s.decision.verdict === "deny"
      ? "vetoed"
      : s.result === null
      ? "running"
      : s.result.status === "ok"
      ? "done"
      : s.result.status === "error"
      ? "failed"
      : "skipped";
    const cached = this.#views.get(s.step_id);
    if (cached?.status === status) return cached;
    const excerpt = (s.action.command ?? JSON.stringify(s.action.input)).slice(0, 200);
    const id = `act_${s.step_id}`;
    const view = {
      status,
      plan: deepFreeze({ id: s.step_id, kind: "act", description: excerpt, status }),
      action: s.result
        ? deepFreeze({
          id,
          kind: s.action.kind,
          tool: s.action.tool,
          input_excerpt: excerpt,
          result_status: s.result.status,
          step_id: s.step_id,
        })
        : null,
      recent: s.result
        ? deepFreeze({
          id,
          step_id: s.step_id,
          kind: s.action.kind,
          result_status: s.result.status,
          input_excerpt: excerpt,
        })
        : null,
    };
    this.#views.set(s.step_id, view);
    return view;
  }

  /** Consults every policy about the action and decides. */
  async propose(action: ProposedAction): Promise<Decision> {
    // Idempotent per call id, like the episode core: a call asked about before gets its decision again,
    // now allowed when a human approved it.
    const known = action.call_id !== undefined ? this.#byCall.get(action.call_id) : undefined;
    if (known?.decision) {
      const approved = this.approved.has(action.call_id!) ||
        (known.call_id !== undefined && this.approved.has(known.call_id));
      if (known.decision.verdict === "ask" && approved) {
        known.decision = { ...known.decision, verdict: "allow", reason: null };
        this.#show(known);
      }
      return known.decision;
    }
    // Parallel calls are proposed concurrently: take the step's place before awaiting anything.
    const index = this.steps.length + 1;
    const stepId = `step-${index}`;
    // One frozen copy of the input: what the step records and what the first policy sees.
    const proposed = frozenJsonCopy(action.input);
    const entry = { step_id: stepId, action: { ...action, input: proposed } } as GovernedStep;
    this.steps.push(entry);
    if (action.call_id !== undefined) this.#byCall.set(action.call_id, entry);
    let input = proposed as Record<string, unknown>;
    const outcomes = [];
    const hints: string[] = [];
    let patched = false;
    for (const policy of this.#policies) {
      const o = await consultPolicy(policy, this.#state({ ...action, input }, index), {
        intuitionMode: "interventive",
        thresholds: new Map(),
        defaultThreshold: this.#o.direction_min_confidence,
        timeoutMs: this.#o.policy_timeout_ms,
        now: () => new Date().toISOString(),
      });
      if (o.status === "applied" && o.verdict?.kind === "intervention" && o.verdict.patch) {
        input = applyPatch(input, o.verdict.patch).input;
        patched = true;
      }
      if (o.status === "applied" && o.verdict?.kind === "hint") hints.push(o.verdict.advice);
      outcomes.push(o);
    }
    const d = decide(outcomes, this.#o.governance, this.#o.failure_policy);
    // An approval lifts only a block that asks for one: a plain veto or a fail-closed failure refuses the call.
    const wantsApproval = approvalAsked(outcomes, this.#o.failure_policy);
    const preApproved = wantsApproval !== null && action.call_id !== undefined && this.approved.has(action.call_id);
    const verdict: Decision["verdict"] = d.blocked && wantsApproval && !preApproved
      ? "ask"
      : d.blocked && !preApproved
      ? "deny"
      : patched
      ? "patch"
      : "allow";
    const decision: Decision = {
      verdict,
      step_id: stepId,
      action_candidate_id: `ac_${stepId}_${index}`,
      input,
      reason: verdict === "allow" ? null : verdict === "ask" ? wantsApproval!.verdict!.advice : d.message,
      policy_id: d.policy_id,
      hints,
    };
    entry.decision = decision;
    entry.result = null;
    this.#show(entry);
    return decision;
  }

  /** Remembers the model's id of a call proposed under `key` (approvals and records by either). */
  bindCall(key: string, callId: string): void {
    const step = this.#byCall.get(key);
    if (!step) return;
    step.call_id = callId;
    this.#byCall.set(callId, step);
  }

  /** Releases the policies (worker threads of policy files). */
  close(): void {
    for (const p of this.#policies) p.close?.();
  }

  /**
   * Keeps the result of a call that ran, and puts it through the policies' `review` (the same rules as an
   * episode, see `src/runtime/review.ts`): returns what the agent is shown, or null when no policy reviews
   * results. The review is kept in {@link GovernedStep.review}.
   */
  async record(
    stepOrCallId: string,
    result: RecordedResult,
    delivery?: ReviewDelivery,
  ): Promise<RecordedReview | null> {
    const step = this.#byCall.get(stepOrCallId) ?? this.steps.find((s) => s.step_id === stepOrCallId);
    if (!step) throw new Error(`record: no step ${stepOrCallId}`);
    step.result = result;
    this.#show(step);
    const reviewers = this.#policies.filter((p) => typeof p.review === "function");
    if (reviewers.length === 0 || result.status === "skipped") return null;
    const index = Number(step.step_id.slice("step-".length));
    const view = this.#state({ ...step.action, input: step.decision.input }, index) as unknown as Record<
      string,
      unknown
    >;
    const state = Object.freeze({
      ...view,
      result: deepFreeze({
        status: result.status,
        output: frozenJsonCopy(result.output ?? null),
        excerpt: outputExcerpt(result.output ?? null),
        error: result.error ? { type: String(result.error.type), message: String(result.error.message) } : null,
      }),
    }) as unknown as ReviewState;
    const outcomes = [];
    for (const policy of reviewers) {
      outcomes.push(
        await consultReview(policy, state, {
          intuitionMode: "interventive",
          thresholds: new Map(),
          defaultThreshold: this.#o.direction_min_confidence,
          timeoutMs: this.#o.policy_timeout_ms,
          now: () => new Date().toISOString(),
        }),
      );
    }
    const output = result.output ?? null;
    const redaction = await redactWithinBounds(outcomes, output, this.#o.policy_timeout_ms);
    const combined = combineReviews(outcomes, output, this.#o.governance, this.#o.failure_policy, redaction);
    step.review = { ...combined, agent_saw: agentSaw(combined, delivery ?? {}) };
    return step.review;
  }
}
