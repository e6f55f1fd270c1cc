/**
 * Turns noema's {@link LlmTool}s into an AI SDK `ToolSet`: arguments are
 * checked against the tool's schema before anything runs (a bad argument is
 * a tool error the model reads), and errors a tool throws go back to the
 * model as tool errors. The hints the policies gave a call reach the model
 * with its result.
 *
 * @module
 */
// `jsonSchema` and `tool` are the AI SDK's own, from the package `ai` takes them from: importing `ai` itself costs
// ~0.1 s of CPU, which every importer of "noema" (a policy file's worker, too) would pay.
import { jsonSchema, tool } from "@ai-sdk/provider-utils";
import type { JSONSchema7, ToolSet } from "ai";
import type { LlmTool, ToolContext } from "./tools/tool.ts";
import type { ReviewedOutput } from "./hooks.ts";
import { clipText } from "../text_head.ts";

/** Options of {@link toAiSdkTools}. */
export interface AiSdkToolsOptions {
  /**
   * The hints the policies gave a call, by the model's call id (`GovernedHooks.hintsFor`): they reach the model
   * with the call's result (see {@link withHints}). @default {none}
   */
  hints?: (callId: string) => readonly string[];
  /**
   * A dry run: instead of executing a call, return (or throw) what this gives for it, e.g. the recorded run's
   * result (`dryRunResults`). @default {none: each call executes}
   */
  dryRun?: (callId: string, tool: string) => unknown;
  /**
   * Records a call's output as its tool returns and says what the model gets (`GovernedHooks.reviewResult`):
   * the output as the policies' `review` left it, or a block (the call then fails with the reason).
   * @default {none: the output goes to the model as it is}
   */
  review?: (callId: string, output: unknown, durationMs: number) => Promise<ReviewedOutput>;
}

/**
 * A call's result with the policies' hints, as the model reads it: a field `policy_hints` of an object result,
 * lines `policy hint: …` after a text one; a result of another shape goes under `result`.
 *
 * @example
 * ```ts
 * import { withHints } from "noema";
 * withHints({ exit_code: 0 }, ["tests first"]); // { exit_code: 0, policy_hints: ["tests first"] }
 * withHints("wrote 6 bytes", ["tests first"]); // "wrote 6 bytes\n\npolicy hint: tests first"
 * ```
 */
export function withHints(result: unknown, hints: readonly string[]): unknown {
  if (hints.length === 0) return result;
  if (typeof result === "string") return `${result}\n\n${hints.map((h) => `policy hint: ${h}`).join("\n")}`;
  if (typeof result === "object" && result !== null && !Array.isArray(result)) {
    return { ...result, policy_hints: [...hints] };
  }
  return { result: result ?? null, policy_hints: [...hints] };
}

/**
 * The AI SDK tool set for `tools`, executing in `context`.
 *
 * @example
 * ```ts
 * import { fileTools, toAiSdkTools } from "noema";
 * const tools = toAiSdkTools(fileTools(), { workspace: ".", signal: new AbortController().signal });
 * ```
 */
export function toAiSdkTools(
  tools: readonly LlmTool[],
  context: ToolContext,
  options: AiSdkToolsOptions = {},
): ToolSet {
  const set: ToolSet = {};
  for (const t of tools) {
    set[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema<Record<string, unknown>>(t.parameters as JSONSchema7, {
        validate: (value) => {
          if (typeof value !== "object" || value === null || Array.isArray(value)) {
            return { success: false, error: new Error("the arguments must be a JSON object") };
          }
          if (!t.validate) return { success: true, value: value as Record<string, unknown> };
          try {
            return { success: true, value: t.validate(value) };
          } catch (e) {
            return { success: false, error: e as Error };
          }
        },
      }),
      execute: async (input: Record<string, unknown>, { toolCallId }: { toolCallId: string }) => {
        const t0 = performance.now();
        const output = options.dryRun ? options.dryRun(toolCallId, t.name) : await t.execute(input, context);
        const hints = options.hints?.(toolCallId) ?? [];
        if (!options.review) return withHints(output, hints);
        // The output is recorded now and reviewed: the model gets what the policies let through.
        const reviewed = await options.review(toolCallId, output, performance.now() - t0);
        if (reviewed.blocked) throw new Error(reviewed.reason);
        return withHints(reviewed.shown, [...hints, ...reviewed.hints]);
      },
    });
  }
  return set;
}

/** A one-line display of a call: the tool's own, else `name {json}` cut at 200 characters. */
export function commandOf(t: LlmTool | undefined, name: string, input: Record<string, unknown>): string {
  const text = t?.command?.(input) ?? `${name} ${JSON.stringify(input)}`;
  return clipText(text, 200);
}
