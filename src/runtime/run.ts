/**
 * `run()`: executes one episode and writes its artifacts.
 *
 * Event order: `start` → `observe` → `interpret` → `plan` → per step
 * (`direction`… → `action_candidate` → `governance` → `act`) → `reflect` →
 * `learn` → `terminate` → `insight` (meta mode). `state.json` is persisted
 * after planning, at step boundaries (throttled so that persisting costs a
 * bounded share of the run) and at the end, each time followed by a
 * `run.state_projection` event. Then `summary.json`, then `manifest.json`.
 *
 * @module
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { EXIT, type ExitCode, NoemaError } from "../errors.ts";
import type { ActRequest, ActResult, AdapterPlugin, PendingAction, PolicyObject, PolicyState, RecentAction } from "../plugins/api.ts";
import { deepFreeze } from "../plugins/freeze.ts";
import {
  type LoadedAdapter,
  type LoadedPlanner,
  type LoadedPolicy,
  loadAdapter,
  loadPlannerFile,
  loadPolicyFile,
  toLoadedPolicy,
} from "../plugins/loader.ts";
import type { ManifestPlugin } from "../schema/manifest.ts";
import type { PlanStep } from "../schema/plan.ts";
import type { ActionRecord, IntuitionMode, OutcomeStatus, State } from "../schema/state.ts";
import type { AdapterResult, Mode, Outcome } from "../schema/summary.ts";
import { DIR_MODE, FILE_MODE, writeJsonAtomic } from "../store/atomic.ts";
import { canonicalHash } from "../store/hash.ts";
import { newEpisodeId } from "../store/ids.ts";
import { JsonlAppender } from "../store/jsonl.ts";
import { ARTIFACTS, episodeDirFor, resolveRoot, type RootOptions } from "../store/layout.ts";
import { writeManifest } from "../store/manifest.ts";
import { CONTRACT_VERSIONS, NOEMA_VERSION } from "../version.ts";
import { consultPolicy, type DirectionOutcome, applyPatch } from "./direction.ts";
import { decide } from "./governance.ts";
import { learn, type PolicyEvidence, readPolicySnapshot } from "./learning.ts";
import { minimalPlanner, type Planner, runPlanner, stepLabel, taskFilePlanner } from "./planner.ts";
import { Recorder } from "./recorder.ts";
import { mergeRedaction, type RedactionReport, Redactor } from "./redact.ts";
import type { FailurePolicy, GovernanceMode, LearnMode, StepSpec } from "./settings.ts";
import { buildSummary, newCounters } from "./summary_builder.ts";
import { loadAssertionPlugins, parseAssertions } from "../verify/assertions.ts";
import { computeOutcome, startVerification } from "../verify/outcome.ts";
import { snapshotPolicy } from "../verify/snapshot.ts";

/** Options of {@link run}: the same settings as the CLI flags and task files. */
export interface RunOptions extends RootOptions {
  /** Adapter: built-in name, `.ts` path, or an adapter object. @default {"minimal"} */
  using?: string | AdapterPlugin;
  /** Adapter configuration. */
  adapter?: Record<string, unknown>;
  /** Arguments for the adapter (what follows `--` on the command line). */
  args?: readonly string[];
  /** Policies: `.ts` paths, policy objects, or policy classes. */
  policies?: readonly (string | PolicyObject | (new () => unknown))[];
  /** The plan; without it the planner plans (by default the minimal planner: detect → act → verify). */
  steps?: readonly StepSpec[];
  /** A planner plugin: a `.ts` path or a planner object. Ignored when `steps` are given. */
  planner?: string | Planner;
  /** @default {"meta"} */
  mode?: Mode;
  /** @default {"interventive"} */
  intuition_mode?: IntuitionMode;
  /** @default {"enforce"} */
  governance?: GovernanceMode;
  /** @default {"fail_closed" under enforce, else "fail_open"} */
  failure_policy?: FailurePolicy;
  /** Verdicts below this confidence are recorded but not applied. @default {0.5} */
  direction_min_confidence?: number;
  /** Longest time a policy's `advise` may take. @default {5000} */
  policy_timeout_ms?: number;
  /** @default {"record"} */
  learn_mode?: LearnMode;
  /** @default {3} */
  learn_min_successes?: number;
  /** @default {0.7} */
  learn_min_confidence?: number;
  /** @default {0} */
  seed?: number;
  /** User metadata. */
  tags?: Record<string, string | number | boolean>;
  /** The workspace the adapter works in. @default {none} */
  workspace?: string;
  /** Names of environment variables whose values are masked in every artifact. */
  secrets?: readonly string[];
  /**
   * Verification assertions, checked against the workspace after the last
   * action (`file_exists`, `file_contains`, `only_modified`, …; see the README).
   */
  verify?: readonly unknown[];
  /** Where `verify` came from, for error messages (e.g. the task file). @default {"verify"} */
  verify_source?: string;
  /** The field holding `verify` in that source, for error messages (e.g. `verify`). @default {""} */
  verify_field?: string;
  /** More path segment names the workspace snapshots ignore (besides .git, node_modules, .noema). */
  verify_ignore?: readonly string[];
  /** Use this episode id instead of a new `ep_<ULID>`. */
  episode_id?: string;
  /** Directory that relative paths in `adapter` config are resolved against. @default {cwd} */
  base_dir?: string;
  /** Aborting ends the run as `aborted`, with all its artifacts. */
  signal?: AbortSignal;
  /** Called after each event is written (for progress displays). */
  onEvent?: (event: { phase: string; payload: Record<string, unknown> }) => void;
}

/** What {@link run} returns. */
export interface RunResult {
  episode_id: string;
  episode_dir: string;
  /** `outcomes.status`: ok, error, vetoed, aborted or partial. */
  status: OutcomeStatus;
  /** The verification outcome. */
  outcome: Outcome;
  adapter_result: AdapterResult;
  /** The exit code the CLI uses: 0 ok, 1 error or goal not achieved, 3 vetoed. */
  exit_code: ExitCode;
  /** Absolute paths of the artifacts. */
  paths: { events: string; learn: string; state: string; summary: string; manifest: string };
}

function goalType(task: string): string {
  if (/\b(select|insert|update|delete|drop|alter)\b.+\b(from|table|into|where)\b/i.test(task)) return "sql";
  if (/\b(test|bug|fix|refactor|compile|build)\b/i.test(task)) return "code";
  if (/\b(file|files|directory|folder)\b/i.test(task)) return "files";
  return "general";
}

function excerpt(value: unknown, max = 200): string {
  const text = typeof value === "string" ? value : JSON.stringify(value) ?? "";
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function inputExcerpt(input: Record<string, unknown>, fallback: string): string {
  if (typeof input.command === "string") return excerpt(input.command);
  if (Array.isArray(input.argv)) return excerpt(input.argv.join(" "));
  return Object.keys(input).length > 0 ? excerpt(input) : excerpt(fallback);
}

async function loadPolicies(specs: RunOptions["policies"]): Promise<LoadedPolicy[]> {
  const out: LoadedPolicy[] = [];
  for (const [i, spec] of (specs ?? []).entries()) {
    out.push(typeof spec === "string" ? await loadPolicyFile(spec) : toLoadedPolicy(spec, `policies[${i}]`));
  }
  const seen = new Set<string>();
  for (const p of out) {
    if (seen.has(p.id)) {
      throw new NoemaError("duplicate_policy", `policy ${p.id} is loaded twice (${p.path ?? "inline"})`, { exitCode: EXIT.USAGE });
    }
    seen.add(p.id);
  }
  return out;
}

/**
 * Runs one episode toward a task and writes its artifacts under
 * `<root>/episodes/<episode_id>/`. Bad options and plugins that cannot be
 * loaded are errors before anything is written; once the episode has
 * started, every failure (adapter, policy, interruption) ends it with complete
 * terminal artifacts.
 *
 * @example
 * ```ts
 * import { run } from "noema";
 * const r = await run("List the files", { using: "shell", steps: [{ kind: "act", description: "ls", inputs: { command: "ls" } }] });
 * console.log(r.episode_id, r.status, r.outcome);
 * ```
 */
export async function run(task: string, options: RunOptions = {}): Promise<RunResult> {
  // ---- Resolve settings and load everything that can fail, before writing anything.
  if (typeof task !== "string" || task.trim() === "") {
    throw new NoemaError("usage", "the task must be a non-empty string", { exitCode: EXIT.USAGE });
  }
  const mode: Mode = options.mode ?? "meta";
  const intuitionMode: IntuitionMode = options.intuition_mode ?? "interventive";
  const governance: GovernanceMode = options.governance ?? "enforce";
  const failurePolicy: FailurePolicy = options.failure_policy ?? (governance === "enforce" ? "fail_closed" : "fail_open");
  const threshold = options.direction_min_confidence ?? 0.5;
  const timeoutMs = options.policy_timeout_ms ?? 5000;
  const learnMode: LearnMode = options.learn_mode ?? "record";
  const seed = options.seed ?? 0;
  const tags = { ...(options.tags ?? {}) };
  const root = resolveRoot(options);
  const episodeId = options.episode_id ?? newEpisodeId();
  const dir = episodeDirFor(episodeId, root);
  if (existsSync(dir)) {
    throw new NoemaError("exists", `episode ${episodeId} already exists in ${join(root, "episodes")}`, { exitCode: EXIT.USAGE });
  }
  const workspace = options.workspace !== undefined ? resolve(options.workspace) : null;
  const baseDir = options.base_dir ?? process.cwd();
  const assertions = options.verify === undefined || options.verify.length === 0
    ? []
    : parseAssertions(options.verify, options.verify_source ?? "verify", { baseDir, field: options.verify_field });
  let snapshotRules;
  try {
    snapshotRules = snapshotPolicy({ extra: options.verify_ignore ?? [] });
  } catch (e) {
    throw new NoemaError("usage", `--verify-ignore: ${(e as Error).message}`, { exitCode: EXIT.USAGE });
  }
  await loadAssertionPlugins(assertions, baseDir);
  const redactor = new Redactor({ secrets: options.secrets ?? [] });
  const loadedAdapter: LoadedAdapter = typeof options.using === "object"
    ? { plugin: options.using, label: options.using.name, path: null, sha256: null }
    : await loadAdapter(options.using ?? "minimal");
  const policies = mode === "meta" ? await loadPolicies(options.policies) : [];
  const loadedPlanner: LoadedPlanner = options.steps
    ? { planner: taskFilePlanner, path: null, sha256: null }
    : typeof options.planner === "string"
    ? await loadPlannerFile(options.planner)
    : { planner: options.planner ?? minimalPlanner, path: null, sha256: null };
  let plan;
  try {
    plan = runPlanner(loadedPlanner.planner, { task, steps: options.steps });
  } catch (e) {
    throw new NoemaError("bad_plan", (e as Error).message, { exitCode: EXIT.USAGE });
  }
  const adapterName = loadedAdapter.plugin.name;
  const tool = `adapter:${adapterName}`;
  const actionKind = loadedAdapter.plugin.kind ?? "adapter";
  let adapter;
  try {
    adapter = await loadedAdapter.plugin.create({
      config: { base_dir: baseDir, ...(options.adapter ?? {}) },
      args: options.args ?? [],
      workspace,
      episode_dir: dir,
      secrets: options.secrets ?? [],
    });
  } catch (e) {
    if (e instanceof NoemaError) throw e;
    throw new NoemaError("bad_adapter", `adapter ${adapterName}: ${(e as Error).message}`, { exitCode: EXIT.USAGE });
  }
  const thresholds = new Map<string, number>();
  if (learnMode !== "off") {
    for (const p of policies) {
      const tuned = readPolicySnapshot(root, p.id).tuning.direction_min_confidence;
      if (typeof tuned === "number") thresholds.set(p.id, tuned);
    }
  }

  // ---- Create the episode.
  mkdirSync(join(root, "episodes"), { recursive: true, mode: DIR_MODE });
  try {
    mkdirSync(dir, { mode: DIR_MODE });
  } catch (e) {
    throw new NoemaError("exists", `cannot create ${dir}: ${(e as Error).message}`, { exitCode: EXIT.ERROR });
  }
  writeFileSync(join(dir, ARTIFACTS.learn), "", { mode: FILE_MODE, flag: "wx" });
  const rec = new Recorder(dir, episodeId);
  const learnLog = new JsonlAppender(join(dir, ARTIFACTS.learn));
  const emit: Recorder["emit"] = (phase, payload, opts) => {
    const e = rec.emit(phase, payload, opts);
    options.onEvent?.(e);
    return e;
  };
  const counters = newCounters();
  const t0 = performance.now();
  const since = () => performance.now() - t0;

  try {
    const redactedTask = redactor.redactString(task);
    const start = emit("start", {
      task: redactedTask,
      episode_id: episodeId,
      mode,
      intuition_mode: intuitionMode,
      governance,
      failure_policy: failurePolicy,
      using: adapterName,
      seed,
      tags,
      workspace,
      policies: policies.map((p) => p.id),
      noema_version: NOEMA_VERSION,
      contract: CONTRACT_VERSIONS,
    }, { caused_by: null });
    const startedAt = start.timestamp;
    const startedMs = Date.parse(startedAt);
    const observe = emit("observe", {
      snapshot: { task: redactedTask, seed, tags, using: adapterName, workspace, state_path: ARTIFACTS.state },
    }, { caused_by: null });
    const type = goalType(task);
    const hints: string[] = [];
    if (task.length > 320) hints.push("Consider chunking the task input before execution.");
    emit("interpret", { goal_type: type, task_chars: task.length, hints, step_count: plan.steps.length }, {
      faculty: "intuition",
      caused_by: observe.id,
    });

    // ---- Plan.
    const stepRedaction = new Map<string, RedactionReport>();
    const steps: PlanStep[] = plan.steps.map((s) => {
      if (!s.inputs) return s;
      const { value, report } = redactor.redact(s.inputs, "payload.input");
      stepRedaction.set(s.id, report);
      return { ...s, inputs: value };
    });
    const planStarted = rec.now();
    const planEvent = emit("plan", {
      source: plan.source,
      step_records: steps,
      steps: steps.map(stepLabel),
      rationale: plan.rationale,
    }, { metrics: { started_at: planStarted, completed_at: rec.now(), duration_ms: 0 } });
    counters.plan++;
    counters.planning_ms = Date.parse(planEvent.timestamp) - startedMs;

    const actions: ActionRecord[] = [];
    const facts: { key: string; value: unknown; timestamp?: string; provenance?: string }[] = [];
    const state: State = {
      version: CONTRACT_VERSIONS.state,
      state_schema_version: CONTRACT_VERSIONS.state_schema,
      episode: { id: episodeId, seed, tags, using: adapterName, started_at: startedAt, intuition_mode: intuitionMode },
      goal: { task: redactedTask, type },
      beliefs: [{ statement: `The task is of type ${type}.`, confidence: 0.5, provenance: "interpret", timestamp: startedAt }],
      plan: { steps, source: plan.source, updated_at: planEvent.timestamp, rationale: plan.rationale },
      memory: { facts },
      outcomes: {
        status: "pending",
        actions,
        metrics: { task_score: 0, steps_completed: 0, steps_total: steps.length, duration_ms: 0 },
        artifacts: [],
        error: null,
      },
      links: { events: ARTIFACTS.events, learn: ARTIFACTS.learn },
    };
    const outcomes = state.outcomes!;
    let persistCostMs = 0, lastPersistAt = 0;
    const persist = () => {
      const t = performance.now();
      outcomes.metrics!.steps_completed = steps.filter((s) => s.status === "done").length;
      outcomes.metrics!.task_score = steps.length === 0 ? 0 : Math.round((outcomes.metrics!.steps_completed! / steps.length) * 10000) / 10000;
      (outcomes.metrics as Record<string, unknown>).duration_ms = Math.round(since() * 1000) / 1000;
      rec.persistState(state);
      lastPersistAt = performance.now();
      persistCostMs = lastPersistAt - t;
    };
    persist();

    // ---- Verification: the pre snapshot, before the first action.
    const verifying = await startVerification({ workspace, specs: assertions, policy: snapshotRules, episodeDir: dir, baseDir });

    // ---- Execute.
    const recent: RecentAction[] = [];
    let frozenFacts: readonly (typeof facts)[number][] = Object.freeze([]);
    let factsHash = canonicalHash([]);
    let factsDirty = false;
    const episodeView = deepFreeze({ id: episodeId, seed, tags, mode, intuition_mode: intuitionMode, using: adapterName });
    const episodeHash = canonicalHash({ task: redactedTask, episode: episodeView, workspace });
    let lastDiff: string[] = [];
    let lastDirectivePolicy: string | null = null;
    const evidence = new Map<string, PolicyEvidence>(policies.map((p) => [p.id, {
      policyId: p.id,
      policyVersion: p.version,
      vetoes: 0,
      directionEvents: 0,
      confidence: 0,
      eventIds: [],
    }]));
    let status: OutcomeStatus = "ok";
    let adapterResult: AdapterResult = "skipped";
    let message = `Completed ${steps.length} steps.`;
    let lastStepEventId = planEvent.id;

    for (const [index, step] of steps.entries()) {
      if (options.signal?.aborted) {
        status = "aborted";
        message = "The run was interrupted before step " + step.id;
        outcomes.error = { type: "Aborted", message };
        break;
      }
      let action: PendingAction = { kind: actionKind, tool, input: { ...(step.inputs ?? {}) } };
      const hintsForAdapter: string[] = [];
      const directionEventIds: string[] = [];
      const outcomesForStep: DirectionOutcome[] = [];
      let riskTags: string[] = [];
      const interventions: { policy: string; diff: { key: string; before: unknown; after: unknown }[] }[] = [];
      let stateHash: string;

      if (factsDirty) {
        frozenFacts = Object.freeze(facts.slice());
        factsHash = canonicalHash(frozenFacts);
        factsDirty = false;
      }
      // The frozen view policies see. Plan inputs are frozen once at plan time; the view is rebuilt
      // only when an intervention changes the action.
      const stepView = Object.freeze({
        id: step.id,
        kind: step.kind,
        description: step.description,
        index,
        total: steps.length,
        inputs: deepFreeze(step.inputs ?? {}),
      });
      const recentView = Object.freeze(recent.slice(-10));
      let view: PolicyState | undefined;
      const makeView = (): PolicyState =>
        view ??= Object.freeze({
          task: redactedTask,
          episode: episodeView,
          step: stepView,
          action: Object.freeze({ kind: action.kind, tool: action.tool, input: deepFreeze(structuredClone(action.input)) }),
          recent_actions: recentView,
          facts: frozenFacts,
          workspace,
        });

      // Direction: consult every policy (meta mode only).
      for (const policy of policies) {
        const o = await consultPolicy(policy, makeView(), {
          intuitionMode,
          thresholds,
          defaultThreshold: threshold,
          timeoutMs,
          now: () => rec.now(),
        });
        if (o.status === "applied" && o.verdict?.kind === "intervention") {
          const patched = applyPatch(action.input, redactor.redact(o.verdict.patch!).value);
          action = { ...action, input: patched.input };
          view = undefined;
          o.diff = patched.diff;
          interventions.push({ policy: policy.id, diff: patched.diff });
          lastDiff = patched.diff.map((d) => d.key);
          lastDirectivePolicy = policy.id;
        }
        if (o.status === "applied" && o.verdict?.kind === "hint") hintsForAdapter.push(o.verdict.advice);
        if (o.verdict?.risk_tags) riskTags = [...new Set([...riskTags, ...o.verdict.risk_tags])];
        const verdict = o.verdict ? redactor.redact(o.verdict).value : null;
        const dirEvent = emit("direction", {
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
        }, {
          faculty: "direction",
          caused_by: lastStepEventId,
          metrics: { started_at: o.started_at, completed_at: o.completed_at, duration_ms: o.duration_ms },
        });
        directionEventIds.push(dirEvent.id);
        counters.direction++;
        const ev = evidence.get(policy.id)!;
        ev.directionEvents++;
        if (o.status === "applied") {
          counters.direction_applied++;
          if (o.verdict?.kind === "veto") {
            counters.direction_vetoed++;
            ev.vetoes++;
            ev.confidence = Math.max(ev.confidence, o.verdict.confidence ?? 0);
            ev.eventIds.push(dirEvent.id);
            lastDirectivePolicy = policy.id;
          }
        }
        outcomesForStep.push(o);
      }

      // The action candidate, bound to the state the decision was made on.
      // state_hash: the canonical hash of the decision state (episode and task, facts, recent
      // actions, step, action), with the stable parts entering by their own hashes.
      stateHash = canonicalHash({
        episode: episodeHash,
        facts: factsHash,
        recent: recentView.map((a) => a.id),
        step: stepView,
        action,
      });
      const candidateId = `ac_${step.id}_${index + 1}`;
      const redactedInput = redactor.redact(action.input, "payload.input");
      const candidate = emit("action_candidate", {
        schema_version: CONTRACT_VERSIONS.action_candidate,
        action_candidate_id: candidateId,
        kind: action.kind,
        payload: { step_id: step.id, tool, input: redactedInput.value, hints: hintsForAdapter },
        state_ref: ARTIFACTS.state,
        state_hash: stateHash,
        redaction: mergeRedaction([stepRedaction.get(step.id) ?? redactedInput.report, redactedInput.report]),
        provenance: {
          planner: plan.source,
          step_id: step.id,
          policies: policies.map((p) => p.id),
          interventions,
          direction_event_ids: directionEventIds,
        },
        risk_tags: riskTags,
      }, { caused_by: directionEventIds.at(-1) ?? lastStepEventId, evidence_ids: directionEventIds });

      // Governance (meta mode).
      const decision = decide(outcomesForStep, governance, failurePolicy);
      let blocked = decision.blocked;
      if (mode === "meta" && governance !== "off") {
        emit("governance", {
          decision: decision.decision,
          rule: decision.rule,
          rule_id: decision.rule,
          message: decision.message,
          policy_id: decision.policy_id,
          mode: decision.mode,
          failure_policy: decision.failure_policy,
          enforced: decision.enforced,
          action_candidate_id: candidateId,
          step_id: step.id,
          error: decision.error,
        }, { faculty: "governance", caused_by: candidate.id });
        counters.governance++;
        if (decision.decision === "veto" && !decision.enforced) counters.would_veto++;
      } else if (mode === "minimal") {
        blocked = false;
      }

      if (blocked) {
        step.status = "vetoed";
        counters.veto++;
        status = "vetoed";
        message = `Action vetoed: ${decision.message}`;
        outcomes.error = null;
        lastStepEventId = rec.lastEventId!;
        break;
      }

      // Act.
      step.status = "running";
      const actStarted = rec.now();
      const tAct = performance.now();
      if (counters.first_action_ms === null) counters.first_action_ms = Date.parse(actStarted) - startedMs;
      const abort = new AbortController();
      const onAbort = () => abort.abort();
      options.signal?.addEventListener("abort", onAbort, { once: true });
      let result: ActResult;
      try {
        const request: ActRequest = {
          episode_id: episodeId,
          task,
          step: Object.freeze({ id: step.id, kind: step.kind, description: step.description, inputs: stepView.inputs }),
          action: deepFreeze({ ...action, input: { ...action.input } }),
          hints: Object.freeze([...hintsForAdapter]),
          workspace,
          signal: abort.signal,
        };
        result = await adapter.act(request);
        if (typeof result !== "object" || result === null || !["ok", "error", "skipped"].includes(result.status)) {
          result = {
            status: "error",
            outcome: "invalid adapter result",
            error: { type: "InvalidAdapterResult", message: `adapter ${adapterName} returned ${excerpt(result, 120)}; expected { status: "ok" | "error" | "skipped", … }` },
          };
        }
      } catch (e) {
        const err = e as Error;
        result = { status: "error", outcome: "adapter threw", error: { type: err?.name ?? "Error", message: err?.message ?? String(e) } };
      } finally {
        options.signal?.removeEventListener("abort", onAbort);
      }
      const durationMs = Math.round((performance.now() - tAct) * 1000) / 1000;
      counters.execution_ms += durationMs;
      const stepStatus = result.status === "ok" ? "done" : result.status === "skipped" ? "skipped" : "failed";
      step.status = stepStatus;
      const actionId = `act_${step.id}_${index + 1}`;
      const output = result.output === undefined ? null : redactor.redact(result.output).value;
      const resultError = result.error ? redactor.redact(result.error).value : null;
      const artifactsOut = (result.artifacts ?? []).map((a) => ({ ...a }));
      const provenance = { adapter: adapterName, adapter_version: loadedAdapter.plugin.version ?? "unspecified", planner: plan.source };
      const actEvent = emit("act", {
        input_excerpt: inputExcerpt(redactedInput.value, step.description),
        outcome: redactor.redactString(result.outcome ?? result.status),
        action_id: actionId,
        kind: action.kind,
        result_status: result.status,
        tool,
        adapter: adapterName,
        action_candidate_id: candidateId,
        step_id: step.id,
        step_status: stepStatus,
        provenance,
        result_artifacts: artifactsOut,
        input: redactedInput.value,
        output,
        error: resultError,
        duration_ms: durationMs,
      }, {
        caused_by: rec.lastEventId,
        metrics: { started_at: actStarted, completed_at: rec.now(), duration_ms: durationMs },
      });
      counters.act++;
      lastStepEventId = actEvent.id;
      actions.push({
        id: actionId,
        kind: action.kind,
        tool,
        input_excerpt: inputExcerpt(redactedInput.value, step.description),
        result_status: result.status,
        step_id: step.id,
        provenance,
        result_artifacts: artifactsOut,
        timestamp: actEvent.timestamp,
        input: redactedInput.value,
        output,
        duration_ms: durationMs,
      });
      recent.push(deepFreeze({
        id: actionId,
        step_id: step.id,
        kind: action.kind,
        result_status: result.status,
        input_excerpt: inputExcerpt(redactedInput.value, step.description),
      }));
      if (recent.length > 20) recent.splice(0, recent.length - 10);
      for (const a of artifactsOut) if (typeof a.path === "string") outcomes.artifacts!.push(a.path);
      if (Array.isArray(result.facts) && result.facts.length > 0) {
        for (const f of result.facts) {
          if (typeof f?.key === "string") {
            facts.push(deepFreeze({ key: f.key, value: structuredClone(redactor.redact(f.value).value), timestamp: actEvent.timestamp, provenance: `${tool}:${step.id}` }));
          }
        }
        factsDirty = true;
      }
      if (result.status !== "skipped") adapterResult = adapterResult === "error" ? "error" : "success";
      if (result.status === "error") {
        adapterResult = "error";
        status = options.signal?.aborted ? "aborted" : "error";
        outcomes.error = resultError ?? { type: "AdapterError", message: `step ${step.id} failed` };
        message = `Step ${step.id} failed: ${(outcomes.error as { message: string }).message}`;
        break;
      }
      // Step boundary: persist, throttled so persisting stays a bounded share of the run time.
      if (performance.now() - lastPersistAt >= Math.max(250, persistCostMs * 20)) persist();
    }
    if (status === "ok" && options.signal?.aborted) {
      status = "aborted";
      message = "The run was interrupted.";
      outcomes.error = { type: "Aborted", message };
    }
    if (status === "ok" && steps.some((s) => s.status === "skipped")) status = "partial";
    // A vetoed or interrupted run did not let the adapter finish the plan.
    if ((status === "vetoed" || status === "aborted") && adapterResult !== "error") adapterResult = "skipped";

    // ---- Verification: the post snapshot, the diff and the assertions.
    const verification = await verifying.finish();
    const outcome = computeOutcome(adapterResult, verification);
    if (verification.provided) {
      const failed = verification.assertions.find((a) => !a.passed);
      const diff = verification.workspace_diff;
      emit("verify", {
        provided: true,
        passed: verification.passed,
        outcome,
        assertions: verification.assertions.length,
        failed: verification.assertions.filter((a) => !a.passed).length,
        first_failure: failed ? { name: failed.name, target: failed.target, reason: failed.reason } : null,
        workspace_diff: diff ? { added: diff.added.length, modified: diff.modified.length, deleted: diff.deleted.length } : null,
        snapshots: verification.snapshots,
        error: verification.error ?? null,
      }, { caused_by: lastStepEventId });
      // outcomes.status agrees with the outcome: a run whose goal was not verified did not end ok.
      if ((status === "ok" || status === "partial") && (outcome === "goal_not_achieved" || outcome === "error")) {
        status = "error";
        outcomes.error = verification.error
          ? { type: "WorkspaceUnavailable", message: `verification could not run: ${verification.error}` }
          : { type: "VerificationFailed", message: `${failed?.name ?? "assertion"} failed: ${failed?.reason ?? "unknown reason"}` };
        message = `Verification failed: ${(outcomes.error as { message: string }).message}`;
      }
    }

    // ---- Reflect, learn, terminate, insight.
    const reasons = steps.map((s) => `step:${s.id}:${s.kind}:${s.status}`);
    emit("reflect", {
      status,
      success: outcome === "success" || outcome === "success_unverified",
      reasons: reasons.length > 50 ? [...reasons.slice(0, 50), `…${reasons.length - 50} more`] : reasons,
      steps_completed: steps.filter((s) => s.status === "done").length,
      steps_total: steps.length,
    }, { caused_by: lastStepEventId });
    counters.reflect++;
    const learned = learn([...evidence.values()], {
      root,
      episodeId,
      mode: learnMode,
      thresholdOf: (id) => thresholds.get(id) ?? threshold,
      minSuccesses: options.learn_min_successes ?? 3,
      minConfidence: options.learn_min_confidence ?? 0.7,
      success: status === "ok",
      now: () => rec.now(),
    });
    for (const r of learned.records) learnLog.append(r);
    learnLog.close();
    const proposalIds = learned.records.flatMap((r) => r.payload.proposal.map((p) => p.proposal_id));
    counters.learn_proposals = proposalIds.length;
    counters.learn_applied = learned.applied;
    if (learnMode !== "off") {
      emit("learn", {
        learn_path: ARTIFACTS.learn,
        learn_schema: CONTRACT_VERSIONS.learn,
        proposal_count: proposalIds.length,
        proposal_ids: proposalIds,
        applied: learned.applied > 0,
        applied_count: learned.applied,
        mode: learnMode,
      });
    }
    outcomes.status = status;
    emit("terminate", { status: status === "partial" ? "ok" : status, message, outcome });
    const done = steps.filter((s) => s.status === "done").length;
    const plannedTools = new Set(steps.map((s) => (typeof s.inputs?.tool === "string" ? s.inputs.tool : tool)));
    const usedTools = new Set(actions.map((a) => a.tool));
    const insight = mode === "meta"
      ? {
        plan_adherence: steps.length === 0 ? 0 : Math.round((done / steps.length) * 10000) / 10000,
        tool_coverage: Math.round(([...plannedTools].filter((t) => usedTools.has(t)).length / Math.max(1, plannedTools.size)) * 10000) / 10000,
        branching_factor: counters.direction,
        plan_revisions: counters.plan - 1,
      }
      : undefined;
    if (insight) emit("insight", { metrics: insight, summary_path: ARTIFACTS.summary }, { faculty: "insight" });

    // ---- Terminal artifacts: state (+ projection), summary, manifest. Nothing is appended after the manifest.
    state.links = { events: ARTIFACTS.events, learn: ARTIFACTS.learn, summary: ARTIFACTS.summary, manifest: ARTIFACTS.manifest };
    persist();
    rec.close();
    const totalMs = Date.now() - startedMs;
    const summary = buildSummary({
      episodeId,
      task: redactedTask,
      startedAt,
      totalMs,
      adapterResult,
      outcome,
      verification,
      mode,
      intuition: mode === "meta" && policies.length > 0,
      counters,
      direction: mode === "meta" ? { policy: lastDirectivePolicy ?? policies[0]?.id ?? null, threshold, last_diff: lastDiff } : undefined,
      insight,
      tags,
    });
    writeJsonAtomic(join(dir, ARTIFACTS.summary), summary);
    const plugins: ManifestPlugin[] = [
      { id: `adapter:${adapterName}`, kind: "adapter", path: loadedAdapter.path, sha256: loadedAdapter.sha256 },
      ...policies.map((p) => ({ id: p.id, kind: "policy", path: p.path, sha256: p.sha256 })),
      ...(loadedPlanner.path ? [{ id: `planner:${loadedPlanner.planner.name}`, kind: "planner", path: loadedPlanner.path, sha256: loadedPlanner.sha256 }] : []),
    ];
    writeManifest(dir, episodeId, plugins, new Date().toISOString());
    const exit_code: ExitCode = status === "vetoed"
      ? EXIT.VETOED
      : (status === "ok" || status === "partial") && (outcome === "success" || outcome === "success_unverified")
      ? EXIT.OK
      : EXIT.ERROR;
    return {
      episode_id: episodeId,
      episode_dir: dir,
      status,
      outcome,
      adapter_result: adapterResult,
      exit_code,
      paths: {
        events: join(dir, ARTIFACTS.events),
        learn: join(dir, ARTIFACTS.learn),
        state: join(dir, ARTIFACTS.state),
        summary: join(dir, ARTIFACTS.summary),
        manifest: join(dir, ARTIFACTS.manifest),
      },
    };
  } finally {
    rec.close();
    learnLog.close();
    await adapter.close?.();
  }
}
