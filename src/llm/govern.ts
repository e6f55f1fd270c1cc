/**
 * `noema.govern()`: governs any AI SDK agent's tool calls with noema
 * policies. Spread `gov.aiSdk()` into `generateText`/`streamText` (or a
 * `ToolLoopAgent`): every tool call is proposed to the policies before it
 * runs (vetoes reach the model as denied tool results, interventions patch
 * the arguments through `experimental_refineToolInput`, approvals pause the
 * loop) and recorded after it, in `gov.steps`. After a pause, append the
 * approval responses to the conversation and call `gov.aiSdk()` again: the
 * waiting calls are answered from their approval (`gov.approve(callId)`).
 *
 * @module
 */
import type { PolicyObject } from "../plugins/api.ts";
import type { Governor } from "./governor.ts";
import { type GovernedHooks, governedHooks } from "./hooks.ts";
import { type GovernedStep, PolicyGovernor } from "./policy_governor.ts";

/** Options of {@link govern}. */
export interface GovernOptions {
  /** Policies: `.ts` paths, policy objects or classes. */
  policies?: readonly (string | PolicyObject | (new () => unknown))[];
  /** The workspace policies see. @default {null} */
  root?: string;
  /** The task policies see. @default {"(library call)"} */
  task?: string;
  /**
   * Use this governor instead (e.g. an episode core). With an episode core, a
   * call that needs approval pauses the episode only once the turn's other
   * calls ran: call `core.pauseDeferred()` after the loop stopped with
   * `gov.last.pending`, then `core.close()`.
   */
  governor?: Governor;
}

/** What {@link govern} returns. */
export interface Governance {
  /** Fresh hooks for one `generateText`/`streamText` call: spread them into its options. */
  aiSdk(): Omit<GovernedHooks, "pending" | "calls" | "failures" | "settle" | "hintsFor" | "reviewResult">;
  /** The hooks of the last `aiSdk()` call (pending approvals, failures). */
  last: GovernedHooks | null;
  /** Every governed call so far (with the built-in policy governor). */
  steps: readonly GovernedStep[];
  /** A human approved the waiting call `callId` (with the built-in policy governor). */
  approve(callId: string): void;
  /** Releases the policies (worker threads of policy files). */
  close(): void;
}

/**
 * Governs an AI SDK agent.
 *
 * @example
 * ```ts
 * import { generateText } from "ai";
 * import * as noema from "noema";
 * const gov = await noema.govern({ policies: ["./policies/no-rm.ts"], root: "." });
 * // const r = await generateText({ model, tools, prompt: "clean up", ...gov.aiSdk() });
 * console.log(gov.steps.map((s) => `${s.action.tool}: ${s.decision.verdict}`));
 * ```
 */
export async function govern(options: GovernOptions = {}): Promise<Governance> {
  const policyGovernor = options.governor
    ? null
    : await PolicyGovernor.create({ policies: options.policies, workspace: options.root ?? null, task: options.task });
  const governor: Governor = options.governor ?? policyGovernor!;
  const g: Governance = {
    last: null,
    steps: policyGovernor?.steps ?? [],
    approve: (callId) => void policyGovernor?.approved.add(callId),
    close: () => policyGovernor?.close(),
    aiSdk() {
      // A paused run's waiting calls: the next run answers them from their approval.
      const hooks = governedHooks(governor, { resumed: g.last?.pending });
      g.last = hooks;
      const { toolApproval, experimental_refineToolInput, onToolExecutionStart, onToolExecutionEnd } = hooks;
      return { toolApproval, experimental_refineToolInput, onToolExecutionStart, onToolExecutionEnd };
    },
  };
  return g;
}
