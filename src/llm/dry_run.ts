/**
 * A dry-run replay (`noema run --replay EPISODE --dry-run`): the recorded
 * model turns are played back and the policies are consulted on every call
 * as in a replay, but no tool runs. Each allowed call gets the result the
 * recorded run's tool produced, read from the recording (the next turn's
 * request carries it to the model), so nothing acts on the workspace; the
 * hints of the policies consulted now are added to it as in a live run. A call
 * the recorded run never executed (it was refused then, or the replay left
 * the recording) has no result to give: it gets a tool error saying so, and
 * the replay then reports where it diverged.
 *
 * @module
 */
import type { ModelTurn } from "./model_log.ts";

/** A recorded tool result as the model was sent it (the AI SDK's tool-result `output`). */
interface RecordedOutput {
  type: string;
  value?: unknown;
  reason?: unknown;
}

/**
 * The tool results a recording holds, by the model's call id: every
 * `tool-result` part of the (expanded) requests.
 *
 * @example
 * ```ts
 * import { recordedToolResults } from "./dry_run.ts";
 * // recordedToolResults(readModelLog(".noema/episodes/ep_1/model.jsonl")).get("call_1")?.type; // "json"
 * ```
 */
export function recordedToolResults(turns: readonly ModelTurn[]): Map<string, RecordedOutput> {
  const results = new Map<string, RecordedOutput>();
  for (const turn of turns) {
    const prompt = Array.isArray(turn.request.prompt) ? turn.request.prompt : [];
    for (const message of prompt as { role?: unknown; content?: unknown }[]) {
      if (message?.role !== "tool" || !Array.isArray(message.content)) continue;
      for (const part of message.content as { type?: unknown; toolCallId?: unknown; output?: unknown }[]) {
        if (part?.type !== "tool-result" || typeof part.toolCallId !== "string") continue;
        if (typeof part.output === "object" && part.output !== null) {
          results.set(part.toolCallId, part.output as RecordedOutput);
        }
      }
    }
  }
  return results;
}

/**
 * A result without the policy hints that were added to it (`policy_hints`
 * of an object, `policy hint:` lines after a text), so the hints of the
 * policies consulted now can take their place.
 *
 * @example
 * ```ts
 * import { withoutHints } from "./dry_run.ts";
 * withoutHints({ exit_code: 0, policy_hints: ["tests first"] }); // { exit_code: 0 }
 * withoutHints("wrote 6 bytes\n\npolicy hint: tests first"); // "wrote 6 bytes"
 * ```
 */
export function withoutHints(value: unknown): unknown {
  if (typeof value === "string") {
    const at = value.indexOf("\n\npolicy hint: ");
    return at < 0 ? value : value.slice(0, at);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value) || !("policy_hints" in value)) return value;
  const { policy_hints: _hints, ...rest } = value as Record<string, unknown>;
  const keys = Object.keys(rest);
  return keys.length === 1 && keys[0] === "result" ? rest.result : rest;
}

/**
 * What a tool call returns in a dry run: its recorded result (a recorded
 * tool error is thrown again, as the tool threw it then). A call with no
 * recorded result throws an error the model reads: nothing is executed.
 *
 * @example
 * ```ts
 * import { dryRunResults } from "./dry_run.ts";
 * // const result = dryRunResults(turns); result("call_1", "shell"); // { exit_code: 0, stdout: "…" }
 * ```
 */
export function dryRunResults(turns: readonly ModelTurn[]): (callId: string, tool: string) => unknown {
  const recorded = recordedToolResults(turns);
  return (callId, tool) => {
    const output = recorded.get(callId);
    if (!output || !("value" in output)) {
      throw new Error(
        `dry run: ${tool} call ${callId} has no recorded result (the recorded run did not execute it); not executed`,
      );
    }
    if (output.type === "error-text" || output.type === "error-json") {
      // Thrown again as recorded: with no name of its own, the error reads exactly as the recorded text.
      const e = new Error(typeof output.value === "string" ? output.value : JSON.stringify(output.value));
      e.name = "";
      throw e;
    }
    return withoutHints(output.value);
  };
}
