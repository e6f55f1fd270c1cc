/**
 * The agent CLIs `noema hook` speaks to, by name.
 *
 * @module
 */
import { claudeCode } from "./claude_code/dialect.ts";
import { codex } from "./codex/dialect.ts";
import type { Dialect } from "./dialect.ts";
import { gemini } from "./gemini/dialect.ts";

/**
 * The dialects by the name given to `noema hook <name>`.
 *
 * @example
 * ```ts
 * import { DIALECTS } from "./dialects.ts";
 * console.log(Object.keys(DIALECTS)); // ["claude-code", "codex", "gemini"]
 * ```
 */
export const DIALECTS: Readonly<Record<string, Dialect>> = Object.freeze({
  "claude-code": claudeCode,
  codex,
  gemini,
});
