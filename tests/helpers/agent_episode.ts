/**
 * Reading what a governed agent session wrote: the real-agent tests (Claude
 * Code, Codex, Gemini CLI) check its events and that it finished soundly.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { validate } from "noema";

/**
 * Every event of an episode directory, parsed.
 *
 * @example
 * ```ts
 * import { events } from "./helpers/agent_episode.ts";
 * events(dir).map((e) => e.phase); // ["start", "plan", …]
 * ```
 */
// deno-lint-ignore no-explicit-any
export const events = (dir: string): any[] =>
  readFileSync(join(dir, "events.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));

/**
 * The `act` events of an episode directory.
 *
 * @example
 * ```ts
 * import { acts } from "./helpers/agent_episode.ts";
 * acts(dir)[0].payload.result_status; // "ok"
 * ```
 */
export const acts = (dir: string) => events(dir).filter((e) => e.phase === "act");

/**
 * Asserts the episode validates and ended with adapter result `success`; returns its summary.
 *
 * @example
 * ```ts
 * import { assertFinished } from "./helpers/agent_episode.ts";
 * const summary = assertFinished(dir);
 * ```
 */
// deno-lint-ignore no-explicit-any
export function assertFinished(dir: string): any {
  assert.deepEqual(validate(dir).problems, [], `${dir} must validate`);
  const summary = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
  assert.equal(summary.adapter_result, "success");
  return summary;
}
