/**
 * Reading a real Claude Code session's transcript in tests, on its own
 * terms (not through noema's reader): where it is, and the token sums over
 * its assistant messages.
 *
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The transcript of the (one) session run with `home` as HOME.
 *
 * @example
 * ```ts
 * import { findTranscript } from "./claude_transcript.ts";
 * // findTranscript(box.home); // "<home>/.claude/projects/-tmp-ws/<session>.jsonl"
 * ```
 */
export function findTranscript(home: string): string {
  const projects = join(home, ".claude", "projects");
  for (const dir of readdirSync(projects)) {
    const file = readdirSync(join(projects, dir)).find((f) => f.endsWith(".jsonl"));
    if (file) return join(projects, dir, file);
  }
  throw new Error(`no transcript under ${projects}`);
}

/**
 * The sums over a transcript file, counted here on their own: the last line of each message id; and the cost
 * Claude Code itself recorded (its last `cost-state` line).
 *
 * @example
 * ```ts
 * import { transcriptSums } from "./claude_transcript.ts";
 * // transcriptSums(path).input; // input + cache-write + cache-read tokens
 * ```
 */
export function transcriptSums(path: string) {
  const byId = new Map<string, { model: string; usage: Record<string, number> }>();
  const lines = readFileSync(path, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
  for (const e of lines) {
    if (e.type === "assistant" && e.message?.usage) byId.set(e.message.id, e.message);
  }
  const s = { input: 0, output: 0, cache_write: 0, cache_read: 0, calls: byId.size, models: new Set<string>() };
  for (const m of byId.values()) {
    const u = m.usage;
    s.input += u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
    s.output += u.output_tokens;
    s.cache_write += u.cache_creation_input_tokens;
    s.cache_read += u.cache_read_input_tokens;
    s.models.add(m.model);
  }
  const costState = lines.filter((e) => e.type === "cost-state").at(-1);
  return { ...s, claudeCost: costState?.totalCostUSD as number | undefined };
}
