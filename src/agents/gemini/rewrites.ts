/**
 * Gemini CLI sends no tool call id, so noema names a call by a hash of its
 * session, tool and input ({@link geminiCallId}). When noema rewrites a
 * call's input, Gemini's `AfterTool` carries the rewritten input, whose hash
 * differs: this small ledger maps the rewritten call back to the call noema
 * decided, one file per rewrite under `<root>/sessions/gemini/rewrites/`,
 * written atomically and removed once the result is recorded.
 *
 * @module
 */
import { closeSync, readFileSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import * as v from "valibot";
import { writeJsonAtomic } from "../../store/atomic.ts";
import { refuseSymlinks } from "../../store/nofollow.ts";
import { openRegularFile } from "../../store/regular_file.ts";
import type { HookAnswer, PostToolEvent, PreToolEvent } from "../event.ts";
import { geminiCallId } from "./call_id.ts";

const Rewrite = v.object({
  schema_version: v.literal("gemini-rewrite/1.0"),
  call_id: v.string(),
  rewritten: v.string(),
});

function rewritePath(root: string, rewritten: string): string {
  return join(root, "sessions", "gemini", "rewrites", `${rewritten}.json`);
}

/**
 * Remembers a call whose input noema's answer rewrote (the answer's
 * `hookSpecificOutput.tool_input`); nothing for any other answer.
 *
 * @example
 * ```ts
 * import { rememberRewrite } from "./rewrites.ts";
 * rememberRewrite(".noema", event, { stdout: '{"decision":"allow","hookSpecificOutput":{"tool_input":{"command":"ls"}}}', exitCode: 0 });
 * ```
 */
export function rememberRewrite(root: string, event: PreToolEvent, answer: HookAnswer): void {
  if (answer.stdout === null) return;
  const out = JSON.parse(answer.stdout) as { hookSpecificOutput?: { tool_input?: unknown } };
  const input = out.hookSpecificOutput?.tool_input;
  if (!input || typeof input !== "object" || Array.isArray(input)) return;
  const rewritten = geminiCallId(event.session_id, event.tool, input as Record<string, unknown>);
  if (rewritten === event.call_id) return;
  writeJsonAtomic(rewritePath(root, rewritten), {
    schema_version: "gemini-rewrite/1.0",
    call_id: event.call_id,
    rewritten,
  }, { root });
}

/**
 * The id of the call an `AfterTool` event belongs to: the decided call when
 * its input was rewritten (the ledger entry is then removed), else the
 * event's own id.
 *
 * @example
 * ```ts
 * import { decidedCallId } from "./rewrites.ts";
 * const id = decidedCallId(".noema", afterToolEvent);
 * ```
 */
export function decidedCallId(root: string, event: PostToolEvent): string {
  const path = rewritePath(root, event.call_id);
  let value: unknown;
  try {
    refuseSymlinks(path, root, "read"); // nothing is read or removed through a link below the root
    const fd = openRegularFile(path); // a FIFO would block the hook for ever
    try {
      value = JSON.parse(readFileSync(fd, "utf8"));
    } finally {
      closeSync(fd);
    }
  } catch {
    return event.call_id; // no rewrite of this call (or an unreadable entry: the event's own id)
  }
  const r = v.safeParse(Rewrite, value);
  if (!r.success || r.output.rewritten !== event.call_id) return event.call_id;
  try {
    unlinkSync(path);
  } catch {
    // another hook process of the session removed it first
  }
  return r.output.call_id;
}
