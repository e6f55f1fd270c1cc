/**
 * The steps of the report: each plan step with its policy verdicts (the
 * `direction` and `governance` events about it) and its actions (`act`
 * events), built from the event records. A veto and a policy failure are kept
 * apart: a failure is a policy that threw, timed out or returned garbage
 * (direction `error`, governance rule `policy.failure:…`), never counted as a
 * veto.
 *
 * @module
 */
import { asRecord } from "../json.ts";
import { type StderrTail, stderrTail } from "../read/stderr_tail.ts";
import type { StepDecision } from "../read/step_decisions.ts";
import { clip, clipValue, type Excerpt } from "./excerpt.ts";

/** One policy verdict about a step. */
export interface ReportVerdict {
  /** `direction` (a policy's advice) or `governance` (the decision on the action). */
  faculty: "direction" | "governance";
  timestamp: string | null;
  /** The policy (direction) or the rule (governance). */
  source: string | null;
  /** Direction: hint, intervention, veto, none. Governance: allow, audit, veto. */
  verdict: string | null;
  /** Direction: applied, skipped, blocked. Governance: enforced or audit. */
  status: string | null;
  confidence: number | null;
  /** The advice, reason, message or error, clipped. */
  message: string;
  /** An applied veto (direction) or a veto decision (governance) that is not a policy failure. */
  veto: boolean;
  /** A policy failure. */
  failure: boolean;
  /** Governance: whether the decision was enforced. */
  enforced: boolean | null;
  /** `review` for a verdict on the action's result (a policy's `review`), else null. */
  stage: string | null;
}

/** One action (an `act` event). */
export interface ReportAction {
  id: string | null;
  timestamp: string | null;
  tool: string | null;
  result_status: string | null;
  outcome: string;
  duration_ms: number | null;
  /** The wrapped program's exit code, when the action ran one. */
  exit_code: number | null;
  /** `type: message` of the action's error. */
  error: string | null;
  input: Excerpt;
  /** The output without stdout/stderr, or null when there is none. */
  output: Excerpt | null;
  stdout: Excerpt | null;
  stderr: Excerpt | null;
  /** For a failed action: the last lines of its program's stderr (shown where the failure is listed), else null. */
  stderr_tail: StderrTail | null;
}

/** One step with everything that happened to it. */
export interface ReportStep {
  /** 1-based position in the report. */
  index: number;
  id: string;
  kind: string;
  description: string;
  /** The final step status (plan rebuilt from events). */
  status: string;
  /** Whether the step is in the latest plan. */
  in_plan: boolean;
  verdicts: ReportVerdict[];
  actions: ReportAction[];
  /** risk_tags of its action candidate. */
  risk_tags: string[];
  /** A human's decision on it (it waited for approval), or null. */
  decision: StepDecision | null;
}

const str = (x: unknown): string | null => (typeof x === "string" ? x : null);
const num = (x: unknown): number | null => (typeof x === "number" ? x : null);
/** Longest verdict message kept. */
const MESSAGE_CHARS = 1000;

/**
 * The step with this id in `steps`, created (status from its events) when missing.
 *
 * @example
 * ```ts
 * import { attach } from "./steps.ts";
 * const steps = new Map();
 * attach(steps, "step-1").actions.length; // 0
 * ```
 */
export function attach(steps: Map<string, ReportStep>, id: string): ReportStep {
  let s = steps.get(id);
  if (!s) {
    s = {
      index: 0,
      id,
      kind: "?",
      description: "",
      status: "pending",
      in_plan: false,
      verdicts: [],
      actions: [],
      risk_tags: [],
      decision: null,
    };
    steps.set(id, s);
  }
  return s;
}

function errorText(error: unknown): string | null {
  if (error === null || error === undefined) return null;
  const e = asRecord(error);
  if (typeof e.message !== "string") return typeof error === "string" ? error : JSON.stringify(error);
  const where = typeof e.at === "string"
    ? ` (at ${e.at})`
    : typeof e.file === "string"
    ? ` (${e.file}${typeof e.line === "number" ? `:${e.line}` : ""})`
    : "";
  return `${typeof e.type === "string" ? `${e.type}: ` : ""}${e.message}${where}`;
}

/**
 * A verdict from a `direction` or `governance` event.
 *
 * @example
 * ```ts
 * import { verdictOf } from "./steps.ts";
 * const p = { decision: "veto", rule: "policy.veto:SqlGuard@1.0", message: "DROP", enforced: true };
 * verdictOf("governance", {}, p).veto; // true
 * ```
 */
export function verdictOf(
  phase: "direction" | "governance",
  event: Record<string, unknown>,
  p: Record<string, unknown>,
): ReportVerdict {
  const timestamp = str(event.timestamp);
  const err = errorText(p.error);
  if (phase === "direction") {
    const failure = err !== null || p.status === "blocked";
    return {
      faculty: "direction",
      timestamp,
      source: str(p.policy) ?? str(p.policy_id) ?? str(event.agent_id),
      verdict: str(p.kind),
      status: str(p.status),
      confidence: num(p.confidence),
      message: clip(err ?? [str(p.advice), str(p.reason)].filter(Boolean).join(" · "), MESSAGE_CHARS).head,
      veto: !failure && p.kind === "veto" && p.status === "applied",
      failure,
      enforced: null,
      stage: str(p.stage),
    };
  }
  const rule = str(p.rule_id) ?? str(p.rule);
  const failure = /^(policy|review)\.failure:/.test(rule ?? "") || err !== null;
  const enforced = typeof p.enforced === "boolean" ? p.enforced : null;
  // A review says what the agent saw of the result (and, redacted, what it got instead, in the event).
  const saw = p.stage === "review" && typeof p.agent_saw === "string" && p.agent_saw !== "none"
    ? ` (the agent saw the ${p.agent_saw} result)`
    : "";
  return {
    faculty: "governance",
    timestamp,
    source: rule,
    verdict: str(p.decision),
    status: enforced === null ? null : enforced ? "enforced" : "audit",
    confidence: null,
    message: clip((str(p.message) ?? err ?? "") + saw, MESSAGE_CHARS).head,
    veto: !failure && p.decision === "veto",
    failure,
    enforced,
    stage: str(p.stage),
  };
}

/**
 * An action from an `act` event, its input and output cut to `excerptChars`
 * (JSON on one line when `compact`: big episodes).
 *
 * @example
 * ```ts
 * import { actionOf } from "./steps.ts";
 * const a = actionOf({}, { outcome: "exit 0", input: { argv: ["ls"] }, output: { exit_code: 0, stdout: "a\n" } }, 2000);
 * a.stdout?.head; // "a\n"
 * ```
 */
export function actionOf(
  event: Record<string, unknown>,
  p: Record<string, unknown>,
  excerptChars: number,
  compact = false,
): ReportAction {
  const out = p.output;
  let output: Excerpt | null = null, stdout: Excerpt | null = null, stderr: Excerpt | null = null;
  let exitCode = num(p.exit_code);
  if (typeof out === "object" && out !== null && !Array.isArray(out)) {
    const { stdout: so, stderr: se, ...rest } = out as Record<string, unknown>;
    if (typeof so === "string" && so !== "") stdout = clip(so, excerptChars);
    if (typeof se === "string" && se !== "") stderr = clip(se, excerptChars);
    exitCode ??= num(rest.exit_code);
    if (Object.keys(rest).length > 0) output = clipValue(rest, excerptChars, compact);
  } else if (out !== undefined && out !== null) output = clipValue(out, excerptChars, compact);
  const input = p.input !== undefined ? p.input : str(p.input_excerpt) ?? "";
  return {
    id: str(p.action_id),
    timestamp: str(event.timestamp),
    tool: str(p.tool),
    result_status: str(p.result_status),
    outcome: clip(str(p.outcome) ?? "", MESSAGE_CHARS).head,
    duration_ms: num(p.duration_ms),
    exit_code: exitCode,
    error: errorText(p.error),
    input: clipValue(input, excerptChars, compact),
    output,
    stdout,
    stderr,
    stderr_tail: p.result_status === "error" ? stderrTail(asRecord(out).stderr) : null,
  };
}
