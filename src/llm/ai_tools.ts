/**
 * Turns noema's {@link LlmTool}s into an AI SDK `ToolSet`: arguments are
 * checked against the tool's schema before anything runs (a bad argument is
 * a tool error the model reads), and errors a tool throws go back to the
 * model as tool errors.
 *
 * @module
 */
import { jsonSchema, type JSONSchema7, tool, type ToolSet } from "ai";
import type { LlmTool, ToolContext } from "./tools/tool.ts";

/**
 * The AI SDK tool set for `tools`, executing in `context`.
 *
 * @example
 * ```ts
 * import { fileTools, toAiSdkTools } from "noema";
 * const tools = toAiSdkTools(fileTools(), { workspace: ".", signal: new AbortController().signal });
 * ```
 */
export function toAiSdkTools(tools: readonly LlmTool[], context: ToolContext): ToolSet {
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
      execute: async (input: Record<string, unknown>) => await t.execute(input, context),
    });
  }
  return set;
}

/** A one-line display of a call: the tool's own, else `name {json}` cut at 200 characters. */
export function commandOf(t: LlmTool | undefined, name: string, input: Record<string, unknown>): string {
  const text = t?.command?.(input) ?? `${name} ${JSON.stringify(input)}`;
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}
