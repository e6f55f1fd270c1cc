/**
 * An agent's final answer, as the readers (`run`'s result line, `view`,
 * `report`) show it.
 *
 * @module
 */

/**
 * An agent's final answer: the `terminate` event's `answer`; for a run
 * recorded before there was one, the message of an `llm` run that ended ok.
 * Null when there is none, or it is blank (a model that ended saying
 * nothing).
 *
 * @example
 * ```ts
 * import { finalAnswer } from "./answer.ts";
 * finalAnswer(null, "Done: tests pass.", "llm", "ok"); // "Done: tests pass."
 * ```
 */
export function finalAnswer(
  answer: string | null,
  message: string | null,
  using: unknown,
  status: unknown,
): string | null {
  const text = answer ?? (using === "llm" && status === "ok" ? message : null);
  return text !== null && text.trim() !== "" ? text : null;
}
