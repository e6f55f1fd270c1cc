/**
 * Direction: consulting the policies before an action and deciding what
 * each verdict does under the run's intuition mode and confidence threshold.
 *
 * | verdict      | advisory                  | interventive           | hybrid                    |
 * |--------------|---------------------------|------------------------|---------------------------|
 * | hint         | applied (passed as advice) | applied                | applied                   |
 * | intervention | skipped (recorded only)   | applied (patch merged) | skipped (recorded only)   |
 * | veto         | skipped (recorded only)   | applied (asks to block)| applied (asks to block)   |
 *
 * A verdict below the threshold is `skipped`. A policy that throws, times out
 * or returns something that is not a verdict is `blocked` and reported to
 * governance as a failure.
 *
 * Timeouts: policy files run in a worker thread by default (see
 * `policy_host.ts`), so any call, even a synchronous endless loop, is cut off
 * at `timeoutMs` and the worker is terminated. Policies passed in-process as
 * objects or classes (library API) run in the caller's thread: an async call
 * is cut off at the timeout, but a synchronous endless loop cannot be (the
 * thread never yields); load such a policy from a file to isolate it.
 *
 * @module
 */
import type { Verdict } from "../plugins/api.ts";
import {
  copyPlainJson,
  cutString,
  loneSurrogateProblem,
  type PlainJson,
  PLUGIN_LIMITS,
} from "../plugins/plain_json.ts";
import { captureOutput } from "../plugins/plugin_output.ts";
import { describeThrown } from "../plugins/thrown.ts";
import { restorePrototypes } from "../plugins/prototype_guard.ts";
import type { LoadedPolicy } from "../plugins/loader.ts";
import { verdictProblem } from "../plugins/loader.ts";
import type { PolicyState } from "../plugins/api.ts";
import type { IntuitionMode } from "../schema/state.ts";
import { ownEntry } from "../json.ts";

/** The outcome of consulting one policy. */
export interface DirectionOutcome {
  /** The policy. */
  policy: LoadedPolicy;
  /** The verdict, when the policy returned one. */
  verdict: Verdict | null;
  /** `applied`, `skipped` or `blocked`. */
  status: "applied" | "skipped" | "blocked";
  /** Why it was skipped or blocked. */
  reason: string | null;
  /**
   * The failure, when the policy threw, timed out or returned garbage; `at` is where a throw happened in the
   * policy's file (`no-rm.ts:12:11`), when its stack says.
   */
  error: { type: string; message: string; at?: string } | null;
  /** Wall time of `advise`, milliseconds. */
  duration_ms: number;
  /** When `advise` started and ended. */
  started_at: string;
  completed_at: string;
  /** Changes an applied intervention made to the action input. */
  diff: { key: string; before: unknown; after: unknown }[];
  /** The confidence threshold that applied. */
  threshold: number;
}

const DEFAULT_CONFIDENCE = { hint: 0.5, intervention: 0.6, veto: 0.8 } as const;

/** A policy call that did not settle within the policy timeout. */
export class PolicyTimeout extends Error {
  constructor(ms: number, method = "advise") {
    super(`${method} did not settle within ${ms} ms`);
    this.name = "PolicyTimeout";
  }
}

/** Calls `fn`; a promise it returns that does not settle within `ms` rejects with a {@link PolicyTimeout}. */
export async function callWithTimeout(fn: () => unknown, ms: number, method = "advise"): Promise<unknown> {
  const result = fn();
  if (!(result instanceof Promise) && !(typeof result === "object" && result !== null && "then" in result)) {
    return result;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      result as Promise<unknown>,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new PolicyTimeout(ms, method)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const MUTATION = /read-?\s?only|frozen|not extensible|Cannot (assign|add|delete|define)|Attempted to (assign|delete)/i;

/** What a policy threw or rejected with, as a direction error (never throws). */
export function policyError(e: unknown, policy: LoadedPolicy): NonNullable<DirectionOutcome["error"]> {
  if (e instanceof PolicyTimeout) return { type: "PolicyTimeout", message: e.message };
  const worker = policy.isolation === "worker";
  // A worker policy's error was described in the worker (its stack is there); in this thread, from the stack.
  const d = describeThrown(e, worker ? null : policy.path);
  if (worker && e instanceof Error && typeof (e as { at?: unknown }).at === "string") {
    d.at = (e as { at?: string }).at;
  }
  if (d.type === "TypeError" && MUTATION.test(d.message)) d.type = "StateMutation";
  return d;
}

/**
 * Applies an intervention's patch to an action input: keys are set, `null`
 * deletes a key. Returns the new input and the diff.
 *
 * @example
 * ```ts
 * import { applyPatch } from "noema";
 * applyPatch({ sql: "SELECT *" }, { sql: "SELECT * LIMIT 10" }).diff[0].key; // "sql"
 * ```
 */
export function applyPatch(
  input: Readonly<Record<string, unknown>>,
  patch: Readonly<Record<string, unknown>>,
): { input: Record<string, unknown>; diff: { key: string; before: unknown; after: unknown }[] } {
  const next: Record<string, unknown> = { ...input };
  const diff: { key: string; before: unknown; after: unknown }[] = [];
  for (const [key, after] of Object.entries(patch)) {
    // Own keys only, and defined, not assigned: a key `__proto__` (JSON.parse makes one) is a key like any other, never
    // the input's prototype, so what the adapter reads is what the record shows.
    const before = ownEntry(input, key);
    if (after === null) {
      if (Object.hasOwn(next, key)) {
        delete next[key];
        diff.push({ key, before, after: null });
      }
    } else if (JSON.stringify(before) !== JSON.stringify(after)) {
      Object.defineProperty(next, key, { value: after, enumerable: true, writable: true, configurable: true });
      diff.push({ key, before: before ?? null, after });
    }
  }
  return { input: next, diff };
}

/** Settings of one consultation. */
export interface ConsultSettings {
  intuitionMode: IntuitionMode;
  /** Threshold per policy id (learned tuning), else `defaultThreshold`. */
  thresholds: ReadonlyMap<string, number>;
  defaultThreshold: number;
  timeoutMs: number;
  now(): string;
}

/**
 * Consults one policy. Never throws: failures come back as `blocked`
 * outcomes with an error.
 *
 * @example
 * ```ts
 * import { consultPolicy } from "noema";
 * // const outcome = await consultPolicy(policy, state, settings);
 * ```
 */
export async function consultPolicy(
  policy: LoadedPolicy,
  state: PolicyState,
  settings: ConsultSettings,
): Promise<DirectionOutcome> {
  const threshold = settings.thresholds.get(policy.id) ?? settings.defaultThreshold;
  const started_at = settings.now();
  const t0 = performance.now();
  let raw: unknown, error: DirectionOutcome["error"] = null;
  // A policy in this thread prints to stderr, not stdout, while it runs (worker policies: in the worker).
  const endOutput = policy.isolation === "worker" ? () => {} : captureOutput(`policy ${policy.id}`);
  // A policy file in this thread shares noema's built-ins: whatever it changed of them is put back at once (before
  // noema's own code runs again) and fails the call closed (prototype_guard.ts).
  const polluted: string[] = [];
  const guard = policy.isolation !== "worker" && typeof policy.path === "string"
    ? () => {
      const changed = restorePrototypes(); // first: `polluted.push` may be the policy's until then
      for (const name of changed) polluted.push(name);
    }
    : () => {};
  try {
    // A worker a timeout stopped starts again and reloads the policy first, outside this call's timeout.
    await policy.prepare?.();
    raw = await callWithTimeout(() => {
      try {
        return policy.advise(state);
      } finally {
        guard();
      }
    }, settings.timeoutMs);
  } catch (e) {
    guard();
    // A worker policy still running after its timeout is stopped (its worker terminated and restarted later).
    if (e instanceof PolicyTimeout) policy.abort?.();
    error = policyError(e, policy);
  } finally {
    guard();
    endOutput();
  }
  if (polluted.length > 0) {
    const names = [...new Set(polluted)];
    error = {
      type: "PrototypePollution",
      message: `the policy changed noema's built-ins (${names.slice(0, 5).join(", ")}${
        names.length > 5 ? `, and ${names.length - 5} more` : ""
      }); they were put back`,
    };
  }
  const duration_ms = Math.round((performance.now() - t0) * 1000) / 1000;
  const completed_at = settings.now();
  const base = { policy, duration_ms, started_at, completed_at, diff: [], threshold };
  // Nothing else touches what the policy returned: only this plain copy (no cycles, getters, BigInt…).
  let copy: PlainJson = null;
  if (!error) {
    const copied = copyPlainJson(raw, { maxBytes: PLUGIN_LIMITS.verdictBytes });
    copy = copied.value;
    const problem = verdictProblem(copy) ?? loneSurrogateProblem(copied.loneSurrogate);
    if (problem) error = { type: "InvalidVerdict", message: problem };
  }
  if (error) return { ...base, verdict: null, status: "blocked", reason: "policy_failure", error };
  if (copy === null) {
    return { ...base, verdict: null, status: "skipped", reason: "no_verdict", error: null };
  }
  const verdict = { ...(copy as unknown as Verdict) };
  verdict.advice = cutString(verdict.advice, PLUGIN_LIMITS.adviceBytes);
  if (typeof verdict.rationale === "string") {
    verdict.rationale = cutString(verdict.rationale, PLUGIN_LIMITS.adviceBytes);
  }
  verdict.confidence ??= DEFAULT_CONFIDENCE[verdict.kind];
  if (verdict.confidence < threshold) {
    return { ...base, verdict, status: "skipped", reason: "below_threshold", error: null };
  }
  const mode = settings.intuitionMode;
  if (verdict.kind === "intervention" && mode !== "interventive") {
    return { ...base, verdict, status: "skipped", reason: `intuition_mode_${mode}`, error: null };
  }
  if (verdict.kind === "veto" && mode === "advisory") {
    return { ...base, verdict, status: "skipped", reason: "intuition_mode_advisory", error: null };
  }
  return { ...base, verdict, status: "applied", reason: null, error: null };
}
