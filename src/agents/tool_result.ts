/**
 * What a finished tool call becomes in the episode: status, an excerpt of
 * its output as the act's outcome, the full output within limits, the
 * error, and the duration the agent measured. Secrets are masked by the
 * episode when it records the result.
 *
 * @module
 */
import type { RecordedResult } from "./core.ts";
import type { PostToolEvent } from "./event.ts";
import { clipText, textHead } from "../text_head.ts";

/** Outputs larger than this (as JSON) are kept as a truncated text. @default {262144} */
export const MAX_OUTPUT_BYTES = 256 * 1024;
const EXCERPT = 200;

function oneLine(text: string, max = EXCERPT): string {
  const t = text.replace(/\s+/g, " ").trim();
  return clipText(t, max);
}

/** The text a tool response says (stdout of a shell, a file tool's message, the text of MCP content…). */
function textOf(output: unknown): string {
  if (typeof output === "string") return output;
  if (output === null || output === undefined) return "";
  if (Array.isArray(output)) return output.map(textOf).filter(Boolean).join("\n");
  if (typeof output === "object") {
    const o = output as Record<string, unknown>;
    if (typeof o.filePath === "string") return `${String(o.type ?? "wrote")} ${o.filePath}`;
    if (typeof o.stdout === "string") return o.stdout !== "" ? o.stdout : typeof o.stderr === "string" ? o.stderr : "";
    for (const key of ["stdout", "output", "text", "content", "llmContent", "result", "message"]) {
      const t = textOf(o[key]);
      if (t !== "") return t;
    }
    if (typeof o.stderr === "string" && o.stderr !== "") return o.stderr;
  }
  return JSON.stringify(output) ?? "";
}

/**
 * The output as recorded: as is when its JSON fits in `max` bytes, else
 * `{truncated: true, bytes, text}` with the first part of its text.
 *
 * @example
 * ```ts
 * import { boundedOutput } from "./tool_result.ts";
 * boundedOutput({ stdout: "x".repeat(10) }, 5); // { truncated: true, bytes: 17, text: "xxxxx" }
 * ```
 */
export function boundedOutput(output: unknown, max: number = MAX_OUTPUT_BYTES): unknown {
  const json = JSON.stringify(output ?? null);
  const bytes = new TextEncoder().encode(json).length;
  if (bytes <= max) return output ?? null;
  const text = textOf(output);
  return { truncated: true, bytes, text: textHead(text, max) };
}

/**
 * The result to record for a finished tool call.
 *
 * @example
 * ```ts
 * import { toRecordedResult } from "./tool_result.ts";
 * const r = toRecordedResult({ kind: "post_tool", status: "ok", output: { stdout: "hi" }, error: null, duration_ms: 4 } as never);
 * console.log(r.outcome); // "hi"
 * ```
 */
export function toRecordedResult(event: PostToolEvent): RecordedResult {
  const result: RecordedResult = {
    status: event.status,
    outcome: event.status === "ok"
      ? oneLine(textOf(event.output)) || "ok (no output)"
      : oneLine(event.error ?? "the tool call failed"),
    output: boundedOutput(event.output),
  };
  if (event.status === "error") {
    result.error = { type: "ToolError", message: oneLine(event.error ?? "the tool call failed", 2000) };
  }
  if (event.duration_ms !== null) result.duration_ms = event.duration_ms;
  return result;
}
