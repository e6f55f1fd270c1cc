/**
 * An episode as OpenTelemetry spans, following the GenAI semantic
 * conventions, built from its records one at a time (the same whether the
 * episode is read after the fact or followed while it runs):
 *
 * - `invoke_agent {agent}`: the root, one per episode, from the `start` event
 *   to the last event, with the outcome and verification under `noema.*`;
 * - `execute_tool {tool}`: one per `act` event (an act step), from the step's
 *   first event to its `act`, with `gen_ai.tool.name`, `gen_ai.tool.call.id`,
 *   the governance decision and each policy verdict (`noema.policy.*`, one span
 *   event per verdict); a vetoed call has an ERROR status with the reason;
 * - `chat {model}`: one per model turn (see `model_turns.ts`), with its tokens.
 *
 * Policy verdicts are noema's own facts (`noema.policy.*`), not
 * `apply_guardrail` spans: the conventions reserve that name for guardrails.
 * Content (arguments, results, messages, the task) is only set when
 * `capture` is on; it is the files' text, so it is masked as they are.
 *
 * @module
 */
import {
  type Attributes,
  type HrTime,
  SpanKind,
  type SpanStatus,
  SpanStatusCode,
  TraceFlags,
} from "@opentelemetry/api";
import type { InstrumentationScope } from "@opentelemetry/core";
import type { Resource } from "@opentelemetry/resources";
import type { ReadableSpan, TimedEvent } from "@opentelemetry/sdk-trace";
import { hrDuration, hrTimeOf, msToHrTime, spanIdOf, traceIdOf } from "./ids.ts";
import type { ModelTurnRecord } from "./model_turns.ts";

/** An event record, as `events.jsonl` has it. */
export interface EpisodeEvent {
  id: string;
  timestamp: string;
  phase: string;
  event_type?: string;
  agent_id?: string;
  payload: Record<string, unknown>;
}

/** Options of {@link EpisodeSpans}. */
export interface EpisodeSpansOptions {
  /** The episode's id. */
  episodeId: string;
  /** The episode's directory (`noema.episode.dir`). */
  dir: string;
  /** The resource every span carries (service name, resource attributes). */
  resource: Resource;
  /** The instrumentation scope (noema and its version). */
  scope: InstrumentationScope;
  /** Set content attributes (arguments, results, messages). @default {false} */
  capture?: boolean;
}

/** What a step gathered before its `act` event. */
interface OpenStep {
  start: HrTime;
  verdicts: TimedEvent[];
  governance: Record<string, unknown> | null;
  callId: string | null;
}

/** Providers of the agents noema drives, for `gen_ai.provider.name` when no model turn names one. */
const AGENT_PROVIDERS: Record<string, string> = {
  "claude-code": "anthropic",
  codex: "openai",
  gemini: "gcp.gemini",
};

/** Keeps only the attributes that have a value. */
function attrs(entries: Record<string, unknown>): Attributes {
  const out: Attributes = {};
  for (const [k, v] of Object.entries(entries)) {
    if (v === null || v === undefined) continue;
    if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") out[k] = v;
    else if (Array.isArray(v) && v.every((x) => typeof x === "string")) out[k] = v as string[];
    else out[k] = JSON.stringify(v);
  }
  return out;
}

function str(v: unknown): string | null {
  return typeof v === "string" && v !== "" ? v : null;
}

/**
 * Builds an episode's spans from its records, in file order.
 *
 * @example
 * ```ts
 * const b = new EpisodeSpans({ episodeId, dir, resource, scope });
 * const spans = events.flatMap((e) => b.event(e));
 * spans.push(...turns.map((t) => b.turn(t)));
 * const root = b.root(summary);
 * ```
 */
export class EpisodeSpans {
  readonly #o: EpisodeSpansOptions;
  readonly traceId: string;
  readonly #rootId: string;
  #start: HrTime | null = null;
  #last: HrTime | null = null;
  #startPayload: Record<string, unknown> = {};
  #terminate: Record<string, unknown> | null = null;
  #provider: string | null = null;
  #steps = new Map<string, OpenStep>();
  #rootEvents: TimedEvent[] = [];
  #counts = { tools: 0, vetoed: 0, turns: 0, input: 0, output: 0 };

  constructor(options: EpisodeSpansOptions) {
    this.#o = options;
    this.traceId = traceIdOf(options.episodeId);
    this.#rootId = spanIdOf(options.episodeId, "root");
  }

  /** Whether the `start` event was seen (a root span can be made). */
  get started(): boolean {
    return this.#start !== null;
  }

  /** Takes the next event; returns the spans it completes (an `act` completes its tool span). */
  event(e: EpisodeEvent): ReadableSpan[] {
    const at = hrTimeOf(e.timestamp);
    if (at === null) return [];
    this.#last = at;
    const p = e.payload ?? {};
    switch (e.phase) {
      case "start":
        this.#start ??= at;
        this.#startPayload = p;
        return [];
      case "direction":
      case "action_candidate":
      case "governance":
        this.#onStepEvent(e, at, p);
        return [];
      case "act":
        return [this.#toolSpan(e, at, p)];
      case "terminate":
        this.#terminate = p;
        return [];
      case "runtime":
        this.#onRuntime(e, at, p);
        return [];
      default:
        return [];
    }
  }

  #step(stepId: string, at: HrTime): OpenStep {
    let s = this.#steps.get(stepId);
    if (!s) this.#steps.set(stepId, s = { start: at, verdicts: [], governance: null, callId: null });
    return s;
  }

  #onStepEvent(e: EpisodeEvent, at: HrTime, p: Record<string, unknown>): void {
    const inner = (p.payload ?? {}) as Record<string, unknown>;
    const stepId = str(p.step_id) ?? str(inner.step_id);
    if (stepId === null) return;
    const s = this.#step(stepId, at);
    if (e.phase === "governance") s.governance = p;
    else if (e.phase === "action_candidate") s.callId = str(inner.call_id);
    else {
      s.verdicts.push({
        name: "noema.policy.verdict",
        time: at,
        attributes: attrs({
          "noema.policy.id": p.policy_id ?? p.policy,
          "noema.policy.verdict": p.kind,
          "noema.policy.status": p.status,
          "noema.policy.confidence": p.confidence,
          "noema.policy.reason": p.advice ?? p.reason ?? p.error,
          "noema.policy.requires_approval": p.requires_approval,
        }),
      });
    }
  }

  #onRuntime(e: EpisodeEvent, at: HrTime, p: Record<string, unknown>): void {
    const type = e.event_type ?? str(p.kind);
    if (type === "run.interrupt") {
      this.#rootEvents.push({ name: "noema.pause", time: at, attributes: attrs({ "noema.pause.reason": p.reason }) });
    } else if (type === "run.resume") {
      const a = (p.approval ?? null) as Record<string, unknown> | null;
      this.#rootEvents.push({
        name: "noema.resume",
        time: at,
        attributes: attrs({
          "noema.approval.decision": a?.decision,
          "noema.approval.decided_by": a?.by,
          "noema.approval.claimed_by": a?.claimed_by,
          "noema.approval.note": this.#o.capture ? a?.note : null,
        }),
      });
    } else if (type !== null && type.endsWith(".unavailable")) {
      this.#rootEvents.push({ name: `noema.${type}`, time: at, attributes: attrs({ "noema.error": p.error }) });
    }
  }

  #toolSpan(e: EpisodeEvent, at: HrTime, p: Record<string, unknown>): ReadableSpan {
    const stepId = str(p.step_id) ?? e.id;
    const s = this.#steps.get(stepId);
    this.#steps.delete(stepId);
    const started = s?.start ?? hrTimeOf((e as { metrics?: { started_at?: string } }).metrics?.started_at) ?? at;
    const g = s?.governance ?? null;
    const prov = (p.provenance ?? {}) as Record<string, unknown>;
    const approval = (prov.approval ?? null) as Record<string, unknown> | null;
    const tool = str(p.tool) ?? "unknown";
    const vetoed = p.step_status === "vetoed" || prov.vetoed === true || g?.decision === "veto";
    const error = (p.error ?? null) as { message?: unknown } | null;
    const status: SpanStatus = vetoed
      ? { code: SpanStatusCode.ERROR, message: String(g?.message ?? p.outcome ?? "vetoed") }
      : p.result_status === "error"
      ? { code: SpanStatusCode.ERROR, message: String(error?.message ?? p.outcome ?? "error") }
      : { code: SpanStatusCode.UNSET };
    this.#counts.tools++;
    if (vetoed) this.#counts.vetoed++;
    const capture = this.#o.capture === true;
    const attributes = attrs({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": tool,
      "gen_ai.tool.call.id": str(prov.call_id) ?? s?.callId ?? p.action_id ?? e.id,
      "gen_ai.conversation.id": this.#conversationId(),
      "gen_ai.tool.call.arguments": capture ? p.input ?? p.input_excerpt : null,
      "gen_ai.tool.call.result": capture ? p.output ?? p.outcome : null,
      "noema.step.id": p.step_id,
      "noema.step.status": p.step_status,
      "noema.action.id": p.action_id,
      "noema.result.status": p.result_status,
      "noema.governance.decision": g?.decision,
      "noema.governance.rule": g?.rule_id ?? g?.rule,
      "noema.policy.id": g?.policy_id,
      "noema.policy.verdict": vetoed ? "veto" : g?.decision,
      "noema.policy.reason": g?.policy_id ? g?.message : null,
      "noema.approval.decision": approval?.decision,
      "noema.approval.decided_by": approval?.by,
      "noema.approval.claimed_by": approval?.claimed_by,
      "noema.approval.checkpoint_id": approval?.checkpoint_id,
    });
    return this.#span({
      key: e.id,
      name: `execute_tool ${tool}`,
      kind: SpanKind.INTERNAL,
      start: started,
      end: at,
      status,
      attributes,
      events: s?.verdicts ?? [],
    });
  }

  /** The `chat {model}` span of a model turn. */
  turn(t: ModelTurnRecord): ReadableSpan {
    const start = hrTimeOf(t.startedAt) ?? [0, 0];
    const end = msToHrTime(Date.parse(t.startedAt) + t.durationMs);
    this.#provider ??= t.provider;
    this.#counts.turns++;
    this.#counts.input += t.inputTokens ?? 0;
    this.#counts.output += t.outputTokens ?? 0;
    const capture = this.#o.capture === true;
    return this.#span({
      key: `turn:${t.turn}`,
      name: `chat ${t.model ?? "unknown"}`,
      kind: SpanKind.CLIENT,
      start,
      end,
      status: t.error ? { code: SpanStatusCode.ERROR, message: t.error.message } : { code: SpanStatusCode.UNSET },
      attributes: attrs({
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": t.provider,
        "gen_ai.request.model": t.model,
        "gen_ai.response.model": t.responseModel,
        "gen_ai.response.id": t.responseId,
        "gen_ai.response.finish_reasons": t.finishReasons.length ? t.finishReasons : null,
        "gen_ai.usage.input_tokens": t.inputTokens,
        "gen_ai.usage.output_tokens": t.outputTokens,
        "gen_ai.usage.cache_read.input_tokens": t.cacheReadTokens,
        "gen_ai.usage.cache_creation.input_tokens": t.cacheWriteTokens,
        "gen_ai.usage.reasoning.output_tokens": t.reasoningTokens,
        "gen_ai.conversation.id": this.#conversationId(),
        "gen_ai.input.messages": capture ? t.input : null,
        "gen_ai.output.messages": capture ? t.output : null,
        "error.type": t.error?.type,
        "noema.model.turn": t.turn,
      }),
      events: [],
    });
  }

  #conversationId(): string {
    const settings = (this.#startPayload.settings ?? {}) as {
      adapter?: { session_id?: unknown };
      session_id?: unknown;
    };
    return str(settings.adapter?.session_id) ?? str(settings.session_id) ?? this.#o.episodeId;
  }

  /**
   * The root `invoke_agent` span, from the `start` event to the last event
   * seen, or null before the `start` event. `summary` (summary.json, when
   * the run ended) adds the outcome and verification.
   */
  root(summary: Record<string, unknown> | null = null): ReadableSpan | null {
    if (this.#start === null) return null;
    const p = this.#startPayload, t = this.#terminate;
    const agent = str(p.using) ?? "agent";
    const status = str(t?.status) ?? "pending";
    const verification = (summary?.verification ?? null) as Record<string, unknown> | null;
    const failed = ["error", "vetoed", "aborted"].includes(status);
    return this.#span({
      key: "root",
      name: `invoke_agent ${agent}`,
      kind: SpanKind.INTERNAL,
      start: this.#start,
      end: this.#last ?? this.#start,
      root: true,
      status: failed
        ? { code: SpanStatusCode.ERROR, message: String(t?.message ?? status) }
        : { code: SpanStatusCode.UNSET },
      attributes: attrs({
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": this.#provider ?? AGENT_PROVIDERS[agent],
        "gen_ai.agent.name": agent,
        "noema.version": p.noema_version,
        "gen_ai.conversation.id": this.#conversationId(),
        "noema.episode.id": this.#o.episodeId,
        "noema.episode.dir": this.#o.dir,
        "noema.episode.status": status,
        "noema.outcome": summary?.outcome ?? t?.outcome,
        "noema.verification.provided": verification?.provided,
        "noema.verification.passed": verification?.passed,
        "noema.governance.mode": p.governance,
        "noema.policies": Array.isArray(p.policies) ? p.policies.map(String) : null,
        "noema.tool_calls": this.#counts.tools,
        "noema.vetoed_calls": this.#counts.vetoed,
        "gen_ai.usage.input_tokens": this.#counts.turns ? this.#counts.input : null,
        "gen_ai.usage.output_tokens": this.#counts.turns ? this.#counts.output : null,
        "noema.task": this.#o.capture ? p.task : null,
      }),
      events: this.#rootEvents,
    });
  }

  #span(s: {
    key: string;
    name: string;
    kind: SpanKind;
    start: HrTime;
    end: HrTime;
    status: SpanStatus;
    attributes: Attributes;
    events: TimedEvent[];
    root?: boolean;
  }): ReadableSpan {
    const traceId = this.traceId, spanId = spanIdOf(this.#o.episodeId, s.key);
    const end = (s.end[0] - s.start[0]) * 1e9 + (s.end[1] - s.start[1]) < 0 ? s.start : s.end; // never before its start
    return {
      name: s.name,
      kind: s.kind,
      spanContext: () => ({ traceId, spanId, traceFlags: TraceFlags.SAMPLED }),
      parentSpanContext: s.root
        ? undefined
        : { traceId, spanId: this.#rootId, traceFlags: TraceFlags.SAMPLED, isRemote: false },
      startTime: s.start,
      endTime: end,
      duration: hrDuration(s.start, end),
      ended: true,
      status: s.status,
      attributes: s.attributes,
      links: [],
      events: s.events,
      resource: this.#o.resource,
      instrumentationScope: this.#o.scope,
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    };
  }
}
