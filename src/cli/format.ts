/**
 * Small formatters shared by the human-readable outputs: one-line event
 * summaries, step markers, status colours, durations.
 *
 * @module
 */
import type { Colors } from "./output.ts";
import { neutralize, oneLine, truncate } from "./output.ts";
import { asRecord, ownEntry } from "../json.ts";

function scalar(value: unknown, max = 60): string | null {
  if (typeof value === "string") {
    const s = truncate(oneLine(value), max);
    return /^[\w.:/@+-]+$/.test(s) ? s : JSON.stringify(s);
  }
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return null;
}

/** Payload keys shown by {@link eventSummary}, in this order, when they hold a scalar. */
const SUMMARY_KEYS = [
  "status",
  "decision",
  "kind",
  "policy",
  "step_id",
  "step_status",
  "result_status",
  "tool",
  "confidence",
  "rule",
  "reason",
  "checkpoint_id",
  "source",
  "outcome",
  "message",
  "task",
] as const;

/**
 * A one-line summary of an event: `event_type` for runtime events, then the
 * key payload fields (status, decision, kind, policy, step, outcome…) as
 * `key=value`, plus counts for plans and learn pointers.
 *
 * @example
 * ```ts
 * import { eventSummary } from "./format.ts";
 * eventSummary({ phase: "act", payload: { step_id: "step-1", step_status: "done", outcome: "ok" } });
 * // "step_id=step-1 step_status=done outcome=ok"
 * ```
 */
export function eventSummary(event: Record<string, unknown>, maxValue = 60): string {
  const payload = asRecord(event.payload);
  const parts: string[] = [];
  if (typeof event.event_type === "string") parts.push(neutralize(event.event_type));
  for (const key of SUMMARY_KEYS) {
    if (key === "kind" && typeof event.event_type === "string" && payload.kind === event.event_type) continue;
    const v = scalar(payload[key], maxValue);
    if (v !== null) parts.push(`${key}=${v}`);
  }
  if (event.phase === "action_candidate") {
    const inner = asRecord(payload.payload);
    const id = scalar(payload.action_candidate_id, maxValue), step = scalar(inner.step_id, maxValue);
    if (id !== null) parts.push(`id=${id}`);
    if (step !== null && payload.step_id === undefined) parts.push(`step_id=${step}`);
  }
  if (event.phase === "plan") {
    const steps = Array.isArray(payload.step_records)
      ? payload.step_records
      : Array.isArray(payload.steps)
      ? payload.steps
      : null;
    if (steps) parts.push(`steps=${steps.length}`);
  }
  if (typeof payload.proposal_count === "number") parts.push(`proposals=${payload.proposal_count}`);
  if (Array.isArray(payload.proposal)) parts.push(`proposals=${payload.proposal.length}`);
  if (event.phase === "insight") {
    const m = asRecord(payload.metrics);
    for (const k of ["plan_adherence", "tool_coverage"]) if (typeof m[k] === "number") parts.push(`${k}=${m[k]}`);
  }
  if (parts.length === 0) {
    // Fall back to the first few scalar fields, whatever they are called.
    for (const [k, v] of Object.entries(payload)) {
      const s = scalar(v, maxValue);
      if (s !== null) parts.push(`${k}=${s}`);
      if (parts.length >= 4) break;
    }
  }
  return parts.join(" ");
}

/** The marker of a step status: ✓ done, ✗ failed, ⊘ vetoed, ↷ skipped, ▶ running, ○ pending. */
export const STEP_MARKERS: Record<string, string> = {
  done: "✓",
  failed: "✗",
  vetoed: "⊘",
  skipped: "↷",
  running: "▶",
  pending: "○",
};

/** Colours a status word by what it means: green good, red bad, yellow waiting, dim skipped. */
export function statusStyle(status: string, c: Colors): (s: string) => string {
  switch (status) {
    case "ok":
    case "done":
    case "success":
    case "allow":
    case "applied":
    case "passed":
      return c.green;
    case "error":
    case "failed":
    case "vetoed":
    case "veto":
    case "aborted":
    case "goal_not_achieved":
    case "blocked":
    case "unreadable":
    case "crashed":
    case "crashed_while_sealing":
    case "policy_failure":
      return c.red;
    case "pending":
    case "running":
    case "idle":
    case "partial":
    case "audit":
    case "success_unverified":
    case "paused":
    case "interrupted":
    case "waiting_for_approval":
      return c.yellow;
    default:
      return c.dim;
  }
}

/** A step status with its marker, coloured. */
export function stepMark(status: string, c: Colors): string {
  return statusStyle(status, c)(ownEntry(STEP_MARKERS, status) ?? "?");
}

/**
 * Milliseconds as a short human duration: `850ms`, `1.25s`, `2m05s`.
 *
 * @example
 * ```ts
 * import { formatMs } from "./format.ts";
 * formatMs(1250); // "1.25s"
 * ```
 */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return "-";
  const sign = ms < 0 ? "-" : "";
  const a = Math.abs(ms);
  if (a < 1) return `${sign}${Math.round(a * 1000) / 1000}ms`;
  if (a < 1000) return `${sign}${Math.round(a * 10) / 10}ms`;
  if (a < 60_000) return `${sign}${Math.round(a / 10) / 100}s`;
  const m = Math.floor(a / 60_000);
  const s = Math.round((a % 60_000) / 1000);
  return `${sign}${m}m${String(s).padStart(2, "0")}s`;
}

/** Milliseconds between two ISO timestamps, or `null` when either is not a date. */
export function msBetween(from: unknown, to: unknown): number | null {
  if (typeof from !== "string" || typeof to !== "string") return null;
  const a = Date.parse(from), b = Date.parse(to);
  return Number.isNaN(a) || Number.isNaN(b) ? null : b - a;
}
