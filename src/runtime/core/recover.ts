/**
 * After a crash: an agent episode's plan and actions as the event log has
 * them. A driver appends a call's events before it rewrites `state.json`, and
 * the plan is announced in batches, so a process that died in between leaves
 * a `state.json` (and a last plan event) without the latest calls. Before
 * such an episode is continued, its steps and actions are completed from the
 * `action_candidate` and `act` events, so that the next call's step id is
 * new and `state.json` agrees with the log again.
 *
 * @module
 */
import { join } from "node:path";
import type { PlanStep } from "../../schema/plan.ts";
import type { ActionRecord, State } from "../../schema/state.ts";
import { readJsonl } from "../../store/jsonl.ts";
import { ARTIFACTS } from "../../store/layout.ts";
import type { RebuiltRun } from "../rebuild.ts";
import type { CallRecord } from "./progress_file.ts";
import { displayCommand } from "./command.ts";
import { textHead } from "../../text_head.ts";

type Json = Record<string, unknown>;

const stepNumber = (id: string) => Number(/^step-(\d+)$/.exec(id)?.[1] ?? Number.MAX_SAFE_INTEGER);

/** The events of an episode's log that are objects with a payload, each with its payload (both recoveries read them). */
function* loggedEvents(dir: string): Generator<{ e: Json; payload: Json }> {
  for (const entry of readJsonl(join(dir, ARTIFACTS.events))) {
    const e = entry.value as Json | undefined;
    const payload = e?.payload as Json | undefined;
    if (e && payload) yield { e, payload };
  }
}

/** Steps and their statuses as the log has them: candidates announce steps, act events set statuses. */
function stepsFromLog(dir: string, steps: Map<string, PlanStep>): void {
  for (const { e, payload } of loggedEvents(dir)) {
    if (e.phase === "action_candidate") {
      const inner = (payload.payload ?? {}) as Json;
      const id = inner.step_id;
      if (typeof id !== "string" || steps.has(id)) continue;
      const input = (inner.input ?? {}) as Record<string, unknown>;
      const description = `${String(inner.tool ?? payload.kind ?? "tool")}: ${displayCommand(input)}`;
      const step: PlanStep = { id, kind: "act", description: textHead(description, 200), status: "pending" };
      if (typeof inner.tool === "string") step.inputs = { tool: inner.tool };
      steps.set(id, step);
    } else if (e.phase === "act" && typeof payload.step_id === "string" && typeof payload.step_status === "string") {
      // A step with no candidate (a result recorded unreviewed) is known by its act event alone.
      const step = steps.get(payload.step_id) ?? actedStep(payload);
      step.status = payload.step_status as PlanStep["status"];
      steps.set(payload.step_id, step);
    }
  }
}

/** The plan step an act event names, made from that event (its tool and input excerpt). */
function actedStep(payload: Json): PlanStep {
  const tool = typeof payload.tool === "string" ? payload.tool : "tool";
  const excerpt = typeof payload.input_excerpt === "string" ? payload.input_excerpt : "";
  const step: PlanStep = {
    id: String(payload.step_id),
    kind: "act",
    description: textHead(`${tool}: ${excerpt}`, 200),
    status: "pending",
  };
  if (typeof payload.tool === "string") step.inputs = { tool: payload.tool };
  return step;
}

/**
 * Completes `state`'s plan steps and actions from the event log (the
 * rebuilt run's actions, and the steps its candidates and act events name).
 * Returns whether anything was added.
 *
 * @example
 * ```ts
 * import { recoverFromLog } from "./recover.ts";
 * // if (recoverFromLog(dir, state, rebuildRun(dir))) … state.json is rewritten at the next flush
 * ```
 */
export function recoverFromLog(dir: string, state: State, built: Pick<RebuiltRun, "actions">): boolean {
  const plan = state.plan ?? (state.plan = { steps: [] });
  const steps = new Map<string, PlanStep>(plan.steps.map((s) => [s.id, s]));
  const before = steps.size;
  stepsFromLog(dir, steps);
  plan.steps.splice(0, plan.steps.length, ...[...steps.values()].sort((a, b) => stepNumber(a.id) - stepNumber(b.id)));
  const outcomes = state.outcomes ?? (state.outcomes = { status: "pending" });
  const actions = outcomes.actions ?? (outcomes.actions = []);
  const known = new Set(actions.map((a) => a.id));
  const missing = built.actions.filter((a: ActionRecord) => !known.has(a.id));
  actions.push(...missing);
  return steps.size > before || missing.length > 0;
}

/** What the log says about one call: its candidate, the governance decision on it, whether it has a result. */
interface LoggedCall {
  candidate: Json;
  inner: Json;
  decision?: Json;
  acted: boolean;
  asked: boolean;
}

/**
 * The agent calls the log names (their `action_candidate` events carry the
 * agent's `call_id`) that `known` lacks: a process that died after appending
 * a call's events but before writing `core.json`. Each is rebuilt from its
 * candidate, governance and act events, so the next process answers and
 * records it as the same call. A call that waits for approval is left out.
 *
 * @example
 * ```ts
 * import { callsFromLog } from "./recover.ts";
 * // const calls = { ...callsFromLog(dir, saved.calls), ...saved.calls };
 * ```
 */
export function callsFromLog(dir: string, known: Record<string, CallRecord>): Record<string, CallRecord> {
  const byCandidate = new Map<string, LoggedCall>();
  const byStep = new Map<string, LoggedCall>();
  for (const { e, payload } of loggedEvents(dir)) {
    if (e.phase === "action_candidate") {
      const inner = (payload.payload ?? {}) as Json;
      if (typeof inner.call_id !== "string" || Object.hasOwn(known, inner.call_id)) continue;
      const call: LoggedCall = { candidate: payload, inner, acted: false, asked: false };
      byCandidate.set(String(payload.action_candidate_id), call);
      byStep.set(String(inner.step_id), call);
    } else if (e.phase === "governance" && byCandidate.has(String(payload.action_candidate_id))) {
      byCandidate.get(String(payload.action_candidate_id))!.decision = payload;
    } else if (e.phase === "act" && byStep.has(String(payload.step_id))) {
      byStep.get(String(payload.step_id))!.acted = true;
    } else if (e.phase === "runtime" && byStep.has(String(payload.step_id))) {
      byStep.get(String(payload.step_id))!.asked = true; // an interrupt or checkpoint: it waits for a human
    }
  }
  const calls: Record<string, CallRecord> = {};
  for (const [candidateId, c] of byCandidate) {
    const decision = c.decision?.decision;
    if (c.asked || (decision !== "allow" && decision !== "veto")) continue;
    const interventions = ((c.candidate.provenance as Json | undefined)?.interventions ?? []) as unknown[];
    const stepId = String(c.inner.step_id);
    calls[String(c.inner.call_id)] = {
      step_id: stepId,
      index: stepNumber(stepId) - 1,
      verdict: decision === "veto" ? "deny" : interventions.length > 0 ? "patch" : "allow",
      action_candidate_id: candidateId,
      action: {
        kind: String(c.candidate.kind ?? "tool"),
        tool: String(c.inner.tool ?? "tool"),
        input: (c.inner.input ?? {}) as Record<string, unknown>,
      },
      reason: decision === "veto" ? String(c.decision?.message ?? "vetoed") : null,
      policy_id: typeof c.decision?.policy_id === "string" ? c.decision.policy_id : null,
      hints: Array.isArray(c.inner.hints) ? c.inner.hints.map(String) : [],
      recorded: c.acted,
    };
  }
  return calls;
}
