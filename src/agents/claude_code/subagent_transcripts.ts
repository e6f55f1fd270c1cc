/**
 * Where a Claude Code session's subagents (the Task tool) keep their
 * transcripts: Claude Code 2.1.330 writes each subagent's turns to
 * `<session transcript without .jsonl>/subagents/[<dirs>/]agent-<id>.jsonl`,
 * not to the session's own transcript, so their model turns are read from
 * there too.
 *
 * @module
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";

/** How deep below `subagents/` transcripts are looked for (Claude Code nests them by subagent). */
const MAX_DEPTH = 4;
/** At most this many subagent transcripts per session are read. */
const MAX_FILES = 10_000;

/**
 * The subagent transcripts of the session whose transcript is `path`, as
 * paths relative to its `subagents/` directory, sorted; none when there is
 * no such directory. Symbolic links are not followed.
 *
 * @example
 * ```ts
 * import { subagentTranscripts } from "./subagent_transcripts.ts";
 * subagentTranscripts("/home/me/.claude/projects/p/0efe….jsonl"); // ["agent-a1b2.jsonl"]
 * ```
 */
export function subagentTranscripts(path: string): string[] {
  if (!path.endsWith(".jsonl")) return [];
  const found: string[] = [];
  const walk = (dir: string, rel: string, depth: number) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // none, or not readable
    }
    for (const e of entries) {
      if (found.length >= MAX_FILES) return;
      const name = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isFile() && /^agent-.+\.jsonl$/.test(e.name)) found.push(name);
      else if (e.isDirectory() && depth < MAX_DEPTH) walk(join(dir, e.name), name, depth + 1);
    }
  };
  walk(subagentsDir(path), "", 0);
  return found.sort();
}

/**
 * The `subagents/` directory of the session whose transcript is `path`.
 *
 * @example
 * ```ts
 * import { subagentsDir } from "./subagent_transcripts.ts";
 * subagentsDir("/p/0efe.jsonl"); // "/p/0efe/subagents"
 * ```
 */
export function subagentsDir(path: string): string {
  return join(path.slice(0, -".jsonl".length), "subagents");
}
