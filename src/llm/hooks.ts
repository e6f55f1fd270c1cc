/**
 * The AI SDK hooks that make every tool call a governed step. The SDK calls
 * them in this order for each call:
 *
 * - `experimental_refineToolInput` (once per parsed call, before anything
 *   else sees it, but without the call's id): proposes the call to the
 *   governor, the one policy consultation of the call, and returns the input
 *   after interventions, so the patched input is what the SDK validates,
 *   executes, records and shows the model;
 * - `toolApproval` (with the call id): turns that decision into the SDK's
 *   answer: `deny` → `denied` with the reason (the model reads it as the
 *   tool result and the loop continues), `ask` → `user-approval` (the loop
 *   stops and the episode pauses once the calls decided before it ran; the
 *   later calls of the turn are held back: neither proposed nor run, but
 *   refused with a reason the model reads, to call them again after the
 *   decision), otherwise not-applicable, once the
 *   governor's `beforeExecute` made its record durable (an episode writes
 *   the events it holds; if that fails, the call is denied);
 * - `onToolExecutionStart` / `onToolExecutionEnd`: record the result, output
 *   or error, with its duration.
 *
 * Since refinement has no call id, each decision is proposed under a key of
 * its own and found again by the refined input object; `toolApproval` binds
 * the model's call id to it. A paused call keeps its key
 * ({@link PendingToolApproval.key}): hooks created with
 * {@link GovernedHooksOptions.resumed} answer the approved call from the
 * governor's record of that key (the episode reads the approval) instead of
 * asking again. A call the refinement did not see (a governor that failed
 * there is a tool error the model reads) is proposed in `toolApproval`.
 *
 * The SDK swallows errors thrown in the execution callbacks, so recording
 * failures are collected in {@link GovernedHooks.failures} and the loop
 * checks them; {@link GovernedHooks.settle} waits for records in flight.
 *
 * @module
 */
import { nodeUtil } from "../builtins.ts";
import { heldCallReason } from "../runtime/core/held_call.ts";
import type { Decision, Governor, RecordedResult } from "./governor.ts";

/** A call the governor asked a human about. */
export interface PendingToolApproval {
  /** The model's id for the call. */
  call_id: string;
  /** The governor's id for the call (what it was proposed under); the call id when absent. */
  key?: string;
  tool: string;
  input: Record<string, unknown>;
  reason: string;
  step_id: string;
  policy_id: string | null;
  checkpoint_id?: string;
}

/** One governed call as the hooks saw it. */
export interface HookCall {
  call_id: string;
  tool: string;
  decision: Decision;
}

/** What {@link governedHooks} returns: spread the first four into `generateText`/`streamText`. */
export interface GovernedHooks {
  // deno-lint-ignore no-explicit-any
  toolApproval: (options: { toolCall: { toolCallId: string; toolName: string; input: unknown } }) => Promise<any>;
  experimental_refineToolInput: Record<string, (input: unknown) => Promise<unknown>>;
  onToolExecutionStart: (event: { toolCall: { toolCallId: string } }) => void;
  // deno-lint-ignore no-explicit-any
  onToolExecutionEnd: (event: any) => Promise<void>;
  /** Calls that wait for approval (the loop stopped on them). */
  pending: PendingToolApproval[];
  /** Every governed call, in decision order. */
  calls: HookCall[];
  /** Recording errors (the SDK would swallow them). */
  failures: Error[];
  /** Resolves when every record in flight is written. */
  settle(): Promise<void>;
  /** The hints the policies gave a call (by the model's call id), once it was decided; none before. */
  hintsFor(callId: string): readonly string[];
  /**
   * Records a call's output as soon as its tool returned, before the model gets it, and returns what the
   * model gets: the output as the policies' `review` left it (`shown`, with their hints), or a block (the
   * tool then throws `reason`, an error result the model reads). The later `onToolExecutionEnd` of the call
   * records nothing more.
   */
  reviewResult(callId: string, output: unknown, durationMs: number): Promise<ReviewedOutput>;
}

/** What the model gets of a call's output after review: `shown`, or a block with its reason. */
export type ReviewedOutput =
  | { blocked: false; shown: unknown; hints: readonly string[] }
  | { blocked: true; reason: string };

/** Options of {@link governedHooks}. */
export interface GovernedHooksOptions {
  /** The display command of a call (policies see it as `action.command`). */
  command?: (tool: string, input: Record<string, unknown>) => string;
  /**
   * The calls a paused run left waiting (its `pending`), when the
   * conversation continues with their approval responses. @default {[]}
   */
  resumed?: readonly PendingToolApproval[];
}

/** A decision and the key it was proposed under; `null`: not proposed, held back (see {@link HookContext.held}). */
interface Decided {
  key: string;
  decision: Decision | null;
}

/** What a finished call records: its output, or its error. */
function resultOf(out: { type: string; output?: unknown; error?: unknown }, durationMs: number): RecordedResult {
  const duration_ms = Math.round(durationMs * 1000) / 1000;
  if (out.type !== "tool-error") return { status: "ok", outcome: "ok", output: out.output, duration_ms };
  const err = out.error as { name?: string; message?: string } | undefined;
  const message = err?.message ?? String(out.error);
  return {
    status: "error",
    outcome: `tool error: ${message}`.slice(0, 300),
    error: { type: err?.name ?? "ToolError", message },
    duration_ms,
  };
}

function refinerFor(refine: (tool: string, input: unknown) => Promise<unknown>) {
  // Every tool name is an own property, so tools added later (MCP, the caller's own) are governed too.
  const cache = new Map<string, (input: unknown) => Promise<unknown>>();
  const get = (name: string) => {
    let f = cache.get(name);
    if (!f) cache.set(name, f = (input: unknown) => refine(name, input));
    return f;
  };
  return new Proxy({} as Record<string, (input: unknown) => Promise<unknown>>, {
    get: (_t, key) => typeof key === "string" ? get(key) : undefined,
    has: (_t, key) => typeof key === "string",
    getOwnPropertyDescriptor: (_t, key) =>
      typeof key === "string" ? { configurable: true, enumerable: true, writable: false, value: get(key) } : undefined,
  });
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

/**
 * Creates the hooks for one agent run.
 *
 * @example
 * ```ts
 * import { generateText } from "ai";
 * import { governedHooks, PolicyGovernor } from "noema";
 * const hooks = governedHooks(await PolicyGovernor.create({ policies: ["./no-rm.ts"] }));
 * // await generateText({ model, tools, prompt, ...hooks });
 * ```
 */
export function governedHooks(governor: Governor, options: GovernedHooksOptions = {}): GovernedHooks {
  const resumed = new Map((options.resumed ?? []).map((p) => [p.call_id, p]));
  const ctx: HookContext = {
    governor,
    byInput: new WeakMap(),
    byCall: new Map(),
    resumed,
    unclaimed: [...resumed.values()],
    inFlight: new Set(),
    held: null,
    propose: null as unknown as HookContext["propose"],
    hooks: null as unknown as GovernedHooks,
  };
  ctx.propose = proposer(ctx, options);
  const hooks: GovernedHooks = {
    pending: [],
    calls: [],
    failures: [],
    experimental_refineToolInput: refinerFor((tool, raw) => refineCall(ctx, tool, raw)),
    toolApproval: ({ toolCall }) => approveCall(ctx, toolCall),
    onToolExecutionStart({ toolCall }) {
      const entry = ctx.byCall.get(toolCall.toolCallId);
      if (entry) entry.started = performance.now();
    },
    onToolExecutionEnd: (event) => recordEnd(ctx, event),
    async settle() {
      while (ctx.inFlight.size > 0) await Promise.all([...ctx.inFlight]);
    },
    hintsFor: (callId) => ctx.byCall.get(callId)?.decision?.hints ?? [],
    reviewResult: (callId, output, durationMs) => reviewCall(ctx, callId, output, durationMs),
  };
  ctx.hooks = hooks;
  return hooks;
}

/** What the hooks of one loop share. */
interface HookContext {
  governor: Governor;
  /** Decisions by the refined input object (refinement happens before the call id is known). */
  byInput: WeakMap<object, Decided>;
  byCall: Map<string, Decided & { started: number; recorded?: boolean }>;
  /** Calls of a paused run, by call id. */
  resumed: Map<string, PendingToolApproval>;
  /** Resumed calls the SDK has not refined again yet. */
  unclaimed: PendingToolApproval[];
  inFlight: Set<Promise<unknown>>;
  /**
   * The call the episode pauses on (an `ask` of a governor that pauses), once one asked: the checkpoint must be the
   * episode's last event until a human decides, so the later calls of the turn are neither proposed nor run;
   * they are refused with `heldCallReason` and the model calls them again after the decision. (Calls decided
   * before it still run: the episode pauses once they have, see `Governor.pauseDeferred`.)
   */
  held: { tool: string; step_id: string } | null;
  /** Proposes a call; `null` when it is held back. */
  propose: (tool: string, input: Record<string, unknown>, key: string) => Promise<Decision | null>;
  hooks: GovernedHooks;
}

/**
 * Proposals one at a time, in the order the SDK refines the calls (it refines parallel calls concurrently);
 * once one paused the episode, the rest are held back (`null`).
 */
function proposer(ctx: HookContext, options: GovernedHooksOptions): HookContext["propose"] {
  let queue: Promise<unknown> = Promise.resolve();
  return (tool, input, key) => {
    const p = queue.then(async () => {
      if (ctx.held) return null;
      // A governor that pauses holds one waiting call at a time, paused once the turn's other calls ran.
      const pauses = ctx.governor.pauseDeferred !== undefined;
      const d = await ctx.governor.propose({
        kind: "tool",
        tool,
        input,
        command: options.command?.(tool, input) ?? `${tool} ${JSON.stringify(input)}`.slice(0, 200),
        call_id: key,
        ...(pauses ? { on_ask: "defer" as const } : {}),
      });
      if (d.verdict === "ask" && (d.checkpoint_id || pauses)) ctx.held = { tool, step_id: d.step_id };
      return d;
    });
    queue = p.catch(() => {});
    return p;
  };
}

/** `experimental_refineToolInput`: the policies are consulted here, once per call; the patched input is what runs. */
async function refineCall(ctx: HookContext, tool: string, raw: unknown): Promise<unknown> {
  if (!isRecord(raw)) return raw;
  // The SDK refines an approved call again before it runs and requires the same input back.
  const i = ctx.unclaimed.findIndex((p) => p.tool === tool && nodeUtil().isDeepStrictEqual(p.input, raw));
  if (i >= 0) {
    ctx.unclaimed.splice(i, 1);
    return raw;
  }
  // A governor that throws fails the call closed: the SDK makes it a tool error the model reads.
  const key = `${tool}:${crypto.randomUUID()}`;
  const decision = await ctx.propose(tool, raw, key);
  // The input after interventions, as a copy of its own (the governor keeps its record).
  const same = !decision || decision.verdict === "allow" || decision.verdict === "deny" || decision.input === raw;
  const refined = same ? raw : structuredClone(decision!.input);
  ctx.byInput.set(refined as object, { key, decision });
  return refined;
}

/** `toolApproval`: the refinement's decision, bound to the model's call id, as the SDK's answer. */
async function approveCall(
  ctx: HookContext,
  toolCall: { toolCallId: string; toolName: string; input: unknown },
): Promise<"not-applicable" | { type: "denied" | "user-approval"; reason: string }> {
  const id = toolCall.toolCallId;
  const input = (isRecord(toolCall.input) ? toolCall.input : {}) as Record<string, unknown>;
  const waiting = ctx.resumed.get(id);
  let d = isRecord(toolCall.input) ? ctx.byInput.get(toolCall.input) : undefined;
  if (!d && waiting) {
    // An approved (or rejected) call of a paused run: the governor answers from its record.
    const key = waiting.key ?? waiting.call_id;
    d = { key, decision: await ctx.propose(toolCall.toolName, input, key) };
  }
  d ??= { key: id, decision: await ctx.propose(toolCall.toolName, input, id) };
  const { decision } = d;
  if (decision === null) return { type: "denied", reason: heldCallReason(ctx.held) };
  if (d.key !== id) ctx.governor.bindCall?.(d.key, id);
  ctx.byCall.set(id, { ...d, started: performance.now() });
  ctx.hooks.calls.push({ call_id: id, tool: toolCall.toolName, decision });
  if (decision.verdict === "deny") return { type: "denied", reason: decision.reason ?? "vetoed by policy" };
  if (decision.verdict !== "ask") return beforeExecute(ctx);
  ctx.hooks.pending.push({
    call_id: id,
    key: d.key,
    tool: toolCall.toolName,
    input,
    reason: decision.reason ?? "approval required",
    step_id: decision.step_id,
    policy_id: decision.policy_id,
    checkpoint_id: decision.checkpoint_id,
  });
  return { type: "user-approval", reason: decision.reason ?? "approval required" };
}

/** An allowed call is about to run: the governor makes its record durable first; if it cannot, the call is denied. */
function beforeExecute(ctx: HookContext): "not-applicable" | { type: "denied"; reason: string } {
  try {
    ctx.governor.beforeExecute?.();
    return "not-applicable";
  } catch (e) {
    ctx.hooks.failures.push(e as Error);
    return { type: "denied", reason: `noema could not record the decision: ${(e as Error)?.message ?? String(e)}` };
  }
}

/** `onToolExecutionEnd`: the result recorded under the call's key (errors collected, never thrown into the SDK). */
function recordEnd(
  ctx: HookContext,
  event: { toolCall: { toolCallId: string }; toolExecutionMs?: number; toolOutput: unknown },
): Promise<void> {
  const entry = ctx.byCall.get(event.toolCall.toolCallId);
  if (!entry || entry.recorded) return Promise.resolve(); // recorded when its tool returned (reviewCall)
  const duration = typeof event.toolExecutionMs === "number"
    ? event.toolExecutionMs
    : performance.now() - entry.started;
  const p = ctx.governor.record(
    entry.key, // the episode records the act with the call's own tool and (refined) input
    resultOf(event.toolOutput as { type: string; output?: unknown; error?: unknown }, duration),
  ).then(() => {}, (e) => {
    ctx.hooks.failures.push(e as Error);
  });
  ctx.inFlight.add(p);
  return p.finally(() => ctx.inFlight.delete(p));
}

/**
 * A call's output recorded (and reviewed) as its tool returns, before the SDK hands it to the model: what the
 * model gets. A recording failure is collected (as in {@link recordEnd}) and withholds the output.
 */
async function reviewCall(
  ctx: HookContext,
  callId: string,
  output: unknown,
  durationMs: number,
): Promise<ReviewedOutput> {
  const entry = ctx.byCall.get(callId);
  if (!entry) return { blocked: false, shown: output, hints: [] };
  entry.recorded = true;
  const result: RecordedResult = {
    status: "ok",
    outcome: "ok",
    output,
    duration_ms: Math.round(durationMs * 1000) / 1000,
  };
  const p = ctx.governor.record(entry.key, result, { replace: true });
  ctx.inFlight.add(p);
  try {
    const review = await p;
    if (!review) return { blocked: false, shown: output, hints: [] };
    if (review.decision === "block" && review.agent_saw === "blocked") {
      const why = review.reason ?? "blocked by policy";
      return { blocked: true, reason: review.policy_id ? `noema (${review.policy_id}): ${why}` : `noema: ${why}` };
    }
    return { blocked: false, shown: review.agent_saw === "redacted" ? review.shown : output, hints: review.hints };
  } catch (e) {
    ctx.hooks.failures.push(e as Error);
    return { blocked: true, reason: `noema could not record the result: ${(e as Error)?.message ?? String(e)}` };
  } finally {
    ctx.inFlight.delete(p);
  }
}
