/**
 * The AI SDK hooks that make every tool call a governed step:
 *
 * - `experimental_refineToolInput` (runs first, once per parsed call, but
 *   without the call's id): gives each call its own input object;
 * - `toolApproval` (with the call id): proposes the call to the governor,
 *   applies an intervention's patch to that input object (so the patched
 *   input is what runs and what the conversation shows), and turns the
 *   decision into the SDK's answer: `deny` → `denied` with the reason (the
 *   model reads it as the tool result and the loop continues), `ask` →
 *   `user-approval` (the loop stops; the episode is paused), otherwise
 *   not-applicable. The call id makes a proposal idempotent: a call approved
 *   while the episode was paused is answered from the episode's record when
 *   the conversation resumes;
 * - `onToolExecutionStart` / `onToolExecutionEnd`: record the result, output
 *   or error, with its duration.
 *
 * The SDK swallows errors thrown in the execution callbacks, so recording
 * failures are collected in {@link GovernedHooks.failures} and the loop
 * checks them; {@link GovernedHooks.settle} waits for records in flight.
 *
 * @module
 */
import type { Decision, Governor, RecordedResult } from "./governor.ts";

/** A call the governor asked a human about. */
export interface PendingToolApproval {
  call_id: string;
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
}

/** Options of {@link governedHooks}. */
export interface GovernedHooksOptions {
  /** The display command of a call (policies see it as `action.command`). */
  command?: (tool: string, input: Record<string, unknown>) => string;
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
  const byCall = new Map<string, { decision: Decision; started: number }>();
  const inFlight = new Set<Promise<unknown>>();
  const hooks: GovernedHooks = {
    pending: [],
    calls: [],
    failures: [],
    // Each call gets its own input object: the decision below patches it in place, so what runs (and what
    // the conversation shows) is the patched input.
    experimental_refineToolInput: refinerFor((_tool, raw) =>
      Promise.resolve(typeof raw === "object" && raw !== null && !Array.isArray(raw) ? { ...raw } : raw)
    ),
    async toolApproval({ toolCall }) {
      const input = (typeof toolCall.input === "object" && toolCall.input !== null ? toolCall.input : {}) as Record<
        string,
        unknown
      >;
      // Proposed with the model's call id: the episode answers a call it already decided (e.g. one approved
      // while the episode was paused) from its record. A governor that throws fails the call closed.
      const decision = await governor.propose({
        kind: "tool",
        tool: toolCall.toolName,
        input,
        command: options.command?.(toolCall.toolName, input) ??
          `${toolCall.toolName} ${JSON.stringify(input)}`.slice(0, 200),
        call_id: toolCall.toolCallId,
      });
      if (decision.verdict === "patch" && input === toolCall.input) {
        for (const k of Object.keys(input)) delete input[k];
        Object.assign(input, structuredClone(decision.input));
      }
      byCall.set(toolCall.toolCallId, { decision, started: performance.now() });
      hooks.calls.push({ call_id: toolCall.toolCallId, tool: toolCall.toolName, decision });
      if (decision.verdict === "deny") return { type: "denied", reason: decision.reason ?? "vetoed by policy" };
      if (decision.verdict === "ask") {
        hooks.pending.push({
          call_id: toolCall.toolCallId,
          tool: toolCall.toolName,
          input: toolCall.input as Record<string, unknown>,
          reason: decision.reason ?? "approval required",
          step_id: decision.step_id,
          policy_id: decision.policy_id,
          checkpoint_id: decision.checkpoint_id,
        });
        return { type: "user-approval", reason: decision.reason ?? "approval required" };
      }
      return "not-applicable";
    },
    onToolExecutionStart({ toolCall }) {
      const entry = byCall.get(toolCall.toolCallId);
      if (entry) entry.started = performance.now();
    },
    onToolExecutionEnd(event) {
      const entry = byCall.get(event.toolCall.toolCallId);
      if (!entry) return Promise.resolve();
      const duration = typeof event.toolExecutionMs === "number"
        ? event.toolExecutionMs
        : performance.now() - entry.started;
      const p = governor.record(
        event.toolCall.toolCallId, // by call id: the episode records the act with the call's own tool and input
        resultOf(event.toolOutput as { type: string; output?: unknown; error?: unknown }, duration),
      ).catch((e) => {
        hooks.failures.push(e as Error);
      });
      inFlight.add(p);
      return p.finally(() => inFlight.delete(p));
    },
    async settle() {
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
  };
  return hooks;
}
