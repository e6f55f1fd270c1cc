/**
 * What the agent dialect tests (Claude Code, Codex, Gemini CLI) share: their
 * recorded hook payloads and a decision to answer them with.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Decision } from "../../src/agents/core.ts";
import { REPO } from "./cli.ts";

/**
 * A loader of the payloads recorded under `tests/fixtures/<dir>/`.
 *
 * @example
 * ```ts
 * import { fixturesIn } from "./helpers/dialect.ts";
 * const fixture = fixturesIn("agents/codex");
 * fixture("PreToolUse_Bash").hook_event_name; // "PreToolUse"
 * ```
 */
// deno-lint-ignore no-explicit-any
export function fixturesIn(dir: string): (name: string) => any {
  return (name) => JSON.parse(readFileSync(join(REPO, "tests", "fixtures", dir, `${name}.json`), "utf8"));
}

/**
 * An `allow` decision of step `s1`, with `over` applied.
 *
 * @example
 * ```ts
 * import { decision } from "./helpers/dialect.ts";
 * decision({ verdict: "deny", reason: "no" });
 * ```
 */
export const decision = (over: Partial<Decision>): Decision => ({
  verdict: "allow",
  step_id: "s1",
  action_candidate_id: "ac_1",
  input: {},
  reason: null,
  policy_id: null,
  hints: [],
  ...over,
});
