/**
 * The JSON serialiser hook answers are written with, taken when noema's own
 * modules load, before any plugin: a policy running in the hook's thread
 * (`NOEMA_POLICY_ISOLATION=thread`) that replaces `JSON.stringify` cannot
 * rewrite a deny into an allow.
 *
 * @module
 */

const stringify = JSON.stringify;

/**
 * Serialises a hook answer with the `JSON.stringify` noema started with.
 *
 * @example
 * ```ts
 * import { answerJson } from "./answer_json.ts";
 * answerJson({ hookSpecificOutput: { permissionDecision: "deny" } });
 * ```
 */
export function answerJson(value: unknown): string {
  return stringify.call(JSON, value);
}
