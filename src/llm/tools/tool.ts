/**
 * The shape of a tool the LLM agent can call: built-in, user plugin file or
 * MCP server tool alike.
 *
 * A user tool is a `.ts` file whose default export is such an object
 * (`parameters` is a JSON Schema of the arguments):
 *
 * ```ts
 * export default {
 *   name: "word_count",
 *   description: "Count the words of a text",
 *   parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
 *   execute: (input) => ({ words: String(input.text).split(/\s+/).filter(Boolean).length }),
 * };
 * ```
 *
 * @module
 */
import * as v from "valibot";
import { toJsonSchema } from "@valibot/to-json-schema";

/** What a tool's `execute` receives besides its input. */
export interface ToolContext {
  /** The workspace directory (real path). */
  workspace: string;
  /** Aborted when the run stops. */
  signal: AbortSignal;
}

/** A JSON Schema object describing a tool's arguments. */
export type ToolParameters = Record<string, unknown>;

/**
 * A tool the model can call.
 *
 * @example
 * ```ts
 * import type { LlmTool } from "noema";
 * const now: LlmTool = { name: "now", description: "The time", parameters: { type: "object", properties: {} }, execute: () => new Date().toISOString() };
 * ```
 */
export interface LlmTool {
  /** Name the model calls it by (letters, digits, `_` and `-`; at most 64 characters). */
  name: string;
  /** What it does, for the model. */
  description: string;
  /** JSON Schema of the arguments. */
  parameters: ToolParameters;
  /** Checks and normalises the arguments; a thrown error goes back to the model as a tool error. */
  validate?(input: unknown): Record<string, unknown>;
  /** Runs the tool. A thrown error goes back to the model as a tool error. */
  execute(input: Record<string, unknown>, context: ToolContext): unknown | Promise<unknown>;
  /** A one-line display of what a call runs (policies see it as `action.command`). */
  command?(input: Record<string, unknown>): string;
}

/** An error a tool reports to the model (bad arguments, path outside the workspace, no match). */
export class ToolError extends Error {
  constructor(message: string, name = "ToolError") {
    super(message);
    this.name = name;
  }
}

/**
 * Builds the `parameters` and `validate` of a tool from one valibot schema
 * (the single source of the tool's input shape).
 *
 * @example
 * ```ts
 * import * as v from "valibot";
 * import { fromValibot } from "noema";
 * const { parameters, validate } = fromValibot(v.object({ path: v.string() }));
 * ```
 */
export function fromValibot<S extends v.GenericSchema>(
  schema: S,
): { parameters: ToolParameters; validate(input: unknown): Record<string, unknown> } {
  const parameters = toJsonSchema(schema, { errorMode: "ignore" }) as ToolParameters;
  delete parameters.$schema;
  return {
    parameters,
    validate(input: unknown) {
      const r = v.safeParse(schema, input);
      if (r.success) return r.output as Record<string, unknown>;
      const issue = r.issues[0];
      const path = issue.path?.map((p) => String(p.key)).join(".") ?? "";
      throw new ToolError(`invalid arguments${path ? ` at ${path}` : ""}: ${issue.message}`, "InvalidToolInput");
    },
  };
}

/** Cuts text to `max` characters, saying how much was left out. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n… [${text.length - max} more characters not shown]`;
}
